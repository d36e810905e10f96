// The 2026-07-28 HTTP binding's header values (Mcp-Name): plain when safe,
// `=?base64?…?=` otherwise, and back; and the event streams a 2026-era
// server answers a POST with, read into their lines.
import { describe, expect, test } from "bun:test";
import { decodedHeader, encodedHeader } from "../../src/jsonrpc/header-values.ts";
import { eventData } from "../../src/servers/modern-http.ts";

describe("header values", () => {
  test("the binding's examples: plain ASCII as it is; non-ASCII, edge spaces, line breaks and the sentinel itself in base64", () => {
    expect(encodedHeader("us-west1")).toBe("us-west1");
    expect(encodedHeader("Hello, 世界")).toBe("=?base64?SGVsbG8sIOS4lueVjA==?=");
    expect(encodedHeader(" padded ")).toBe("=?base64?IHBhZGRlZCA=?=");
    expect(encodedHeader("line1\nline2")).toBe("=?base64?bGluZTEKbGluZTI=?=");
    expect(encodedHeader("=?base64?literal?=")).toBe("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=");
    for (const value of ["us-west1", "Hello, 世界", " padded ", "line1\nline2", "=?base64?literal?=", ""])
      expect(decodedHeader(encodedHeader(value))).toBe(value);
  });

  test("a sentinel that is not base64 of UTF-8 text is broken, not taken as it is", () => {
    expect(decodedHeader("=?base64?/w==?=")).toBeUndefined();
    expect(decodedHeader("=?base64?SGVsbG8=?=")).toBe("Hello");
    // Standard base64 only, padded (as the 2026 conformance suite's header checks and the v2 SDK require).
    expect(decodedHeader("=?base64?SGVsbG8?=")).toBeUndefined();
    expect(decodedHeader("=?base64?SGVs!!!bG8=?=")).toBeUndefined();
    expect(decodedHeader("=?base64?SGVs bG8=?=")).toBeUndefined();
  });
});

/** The data of each event in a stream that brings `chunks`, one after another. */
async function eventsOf(chunks: string[]): Promise<string[]> {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk));
      controller.close();
    },
  });
  return Array.fromAsync(eventData(body));
}

describe("an event stream's lines", () => {
  test("events split at blank lines (LF, CRLF or CR, across chunks); several data fields join with LF; comments and other fields are skipped", async () => {
    const chunks = [': open\r\n\r\nevent: message\r\ndata: {"a":', "1}\r", '\n\r\ndata: {"b":\ndata: 2}\n\nid: 7\ndata:{"c":3}\n\n', 'data: {"d":4}'];
    expect(await eventsOf(chunks)).toEqual(['{"a":1}', '{"b":\n2}', '{"c":3}', '{"d":4}']);
  });

  test("an event that comes in a thousand chunks, its line ends split across them, is read whole and once", async () => {
    const event = `data: ${"x".repeat(5000)}\r\ndata: ${"y".repeat(5000)}\r\n\r\n`;
    const chunks = event.match(/[\s\S]{1,10}/g)!;
    expect(await eventsOf(chunks)).toEqual([`${"x".repeat(5000)}\n${"y".repeat(5000)}`]);
  });
});
