// Values the 2026-07-28 Streamable HTTP binding mirrors into headers
// (Mcp-Name, Mcp-Param-*), pure: plain when they are safe as a header value,
// else `=?base64?…?=` of their UTF-8 bytes, as the binding's Value Encoding says.

const BASE64_SENTINEL = /^=\?base64\?(.*)\?=$/s;
/** Standard base64 (RFC 4648 §4), padded to whole quanta. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
/** Visible ASCII and space, with nothing at either end that a header would trim. */
const PLAIN = /^(?:[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?)?$/;

/** A value as a header carries it. */
export function encodedHeader(value: string): string {
  if (PLAIN.test(value) && !(value.startsWith("=?base64?") && value.endsWith("?="))) return value;
  return `=?base64?${Buffer.from(value, "utf8").toString("base64")}?=`;
}

/**
 * A header value as the client meant it: a `=?base64?…?=` value decoded
 * (UTF-8); undefined when the encoding is broken (not padded standard base64,
 * other characters, or bytes that are not UTF-8).
 */
export function decodedHeader(value: string): string | undefined {
  const encoded = BASE64_SENTINEL.exec(value);
  if (!encoded) return value;
  if (!BASE64.test(encoded[1]!)) return undefined;
  const bytes = Buffer.from(encoded[1]!, "base64");
  if (bytes.toString("base64").replace(/=+$/, "") !== encoded[1]!.replace(/=+$/, "")) return undefined;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

/** Methods whose target (params.name or params.uri) the Mcp-Name header repeats. */
export const NAMED_METHODS: Readonly<Record<string, "name" | "uri">> = { "tools/call": "name", "prompts/get": "name", "resources/read": "uri" };
