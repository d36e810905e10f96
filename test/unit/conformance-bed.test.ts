// The pure parts of the conformance test bed: how bench/conformance.ts reads
// the suite's checks.json files and judges columns against the control, and
// how the stdio→HTTP bridge tells which client request a server message
// belongs to.
import { expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readResults, regressions, renderReport, type ColumnResult, type Comparison, type ScenarioResult } from "../../bench/conformance.ts";
import { RequestRelation } from "../fixtures/stdio-over-http.ts";
import { tempDir } from "../helpers.ts";

const PASS: ScenarioResult = { passed: true, failures: [], warnings: 0 };
const column = (name: string, results: Record<string, ScenarioResult>, seconds = 1): ColumnResult => ({
  name,
  results: new Map(Object.entries(results)),
  seconds,
});

test("readResults: a scenario passes without FAILURE checks; warnings are counted; a folder without checks.json is a failure", () => {
  const dir = tempDir("syn-conf-");
  const write = (folder: string, checks: unknown[] | undefined) => {
    mkdirSync(join(dir, folder));
    if (checks) writeFileSync(join(dir, folder, "checks.json"), JSON.stringify(checks));
  };
  write("server-ping-2026-11-30T23-10-53-290Z", [{ name: "Ping", status: "SUCCESS" }]);
  write("server-server-sse-polling-2026-11-30T23-10-53-918Z", [
    { name: "Event", status: "INFO" },
    { name: "ServerSendsPrimingEvent", status: "WARNING", errorMessage: "no priming event" },
    { name: "ServerSendsRetryField", status: "WARNING" },
  ]);
  write("server-tools-call-error-2026-11-30T23-10-54-001Z", [
    { name: "ToolsCallError", status: "FAILURE", errorMessage: "Tool did not return isError: true" },
    { name: "Other", status: "SUCCESS" },
  ]);
  write("server-dns-rebinding-protection-2026-11-30T23-10-54-118Z", undefined);
  write("not-a-scenario", [{ name: "x", status: "FAILURE" }]);

  expect(Object.fromEntries(readResults(dir))).toEqual({
    ping: PASS,
    "server-sse-polling": { passed: true, failures: [], warnings: 2 },
    "tools-call-error": { passed: false, failures: ["ToolsCallError: Tool did not return isError: true"], warnings: 0 },
    "dns-rebinding-protection": { passed: false, failures: ["the scenario wrote no checks.json (it crashed; see the suite log)"], warnings: 0 },
  });
});

test("regressions: only a scenario that passes for the control and fails (or is missing) elsewhere counts", () => {
  const fail: ScenarioResult = { passed: false, failures: ["ToolsList: Missing tools array"], warnings: 0 };
  const comparison: Comparison = {
    scenarios: ["ping", "tools-list", "tools-call-sampling"],
    columns: [
      column("control", { ping: PASS, "tools-list": PASS, "tools-call-sampling": fail }),
      column("proxy", { ping: PASS, "tools-list": fail, "tools-call-sampling": fail }),
      column("bridge", { ping: PASS, "tools-call-sampling": PASS }),
    ],
    dir: "/tmp/x",
  };
  expect(regressions(comparison)).toEqual(["proxy: tools-list", "bridge: tools-list"]);
  expect(regressions({ ...comparison, columns: comparison.columns.slice(0, 1) })).toEqual([]);
});

test("renderReport: one row per scenario, one column per target, totals, the failed checks and the verdict", () => {
  const comparison: Comparison = {
    scenarios: ["ping", "server-sse-polling", "tools-list"],
    columns: [
      column("control", { ping: PASS, "server-sse-polling": { passed: true, failures: [], warnings: 2 }, "tools-list": PASS }, 1.42),
      column(
        "stdio proxy via bridge",
        { ping: PASS, "server-sse-polling": PASS, "tools-list": { passed: false, failures: ["ToolsList: bad\u001b[31m"], warnings: 0 } },
        7.9,
      ),
    ],
    dir: "/tmp/conformance/run",
  };
  expect(renderReport(comparison)).toBe(
    [
      "MCP conformance suite, server scenarios (3), upstream test/fixtures/conformance-server.ts",
      "",
      "scenario            control            stdio proxy via bridge",
      "ping                pass               pass",
      "server-sse-polling  pass (2 warnings)  pass",
      "tools-list          pass               FAIL",
      "",
      "passed              3/3                2/3",
      "time                1.4 s              7.9 s",
      "",
      "Failed checks:",
      "  stdio proxy via bridge / tools-list: ToolsList: bad?[31m",
      "",
      "Scenarios that pass for control but fail elsewhere (1):",
      "  stdio proxy via bridge: tools-list",
      "Logs and checks.json: /tmp/conformance/run",
    ].join("\n"),
  );
});

test("RequestRelation: progress by its token, anything else by the one unanswered request, else no relation", () => {
  const relation = new RequestRelation();
  const log = { jsonrpc: "2.0" as const, method: "notifications/message", params: { level: "info", data: "x" } };
  expect(relation.relatedTo(log)).toBeUndefined(); // nothing open: the GET stream

  relation.fromClient({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "a", _meta: { progressToken: "p7" } } });
  expect(relation.relatedTo(log)).toBe(7);
  expect(relation.relatedTo({ jsonrpc: "2.0", id: 0, method: "elicitation/create", params: {} })).toBe(7);

  relation.fromClient({ jsonrpc: "2.0", id: 8, method: "tools/call", params: { name: "b" } });
  expect(relation.relatedTo(log)).toBeUndefined(); // two open: cannot tell
  expect(relation.relatedTo({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: "p7", progress: 50 } })).toBe(7);

  // A response closes its request (and forgets its progress token); a cancellation does too.
  expect(relation.relatedTo({ jsonrpc: "2.0", id: 7, result: {} })).toBeUndefined();
  expect(relation.relatedTo(log)).toBe(8);
  expect(relation.relatedTo({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: "p7", progress: 100 } })).toBe(8);
  relation.fromClient({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 8 } });
  expect(relation.relatedTo(log)).toBeUndefined();

  // A client's answer to a server request is not a request of its own.
  relation.fromClient({ jsonrpc: "2.0", id: 0, result: { action: "accept" } });
  expect(relation.relatedTo(log)).toBeUndefined();
});
