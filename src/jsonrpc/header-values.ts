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

/**
 * The arguments a listed tool mirrors into headers: argument name → the
 * header's suffix (`Mcp-Param-<suffix>`), from the `x-mcp-header` of its
 * inputSchema's top-level properties (SEP-2243).
 */
export function mirroredArguments(tool: unknown): Map<string, string> {
  const mirrored = new Map<string, string>();
  const schema = typeof tool === "object" && tool !== null ? (tool as { inputSchema?: unknown }).inputSchema : undefined;
  const properties = typeof schema === "object" && schema !== null ? (schema as { properties?: unknown }).properties : undefined;
  if (typeof properties !== "object" || properties === null) return mirrored;
  for (const [argument, property] of Object.entries(properties)) {
    const header = typeof property === "object" && property !== null ? (property as Record<string, unknown>)["x-mcp-header"] : undefined;
    if (typeof header === "string" && header !== "") mirrored.set(argument, header);
  }
  return mirrored;
}

/** The Mcp-Param-* headers of a call: one per mirrored argument it carries (a string, number or boolean; null or absent sends none). */
export function paramHeaders(mirrored: ReadonlyMap<string, string>, args: unknown): Record<string, string> {
  const headers: Record<string, string> = {};
  if (typeof args !== "object" || args === null) return headers;
  for (const [argument, suffix] of mirrored) {
    const value = (args as Record<string, unknown>)[argument];
    if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") headers[`Mcp-Param-${suffix}`] = encodedHeader(String(value));
  }
  return headers;
}
