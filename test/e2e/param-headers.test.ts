// Tool parameters mirrored into Mcp-Param-{Name} headers (the 2026-07-28
// Streamable HTTP binding's x-mcp-header), through the built binary, with the
// v2 notes fixture's marked tools (--marked): as the server sessionless HTTP
// clients talk to, the proxy leaves tools with invalid markings out of their
// tools/list (warning) and runs a call only when its headers agree with its
// arguments (else 400, HeaderMismatch, nothing run or recorded).
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import type { RawRule } from "../../src/manifest/schema.ts";
import { eraWorkspace, notesRules, notesServer, readNotes, reversibleNoteRule, writeNotes } from "../fixtures/era-kit.ts";
import { eventData, modernHttpClient, postRaw, startHttpProxy, stopHttpProxiesAfterAll } from "../fixtures/http-kit.ts";
import { journalRows, journalRuns } from "../fixtures/proxy-kit.ts";
import { until } from "../helpers.ts";

stopHttpProxiesAfterAll();
setDefaultTimeout(60_000);

const MODERN = "2026-07-28";
const logLines = (stderr: string) =>
  stderr
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line));

/** The rules for stamp_note, a reversible write of a note like put_note. */
function stampRules(name: string): RawRule[] {
  return ["stamp_note", "confirm_stamp"].map((tool) => reversibleNoteRule(name, tool));
}

/** A 2026-era tools/call (with `more` params: a retry's) POSTed with the binding's standard headers and `headers` besides. */
function callWith(
  url: string,
  id: number,
  tool: string,
  args: Record<string, unknown>,
  headers: Record<string, string> = {},
  more: Record<string, unknown> = {},
): Promise<Response> {
  const _meta = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": { elicitation: { form: {} } },
    "io.modelcontextprotocol/clientInfo": { name: "marked-agent", version: "1.0.0" },
  };
  const body = JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: tool, arguments: args, ...more, _meta } });
  return postRaw(url, body, { "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": tool, ...headers });
}

async function notesBehindHttpProxy() {
  const ws = eraWorkspace(notesServer("notes", true, ["--marked"]), [...notesRules("notes"), ...stampRules("notes")]);
  writeNotes(ws, "notes", { notes: { plan: "ship on Friday" }, outbox: [] });
  const proxy = await startHttpProxy(ws);
  return { ws, proxy, notes: () => readNotes(ws, "notes").notes };
}

describe.concurrent("as the server of sessionless HTTP clients", () => {
  test("tools/list leaves out the tools whose x-mcp-header marking is invalid, with a warning naming each and why", async () => {
    const { proxy } = await notesBehindHttpProxy();
    const body = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/list",
      params: { _meta: { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {} } },
    });
    const response = await postRaw(proxy.url, body, { "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list" });
    expect(response.status).toBe(200);
    const [line] = await eventData(response);
    const listed = JSON.parse(line!).result.tools;
    expect(listed.map((tool: { name: string }) => tool.name).sort()).toEqual([
      "confirm_put",
      "confirm_stamp",
      "get_note",
      "put_note",
      "send_note",
      "stamp_note",
      "summarize",
    ]);
    const stamp = listed.find((tool: { name: string }) => tool.name === "stamp_note");
    expect(stamp.inputSchema.properties.key["x-mcp-header"]).toBe("Key");
    // The log line is written before the answer, but read from the proxy's stderr on its own time.
    const warned = () => logLines(proxy.stderr()).filter((entry) => entry.msg.includes("x-mcp-header"));
    const warnings = await until(() => warned().length >= 2 && warned(), "the warnings about the two tools");
    expect(warnings.map(({ level, msg, tool, reason }) => ({ level, msg, tool, reason }))).toEqual([
      {
        level: "warn",
        msg: "a tool is left out of tools/list for 2026-07-28 HTTP clients: its x-mcp-header marking is invalid",
        tool: "rate_note",
        reason: "rating: x-mcp-header may only mark a string, integer or boolean property, not number",
      },
      {
        level: "warn",
        msg: "a tool is left out of tools/list for 2026-07-28 HTTP clients: its x-mcp-header marking is invalid",
        tool: "tag_notes",
        reason:
          'tags.<items>: x-mcp-header may only mark a property reached from the root through "properties" alone (not items, composition, conditionals, $defs or $ref)',
      },
    ]);
  });

  test("a call whose Mcp-Param-* headers are missing, disagree or carry invalid characters: 400 with HeaderMismatch (-32020), nothing run or recorded; agreeing (base64 for non-ASCII): run", async () => {
    const { ws, proxy, notes } = await notesBehindHttpProxy();
    const args = { key: "plan", text: "ship in März", copies: 2, urgent: true };
    const good = {
      "Mcp-Param-Key": "plan",
      "Mcp-Param-Text": `=?base64?${Buffer.from("ship in März").toString("base64")}?=`,
      "Mcp-Param-Copies": "2",
      "Mcp-Param-Urgent": "true",
    };
    const refused = async (headers: Record<string, string>) => {
      const response = await callWith(proxy.url, 5, "stamp_note", args, headers);
      expect([response.status, response.headers.get("content-type")]).toEqual([400, "application/json"]);
      const body = await response.json();
      expect([body.id, body.error.code]).toEqual([5, -32020]);
      return body.error.message as string;
    };
    const { "Mcp-Param-Key": _, ...withoutKey } = good;
    expect(await refused({})).toBe('Header mismatch: the Mcp-Param-Key header is missing (arguments.key is "plan")');
    expect(await refused(withoutKey)).toBe('Header mismatch: the Mcp-Param-Key header is missing (arguments.key is "plan")');
    expect(await refused({ ...good, "Mcp-Param-Key": "other" })).toBe('Header mismatch: the Mcp-Param-Key header says "other" but arguments.key is "plan"');
    expect(await refused({ ...good, "Mcp-Param-Copies": "3" })).toBe('Header mismatch: the Mcp-Param-Copies header says "3" but arguments.copies is 2');
    expect(await refused({ ...good, "Mcp-Param-Urgent": "yes" })).toBe('Header mismatch: the Mcp-Param-Urgent header says "yes" but arguments.urgent is true');
    expect(await refused({ ...good, "Mcp-Param-Text": "ship in M\u00e4rz" })).toBe(
      "Header mismatch: the Mcp-Param-Text header has characters a header value may not carry (encode it as =?base64?…?=)",
    );
    expect(await refused({ ...good, "Mcp-Param-Text": "=?base64?/w==?=" })).toBe(
      "Header mismatch: the Mcp-Param-Text header's =?base64?…?= value is not valid base64 of UTF-8 text",
    );
    expect(notes()).toEqual({ plan: "ship on Friday" });
    expect(journalRows(ws.journal)).toEqual([]);

    // 2.0 is 2; an Mcp-Param-* header nothing marks is left alone.
    const ran = await callWith(proxy.url, 6, "stamp_note", args, { ...good, "Mcp-Param-Copies": "2.0", "Mcp-Param-Unmarked": "whatever" });
    expect(ran.status).toBe(200);
    const answer = JSON.parse((await eventData(ran))[0]!);
    expect([answer.id, answer.result.isError ?? false]).toEqual([6, false]);
    expect(notes()).toEqual({ plan: "ship in März ship in März!" });
    expect(journalRows(ws.journal).map((row) => [row.tool, row.status])).toEqual([["stamp_note", "applied"]]);
  });

  test("a tool left out of the list is not run when called all the same (Unknown tool, nothing recorded); unmarked tools need no Mcp-Param-* header", async () => {
    const { ws, proxy, notes } = await notesBehindHttpProxy();
    const response = await callWith(proxy.url, 7, "rate_note", { key: "plan", rating: 4.5 }, { "Mcp-Param-Rating": "4.5" });
    expect(response.status).toBe(200);
    const answer = JSON.parse((await eventData(response))[0]!);
    expect(answer.error).toEqual({
      code: -32602,
      message:
        "Unknown tool: rate_note (not offered over HTTP: its x-mcp-header marking is invalid: rating: x-mcp-header may only mark a string, integer or boolean property, not number)",
    });
    expect(notes()).toEqual({ plan: "ship on Friday" });
    expect(journalRows(ws.journal)).toEqual([]);

    const put = await callWith(proxy.url, 8, "put_note", { key: "plan", text: "ship on Monday" });
    expect(JSON.parse((await eventData(put))[0]!).result.isError ?? false).toBe(false);
    expect(notes()).toEqual({ plan: "ship on Monday" });
    expect(journalRuns(ws.journal).map((run) => run.label)).toEqual(["marked-agent"]);
  });

  test("a retry that answers a call's input_required is a tools/call too: without the headers, 400 and the call still waits; with them, it completes, one action", async () => {
    const { ws, proxy, notes } = await notesBehindHttpProxy();
    const args = { key: "plan", text: "ship never" };
    const first = JSON.parse((await eventData(await callWith(proxy.url, 1, "confirm_stamp", args, { "Mcp-Param-Key": "plan" })))[0]!).result;
    expect(first).toMatchObject({ resultType: "input_required", inputRequests: { confirm: { method: "elicitation/create" } } });
    const retry = { inputResponses: { confirm: { action: "accept", content: { confirm: true } } }, requestState: first.requestState };

    const refused = await callWith(proxy.url, 2, "confirm_stamp", args, {}, retry);
    expect(refused.status).toBe(400);
    expect((await refused.json()).error).toEqual({ code: -32020, message: 'Header mismatch: the Mcp-Param-Key header is missing (arguments.key is "plan")' });
    expect(notes()).toEqual({ plan: "ship on Friday" });

    const done = await callWith(proxy.url, 3, "confirm_stamp", args, { "Mcp-Param-Key": "plan" }, retry);
    expect(done.status).toBe(200);
    expect(JSON.parse((await eventData(done))[0]!)).toMatchObject({
      id: 3,
      result: { resultType: "complete", structuredContent: { key: "plan", text: "ship never" } },
    });
    expect(notes()).toEqual({ plan: "ship never" });
    expect(journalRows(ws.journal).map((row) => [row.tool, row.status])).toEqual([["confirm_stamp", "applied"]]);
  });

  test("the v2 SDK's own client over HTTP mirrors the marked parameters, and its call runs", async () => {
    const { ws, proxy, notes } = await notesBehindHttpProxy();
    const { client } = await modernHttpClient(proxy.url, "sdk-agent");
    const names = (await client.listTools()).tools.map((tool) => tool.name);
    expect(names).toContain("stamp_note");
    expect(names).not.toContain("rate_note");
    const result = await client.callTool({ name: "stamp_note", arguments: { key: "plan", text: " ship\nlater ", urgent: false } });
    expect(result.isError ?? false).toBe(false);
    await client.close();
    expect(notes()).toEqual({ plan: " ship\nlater " });
    expect(journalRows(ws.journal).map((row) => [row.tool, row.status])).toEqual([["stamp_note", "applied"]]);
  });
});
