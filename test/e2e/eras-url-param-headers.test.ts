// A `url:` server in the 2026-07-28 era whose tool marks an argument with
// `x-mcp-header` (SEP-2243): the server refuses a call whose Mcp-Param-*
// header is missing or disagrees with the body (400, -32020), so the proxy
// must repeat that argument in the header, as the tools/list it was given
// says. The upstream is the v2-SDK conformance fixture, which checks it; a
// 2026 client and a 2025 client each call through the built binary.
import { expect, setDefaultTimeout, test } from "bun:test";
import { BIN, connect } from "../helpers.ts";
import type { RawRule } from "../../src/manifest/schema.ts";
import { connectModern, eraWorkspace, serveFixture } from "../fixtures/era-kit.ts";
import { BUN, fixtureScript, journalRows } from "../fixtures/proxy-kit.ts";

// Each file sets its own: the preload's default reaches only the first file bun runs.
setDefaultTimeout(60_000);

/** conformance-server-v2.ts over HTTP (2026-07-28 only): its URL. */
async function fixtureOverHttp(): Promise<string> {
  return JSON.parse(await serveFixture([BUN, fixtureScript("conformance-server-v2.ts"), "--http"])).url as string;
}

const text = (result: any) => result.content.map((block: any) => block.text).join("\n") as string;
const RULES: RawRule[] = [{ match: "conf.test_*", class: "readonly" }];

// Each test has its own fixture, folder and journal: they run side by side.
test.concurrent("a 2026 client's calls carry the tool's Mcp-Param-* headers to the server (plain and =?base64?…?=), and run", async () => {
  const ws = eraWorkspace({ conf: { url: await fixtureOverHttp() } }, RULES);
  const { client, stderr } = await connectModern(ws, { name: "agent-2026" });
  const listed = (await client.listTools()).tools.find((tool) => tool.name === "test_custom_headers");
  expect((listed?.inputSchema.properties as any)?.region?.["x-mcp-header"]).toBe("Region");
  const plain = await client.callTool({ name: "test_custom_headers", arguments: { region: "us-west1" } });
  expect([plain.isError, text(plain)]).toEqual([undefined, "region: us-west1"]);
  const encoded = await client.callTool({ name: "test_custom_headers", arguments: { region: "Zürich\tnord", query: "not mirrored" } });
  expect([encoded.isError, text(encoded)]).toEqual([undefined, "region: Zürich\tnord"]);
  await client.close();
  expect(stderr()).toMatch(/"msg":"server started","server":"conf","serverInfo":"conformance-fixture-v2 2.4.0","protocol":"2026-07-28"/);
  expect(journalRows(ws.journal).map((row) => [row.tool, row.status])).toEqual([
    ["test_custom_headers", "applied"],
    ["test_custom_headers", "applied"],
  ]);
}, 60_000);

test.concurrent("a 2025 client's call is sent in 2026-07-28 with the header too", async () => {
  const ws = eraWorkspace({ conf: { url: await fixtureOverHttp() } }, RULES);
  await using agent = await connect(BIN, ["proxy", "--manifest", ws.manifest], { cwd: ws.dir, name: "agent-2025" });
  const result = await agent.client.callTool({ name: "test_custom_headers", arguments: { region: "eu-north1" } });
  expect([result.isError, text(result)]).toEqual([undefined, "region: eu-north1"]);
}, 60_000);
