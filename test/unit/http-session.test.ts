// One MCP session of `proxy --http` in-process (src/http/http-session.ts),
// over a pool whose server is linked in memory: which event stream each line
// goes out on. A request's answer, and what its server sends on its behalf
// before it (progress, a sampling request), ride on the response to the POST
// that carried it; what concerns no request of the session goes on its GET
// stream, kept until the client opens one. A sessionless (2026-07-28)
// client's request: under an id of the session's own, answered under the
// client's, cancelled when its response is closed early. The idle clock, and
// how event text is framed.
import { describe, expect, test } from "bun:test";
import { eventText } from "../../src/http/event-stream.ts";
import { HttpSession } from "../../src/http/http-session.ts";
import { readMessages, type RequestFrame } from "../../src/jsonrpc/frames.ts";
import { notesPools, recordingIn, type NotesPool } from "../fixtures/in-memory-notes.ts";

/** A signal that never aborts: no second signal. */
const NEVER = new AbortController().signal;

/** The messages of an event stream, read as they arrive. */
class Events {
  private readonly reader: ReadableStreamDefaultReader<string>;
  private buffer = "";
  private readonly queue: string[] = [];
  ended = false;

  constructor(response: Response) {
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    this.reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  }

  /** The next message's JSON, or undefined when the stream ended. */
  async next(): Promise<any> {
    while (this.queue.length === 0 && !this.ended) {
      const { value, done } = await this.reader.read();
      if (done) this.ended = true;
      this.buffer += value ?? "";
      let end: number;
      while ((end = this.buffer.indexOf("\n\n")) !== -1) {
        const data = this.buffer
          .slice(0, end)
          .split("\n")
          .filter((line) => line.startsWith("data: "))
          .map((line) => line.slice(6));
        this.buffer = this.buffer.slice(end + 2);
        if (data.length) this.queue.push(data.join("\n"));
      }
    }
    const line = this.queue.shift();
    return line === undefined ? undefined : JSON.parse(line);
  }
}

type Setup = NotesPool;
const setUp = notesPools("syn-http-session-");

/** A clock for the idle timer that moves only when the test says. */
class TestClock {
  private readonly timers = new Set<{ ms: number; fire: () => void }>();

  readonly timer = (ms: number, fire: () => void) => {
    const timer = { ms, fire };
    this.timers.add(timer);
    return () => void this.timers.delete(timer);
  };

  /** The idle timers running now (their lengths). */
  get running(): number[] {
    return [...this.timers].map((timer) => timer.ms);
  }

  /** Time passes: every running timer fires. */
  passes(): void {
    const due = [...this.timers];
    this.timers.clear();
    for (const timer of due) timer.fire();
  }
}

function session(
  setup: Setup,
  name: string,
  idle: { idleMs: number; clock?: TestClock; onIdle?: () => void; sessionless?: boolean } = { idleMs: 0 },
): { http: HttpSession; post(message: unknown): Response; postAlone(message: unknown): Promise<Response> } {
  const http = new HttpSession({
    id: name,
    sessionless: idle.sessionless ?? false,
    recording: recordingIn(setup),
    idleMs: idle.idleMs,
    onIdle: idle.onIdle ?? (() => {}),
    ...(idle.clock ? { timer: idle.clock.timer } : {}),
  });
  const post = (message: unknown) => {
    const read = readMessages(JSON.stringify(message), "body");
    if ("refused" in read) throw new Error(read.refused);
    return http.post(read.frames);
  };
  const postAlone = (message: unknown) => {
    const read = readMessages(JSON.stringify(message), "body");
    if ("refused" in read) throw new Error(read.refused);
    return http.postAlone(read.frames[0] as RequestFrame);
  };
  return { http, post, postAlone };
}

/** A 2026-era tools/call that may be asked for sampling. */
function modernCall(id: unknown, args: Record<string, unknown>, extra: Record<string, unknown> = {}): unknown {
  const _meta = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": { sampling: {} },
    "io.modelcontextprotocol/clientInfo": { name: "agent-2026", version: "1" },
  };
  return { jsonrpc: "2.0", id, method: "tools/call", params: { name: "ask_model", arguments: args, ...extra, _meta } };
}

async function initialize(client: ReturnType<typeof session>, capabilities: Record<string, unknown> = {}): Promise<void> {
  const init = new Events(
    client.post({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities, clientInfo: { name: "agent", version: "1" } },
    }),
  );
  expect((await init.next()).result.serverInfo.name).toBe("notes");
  expect(await init.next()).toBeUndefined();
  expect(client.post({ jsonrpc: "2.0", method: "notifications/initialized" }).status).toBe(202);
}

describe("which stream a line goes out on", () => {
  test("progress and a sampling request ride on the call's own response, before its answer; the answer to it is a POST of its own (202)", async () => {
    const setup = await setUp();
    const client = session(setup, "a");
    await initialize(client, { sampling: {} });
    const call = new Events(
      client.post({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "ask_model", arguments: { prompt: "hi" }, _meta: { progressToken: "p1" } } }),
    );
    expect(await call.next()).toEqual({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: "p1", progress: 1 } });
    const asked = await call.next();
    expect(asked.method).toBe("sampling/createMessage");
    const answer = { jsonrpc: "2.0", id: asked.id, result: { role: "assistant", content: { type: "text", text: "hello" }, model: "m" } };
    expect(client.post(answer).status).toBe(202);
    expect((await call.next()).result.structuredContent).toEqual({ answer: "hello" });
    expect(await call.next()).toBeUndefined();
    await client.http.end(1000, NEVER);
  });

  test("a notification that concerns no request of a session waits for its GET stream; the session whose call caused it gets it on that call's response", async () => {
    const setup = await setUp();
    const a = session(setup, "a");
    const b = session(setup, "b");
    await initialize(a);
    await initialize(b);
    const announce = new Events(a.post({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "announce", arguments: {} } }));
    expect(await announce.next()).toEqual({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
    expect((await announce.next()).result.structuredContent).toEqual({ announced: true });
    expect(await announce.next()).toBeUndefined();
    // B had nothing in flight: the notification was kept for its GET stream, and arrives when it opens.
    const listening = new Events(b.http.listen());
    expect(await listening.next()).toEqual({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
    // One GET stream at a time.
    expect(b.http.listen().status).toBe(409);
    await b.http.end(1000, NEVER);
    expect(await listening.next()).toBeUndefined();
    await a.http.end(1000, NEVER);
  });

  test("a batch's answers share one response, which ends after the last; a request the client cancels ends its response without an answer", async () => {
    const setup = await setUp();
    const client = session(setup, "a");
    await initialize(client);
    const batch = new Events(
      client.post([
        { jsonrpc: "2.0", id: 1, method: "ping" },
        { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "read_note", arguments: { key: "x" } } },
      ]),
    );
    const answers = [await batch.next(), await batch.next()];
    expect(answers.map((answer) => answer.id).sort()).toEqual([1, 2]);
    expect(await batch.next()).toBeUndefined();

    const held = new Events(
      client.post({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "ask_model", arguments: { prompt: "wait", hold: "h" } } }),
    );
    expect(client.post({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 3 } }).status).toBe(202);
    expect(await held.next()).toBeUndefined();
    await client.http.end(1000, NEVER);
  });
});

describe("a sessionless client's request", () => {
  test("its input_required and its retry, each on its own response under the client's ids; no session id is given out", async () => {
    const setup = await setUp();
    const client = session(setup, "run", { idleMs: 0, sessionless: true });
    const first = await client.postAlone(modernCall(1, { prompt: "hi" }));
    expect(first.headers.get("mcp-session-id")).toBeNull();
    const asked = await new Events(first).next();
    expect([asked.id, asked.result.resultType]).toEqual([1, "input_required"]);
    const key = Object.keys(asked.result.inputRequests)[0]!;
    const answer = { [key]: { role: "assistant", content: { type: "text", text: "hello" }, model: "m" } };
    // The other client of the run uses id 1 too, meanwhile: its answer is its own.
    const read = modernCall(1, { key: "x" }) as { params: Record<string, unknown> };
    const other = new Events(await client.postAlone({ ...read, params: { ...read.params, name: "read_note" } }));
    const otherAnswer = await other.next();
    expect([otherAnswer.id, otherAnswer.result.content[0].text]).toEqual([1, JSON.stringify({ key: "x", value: "X0" })]);
    const retry = new Events(await client.postAlone(modernCall(2, { prompt: "hi" }, { inputResponses: answer, requestState: asked.result.requestState })));
    const done = await retry.next();
    expect([done.id, done.result.structuredContent]).toEqual([2, { answer: "hello" }]);
    expect(await retry.next()).toBeUndefined();
    await client.http.end(1000, NEVER);
  });

  test("closing its response before the answer cancels it (the binding's cancellation)", async () => {
    const setup = await setUp();
    const { world } = setup;
    const client = session(setup, "run", { idleMs: 0, sessionless: true });
    const response = await client.postAlone(modernCall(5, { prompt: "wait", hold: "h" }));
    await world.waiting("h");
    const request = [...client.http.client.requests.values()][0]!;
    expect(request.cancelled).toBe(false);
    await response.body!.cancel();
    expect(request.cancelled).toBe(true);
    world.open("h");
    await client.http.end(1000, NEVER);
  });
});

describe("the idle clock (--http-idle)", () => {
  test("a sessionless run waiting for its client's retry is not idle: the clock starts again until the retry came and was answered", async () => {
    const setup = await setUp();
    const clock = new TestClock();
    let idle = 0;
    const client = session(setup, "run", { idleMs: 60_000, clock, onIdle: () => idle++, sessionless: true });
    const asked = await new Events(await client.postAlone(modernCall(1, { prompt: "hi" }))).next();
    expect(clock.running).toEqual([60_000]);
    clock.passes();
    expect([idle, clock.running]).toEqual([0, [60_000]]);
    const key = Object.keys(asked.result.inputRequests)[0]!;
    const answer = { [key]: { role: "assistant", content: { type: "text", text: "late" }, model: "m" } };
    const retry = new Events(await client.postAlone(modernCall(2, { prompt: "hi" }, { inputResponses: answer, requestState: asked.result.requestState })));
    expect((await retry.next()).result.structuredContent).toEqual({ answer: "late" });
    expect(await retry.next()).toBeUndefined();
    clock.passes();
    expect(idle).toBe(1);
    await client.http.end(1000, NEVER);
  });

  test("it runs only while no request of the session is in progress, and starts again after each", async () => {
    const setup = await setUp();
    const clock = new TestClock();
    let idle = 0;
    const client = session(setup, "a", { idleMs: 60_000, clock, onIdle: () => idle++ });
    expect(clock.running).toEqual([60_000]);
    const init = new Events(
      client.post({
        jsonrpc: "2.0",
        id: 0,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: { sampling: {} }, clientInfo: { name: "agent", version: "1" } },
      }),
    );
    // While initialize is handled (it starts the servers), the session is not idle.
    expect(clock.running).toEqual([]);
    await init.next();
    expect(await init.next()).toBeUndefined();
    expect(clock.running).toEqual([60_000]);
    expect(client.post({ jsonrpc: "2.0", method: "notifications/initialized" }).status).toBe(202);
    expect(clock.running).toEqual([60_000]);
    // A call waiting on its server (for the client's answer to a sampling request): not idle, however long it takes.
    const call = new Events(client.post({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "ask_model", arguments: { prompt: "slow" } } }));
    const asked = await call.next();
    expect(clock.running).toEqual([]);
    clock.passes();
    expect(idle).toBe(0);
    expect(client.post({ jsonrpc: "2.0", id: asked.id, result: { role: "assistant", content: { type: "text", text: "done" }, model: "m" } }).status).toBe(202);
    expect((await call.next()).result.structuredContent).toEqual({ answer: "done" });
    expect(await call.next()).toBeUndefined();
    expect(clock.running).toEqual([60_000]);
    clock.passes();
    expect(idle).toBe(1);
    await client.http.end(1000, NEVER);
    expect(clock.running).toEqual([]);
  });
});

describe("event text", () => {
  test("one line, one data field; a line break inside JSON whitespace splits it into data fields that join back to the same JSON", () => {
    expect(eventText('{"a":1}')).toBe('event: message\ndata: {"a":1}\n\n');
    const spaced = '{"a":\r1,\n"b":\r\n2}';
    const event = eventText(spaced);
    expect(event).toBe('event: message\ndata: {"a":\ndata: 1,\ndata: "b":\ndata: 2}\n\n');
    const joined = event
      .trim()
      .split("\n")
      .filter((line) => line.startsWith("data: "))
      .map((line) => line.slice(6))
      .join("\n");
    expect(JSON.parse(joined)).toEqual(JSON.parse(spaced));
  });
});
