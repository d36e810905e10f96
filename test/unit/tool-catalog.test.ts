// Which tools each server offers, and when a list is told as changed
// (src/proxy/pool/tool-catalog.ts), over a fake server whose listings the test
// answers: the same tools in another order, or with their keys in another
// order, are the same list; a list is compared with the one the clients last
// knew, which after the server announced a change is its next list, not one
// whose listing began before the announcement.
import { expect, test } from "bun:test";
import { ToolCatalog } from "../../src/proxy/pool/tool-catalog.ts";
import type { Upstream } from "../../src/servers/upstream.ts";
import { until } from "../helpers.ts";

type Tools = Array<Record<string, unknown>>;
const A = { name: "a", inputSchema: { type: "object", properties: {} } };
const B = { name: "b", description: "the second", inputSchema: { type: "object" } };
const C = { name: "c", inputSchema: { type: "object" } };

/** A server whose every tools/list waits for the test to answer it. */
function fakeServer() {
  const listings: Array<(tools: Tools) => void> = [];
  const upstream = {
    capabilities: { tools: {} },
    ensureReady: async () => {},
    listAll: () => new Promise<Tools>((resolve) => listings.push(resolve)),
  } as unknown as Upstream;
  /** Answer the oldest listing not answered yet (once it was asked). */
  const answer = async (tools: Tools) => {
    await until(() => listings.length > 0, "a listing to be asked for");
    listings.shift()!(tools);
  };
  let count = 0;
  const listAll = upstream.listAll.bind(upstream);
  (upstream as { listAll: unknown }).listAll = (...args: unknown[]) => (count++, (listAll as (...a: unknown[]) => Promise<Tools>)(...args));
  return { upstream, answer, asked: () => count };
}

test("the same tools in another order, each with its keys in another order, are the same list: nobody is told", async () => {
  const { upstream, answer } = fakeServer();
  const told: Upstream[] = [];
  const catalog = new ToolCatalog((changed) => void told.push(changed));
  catalog.remember(upstream, [A, B]);
  const relisted = catalog.relist(upstream);
  await answer([
    { inputSchema: { type: "object" }, description: "the second", name: "b" },
    { inputSchema: { properties: {}, type: "object" }, name: "a" },
  ]);
  await relisted;
  expect(told).toEqual([]);
  const again = catalog.relist(upstream);
  await answer([A, B, C]);
  await again;
  expect(told).toEqual([upstream]);
});

test("a listing begun before the server announced a change does not become what clients know: the listing after it does", async () => {
  const { upstream, answer } = fakeServer();
  const told: Upstream[] = [];
  const catalog = new ToolCatalog((changed) => void told.push(changed));
  catalog.remember(upstream, [A]);
  const stale = catalog.relist(upstream);
  // The server adds b and says so while the listing is on its way (it was answered before the change).
  catalog.forget(upstream);
  await answer([A]);
  await stale;
  await answer([A, B]);
  await until(() => catalog.inputSchema(upstream, "b") !== undefined, "the listing after the announcement");
  expect(told).toEqual([]);
  // It restarts without b: the clients, who know b, are told.
  catalog.doubt(upstream);
  const restarted = catalog.relist(upstream);
  await answer([A]);
  await restarted;
  expect(told).toEqual([upstream]);
});

test("a server that announces a thousand changes at once is listed once more after the listing underway, not a thousand times", async () => {
  const { upstream, answer, asked } = fakeServer();
  const told: Upstream[] = [];
  const catalog = new ToolCatalog((changed) => void told.push(changed));
  catalog.remember(upstream, [A]);
  for (let i = 0; i < 1000; i++) catalog.forget(upstream);
  await answer([A, B]);
  await answer([A, B, C]);
  await until(() => catalog.inputSchema(upstream, "c") !== undefined, "the listing after the last announcement");
  expect(asked()).toBe(2);
  expect(told).toEqual([]);
});
