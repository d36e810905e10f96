// Sessionless 2026-07-28 clients of `proxy --http` (R-ERA-1, R-ERA-5), over
// raw HTTP through the built binary: each POST is one request whose headers
// must say what its body says (else 400 with HeaderMismatch, nothing run),
// answered on its own response under the client's own id; no session is
// given out; the calls of one client name form one run (or of the run a
// client names), which ends complete after --http-idle without a call.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  CRM_RULES,
  CRM_SERVER,
  eraWorkspace,
  jobsState,
  notesRules,
  notesServer,
  readNotes,
  release,
  tasksWorkspace,
  writeNotes,
} from "../fixtures/era-kit.ts";
import { eventData, postRaw, rawSession, startHttpProxy, stopHttpProxiesAfterAll, TOKEN } from "../fixtures/http-kit.ts";
import { crmStateText, crmWorkspace, journalRows, journalRuns } from "../fixtures/proxy-kit.ts";
import { ROOT, run, tempDir, until } from "../helpers.ts";

stopHttpProxiesAfterAll();
setDefaultTimeout(60_000);

const MODERN = "2026-07-28";
const logLines = (stderr: string) =>
  stderr
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line));

/** A 2026-era request's params: `params` with the envelope (this client's name) in its _meta. */
function enveloped(name: string, params: Record<string, unknown> = {}, meta: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    ...params,
    _meta: {
      "io.modelcontextprotocol/protocolVersion": MODERN,
      "io.modelcontextprotocol/clientCapabilities": {},
      "io.modelcontextprotocol/clientInfo": { name, version: "1.0.0" },
      ...meta,
    },
  };
}

/** The headers the binding requires of a request: version, method, and name for a call. */
function bindingHeaders(method: string, params: Record<string, unknown>): Record<string, string> {
  const target = params.name ?? params.uri;
  return { "MCP-Protocol-Version": MODERN, "Mcp-Method": method, ...(typeof target === "string" ? { "Mcp-Name": target } : {}) };
}

async function modernPost(url: string, id: unknown, method: string, params: Record<string, unknown>, headers?: Record<string, string>): Promise<Response> {
  return postRaw(url, JSON.stringify({ jsonrpc: "2.0", id, method, params }), headers ?? bindingHeaders(method, params));
}

/** The one answer a request's response stream carries. */
async function answerOf(response: Response): Promise<any> {
  expect(response.status).toBe(200);
  const lines = await eventData(response);
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0]!);
}

const call = (name: string, tool: string, args: Record<string, unknown>, meta?: Record<string, unknown>) =>
  enveloped(name, { name: tool, arguments: args }, meta);

describe.concurrent("sessionless requests over HTTP (R-ERA-1)", () => {
  test("server/discover and a call, each its own POST: answered under the client's id, no session given out", async () => {
    const ws = crmWorkspace(crmStateText());
    const proxy = await startHttpProxy(ws);

    const discover = await modernPost(proxy.url, "d-1", "server/discover", enveloped("raw-2026"));
    expect(discover.headers.get("mcp-session-id")).toBeNull();
    const discovered = await answerOf(discover);
    expect(discovered.id).toBe("d-1");
    expect(discovered.result.resultType).toBe("complete");
    expect(discovered.result.supportedVersions).toContain(MODERN);
    expect(discovered.result.capabilities.tools).toBeDefined();
    expect(discovered.result.instructions).toContain("Synartesis");

    const read = await answerOf(await modernPost(proxy.url, 7, "tools/call", call("raw-2026", "get_customer", { id: "c_001" })));
    expect(read.id).toBe(7);
    expect(read.result.content[0].text).toContain('"name": "Ada Lovelace"');
    expect(journalRows(ws.journal).map((row) => [row.tool, row.status])).toEqual([["get_customer", "applied"]]);
  });

  test("headers that do not say what the body says: 400 with HeaderMismatch (-32020) under the request's id (a body without its envelope: -32602), and nothing is run", async () => {
    const ws = crmWorkspace(crmStateText());
    const before = readFileSync(ws.state, "utf8");
    const proxy = await startHttpProxy(ws);
    const update = call("raw-2026", "update_customer", { id: "c_001", plan: "free" });
    const refused = async (headers: Record<string, string>, params = update) => {
      const response = await modernPost(proxy.url, 3, "tools/call", params, headers);
      expect(response.status).toBe(400);
      const body = await response.json();
      expect([body.id, body.error.code]).toEqual([3, -32020]);
      return body.error.message as string;
    };
    const good = bindingHeaders("tools/call", update);
    const without = (name: string) => Object.fromEntries(Object.entries(good).filter(([key]) => key !== name));

    expect(await refused(without("MCP-Protocol-Version"))).toStartWith("Header mismatch: the MCP-Protocol-Version header is missing");
    expect(await refused(without("Mcp-Method"))).toBe("Header mismatch: the Mcp-Method header is missing");
    expect(await refused(without("Mcp-Name"))).toBe("Header mismatch: the Mcp-Name header is missing (tools/call must repeat params.name there)");
    expect(await refused({ ...good, "Mcp-Method": "tools/list" })).toBe(
      'Header mismatch: the Mcp-Method header says "tools/list" but the body\'s method is "tools/call"',
    );
    expect(await refused({ ...good, "Mcp-Name": "get_customer" })).toBe(
      'Header mismatch: the Mcp-Name header says "get_customer" but params.name is "update_customer"',
    );
    expect(await refused({ ...good, "Mcp-Name": "=?base64?not base64?=" })).toBe(
      "Header mismatch: the Mcp-Name header's =?base64?…?= value is not valid base64 of UTF-8 text",
    );
    expect(await refused({ ...good, "Mcp-Name": "=?base64?/w==?=" })).toBe(
      "Header mismatch: the Mcp-Name header's =?base64?…?= value is not valid base64 of UTF-8 text",
    );
    const claims2025 = call("raw-2026", "update_customer", { id: "c_001", plan: "free" }, { "io.modelcontextprotocol/protocolVersion": "2025-06-18" });
    expect(await refused(good, claims2025)).toBe('Header mismatch: the MCP-Protocol-Version header says "2026-07-28" but the body\'s _meta says "2025-06-18"');

    // A body without its envelope is not a header mismatch: 400 with Invalid params (-32602), as over stdio.
    const invalid = async (params: Record<string, unknown>) => {
      const response = await modernPost(proxy.url, 5, "tools/call", params, good);
      expect(response.status).toBe(400);
      const body = await response.json();
      expect([body.id, body.error.code]).toEqual([5, -32602]);
      return body.error.message as string;
    };
    expect(await invalid({ name: "update_customer", arguments: { id: "c_001", plan: "free" } })).toBe(
      'Invalid params: a 2026-07-28 request must carry _meta["io.modelcontextprotocol/protocolVersion"] and _meta["io.modelcontextprotocol/clientCapabilities"]',
    );
    const noCapabilities = { name: "update_customer", arguments: { id: "c_001", plan: "free" }, _meta: { "io.modelcontextprotocol/protocolVersion": MODERN } };
    expect(await invalid(noCapabilities)).toBe(
      'Invalid params: _meta["io.modelcontextprotocol/clientCapabilities"] must be an object (the client\'s capabilities for this request)',
    );

    expect(readFileSync(ws.state, "utf8")).toBe(before);
    expect(journalRows(ws.journal)).toEqual([]);

    // The name may come base64-encoded, as the binding's sentinel says.
    const encoded = { ...good, "Mcp-Name": `=?base64?${Buffer.from("update_customer").toString("base64")}?=` };
    const updated = await answerOf(await modernPost(proxy.url, 4, "tools/call", update, encoded));
    expect([updated.id, updated.result.isError ?? false]).toEqual([4, false]);
    expect(JSON.parse(readFileSync(ws.state, "utf8")).customers.c_001.plan).toBe("free");
  });

  test("a version nobody serves: 400 with UnsupportedProtocolVersion (-32022) naming the versions served; a batch: 400", async () => {
    const ws = crmWorkspace(crmStateText());
    const proxy = await startHttpProxy(ws);
    const future = enveloped("raw-2026", {}, { "io.modelcontextprotocol/protocolVersion": "2099-01-01" });
    const response = await modernPost(proxy.url, 1, "tools/list", future, { "MCP-Protocol-Version": "2099-01-01", "Mcp-Method": "tools/list" });
    expect(response.status).toBe(400);
    const body = await response.json();
    expect([body.id, body.error.code, body.error.data]).toEqual([1, -32022, { supported: [MODERN], requested: "2099-01-01" }]);

    const list = { jsonrpc: "2.0", id: 2, method: "tools/list", params: enveloped("raw-2026") };
    const batch = await postRaw(proxy.url, JSON.stringify([list, { ...list, id: 3 }]), bindingHeaders("tools/list", {}));
    expect(batch.status).toBe(400);
    expect((await batch.json()).error).toEqual({ code: -32600, message: "Invalid Request: a 2026-07-28 POST carries one JSON-RPC message, not a batch" });
    // A batch of one is a batch too (it would be owed an array, not a bare answer).
    const single = await postRaw(proxy.url, JSON.stringify([list]), bindingHeaders("tools/list", {}));
    expect([single.status, (await single.json()).error.code]).toEqual([400, -32600]);
  });
});

describe.concurrent("a method not served here: 404 with Method not found (-32601), as the binding says", () => {
  test("several servers: decided before anything runs (no server is spoken to, no run opened)", async () => {
    const ws = eraWorkspace({ ...CRM_SERVER, ...notesServer("notes") }, [...CRM_RULES, ...notesRules("notes")]);
    const proxy = await startHttpProxy(ws);
    const response = await modernPost(proxy.url, 1, "no/such/method", enveloped("raw-2026"));
    expect([response.status, response.headers.get("content-type")]).toEqual([404, "application/json"]);
    expect(await response.json()).toEqual({ jsonrpc: "2.0", id: 1, error: { code: -32601, message: "Method not found: no/such/method" } });
    expect(logLines(proxy.stderr()).filter((line) => line.msg === "server started")).toEqual([]);
    expect(journalRuns(ws.journal)).toEqual([]);
    // A method served here still answers on its event stream.
    const listed = (await answerOf(await modernPost(proxy.url, 3, "tools/list", enveloped("raw-2026")))).result.tools.map(
      (tool: { name: string }) => tool.name,
    );
    expect(listed).toEqual(expect.arrayContaining(["crm__get_customer", "notes__put_note"]));
  });

  test("what 2026-07-28 removed (initialize, ping, logging/setLevel, resources/subscribe…) is not found for its clients, even with one server; a 2025 session still has them", async () => {
    const ws = crmWorkspace(crmStateText());
    const proxy = await startHttpProxy(ws);
    const removed = ["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "tasks/result", "tasks/list"];
    for (const [index, method] of removed.entries()) {
      const response = await modernPost(proxy.url, index + 1, method, enveloped("raw-2026"));
      expect([method, response.status]).toEqual([method, 404]);
      expect(await response.json()).toEqual({
        jsonrpc: "2.0",
        id: index + 1,
        error: { code: -32601, message: `Method not found: ${method} (not part of 2026-07-28)` },
      });
    }
    expect(journalRuns(ws.journal)).toEqual([]);
    const session = await rawSession(proxy.url);
    const ping = await postRaw(proxy.url, JSON.stringify({ jsonrpc: "2.0", id: 9, method: "ping" }), {
      "Mcp-Session-Id": session,
      "MCP-Protocol-Version": "2025-06-18",
    });
    expect(JSON.parse((await eventData(ping))[0]!)).toEqual({ jsonrpc: "2.0", id: 9, result: {} });
  });

  test("one server: a method the proxy sends on untouched, which the server does not know, is 404 too (its answer was held until it came); nothing is recorded", async () => {
    const ws = crmWorkspace(crmStateText());
    const proxy = await startHttpProxy(ws);
    const response = await modernPost(proxy.url, "x-1", "crm/export", enveloped("raw-2026"));
    expect(response.status).toBe(404);
    const body = await response.json();
    expect([body.id, body.error.code]).toEqual(["x-1", -32601]);
    expect(journalRows(ws.journal)).toEqual([]);
  });
});

test.concurrent("a retry that comes under another run (another client name, a named run) is refused as expired, never run as a call of its own; under its own run it completes, one action", async () => {
  const ws = eraWorkspace(notesServer("notes"), notesRules("notes"));
  writeNotes(ws, "notes", { notes: { plan: "ship on Friday" }, outbox: [] });
  const proxy = await startHttpProxy(ws);
  const args = { key: "plan", text: "ship never" };
  const asks = { "io.modelcontextprotocol/clientCapabilities": { elicitation: { form: {} } } };
  const first = (await answerOf(await modernPost(proxy.url, 1, "tools/call", call("agent-a", "confirm_put", args, asks)))).result;
  expect(first.resultType).toBe("input_required");
  const retry = { inputResponses: { confirm: { action: "accept", content: { confirm: true } } }, requestState: first.requestState };
  const elsewhere = [call("agent-b", "confirm_put", args, asks), call("agent-a", "confirm_put", args, { ...asks, "io.synartesis/run": "another run" })];
  for (const [index, params] of elsewhere.entries()) {
    const refused = await answerOf(await modernPost(proxy.url, 2 + index, "tools/call", { ...params, ...retry }));
    expect(refused.error).toEqual({
      code: -32602,
      message: "Invalid params: invalid or expired requestState (Synartesis no longer waits for this retry); make the call again from the start",
    });
  }
  expect(readNotes(ws, "notes").notes).toEqual({ plan: "ship on Friday" });
  const done = await answerOf(await modernPost(proxy.url, 4, "tools/call", { ...call("agent-a", "confirm_put", args, asks), ...retry }));
  expect(done.result.resultType).toBe("complete");
  expect(readNotes(ws, "notes").notes).toEqual({ plan: "ship never" });
  expect(journalRows(ws.journal).map((row) => [row.tool, row.status])).toEqual([["confirm_put", "applied"]]);
});

test.concurrent("a call answered with a task handle (R-ERA-4): pending while the task runs, applied with its post-read once it ends; the client follows it by tasks/get on other POSTs", async () => {
  const ws = tasksWorkspace();
  const proxy = await startHttpProxy(ws);
  const tasks = { "io.modelcontextprotocol/clientCapabilities": { extensions: { "io.modelcontextprotocol/tasks": {} } } };
  const handle = (await answerOf(await modernPost(proxy.url, 1, "tools/call", call("tasker", "slow_put", { key: "plan", text: "ship never" }, tasks)))).result;
  expect(handle).toMatchObject({ resultType: "task", status: "working" });
  const row = await until(() => journalRows(ws.journal).find((r) => r.status === "pending"), "the call's row to be pending");
  expect((row as { task?: string }).task).toBe(handle.taskId);

  release(ws, handle.taskId);
  const done = await until(() => journalRows(ws.journal).find((r) => r.status === "applied"), "the task's end to be recorded");
  expect(JSON.parse(done.post_state!)).toEqual({ key: "plan", text: "ship never" });
  const polled = await answerOf(await modernPost(proxy.url, 2, "tasks/get", enveloped("tasker", { taskId: handle.taskId }, tasks)));
  expect(polled.result).toMatchObject({ status: "completed", result: { structuredContent: { key: "plan", text: "ship never" } } });
  expect(jobsState(ws).notes).toEqual({ plan: "ship never" });
});

describe.concurrent("runs of sessionless clients (R-ERA-5)", () => {
  test("two clients of one name using the same id at once each get their own answer, in one run; another name, or a run named in _meta, is another run", async () => {
    const ws = crmWorkspace(crmStateText());
    const proxy = await startHttpProxy(ws);
    const [ada, grace] = await Promise.all(
      ["c_001", "c_002"].map(async (id) => answerOf(await modernPost(proxy.url, 1, "tools/call", call("twin-agent", "get_customer", { id })))),
    );
    expect([ada.id, grace.id]).toEqual([1, 1]);
    expect(ada.result.content[0].text).toContain("Ada Lovelace");
    expect(grace.result.content[0].text).toContain("Grace Hopper");
    await answerOf(await modernPost(proxy.url, 1, "tools/call", call("other-agent", "get_customer", { id: "c_001" })));
    await answerOf(
      await modernPost(proxy.url, 2, "tools/call", call("twin-agent", "get_customer", { id: "c_003" }, { "io.synartesis/run": "nightly import" })),
    );
    await answerOf(
      await modernPost(proxy.url, 3, "tools/call", call("someone-else", "get_customer", { id: "c_003" }, { "io.synartesis/run": "nightly import" })),
    );

    const runs = journalRuns(ws.journal);
    expect(runs.map((r) => [r.label, r.status])).toEqual([
      ["twin-agent", "active"],
      ["other-agent", "active"],
      ["nightly import", "active"],
    ]);
    const labelOf = new Map(runs.map((r) => [r.id, r.label]));
    expect(journalRows(ws.journal).map((row) => labelOf.get(row.run_id))).toEqual([
      "twin-agent",
      "twin-agent",
      "other-agent",
      "nightly import",
      "nightly import",
    ]);

    proxy.proc.kill("SIGTERM");
    expect(await proxy.proc.exited).toBe(0);
    expect(journalRuns(ws.journal).map((r) => r.status)).toEqual(["complete", "complete", "complete"]);
  });

  test("--http-idle: a client's run ends complete after that long without a call; its next call opens a new run", async () => {
    const ws = crmWorkspace(crmStateText());
    // 0.05 minutes: 3 s, longer than a call takes on a loaded machine.
    const proxy = await startHttpProxy(ws, ["--http-idle", "0.05"]);
    await answerOf(await modernPost(proxy.url, 1, "tools/call", call("idle-agent", "update_customer", { id: "c_001", notes: "first" })));
    await until(() => journalRuns(ws.journal)[0]?.status === "complete", "the run to end after the idle gap");
    expect(proxy.stderr()).toContain('"msg":"run ended: no request for --http-idle","client":"idle-agent"');

    await answerOf(await modernPost(proxy.url, 2, "tools/call", call("idle-agent", "update_customer", { id: "c_001", notes: "second" })));
    const runs = journalRuns(ws.journal);
    expect(runs.map((r) => r.label)).toEqual(["idle-agent", "idle-agent"]);
    const rows = journalRows(ws.journal);
    expect(rows.map((row) => row.run_id)).toEqual([runs[0]!.id, runs[1]!.id]);
  });
});

test.concurrent("docs/eras.md's sessionless call over HTTP runs as shown, and is recorded in the run it names", async () => {
  const readme = readFileSync(join(ROOT, "docs", "eras.md"), "utf8");
  const script = /<!-- readme-era-http-example -->\n```sh\n([\s\S]*?)```/.exec(readme)![1]!;
  const shown = /<!-- readme-era-http-output -->\n```\n([\s\S]*?)```/.exec(readme)![1]!;
  const ws = crmWorkspace(crmStateText());
  const proxy = await startHttpProxy(ws);
  const home = tempDir();
  mkdirSync(join(home, ".config", "synartesis"), { recursive: true });
  writeFileSync(join(home, ".config", "synartesis", "token"), `${TOKEN}\n`);
  const result = await run(["-c", script.replaceAll("http://127.0.0.1:8080/mcp", proxy.url)], { bin: "bash", cwd: ws.dir, env: { HOME: home } });
  expect(result.code).toBe(0);
  expect(result.stdout.trimEnd()).toBe(shown.trimEnd());
  expect(journalRuns(ws.journal).map((r) => [r.label, r.status])).toEqual([["nightly cleanup", "active"]]);
  expect(JSON.parse(readFileSync(ws.state, "utf8")).customers.c_003.plan).toBe("pro");
});
