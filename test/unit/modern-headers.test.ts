// The 2026-07-28 HTTP binding's request checks, pure: a body without its
// envelope is Invalid params (-32602); a call's Mcp-Param-* headers must
// repeat the arguments its tool marks `x-mcp-header` (else -32020).
import { describe, expect, test } from "bun:test";
import { headerRefusal, paramRefusal } from "../../src/http/modern-headers.ts";
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
    expect(headerRefusal(headers, request({ _meta: { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {} } }))).toBeUndefined();
  });
  test("an unserved version: -32022 naming the versions a sessionless request may name", () => {
    const future = new Headers({ "MCP-Protocol-Version": "2099-01-01", "Mcp-Method": "tools/list" });
    expect(headerRefusal(future, request({ _meta: { "io.modelcontextprotocol/protocolVersion": "2099-01-01" } }))).toMatchObject({
      code: -32022,
      data: { supported: [MODERN], requested: "2099-01-01" },
    });
  });
});

describe("paramRefusal", () => {
  const mirrored = new Map([
    ["region", "Region"],
    ["priority", "Priority"],
  ]);
  const check = (headers: Record<string, string>, args: unknown) => paramRefusal(new Headers(headers), mirrored, args)?.message;

  test("headers that repeat the body pass (plain, base64, numbers); arguments not carried need none", () => {
    expect(check({ "Mcp-Param-Region": "us-west1", "mcp-param-priority": "3" }, { region: "us-west1", priority: 3 })).toBeUndefined();
    expect(check({ "Mcp-Param-Region": "=?base64?SGVsbG8=?=" }, { region: "Hello" })).toBeUndefined();
    expect(check({}, { priority: null })).toBeUndefined();
    expect(check({}, undefined)).toBeUndefined();
  });

  test("a missing, different or broken header is a mismatch", () => {
    expect(check({}, { region: "us-west1" })).toBe('Header mismatch: the body carries region="us-west1" but the Mcp-Param-Region header is missing');
    expect(check({ "Mcp-Param-Region": "eu" }, { region: "us" })).toBe('Header mismatch: the Mcp-Param-Region header says "eu" but the body\'s region is "us"');
    expect(check({ "Mcp-Param-Priority": "03" }, { priority: 3 })).toBe('Header mismatch: the Mcp-Param-Priority header says "03" but the body\'s priority is 3');
    expect(check({ "Mcp-Param-Region": "=?base64?SGVsbG8?=" }, { region: "Hello" })).toBe(
      "Header mismatch: the Mcp-Param-Region header's =?base64?…?= value is not valid base64 of UTF-8 text",
    );
  });
});
