// What neither a client nor a server can break in subscriptions/listen,
// through the built binary: a cancellation that comes before the subscription
// is set up (over stdio, and a client gone over HTTP) leaves nothing behind;
// the limits (subscriptions on a connection, resources on one, resources
// followed at a server); a server that never acknowledges holds up only what
// is followed there, and only for a while, and not the proxy's end; a
// resource a server refuses is asked for once, and its URI and the server's
// error are logged with their control characters escaped; a client that does
// not read its subscription's stream while a server floods it gets its
// subscription ended; a sessionless run with nothing but a subscription open
// ends after --http-idle, completing it.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { run, until } from "../helpers.ts";
import { REFUSED } from "../fixtures/changing-server.ts";
import { MCP_HEADERS, startHttpProxy, stopHttpProxiesAfterAll } from "../fixtures/http-kit.ts";
import {
  ACKNOWLEDGED,
  acknowledged,
  call,
  cancel,
  changingWorkspace,
  COMPLETED,
  EventReader,
  listen,
  liveNotesWorkspace,
  on,
  recordsIn,
  SILENT_SERVER,
  stdioProxy,
  TAG,
  TOOLS_CHANGED,
} from "../fixtures/listen-kit.ts";

// Each file sets its own: the preload's default reaches only the first file bun runs.
setDefaultTimeout(60_000);

stopHttpProxiesAfterAll();

const completion = (id: unknown) => (message: any) => message.id === id && message.result?.resultType === "complete";
const HTTP_2026 = { ...MCP_HEADERS, "MCP-Protocol-Version": "2026-07-28" };
/** POST one 2026-era request to the proxy (a call with its Mcp-Name). */
const post = (url: string, body: { method: string; params: Record<string, unknown> }, signal?: AbortSignal) =>
  fetch(url, {
    method: "POST",
    signal,
    headers: { ...HTTP_2026, "Mcp-Method": body.method, ...(typeof body.params.name === "string" && { "Mcp-Name": body.params.name }) },
    body: JSON.stringify(body),
  });

describe.concurrent("over stdio", () => {
  test("a cancellation that comes while the servers start ends the listen there: never acknowledged, nothing followed, its id free again", async () => {
    const ws = changingWorkspace();
    const { session, take, ask, streams } = stdioProxy(ws);
    // One write: the cancellation is read while the listen waits for the servers to start.
    session.send(`${JSON.stringify(listen("z", { toolsListChanged: true, resourceSubscriptions: ["live://a"] }))}\n${JSON.stringify(cancel("z"))}`);
    session.send(listen("m", { toolsListChanged: true }));
    await take(acknowledged("m"));
    await ask(call(1, "add_tool", { name: "fresh" }));
    await take(on("m", TOOLS_CHANGED));
    session.send(listen("z", { toolsListChanged: true }));
    expect((await take(acknowledged("z"))).params.notifications).toEqual({ toolsListChanged: true });
    expect(await session.close()).toBe(0);
    expect(streams()).toEqual({ m: [ACKNOWLEDGED, TOOLS_CHANGED, COMPLETED], z: [ACKNOWLEDGED, COMPLETED] });
    expect(ws.records()).toEqual([]);
  }, 60_000);

  test("limits: 100 subscriptions open on a connection, 1000 resources named by one", async () => {
    const ws = changingWorkspace();
    const { session, take, ask } = stdioProxy(ws);
    for (let id = 1; id <= 100; id++) session.send(listen(id, { toolsListChanged: true }));
    for (let id = 1; id <= 100; id++) await take(acknowledged(id));
    expect((await ask(listen(101, { toolsListChanged: true }))).error).toEqual({
      code: -32603,
      message: "Subscription limit reached: 100 subscriptions are open on this connection",
    });
    // One ends: there is room for one more.
    session.send(cancel(1));
    session.send(listen(102, { toolsListChanged: true }));
    await take(acknowledged(102));
    const named = Array.from({ length: 1001 }, (_, index) => `live://a/${index}`);
    expect((await ask(listen(103, { resourceSubscriptions: named }))).error).toEqual({
      code: -32602,
      message: "Invalid params: params.notifications.resourceSubscriptions names 1001 resources; at most 1000 are followed on one subscription",
    });
    expect(await session.close()).toBe(0);
  }, 60_000);

  test("at most 1000 resources are followed at one server: one more is left out of its subscription's acknowledgment", async () => {
    const ws = liveNotesWorkspace();
    const { session, take } = stdioProxy(ws);
    const many = Array.from({ length: 1000 }, (_, index) => `note://k${index}`);
    session.send(listen("many", { resourceSubscriptions: many }));
    expect((await take(acknowledged("many"))).params.notifications).toEqual({ resourceSubscriptions: many });
    session.send(listen("more", { resourceSubscriptions: ["note://extra", "note://k0"] }));
    expect((await take(acknowledged("more"))).params.notifications).toEqual({ resourceSubscriptions: ["note://k0"] });
    expect(await session.close()).toBe(0);
    const asked = ws.records().map((record) => record.listen.resourceSubscriptions ?? []);
    expect(Math.max(...asked.map((uris) => uris.length))).toBe(1000);
    expect(asked.flat()).not.toContain("note://extra");
  }, 60_000);

  test("a server that never acknowledges: a listen of list changes is acknowledged at once, one of its resources within the wait (without them), others are not held up, and the end does not wait", async () => {
    // Its timeout of 1 s bounds the wait for it (5 s at most otherwise).
    const ws = changingWorkspace({ silent: { ...SILENT_SERVER.silent!, timeout: 1 } });
    const { session, take, answer, streams } = stdioProxy(ws);
    session.send(listen("t", { toolsListChanged: true }));
    expect((await take(acknowledged("t"))).params.notifications).toEqual({ toolsListChanged: true });
    session.send(listen("r", { resourceSubscriptions: ["silent://x", "live://a"] }));
    session.send(listen("l", { resourceSubscriptions: ["live://b"] }));
    session.send(call(1, "silent__echo"));
    expect((await take(acknowledged("l"))).params.notifications).toEqual({ resourceSubscriptions: ["live://b"] });
    expect((await answer(1)).result.content).toEqual([{ type: "text", text: "echo" }]);
    // "r" waits for the silent server meanwhile, and no longer than that: acknowledged with what is followed.
    expect(session.lines.some((line) => acknowledged("r")(JSON.parse(line)))).toBe(false);
    expect((await take(acknowledged("r"))).params.notifications).toEqual({ resourceSubscriptions: ["live://a"] });
    await until(
      () => recordsIn(join(ws.dir, "silent.jsonl")).some((record) => record.listen.resourceSubscriptions?.includes("silent://x")),
      "silent://x asked of the silent server",
    );

    // A listen still waiting when the client leaves is refused, and the proxy ends.
    session.send(listen("r2", { resourceSubscriptions: ["silent://y"] }));
    expect(await session.close()).toBe(0);
    expect(await take((message) => message.id === "r2")).toMatchObject({
      error: { code: -32603, message: "Synartesis is shutting down; the subscription was not opened" },
    });
    expect(streams()).toEqual({ t: [ACKNOWLEDGED, COMPLETED], r: [ACKNOWLEDGED, COMPLETED], l: [ACKNOWLEDGED, COMPLETED] });
  }, 60_000);

  test("a resource its server refuses is asked for once until the server restarts; its URI and the server's error are logged escaped, once", async () => {
    const ws = changingWorkspace();
    const { session, take, streams } = stdioProxy(ws);
    session.send(listen("x", { resourceSubscriptions: [REFUSED, "live://a"] }));
    expect((await take(acknowledged("x"))).params.notifications).toEqual({ resourceSubscriptions: ["live://a"] });
    session.send(listen("y", { resourceSubscriptions: [REFUSED] }));
    // Nothing of it is honoured: completed right after its acknowledgment.
    expect((await take(acknowledged("y"))).params.notifications).toEqual({});
    await take(completion("y"));
    expect(await session.close()).toBe(0);
    expect(
      ws
        .records()
        .flatMap((record) => (record.subscribe ? [record.subscribe] : []))
        .sort(),
    ).toEqual(["live://a", REFUSED]);
    expect(streams()).toEqual({ x: [ACKNOWLEDGED, COMPLETED], y: [ACKNOWLEDGED, COMPLETED] });
    const warnings = session.stderr.split("\n").filter((line) => line.includes("refused to subscribe"));
    expect(warnings).toHaveLength(1);
    expect(session.stderr).not.toMatch(/[\u007f-\u009f]/);
    expect(warnings[0]).toContain("live://no\\u0085\\u007f\\u009b31m");
    expect(JSON.parse(warnings[0]!)).toMatchObject({
      server: "live",
      refused: 1,
      uris: [REFUSED],
      error: expect.stringContaining("no updates of this one \u009b2J\u007f"),
    });
  }, 60_000);
});

describe.concurrent("over --http", () => {
  test("a listen whose client goes away while the servers start is never set up", async () => {
    const ws = changingWorkspace({}, { HOLD_START: "./go" });
    const proxy = await startHttpProxy(ws, ["--log-level", "debug"]);
    await until(() => ws.records().some((record) => record.held), "the server to wait for its start");
    const abort = new AbortController();
    const early = await post(proxy.url, listen("early", { resourceSubscriptions: ["live://a"] }), abort.signal);
    expect(early.status).toBe(200);
    abort.abort();
    await until(() => proxy.stderr().includes('"msg":"a request is cancelled"'), "the proxy to see the listen cancelled");
    writeFileSync(join(ws.dir, "go"), "");
    // Another listen of the same run: acknowledged once live://b is subscribed to.
    const later = new EventReader(await post(proxy.url, listen("later", { resourceSubscriptions: ["live://b"] })));
    expect((await later.until(acknowledged("later"))).params.notifications).toEqual({ resourceSubscriptions: ["live://b"] });
    expect(ws.records().flatMap((record) => (record.subscribe ? [record.subscribe] : []))).toEqual(["live://b"]);
  }, 60_000);

  test("a client that does not read its subscription's stream while a server floods it: the subscription is completed, the stream closed, with one warning", async () => {
    const ws = changingWorkspace();
    const proxy = await startHttpProxy(ws);
    const flooded = new EventReader(await post(proxy.url, listen("flooded", { resourceSubscriptions: ["live://a"] })));
    await flooded.until(acknowledged("flooded"));
    // The stream is read no further: 2 MB more on it with each call, until the proxy ends it.
    let sent = 0;
    const flood = async () => {
      const response = await post(proxy.url, call(sent, "flood", { count: 32, size: 64 * 1024 }));
      expect(response.status).toBe(200);
      await response.text();
      sent += 32;
    };
    await until(
      async () => (await flood(), proxy.stderr().includes("a client does not read a response stream: its subscription is ended")),
      "the proxy to end the flooded stream",
    );
    await until(() => ws.records().some((record) => record.unsubscribe === "live://a"), "live://a unsubscribed once nobody follows it");
    // What comes after is not for it.
    await flood();
    const messages = await flooded.all();
    expect(messages.at(-1)).toEqual({ jsonrpc: "2.0", id: "flooded", result: { resultType: "complete", _meta: { [TAG]: "flooded" } } });
    expect(messages.filter((message) => message.method === "notifications/resources/updated").length).toBeLessThanOrEqual(sent - 32);
    expect(
      proxy
        .stderr()
        .split("\n")
        .filter((line) => line.includes("does not read")),
    ).toHaveLength(1);
  }, 120_000);

  test("a client that does not read a call's response while its server floods it with progress: what comes beyond is dropped, the answer still comes", async () => {
    const ws = changingWorkspace();
    const proxy = await startHttpProxy(ws);
    const flood = call(1, "flood", { count: 512, size: 64 * 1024, progress: true });
    const response = await post(proxy.url, { ...flood, params: { ...flood.params, _meta: { ...flood.params._meta, progressToken: "p" } } });
    await until(
      () => proxy.stderr().includes("a client does not read a response stream: what comes before its answer is dropped"),
      "the proxy to drop the progress",
    );
    const messages = await new EventReader(response).all();
    expect(messages.at(-1)).toMatchObject({ id: 1, result: { content: [{ type: "text", text: "sent 512" }] } });
    expect(messages.filter((message) => message.method === "notifications/progress").length).toBeLessThan(512);
  }, 60_000);

  test("a sessionless run with only a subscription open ends after --http-idle, completing it; the client's next call opens another run", async () => {
    const ws = changingWorkspace();
    const proxy = await startHttpProxy(ws, ["--http-idle", "0.02"]);
    await (await post(proxy.url, call(1, "whoami"))).text();
    const idle = new EventReader(await post(proxy.url, listen("idle", { toolsListChanged: true })));
    await idle.until(acknowledged("idle"));
    await until(() => proxy.stderr().includes("run ended: no request for --http-idle"), "the run to end");
    expect((await idle.all()).at(-1)).toMatchObject({ id: "idle", result: { resultType: "complete" } });
    await (await post(proxy.url, call(2, "whoami"))).text();
    const listed = await run(["list", "--json"], { cwd: ws.dir });
    expect(JSON.parse(listed.stdout).map((row: { label: string }) => row.label)).toEqual(["listener", "listener"]);
  }, 60_000);
});
