// The 2026-07-28 HTTP binding's request checks, pure: a body without its
// envelope is Invalid params (-32602); a version nobody serves, -32022.
import { describe, expect, test } from "bun:test";
import { headerRefusal } from "../../src/http/modern-headers.ts";
import { frameOf, type RequestFrame } from "../../src/jsonrpc/frames.ts";

const MODERN = "2026-07-28";

function request(params: Record<string, unknown>): RequestFrame {
  const msg = { jsonrpc: "2.0", id: 1, method: "tools/list", params };
  return frameOf(msg, JSON.stringify(msg)) as RequestFrame;
}

describe("headerRefusal: the envelope", () => {
  const headers = new Headers({ "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list" });
  test("no _meta protocol version, or no client capabilities: -32602", () => {
    expect(headerRefusal(headers, request({}))?.code).toBe(-32602);
    expect(headerRefusal(headers, request({ _meta: { "io.modelcontextprotocol/protocolVersion": MODERN } }))?.code).toBe(-32602);
    expect(
      headerRefusal(headers, request({ _meta: { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {} } })),
    ).toBeUndefined();
  });
  test("an unserved version: -32022 naming the versions a sessionless request may name", () => {
    const future = new Headers({ "MCP-Protocol-Version": "2099-01-01", "Mcp-Method": "tools/list" });
    expect(headerRefusal(future, request({ _meta: { "io.modelcontextprotocol/protocolVersion": "2099-01-01" } }))).toMatchObject({
      code: -32022,
      data: { supported: [MODERN], requested: "2099-01-01" },
    });
  });
});
