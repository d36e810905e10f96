// What neither a client nor a server can break in subscriptions/listen,
// through the built binary over stdio: a cancellation that comes before the
// subscription is set up leaves nothing behind; the limits (subscriptions on
// a connection, resources on one, resources followed at a server); a server
// that never acknowledges holds up only what is followed there, and only for
// a while, and not the proxy's end; a resource a server refuses is asked for
// once, and its URI and the server's error are logged with their control
// characters escaped.
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { until } from "../helpers.ts";
import { REFUSED } from "../fixtures/changing-server.ts";
import {
  ACKNOWLEDGED,
  acknowledged,
  call,
  cancel,
  changingWorkspace,
  COMPLETED,
  listen,
  liveNotesWorkspace,
  on,
  recordsIn,
  SILENT_SERVER,
  stdioProxy,
  TOOLS_CHANGED,
} from "../fixtures/listen-kit.ts";

const completion = (id: unknown) => (message: any) => message.id === id && message.result?.resultType === "complete";

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
    expect((await ask(listen(101, { toolsListChanged: true }))).error).toEqual({ code: -32603, message: "Subscription limit reached: 100 subscriptions are open on this connection" });
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
    const ws = changingWorkspace(SILENT_SERVER);
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
    await until(() => recordsIn(join(ws.dir, "silent.jsonl")).some((record) => record.listen.resourceSubscriptions?.includes("silent://x")), "silent://x asked of the silent server");

    // A listen still waiting when the client leaves is refused, and the proxy ends.
    session.send(listen("r2", { resourceSubscriptions: ["silent://y"] }));
    expect(await session.close()).toBe(0);
    expect(await take((message) => message.id === "r2")).toMatchObject({ error: { code: -32603, message: "Synartesis is shutting down; the subscription was not opened" } });
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
    expect(ws.records().flatMap((record) => (record.subscribe ? [record.subscribe] : [])).sort()).toEqual(["live://a", REFUSED]);
    expect(streams()).toEqual({ x: [ACKNOWLEDGED, COMPLETED], y: [ACKNOWLEDGED, COMPLETED] });
    const warnings = session.stderr.split("\n").filter((line) => line.includes("refused to subscribe"));
    expect(warnings).toHaveLength(1);
    expect(session.stderr).not.toMatch(/[\u007f-\u009f]/);
    expect(warnings[0]).toContain("live://no\\u0085\\u007f\\u009b31m");
    expect(JSON.parse(warnings[0]!)).toMatchObject({ server: "live", refused: 1, uris: [REFUSED], error: expect.stringContaining("no updates of this one \u009b2J\u007f") });
  }, 60_000);
});
