// Client sessions in-process (issue 14): a ServerPool whose server is linked
// in memory (no child process), one or two ClientSessions on it, a real
// journal file. Forwarding, a held call, a cancellation before forwarding,
// a server's request routed back to the session whose call caused it (and
// refused when nobody can tell), notifications, and two sessions whose writes
// to one server are serialised.
import { describe, expect, test } from "bun:test";
import { ClientSession } from "../../src/proxy/session/client-session.ts";
import { notesPools, recordingIn, type NotesPool } from "../fixtures/in-memory-notes.ts";
import { journalRows } from "../fixtures/proxy-kit.ts";

/** A signal that never aborts: no second signal. */
const NEVER = new AbortController().signal;
/** Each test takes milliseconds; a routing bug shows as a wait that never ends, cut short here. */
const HANG = 10_000;

/** One client connection, driven by the test: lines in, lines out. */
class TestClient {
  readonly session: ClientSession;
  private readonly written: string[] = [];
  /** Every line the session wrote, in order (next() takes them from `written` only). */
  readonly all: string[] = [];
  private readonly waiters: Array<() => void> = [];

  constructor(
    private readonly name: string,
    setup: Setup,
  ) {
    this.session = new ClientSession({
      ...recordingIn(setup),
      write: (line) => {
        this.written.push(line);
        this.all.push(line);
        for (const wake of this.waiters.splice(0)) wake();
      },
      initializeWaitMs: 0,
    });
  }

  send(message: unknown): void {
    this.session.handleLine(typeof message === "string" ? message : JSON.stringify(message));
  }

  /** The next message the session writes that matches (earlier ones are kept). */
  async next(predicate: (msg: any) => boolean): Promise<any> {
    for (;;) {
      const index = this.written.findIndex((line) => predicate(JSON.parse(line)));
      if (index !== -1) return JSON.parse(this.written.splice(index, 1)[0]!);
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  response(id: number | string): Promise<any> {
    return this.next((m) => m.id === id && (m.result !== undefined || m.error !== undefined));
  }

  async initialize(capabilities: Record<string, unknown> = {}): Promise<any> {
    this.send({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities, clientInfo: { name: this.name, version: "1.0.0" } },
    });
    const reply = await this.response(0);
    this.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    return reply;
  }

  call(id: number | string, name: string, args: Record<string, unknown>, meta?: Record<string, unknown>): void {
    this.send({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args, ...(meta ? { _meta: meta } : {}) } });
  }

  /** Every request received is answered or dropped, and the run is closed. */
  finish(): Promise<unknown> {
    return this.session.finish({ drainMs: 10_000, forced: NEVER });
  }
}

type Setup = NotesPool;
const setUp = notesPools("syn-session-");

const rows = (setup: Setup) => journalRows(setup.journalPath).map((r) => ({ tool: r.tool, args: JSON.parse(r.args), status: r.status, error: r.error }));

describe("one session", () => {
  test(
    "forwarding: initialize, tools/list and a read come back with the client's own ids, and the read is journalled",
    async () => {
      const setup = await setUp();
      const client = new TestClient("agent", setup);
      const hello = await client.initialize();
      expect(hello.result.serverInfo).toEqual({ name: "notes", version: "1.0.0" });
      expect(hello.result.instructions).toStartWith("This connection goes through Synartesis");

      client.send('{"jsonrpc":"2.0","id":"list-1","method":"tools/list"}');
      const listed = await client.response("list-1");
      expect(listed.result.tools.map((t: { name: string }) => t.name)).toEqual(["read_note", "write_note", "send_note", "ask_model", "announce"]);

      // An id written as 1.0 comes back as exactly those bytes.
      client.send('{"jsonrpc":"2.0","id":1.0,"method":"tools/call","params":{"name":"read_note","arguments":{"key":"x"}}}');
      await client.next((m) => m.id === 1);
      expect(client.all.at(-1)).toContain('"id":1.0');
      expect(JSON.parse(client.all.at(-1)!).result.structuredContent).toEqual({ key: "x", value: "X0" });

      await client.finish();
      expect(rows(setup)).toEqual([{ tool: "read_note", args: { key: "x" }, status: "applied", error: null }]);
      expect(setup.world.events).toEqual(["read_note x"]);
    },
    HANG,
  );

  test(
    "a held call: an irreversible tool is refused at once with the command that approves it, recorded gated, never sent",
    async () => {
      const setup = await setUp();
      const client = new TestClient("agent", setup);
      await client.initialize();
      client.call(1, "send_note", { to: "everyone" });
      const held = await client.response(1);
      expect(held.result.isError).toBe(true);
      const text: string = held.result.content[0].text;
      expect(text).toStartWith("HELD FOR APPROVAL");
      const [row] = journalRows(setup.journalPath);
      expect(row).toMatchObject({ tool: "send_note", status: "gated" });
      expect(text).toContain(`synartesis approve ${row!.id.slice(0, 8)}`);
      await client.finish();
      expect(setup.world.events).toEqual([]);
    },
    HANG,
  );

  test(
    "a cancellation before forwarding: a write waiting for its turn is never sent, gets no answer, and is recorded failed",
    async () => {
      const setup = await setUp();
      const client = new TestClient("agent", setup);
      await client.initialize();
      client.call(1, "write_note", { key: "x", value: "X1", hold: "first" });
      await setup.world.waiting("first");
      client.call(2, "write_note", { key: "x", value: "X2" });
      client.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 2, reason: "changed my mind" } });
      setup.world.open("first");
      expect((await client.response(1)).result.structuredContent).toEqual({ key: "x", value: "X1" });
      await client.finish();

      expect(client.all.some((line) => JSON.parse(line).id === 2)).toBe(false);
      // Call 2 was waiting when call 1 wrote: call 1's post-read was its pre-read too (one read); then it stopped, its write never sent.
      expect(setup.world.events).toEqual(["read_note x", "write_note x start", "write_note x end", "read_note x"]);
      expect(rows(setup)).toEqual([
        { tool: "write_note", args: { key: "x", value: "X1", hold: "first" }, status: "applied", error: null },
        { tool: "write_note", args: { key: "x", value: "X2" }, status: "failed", error: "the client cancelled it before it was forwarded" },
      ]);
    },
    HANG,
  );

  test(
    "a write waiting for its turn shares the previous write's post-read when it reads the same record first: one read, the state the write left",
    async () => {
      const setup = await setUp();
      const client = new TestClient("agent", setup);
      await client.initialize();
      client.call(1, "write_note", { key: "x", value: "X1", hold: "first" });
      await setup.world.waiting("first");
      client.call(2, "write_note", { key: "x", value: "X2" });
      setup.world.open("first");
      expect((await client.response(2)).result.structuredContent).toEqual({ key: "x", value: "X2" });
      await client.finish();
      expect(setup.world.events).toEqual([
        "read_note x",
        "write_note x start",
        "write_note x end",
        "read_note x",
        "write_note x start",
        "write_note x end",
        "read_note x",
      ]);
      const [first, second] = journalRows(setup.journalPath);
      expect(JSON.parse(second!.snapshot!)).toEqual({ key: "x", value: "X1" });
      expect(JSON.parse(second!.snapshot!)).toEqual(JSON.parse(first!.post_state!));
      expect(JSON.parse(second!.post_state!)).toEqual({ key: "x", value: "X2" });
    },
    HANG,
  );

  test(
    "a write that arrives once the previous one is over reads for itself",
    async () => {
      const setup = await setUp();
      const client = new TestClient("agent", setup);
      await client.initialize();
      client.call(1, "write_note", { key: "x", value: "X1" });
      await client.response(1);
      client.call(2, "write_note", { key: "x", value: "X2" });
      await client.response(2);
      await client.finish();
      expect(setup.world.events).toEqual([
        "read_note x",
        "write_note x start",
        "write_note x end",
        "read_note x",
        "read_note x",
        "write_note x start",
        "write_note x end",
        "read_note x",
      ]);
    },
    HANG,
  );

  test(
    "the next write's pre-read runs beside the previous write's post-read, but its write waits until that post-read is answered",
    async () => {
      const setup = await setUp();
      const client = new TestClient("agent", setup);
      await client.initialize();
      client.call(1, "write_note", { key: "x", value: "X1", hold: "first" });
      await setup.world.waiting("first");
      client.call(2, "write_note", { key: "y", value: "Y1" });
      setup.world.holdRead("x", "post-read");
      setup.world.open("first");
      await setup.world.waiting("post-read");
      // Call 2 begins while call 1's post-read is held: its pre-read is answered...
      while (!setup.world.events.includes("read_note y")) await Bun.sleep(5);
      setup.world.open("post-read");
      // An answer leaves only once its outcome is in the journal (committed with call 2's intent: call 2 was waiting).
      expect((await client.response(1)).result.structuredContent).toEqual({ key: "x", value: "X1" });
      expect(journalRows(setup.journalPath)[0]).toMatchObject({ status: "applied" });
      expect((await client.response(2)).result.structuredContent).toEqual({ key: "y", value: "Y1" });
      await client.finish();
      // ...and its write comes only after call 1's post-read was answered.
      expect(setup.world.events).toEqual([
        "read_note x",
        "write_note x start",
        "write_note x end",
        "read_note y",
        "read_note x",
        "write_note y start",
        "write_note y end",
        "read_note y",
      ]);
      const [first, second] = journalRows(setup.journalPath);
      expect(JSON.parse(first!.post_state!)).toEqual({ key: "x", value: "X1" });
      expect(JSON.parse(second!.snapshot!)).toEqual({ key: "y", value: "Y0" });
      expect(second!.seq).toBeGreaterThan(first!.seq);
    },
    HANG,
  );

  test(
    "bad frames are answered with SDK error codes and never reach the server",
    async () => {
      const setup = await setUp();
      const client = new TestClient("agent", setup);
      await client.initialize();
      client.send("{not json");
      expect((await client.next((m) => m.error?.code === -32700)).id).toBeNull();
      client.send('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":"name=read_note"}');
      expect((await client.response(7)).error.code).toBe(-32602);
      client.send('{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"no_such_tool"}}');
      expect((await client.response(8)).error).toEqual({ code: -32602, message: "Unknown tool: no_such_tool" });
      client.send('{"jsonrpc":"2.0","id":9,"method":"nothing/here"}');
      expect((await client.response(9)).error.code).toBe(-32601);
      await client.finish();
      expect(setup.world.events).toEqual([]);
      expect(rows(setup)).toEqual([]);
    },
    HANG,
  );
});

/** Two clients that offer sampling, both initialized, on the one pool. */
async function twoClients(setup: Setup): Promise<[TestClient, TestClient]> {
  const a = new TestClient("agent-a", setup);
  const b = new TestClient("agent-b", setup);
  await a.initialize({ sampling: {} });
  await b.initialize({ sampling: {} });
  return [a, b];
}

describe("two sessions on one pool", () => {
  test(
    "one server connection serves both; a write of one waits for the other's write to that server to finish (R-PROXY-6)",
    async () => {
      const setup = await setUp();
      const a = new TestClient("agent-a", setup);
      const b = new TestClient("agent-b", setup);
      await a.initialize();
      await b.initialize();
      expect(setup.world.connections).toBe(1);

      a.call(1, "write_note", { key: "x", value: "XA", hold: "a" });
      await setup.world.waiting("a");
      b.call(1, "write_note", { key: "y", value: "YB" });
      // Reads are not queued: one of B's runs while A's write holds the server's turn.
      b.call(2, "read_note", { key: "y" });
      expect((await b.response(2)).result.structuredContent).toEqual({ key: "y", value: "Y0" });
      setup.world.open("a");
      expect((await a.response(1)).result.structuredContent).toEqual({ key: "x", value: "XA" });
      expect((await b.response(1)).result.structuredContent).toEqual({ key: "y", value: "YB" });
      await Promise.all([a.finish(), b.finish()]);

      // B's write (its pre-read, the write, its post-read) came only after A's write and post-read.
      expect(setup.world.events).toEqual([
        "read_note x",
        "write_note x start",
        "read_note y",
        "write_note x end",
        "read_note x",
        "read_note y",
        "write_note y start",
        "write_note y end",
        "read_note y",
      ]);
      const runs = new Set(journalRows(setup.journalPath).map((r) => r.run_id));
      expect(runs.size).toBe(2);
    },
    HANG,
  );

  test(
    "a server's request reaches the session whose call caused it, and its answer goes back to the server",
    async () => {
      const setup = await setUp();
      const [a, b] = await twoClients(setup);

      b.call(5, "ask_model", { prompt: "hello?" });
      const asked = await b.next((m) => m.method === "sampling/createMessage");
      expect(asked.params.messages[0].content.text).toBe("hello?");
      b.send({ jsonrpc: "2.0", id: asked.id, result: { role: "assistant", content: { type: "text", text: "hi from B's model" }, model: "m" } });
      expect((await b.response(5)).result.structuredContent).toEqual({ answer: "hi from B's model" });

      await Promise.all([a.finish(), b.finish()]);
      expect(a.all.filter((line) => line.includes("sampling/createMessage"))).toEqual([]);
    },
    HANG,
  );

  test(
    "when both sessions have a call in flight, nobody can tell whose the request is: the server is refused, neither client asked",
    async () => {
      const setup = await setUp();
      const [a, b] = await twoClients(setup);

      a.call(1, "ask_model", { prompt: "from a", hold: "both" });
      b.call(1, "ask_model", { prompt: "from b", hold: "both" });
      await setup.world.waiting("both", 2);
      setup.world.open("both");
      for (const client of [a, b]) {
        const reply = await client.response(1);
        expect(reply.result.isError).toBe(true);
        expect(reply.result.content[0].text).toContain("Synartesis cannot tell which client this request is for");
      }
      await Promise.all([a.finish(), b.finish()]);
      for (const client of [a, b]) expect(client.all.filter((line) => line.includes("sampling/createMessage"))).toEqual([]);
    },
    HANG,
  );

  test(
    "progress goes to the session whose request carries the token; list_changed goes to every session",
    async () => {
      const setup = await setUp();
      const [a, b] = await twoClients(setup);

      a.call(1, "ask_model", { prompt: "slowly" }, { progressToken: "tok" });
      expect((await a.next((m) => m.method === "notifications/progress")).params).toEqual({ progressToken: "tok", progress: 1 });
      const asked = await a.next((m) => m.method === "sampling/createMessage");
      a.send({ jsonrpc: "2.0", id: asked.id, result: { role: "assistant", content: { type: "text", text: "ok" }, model: "m" } });
      await a.response(1);

      b.call(2, "announce", {});
      await b.response(2);
      await a.next((m) => m.method === "notifications/tools/list_changed");
      await b.next((m) => m.method === "notifications/tools/list_changed");

      await Promise.all([a.finish(), b.finish()]);
      expect(b.all.filter((line) => line.includes("notifications/progress"))).toEqual([]);
    },
    HANG,
  );
});
