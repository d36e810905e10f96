// subscriptions/listen on the wire (src/jsonrpc/subscriptions.ts): a client's
// filter read strictly, what a filter lets through, and the subscription id
// written into a line as the client wrote it, every other byte kept. A
// subscription being opened (src/proxy/session/client-subscriptions.ts, over a fake
// pool): what it keeps until its acknowledgment is bounded; a cancellation
// before it, or the connection's end, leaves nothing open. An event stream
// nobody reads tells whoever sends on it once too much waits.
import { describe, expect, test } from "bun:test";
import { EventStream, eventText, MAX_UNREAD_BYTES } from "../../src/http/event-stream.ts";
import { frameOf, type NotificationFrame } from "../../src/jsonrpc/frames.ts";
import { idKey } from "../../src/jsonrpc/json-check.ts";
import {
  accepts,
  acknowledgedLine,
  completedLine,
  filterOf,
  LISTEN,
  MAX_RESOURCE_SUBSCRIPTIONS,
  SUBSCRIPTION_ID_KEY,
  withSubscriptionId,
} from "../../src/jsonrpc/subscriptions.ts";
import { createLogger } from "../../src/log.ts";
import { ClientRequest, type RequestChannel } from "../../src/proxy/session/client-request.ts";
import { ClientSubscriptions } from "../../src/proxy/session/client-subscriptions.ts";
import type { ServerPool } from "../../src/proxy/pool/pool.ts";
import { until } from "../helpers.ts";

describe("a listen request's filter", () => {
  test("what it opts in to, each resource once; false and absent fields ask for nothing", () => {
    expect(filterOf({ notifications: { toolsListChanged: true, promptsListChanged: false, resourceSubscriptions: ["a://1", "a://1", "a://2"] } })).toEqual({
      toolsListChanged: true,
      resourceSubscriptions: ["a://1", "a://2"],
    });
    expect(filterOf({ notifications: { resourceSubscriptions: [] } })).toEqual({});
  });

  test("anything else is refused, saying what is wrong", () => {
    expect(filterOf({})).toContain("needs params.notifications");
    expect(filterOf({ notifications: [] })).toContain("needs params.notifications");
    expect(filterOf({ notifications: { toolsListChanged: 1 } })).toBe("params.notifications.toolsListChanged must be a boolean");
    expect(filterOf({ notifications: { resourceSubscriptions: ["a://1", 2] } })).toContain("array of resource URIs");
    const many = Array.from({ length: MAX_RESOURCE_SUBSCRIPTIONS + 1 }, (_, index) => `a://${index}`);
    expect(filterOf({ notifications: { resourceSubscriptions: many } })).toContain(`at most ${MAX_RESOURCE_SUBSCRIPTIONS}`);
  });
});

test("a filter lets through the list changes it asks for, and updates of the resources it names or of ones under them", () => {
  const filter = { toolsListChanged: true, resourceSubscriptions: ["file:///project/", "note://plan"] };
  expect(accepts(filter, "notifications/tools/list_changed", {})).toBe(true);
  expect(accepts(filter, "notifications/prompts/list_changed", {})).toBe(false);
  expect(accepts(filter, "notifications/resources/updated", { uri: "note://plan" })).toBe(true);
  expect(accepts(filter, "notifications/resources/updated", { uri: "note://plan/draft" })).toBe(true);
  expect(accepts(filter, "notifications/resources/updated", { uri: "note://planning" })).toBe(false);
  expect(accepts(filter, "notifications/resources/updated", { uri: "file:///project/config.json" })).toBe(true);
  expect(accepts(filter, "notifications/message", { uri: "note://plan" })).toBe(false);
});

test("the subscription id is the listen request's as its client wrote it; tagging and untagging keep every other byte", () => {
  const line = '{"method":"notifications/resources/updated","params":{"uri":"note://plan","_meta":{"other":1e400}},"jsonrpc":"2.0"}';
  const tagged = withSubscriptionId(line, "9007199254740993");
  expect(tagged).toBe(
    '{"method":"notifications/resources/updated","params":{"uri":"note://plan","_meta":{"io.modelcontextprotocol/subscriptionId":9007199254740993,"other":1e400}},"jsonrpc":"2.0"}',
  );
  expect(withSubscriptionId(tagged, undefined)).toBe(line);
  expect(withSubscriptionId('{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}', '"s"')).toBe(
    '{"params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"s"}},"jsonrpc":"2.0","method":"notifications/tools/list_changed"}',
  );
  expect(JSON.parse(acknowledgedLine('"s"', { toolsListChanged: true }))).toEqual({
    jsonrpc: "2.0",
    method: "notifications/subscriptions/acknowledged",
    params: { _meta: { "io.modelcontextprotocol/subscriptionId": "s" }, notifications: { toolsListChanged: true } },
  });
  expect(completedLine({ text: '"own-1"', key: "" }, "7")).toBe(
    '{"jsonrpc":"2.0","id":"own-1","result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":7}}}',
  );
});

describe("a subscription being opened", () => {
  /** A listen request whose lines are kept, and a pool whose resources are looked up when the test says (a fake: only what ClientSubscriptions asks of it). */
  function opening() {
    const lines: any[] = [];
    const channel: RequestChannel = { send: (line) => lines.push(JSON.parse(line)), end: (answer) => answer !== undefined && lines.push(JSON.parse(answer)) };
    const request = new ClientRequest({}, { text: '"s"', key: idKey('"s"') }, LISTEN, {}, { clientCapabilities: {} }, async () => ({ responses: {} }), channel);
    let lookedUp!: () => void;
    const lookup = new Promise<void>((resolve) => (lookedUp = resolve));
    const pool = {
      upstreams: [],
      ownersOf: async () => (await lookup, new Map()),
      subscriptions: { hold: async () => new Set(), release: () => {}, followedFor: () => new Set(["note://plan"]), listChangesFrom: () => new Set() },
    } as unknown as ServerPool;
    const subscriptions = new ClientSubscriptions(pool, createLogger("silent"), (to, line) => to.endAttempt(line));
    return { lines, request, subscriptions, lookedUp };
  }
  const notification = (method: string, params: Record<string, unknown> = {}) => {
    const line = JSON.stringify({ jsonrpc: "2.0", method, params });
    return frameOf(JSON.parse(line), line) as NotificationFrame;
  };

  test("keeps one of each kind of news until its acknowledgment: one per list change, one per resource it names (its sub-resources included), nothing else", async () => {
    const { lines, request, subscriptions, lookedUp } = opening();
    const listening = subscriptions.listen(request, { notifications: { toolsListChanged: true, resourceSubscriptions: ["note://plan"] } }, true);
    for (let round = 0; round < 50; round++) {
      subscriptions.deliver(notification("notifications/tools/list_changed"));
      subscriptions.deliver(notification("notifications/resources/updated", { uri: "note://plan" }));
      subscriptions.deliver(notification("notifications/resources/updated", { uri: `note://plan/draft-${round}` }));
      subscriptions.deliver(notification("notifications/prompts/list_changed"));
    }
    lookedUp();
    await until(() => lines.length >= 3, "the acknowledgment and what was kept");
    expect(lines.map((line) => [line.method, line.params.uri])).toEqual([
      ["notifications/subscriptions/acknowledged", undefined],
      ["notifications/tools/list_changed", undefined],
      ["notifications/resources/updated", "note://plan"],
    ]);
    subscriptions.endAll();
    await listening;
    expect(lines.at(-1)).toEqual({ jsonrpc: "2.0", id: "s", result: { resultType: "complete", _meta: { [SUBSCRIPTION_ID_KEY]: "s" } } });
  });

  test("a cancellation that came before it was served ends it at once, unanswered; one served after the connection began to end is refused", async () => {
    const cancelled = opening();
    cancelled.request.cancel("the client cancelled it");
    await cancelled.subscriptions.listen(cancelled.request, { notifications: { toolsListChanged: true } }, true);
    expect(cancelled.lines).toEqual([]);

    const late = opening();
    late.subscriptions.endAll();
    await late.subscriptions.listen(late.request, { notifications: { toolsListChanged: true } }, true);
    expect(late.lines).toEqual([{ jsonrpc: "2.0", id: "s", error: { code: -32603, message: "Synartesis is shutting down; the subscription was not opened" } }]);
  });
});

test("an event stream nobody reads: once more than MAX_UNREAD_BYTES wait, whoever sends on it is told, once", async () => {
  let overflowed = 0;
  const stream = new EventStream(undefined, () => void overflowed++);
  const line = JSON.stringify({ jsonrpc: "2.0", method: "notifications/resources/updated", params: { uri: `note://${"x".repeat(64 * 1024)}` } });
  const fits = Math.floor(MAX_UNREAD_BYTES / eventText(line).length);
  for (let sent = 0; sent < fits; sent++) expect(stream.send(line)).toBe(true);
  await Promise.resolve();
  expect(overflowed).toBe(0);
  for (let sent = 0; sent < 3; sent++) stream.send(line);
  await until(() => overflowed > 0, "the overflow to be told");
  expect(overflowed).toBe(1);
});
