// `url:` servers in the 2026-07-28 era (R-ERA-1), through the built binary:
// the v2-SDK notes fixture served over Streamable HTTP, refusing every 2025
// request, is probed with server/discover and spoken to in 2026-07-28 (each
// request a POST with the headers that era requires). A 2025 client and a
// 2026 client each list, read, write (undone exactly) and complete an
// elicitation through it (bridged for the 2025 client); one action per call.
// An answer lost on the way is an unknown outcome; a refusal ran nothing.
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { BIN, connect, run, tempDir, until } from "../helpers.ts";
import { connectModern, eraWorkspace, notesScript, notesRules, serveFixture } from "../fixtures/era-kit.ts";
import { BUN, journalRows, journalRuns, type Workspace } from "../fixtures/proxy-kit.ts";
import { eventData } from "../fixtures/http-kit.ts";

// Each file sets its own: the preload's default reaches only the first file bun runs.
setDefaultTimeout(60_000);

const fronts: Array<ReturnType<typeof Bun.serve>> = [];
afterAll(async () => {
  for (const front of fronts.splice(0)) await front.stop(true);
});

/** The notes fixture over HTTP (2026-07-28 only), its notes in a folder of its own; a workspace whose manifest has it as `url:` server "notes". */
async function notesOverHttp(
  front?: (request: Request, forward: () => Promise<Response>) => Promise<Response>,
): Promise<{ ws: Workspace; notes(): Record<string, string> }> {
  const notesFile = join(tempDir("syn-notes-"), "notes.json");
  writeFileSync(notesFile, JSON.stringify({ notes: { plan: "ship on Friday" }, outbox: [] }));
  let url = await serveFixture([BUN, notesScript(), "--state", notesFile, "--modern-only", "--http"]);
  if (front) {
    const target = url;
    const served = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: (request) => front(request, async () => fetch(target, { method: request.method, headers: request.headers, body: await request.clone().text() })),
    });
    fronts.push(served);
    url = `http://127.0.0.1:${served.port}/mcp`;
  }
  const ws = eraWorkspace({ notes: { url } }, notesRules("notes"));
  return { ws, notes: () => JSON.parse(readFileSync(notesFile, "utf8")).notes };
}

const text = (result: any) => result.content.map((block: any) => block.text).join("\n") as string;

// Each test has its own fixture, folder, journal and processes: they run side by side.
describe.concurrent("a url: server that speaks only 2026-07-28", () => {
  test("a 2025 client: spoken to in 2026-07-28 (logged), a read, a write undone exactly, its input_required asked of the client as an elicitation; one action per call", async () => {
    const { ws, notes } = await notesOverHttp();
    const connection = await connect(BIN, ["proxy", "--manifest", ws.manifest], { cwd: ws.dir, name: "agent-2025", capabilities: { elicitation: {} } });
    const { client } = connection;
    const asked: string[] = [];
    client.setRequestHandler(ElicitRequestSchema, async (request) => (asked.push(request.params.message), { action: "accept", content: { confirm: true } }));

    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(["get_note", "put_note", "confirm_put"]));
    expect(text(await client.callTool({ name: "get_note", arguments: { key: "plan" } }))).toContain('"text":"ship on Friday"');
    expect((await client.callTool({ name: "put_note", arguments: { key: "plan", text: "ship on Monday" } })).isError).toBeFalsy();
    expect(text(await client.callTool({ name: "confirm_put", arguments: { key: "plan", text: "ship never" } }))).toContain('"text":"ship never"');
    expect(asked).toEqual(['Write "ship never" to note plan?']);
    await client.close();
    expect(connection.stderr()).toMatch(/"msg":"server started","server":"notes","serverInfo":"v2-notes 2.4.0","protocol":"2026-07-28"/);
    expect(notes()).toEqual({ plan: "ship never" });

    expect(journalRows(ws.journal).map((row) => [row.tool, row.status])).toEqual([
      ["get_note", "applied"],
      ["put_note", "applied"],
      ["confirm_put", "applied"],
    ]);
    expect(journalRuns(ws.journal).map((r) => [r.label, r.status])).toEqual([["agent-2025", "complete"]]);
    const undo = await run(["undo", "--journal", ws.journal, "--manifest", ws.manifest], { cwd: ws.dir });
    expect([undo.code, undo.stderr]).toEqual([0, ""]);
    expect(notes()).toEqual({ plan: "ship on Friday" });
  }, 60_000);

  test("a 2026 client: its input_required passes through and its retry completes the call, one action", async () => {
    const { ws, notes } = await notesOverHttp();
    const { client } = await connectModern(ws, { name: "agent-2026", capabilities: { elicitation: { form: {} } } });
    const asked: string[] = [];
    client.setRequestHandler("elicitation/create", async (request) => (asked.push(request.params.message), { action: "accept", content: { confirm: true } }));
    expect(text(await client.callTool({ name: "confirm_put", arguments: { key: "plan", text: "ship later" } }))).toContain('"text":"ship later"');
    expect(asked).toEqual(['Write "ship later" to note plan?']);
    await client.close();
    expect(notes()).toEqual({ plan: "ship later" });
    expect(journalRows(ws.journal).map((row) => [row.tool, row.status])).toEqual([["confirm_put", "applied"]]);
  }, 60_000);
});

// A front that forwards with fetch from inside this process's Bun.serve, while other tests here read
// their proxies' stdout, left those reads stalled in Bun 1.4.5: the answer the proxy had written sat
// unread in the socket (ss: queued; epoll: a disarmed one-shot) until the test timed out. Four copies
// of this file at once on two cores: 6 runs of 160 stalled; with these two tests apart, none of 160.
// (Reading through Bun.spawn instead of the SDK's child_process stalled as well.) So they run alone.
describe("a url: server that speaks only 2026-07-28, behind a front", () => {
  test("a server that keeps its event stream open after the answer: the answer is taken, and the stream closed by the proxy, not held", async () => {
    let streamsClosed = 0;
    let pings: ReturnType<typeof setInterval> | undefined;
    const { ws } = await notesOverHttp(async (request, forward) => {
      if (request.headers.get("mcp-method") !== "tools/call") return forward();
      const answered = await forward();
      const lines = answered.headers.get("content-type")?.startsWith("text/event-stream") ? await eventData(answered) : [await answered.text()];
      const encoder = new TextEncoder();
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          for (const line of lines) controller.enqueue(encoder.encode(`event: message\ndata: ${line}\n\n`));
          pings = setInterval(() => controller.enqueue(encoder.encode(": ping\n\n")), 100);
        },
        cancel() {
          clearInterval(pings);
          streamsClosed++;
        },
      });
      return new Response(body, { headers: { "Content-Type": "text/event-stream" } });
    });
    await using agent = await connect(BIN, ["proxy", "--manifest", ws.manifest], { cwd: ws.dir, name: "agent-2025" });
    expect(text(await agent.client.callTool({ name: "get_note", arguments: { key: "plan" } }))).toContain('"text":"ship on Friday"');
    await until(() => streamsClosed === 1, "the proxy to close the server's event stream after its answer");
    await agent.client.close();
  }, 60_000);

  test("a call whose answer is lost on the way (HTTP 504 after the server ran it) is an unknown outcome, recorded pending; a refusal (4xx) is an error that ran nothing", async () => {
    const { ws, notes } = await notesOverHttp(async (request, forward) => {
      const method = request.headers.get("mcp-method");
      const name = request.headers.get("mcp-name");
      if (method === "tools/call" && name === "put_note") {
        await (await forward()).text();
        return new Response("upstream timed out", { status: 504 });
      }
      if (method === "tools/call" && name === "confirm_put")
        return Response.json({ jsonrpc: "2.0", id: null, error: { code: -32000, message: "Bad Request: quota exceeded" } }, { status: 429 });
      return forward();
    });
    await using agent = await connect(BIN, ["proxy", "--manifest", ws.manifest], { cwd: ws.dir, name: "agent-2025" });
    const lost = await agent.client.callTool({ name: "put_note", arguments: { key: "plan", text: "ship on Monday" } });
    expect(lost.isError).toBe(true);
    expect(text(lost)).toContain("Its outcome is unknown and is recorded as pending");
    expect(notes()).toEqual({ plan: "ship on Monday" });
    const refused = agent.client.callTool({ name: "confirm_put", arguments: { key: "plan", text: "ship never" } });
    await expect(refused).rejects.toThrow("HTTP 429 from the server: Bad Request: quota exceeded");
    expect(notes()).toEqual({ plan: "ship on Monday" });
    await agent.client.close();
    expect(journalRows(ws.journal).map((row) => [row.tool, row.status])).toEqual([
      ["put_note", "pending"],
      ["confirm_put", "failed"],
    ]);
  }, 60_000);
});
