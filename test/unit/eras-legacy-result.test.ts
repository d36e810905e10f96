// asLegacyResult (jsonrpc/eras.ts): a 2026-era server's result as a 2025-era
// client must get it, everything else byte for byte.
import { expect, test } from "bun:test";
import { asLegacyResult } from "../../src/jsonrpc/eras.ts";

test("resultType complete, the cache fields and the reserved _meta keys go; the rest stays as written", () => {
  const line =
    '{"result":{"content":[{"type":"text","text":"1.0"}],"resultType":"complete","ttlMs":0,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"x"},"mine":1.50}},"jsonrpc":"2.0","id":7}';
  expect(asLegacyResult(line)).toBe('{"result":{"content":[{"type":"text","text":"1.0"}],"_meta":{"mine":1.50}},"jsonrpc":"2.0","id":7}');
  expect(asLegacyResult('{"result":{"a":1,"_meta":{"io.modelcontextprotocol/serverInfo":{}}},"id":1}')).toBe('{"result":{"a":1},"id":1}');
  // A 2025 server's result, or an interim one, is not touched.
  for (const same of ['{"jsonrpc":"2.0","id":1,"result":{"content":[]}}', '{"id":1,"result":{"resultType":"input_required","inputRequests":{}}}'])
    expect(asLegacyResult(same)).toBe(same);
});
