// A sessionless 2026-07-28 client's call on `proxy --http` to a tool that
// marks an argument `x-mcp-header` (SEP-2243): its Mcp-Param-* header must
// repeat that argument (plain or `=?base64?…?=`), else the call is refused
// with 400 and HeaderMismatch (-32020) before anything runs, as the
// upstream itself would refuse it. Through the built binary, the v2-SDK
// conformance fixture as a command: server, over raw HTTP and with the v2
// SDK's own client (which sends the headers). And a call whose server asks for
// input the client declared no capability for is refused with 400 and -32021.
import { expect, setDefaultTimeout, test } from "bun:test";
import { eraWorkspace } from "../fixtures/era-kit.ts";
import { eventData, modernHttpClient, postRaw, startHttpProxy, stopHttpProxiesAfterAll } from "../fixtures/http-kit.ts";
import { fixtureServer, journalRows } from "../fixtures/proxy-kit.ts";

stopHttpProxiesAfterAll();
setDefaultTimeout(60_000);

const MODERN = "2026-07-28";

function callBody(id: number, args: Record<string, unknown>): string {
  const _meta = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": { name: "raw-2026", version: "1" },
  };
  return JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "test_custom_headers", arguments: args, _meta } });
}

const HEADERS = { "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "test_custom_headers" };

// Each test has its own fixture, folder and journal: they run side by side.
test.concurrent("a call's Mcp-Param-* header must repeat its argument: plain, base64 and a real v2 client pass; missing, different or broken ones get 400 -32020 and run nothing", async () => {
  const ws = eraWorkspace({ conf: fixtureServer("conformance-server-v2.ts") }, [{ match: "conf.test_*", class: "readonly" }]);
  const proxy = await startHttpProxy(ws);

  const ran = async (response: Response) => {
    expect(response.status).toBe(200);
    return JSON.parse((await eventData(response))[0]!).result.content[0].text as string;
  };
  expect(await ran(await postRaw(proxy.url, callBody(1, { region: "us-west1" }), { ...HEADERS, "Mcp-Param-Region": "us-west1" }))).toBe("region: us-west1");
  const zurich = `=?base64?${Buffer.from("Zürich").toString("base64")}?=`;
  expect(await ran(await postRaw(proxy.url, callBody(2, { region: "Zürich" }), { ...HEADERS, "Mcp-Param-Region": zurich }))).toBe("region: Zürich");

  const refused = async (response: Response) => {
    expect(response.status).toBe(400);
    const answer = await response.json();
    expect(answer.error.code).toBe(-32020);
    return answer.error.message as string;
  };
  expect(await refused(await postRaw(proxy.url, callBody(3, { region: "us-west1" }), HEADERS))).toBe(
    'Header mismatch: the Mcp-Param-Region header is missing (arguments.region is "us-west1")',
  );
  expect(await refused(await postRaw(proxy.url, callBody(4, { region: "us-west1" }), { ...HEADERS, "Mcp-Param-Region": "eu-north1" }))).toBe(
    'Header mismatch: the Mcp-Param-Region header says "eu-north1" but arguments.region is "us-west1"',
  );
  for (const broken of ["=?base64?SGVs!!!bG8=?=", "=?base64?SGVsbG8?="]) {
    expect(await refused(await postRaw(proxy.url, callBody(5, { region: "Hello" }), { ...HEADERS, "Mcp-Param-Region": broken }))).toBe(
      "Header mismatch: the Mcp-Param-Region header's =?base64?…?= value is not valid base64 of UTF-8 text",
    );
  }

  const { client } = await modernHttpClient(proxy.url, "agent-2026");
  const result = await client.callTool({ name: "test_custom_headers", arguments: { region: "ap-south1" } });
  expect((result.content as Array<{ text: string }>)[0]!.text).toBe("region: ap-south1");
  await client.close();

  expect(journalRows(ws.journal).map((row) => [row.tool, JSON.parse(row.args).region])).toEqual([
    ["test_custom_headers", "us-west1"],
    ["test_custom_headers", "Zürich"],
    ["test_custom_headers", "ap-south1"],
  ]);
});

test.concurrent("a call whose server asks for input the client declared no capability for: 400 with -32021 (MissingRequiredClientCapability), as the binding says", async () => {
  const ws = eraWorkspace({ conf: fixtureServer("conformance-server-v2.ts") }, [{ match: "conf.test_*", class: "readonly" }]);
  const proxy = await startHttpProxy(ws);
  const _meta = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": { name: "raw-2026", version: "1" },
  };
  const body = JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "test_missing_capability", arguments: {}, _meta } });
  const response = await postRaw(proxy.url, body, { ...HEADERS, "Mcp-Name": "test_missing_capability" });
  expect([response.status, response.headers.get("content-type")]).toEqual([400, "application/json"]);
  const answer = await response.json();
  expect([answer.id, answer.error.code]).toEqual([7, -32021]);
  expect(answer.error.message).toContain("sampling");
});
