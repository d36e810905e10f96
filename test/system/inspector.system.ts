// The MCP Inspector CLI (@modelcontextprotocol/inspector 2.12.0), a real MCP
// client, starting the built `synartesis proxy` over stdio in front of the toy
// CRM: it lists the tools, calls one (journalled under the Inspector's name),
// and a gated call is held until `synartesis approve`, then runs once. Its
// exit codes: 0 success, 5 when the tool answers isError. And the same CLI
// over Streamable HTTP (--transport http) against `synartesis proxy --http`.
// The package declares Node >= 22.19, but its --cli mode runs on this
// machine's Node 20 (measured), so it runs with the `node` on PATH.
import { expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startHttpProxy, stopHttpProxiesAfterAll, TOKEN } from "../fixtures/http-kit.ts";
import { ADA, crmStateText, crmWorkspace, journalRows, journalRuns, type Workspace } from "../fixtures/proxy-kit.ts";
import { BIN, NODE_MODULES, run, type RunResult } from "../helpers.ts";

// The preload's default timeout reaches only the first file bun runs; the Inspector starts Node and the proxy for each call.
setDefaultTimeout(60_000);

stopHttpProxiesAfterAll();

const INSPECTOR = join(NODE_MODULES, "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js");

/** The Inspector's result; the proxy's stderr is kept only for lines above info (info lines say a run opened, and so on). */
async function inspector(ws: Workspace, args: string[]): Promise<RunResult> {
  const result = await run([INSPECTOR, "--cli", BIN, "proxy", "--manifest", ws.manifest, ...args], { bin: "node", cwd: ws.dir });
  const notInfo = result.stderr.split("\n").filter((line) => (line.trim() !== "" && !line.startsWith('{"ts":')) || /"level":"(warn|error)"/.test(line));
  return { ...result, stderr: notInfo.join("\n") };
}

test.concurrent("mcp-inspector --cli lists the toy CRM's tools through the proxy", async () => {
  const ws = crmWorkspace(crmStateText());
  const listed = await inspector(ws, ["--method", "tools/list"]);
  expect([listed.code, listed.stderr]).toEqual([0, ""]);
  const tools = JSON.parse(listed.stdout).tools as Array<{ name: string; annotations?: { readOnlyHint?: boolean } }>;
  expect(tools.map((tool) => tool.name).sort()).toEqual([
    "create_customer",
    "delete_customer",
    "get_customer",
    "restore_customer",
    "send_email",
    "update_customer",
  ]);
  expect(tools.find((tool) => tool.name === "get_customer")!.annotations?.readOnlyHint).toBe(true);
  // Listing is not a run: the Inspector connects for each command, and only calls leave runs (R-PROXY-16).
  expect(journalRuns(ws.journal)).toEqual([]);
});

test.concurrent("mcp-inspector --cli calls get_customer through the proxy: the record comes back and the call is journalled", async () => {
  const ws = crmWorkspace(crmStateText());
  const called = await inspector(ws, ["--method", "tools/call", "--tool-name", "get_customer", "--tool-arg", "id=c_001"]);
  expect([called.code, called.stderr]).toEqual([0, ""]);
  const result = JSON.parse(called.stdout);
  expect(result.structuredContent).toEqual(ADA);
  expect(JSON.parse(result.content[0].text)).toEqual(ADA);
  expect(journalRows(ws.journal).map((row) => [row.tool, row.class, row.status, JSON.parse(row.args)])).toEqual([
    ["get_customer", "readonly", "applied", { id: "c_001" }],
  ]);
});

test.concurrent("mcp-inspector --cli: send_email is held (exit 5, the approve command), runs once after `synartesis approve`", async () => {
  const ws = crmWorkspace(crmStateText());
  const email = ["--method", "tools/call", "--tool-name", "send_email", "--tool-arg", "to=ada@example.com", "subject=Hello", "body=Welcome back"];
  const held = await inspector(ws, email);
  expect(held.code).toBe(5);
  const text: string = JSON.parse(held.stdout).content[0].text;
  expect(text).toStartWith("HELD FOR APPROVAL — Synartesis did not run this call.");
  const actionId = /Action id: ([0-9a-f]+)\./.exec(text)![1]!;
  expect(JSON.parse(readFileSync(ws.state, "utf8")).outbox).toEqual([]);

  const approved = await run(["approve", actionId, "--journal", ws.journal], { cwd: ws.dir });
  expect(approved.code).toBe(0);
  const sent = await inspector(ws, email);
  expect([sent.code, sent.stderr]).toEqual([0, ""]);
  expect(JSON.parse(readFileSync(ws.state, "utf8")).outbox.map((mail: Record<string, string>) => [mail.to, mail.subject, mail.body])).toEqual([
    ["ada@example.com", "Hello", "Welcome back"],
  ]);
  // The held action keeps its approval; the call that ran is recorded next to it.
  expect(journalRows(ws.journal).map((row) => [row.tool, row.status])).toEqual([
    ["send_email", "approved"],
    ["send_email", "applied"],
  ]);
});

test("mcp-inspector --cli --transport http: lists the tools and calls one through `synartesis proxy --http`, with the bearer token", async () => {
  const ws = crmWorkspace(crmStateText());
  const proxy = await startHttpProxy(ws);
  const inspect = (args: string[], token = TOKEN) =>
    run([INSPECTOR, "--cli", "--transport", "http", "--server-url", proxy.url, "--header", `Authorization: Bearer ${token}`, ...args], {
      bin: "node",
      cwd: ws.dir,
    });
  const listed = await inspect(["--method", "tools/list"]);
  expect([listed.code, listed.stderr]).toEqual([0, ""]);
  expect((JSON.parse(listed.stdout).tools as Array<{ name: string }>).map((tool) => tool.name).sort()).toEqual([
    "create_customer",
    "delete_customer",
    "get_customer",
    "restore_customer",
    "send_email",
    "update_customer",
  ]);
  const called = await inspect(["--method", "tools/call", "--tool-name", "update_customer", "--tool-arg", "id=c_001", "notes=over http"]);
  expect([called.code, called.stderr]).toEqual([0, ""]);
  expect(JSON.parse(called.stdout).structuredContent).toEqual({ ...ADA, notes: "over http" });
  expect(journalRows(ws.journal).map((row) => [row.tool, row.status, JSON.parse(row.snapshot!).notes])).toEqual([["update_customer", "applied", ADA.notes]]);
  expect(journalRuns(ws.journal).map((r) => r.label)).toEqual(["inspector-cli"]);
  // A wrong token gets nothing (the Inspector then wants an interactive sign-in: exit 3).
  const refused = await inspect(["--method", "tools/list"], "not-the-token-0123456789");
  expect(refused.code).not.toBe(0);
  expect(refused.stdout).not.toContain("get_customer");
});
