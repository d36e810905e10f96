// subscriptions/listen on the wire (src/jsonrpc/subscriptions.ts): a client's
// filter read strictly, what a filter lets through, and the subscription id
// written into a line as the client wrote it, every other byte kept.
import { describe, expect, test } from "bun:test";
import { accepts, acknowledgedLine, completedLine, filterOf, MAX_RESOURCE_SUBSCRIPTIONS, withSubscriptionId } from "../../src/jsonrpc/subscriptions.ts";

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
  expect(tagged).toBe('{"method":"notifications/resources/updated","params":{"uri":"note://plan","_meta":{"io.modelcontextprotocol/subscriptionId":9007199254740993,"other":1e400}},"jsonrpc":"2.0"}');
  expect(withSubscriptionId(tagged, undefined)).toBe(line);
  expect(withSubscriptionId('{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}', '"s"')).toBe(
    '{"params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"s"}},"jsonrpc":"2.0","method":"notifications/tools/list_changed"}',
  );
  expect(JSON.parse(acknowledgedLine('"s"', { toolsListChanged: true }))).toEqual({
    jsonrpc: "2.0",
    method: "notifications/subscriptions/acknowledged",
    params: { _meta: { "io.modelcontextprotocol/subscriptionId": "s" }, notifications: { toolsListChanged: true } },
  });
  expect(completedLine({ text: '"own-1"', key: "" }, "7")).toBe('{"jsonrpc":"2.0","id":"own-1","result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":7}}}');
});
