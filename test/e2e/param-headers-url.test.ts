// Tool parameters mirrored into Mcp-Param-{Name} headers (the 2026-07-28
// binding's x-mcp-header), through the built binary, with Synartesis as the
// client: a 2026-era `url:` server (the v2 notes fixture over HTTP with its
// marked tools, whose SDK handler requires the headers) gets them with every
// call, encoded as the binding says; its tools with invalid markings are left
// out (warning); a call refused for its headers is sent again once after the
// tools are listed again.
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BIN, connect, tempDir, until } from "../helpers.ts";
import { eraWorkspace, notesScript, notesRules, reversibleNoteRule, serveFixture } from "../fixtures/era-kit.ts";
import { BUN, journalRows, type Workspace } from "../fixtures/proxy-kit.ts";

// Each file sets its own: the preload's default reaches only the first file bun runs.
setDefaultTimeout(60_000);

const fronts: Array<ReturnType<typeof Bun.serve>> = [];
afterAll(async () => {
  for (const front of fronts.splice(0)) await front.stop(true);
});

const STAMP_RULES = [reversibleNoteRule("notes", "stamp_note")];

/** What the front saw of one POST: its method, its tool, its Mcp-Param-* headers, the status it got. */
interface Seen {
  method: string | null;
  name: string | null;
  params: Record<string, string>;
  status: number;
}

/** The marked notes fixture over HTTP (2026-07-28 only) behind a front that records each POST, and may change an answer's text. */
async function markedNotesOverHttp(change?: (seen: Seen, text: string) => string): Promise<{ ws: Workspace; notes(): Record<string, string>; seen: Seen[] }> {
  const notesFile = join(tempDir("syn-notes-"), "notes.json");
  writeFileSync(notesFile, JSON.stringify({ notes: { plan: "ship on Friday" }, outbox: [] }));
  const target = await serveFixture([BUN, notesScript(), "--state", notesFile, "--modern-only", "--marked", "--http"]);
  const seen: Seen[] = [];
  const front = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: async (request) => {
      const params = Object.fromEntries([...request.headers].filter(([name]) => name.toLowerCase().startsWith("mcp-param-")));
      const response = await fetch(target, { method: request.method, headers: request.headers, body: await request.text() });
      const entry = { method: request.headers.get("mcp-method"), name: request.headers.get("mcp-name"), params, status: response.status };
      seen.push(entry);
      if (!change) return response;
      const text = change(entry, await response.text());
      return new Response(text, { status: response.status, headers: { "Content-Type": response.headers.get("content-type") ?? "application/json" } });
    },
  });
  fronts.push(front);
  const ws = eraWorkspace({ notes: { url: `http://127.0.0.1:${front.port}/mcp` } }, [...notesRules("notes"), ...STAMP_RULES]);
  return { ws, notes: () => JSON.parse(readFileSync(notesFile, "utf8")).notes, seen };
}

const calls = (seen: Seen[]) => seen.filter((entry) => entry.method === "tools/call").map(({ name, params, status }) => ({ name, params, status }));

// Each test has its own fixture, folder, journal and processes: they run side by side.
describe.concurrent("a 2026-era url: server whose tools mark parameters x-mcp-header", () => {
  test("each call carries the marked parameters' headers (base64 where the binding says), and the server runs it; tools with invalid markings are left out, with a warning", async () => {
    const { ws, notes, seen } = await markedNotesOverHttp();
    await using agent = await connect(BIN, ["proxy", "--manifest", ws.manifest], { cwd: ws.dir, name: "agent-2025" });
    const names = (await agent.client.listTools()).tools.map((tool) => tool.name).sort();
    expect(names).toEqual(["confirm_put", "confirm_stamp", "get_note", "put_note", "send_note", "stamp_note", "summarize"]);

    const result = await agent.client.callTool({ name: "stamp_note", arguments: { key: "plan", text: "ship in März", copies: 2, urgent: true } });
    expect(result.isError ?? false).toBe(false);
    expect(notes()).toEqual({ plan: "ship in März ship in März!" });
    const stamped = calls(seen).filter((entry) => entry.name === "stamp_note");
    expect(stamped).toEqual([
      {
        name: "stamp_note",
        params: {
          "mcp-param-key": "plan",
          "mcp-param-text": `=?base64?${Buffer.from("ship in März").toString("base64")}?=`,
          "mcp-param-copies": "2",
          "mcp-param-urgent": "true",
        },
        status: 200,
      },
    ]);
    // Parameters without a value send no header.
    await agent.client.callTool({ name: "stamp_note", arguments: { key: "plan", text: "ship" } });
    expect(calls(seen).filter((entry) => entry.name === "stamp_note")[1]!.params).toEqual({ "mcp-param-key": "plan", "mcp-param-text": "ship" });
    expect(notes()).toEqual({ plan: "ship" });
    await agent.client.close();

    expect(journalRows(ws.journal).map((row) => [row.tool, row.status])).toEqual([
      ["stamp_note", "applied"],
      ["stamp_note", "applied"],
    ]);
    const warned = () =>
      agent
        .stderr()
        .split("\n")
        .filter((line) => line.includes("x-mcp-header marking is invalid"))
        .map((line) => JSON.parse(line));
    const warnings = await until(() => warned().length >= 2 && warned(), "the warnings about the two tools");
    expect(warnings.map(({ level, server, tool }) => [level, server, tool])).toEqual([
      ["warn", "notes", "rate_note"],
      ["warn", "notes", "tag_notes"],
    ]);
    expect(warnings[0].reason).toBe("rating: x-mcp-header may only mark a string, integer or boolean property, not number");
  }, 60_000);

  test("a call refused for its headers (its markings were not known) is sent again once, after the tools are listed again; it runs once, one action", async () => {
    let listings = 0;
    // The first listing (at start) comes without the markings, so the first call goes without headers.
    const { ws, notes, seen } = await markedNotesOverHttp((entry, text) =>
      entry.method === "tools/list" && listings++ === 0 ? text.replace(/"x-mcp-header":"[^"]*",?/g, "").replaceAll(",}", "}") : text,
    );
    await using agent = await connect(BIN, ["proxy", "--manifest", ws.manifest], { cwd: ws.dir, name: "agent-2025" });
    const result = await agent.client.callTool({ name: "stamp_note", arguments: { key: "plan", text: "ship later" } });
    expect(result.isError ?? false).toBe(false);
    await agent.client.close();
    expect(calls(seen).filter((entry) => entry.name === "stamp_note")).toEqual([
      { name: "stamp_note", params: {}, status: 400 },
      { name: "stamp_note", params: { "mcp-param-key": "plan", "mcp-param-text": "ship later" }, status: 200 },
    ]);
    expect(seen.filter((entry) => entry.method === "tools/list")).toHaveLength(2);
    expect(notes()).toEqual({ plan: "ship later" });
    expect(journalRows(ws.journal).map((row) => [row.tool, row.status])).toEqual([["stamp_note", "applied"]]);
  }, 60_000);
});
