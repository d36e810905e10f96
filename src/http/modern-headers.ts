// The request metadata headers of the 2026-07-28 Streamable HTTP binding,
// pure: which POSTs are sessionless (2026-era) requests, and whether their
// headers (MCP-Protocol-Version, Mcp-Method, Mcp-Name) say what their body
// says. A mismatch is refused with 400 and HeaderMismatch (-32020), an
// unserved version with 400 and UnsupportedProtocolVersion (-32022), a body
// without its envelope (protocol version, client capabilities) with 400 and
// Invalid params (-32602), as the binding requires: whatever routes on a
// header must see what the proxy runs. (A call's Mcp-Param-* headers are held
// to its arguments in param-check.ts.)
import { claimedVersion, LEGACY_VERSIONS, MODERN_VERSIONS } from "../jsonrpc/eras.ts";
import { paramsOf, type RequestFrame } from "../jsonrpc/frames.ts";
import { decodedHeader, NAMED_METHODS } from "../jsonrpc/header-values.ts";
import { HEADER_MISMATCH, UNSUPPORTED_PROTOCOL_VERSION, type Code } from "../jsonrpc/messages.ts";
import { modernEnvelope } from "../proxy/session/client-era.ts";

const VERSION_HEADER = "mcp-protocol-version";

/** Why a request is refused before it is run: HTTP 400, a JSON-RPC error under the request's id. */
export interface HeaderRefusal {
  code: Code;
  message: string;
  data?: unknown;
}

/** Whether a POST's MCP-Protocol-Version header names a 2026 revision. */
export function namesModernVersion(headers: Headers): boolean {
  const version = headers.get(VERSION_HEADER);
  return version !== null && MODERN_VERSIONS.includes(version);
}

/**
 * Whether a POST is a sessionless 2026-era request: its MCP-Protocol-Version
 * header names a 2026 revision, or, without a session, it names a revision
 * Synartesis does not serve at all, or its body claims one (then its headers
 * are checked, and a missing header is refused, not taken for a 2025 client).
 */
export function isSessionless(headers: Headers, body: RequestFrame | undefined, hasSession: boolean): boolean {
  if (namesModernVersion(headers)) return true;
  const version = headers.get(VERSION_HEADER);
  if (hasSession) return false;
  if (version !== null && !LEGACY_VERSIONS.includes(version)) return true;
  return body !== undefined && body.msg.method !== "initialize" && claimedVersion(paramsOf(body.msg)) !== undefined;
}

const shown = (value: unknown) => (typeof value === "string" ? JSON.stringify(value) : String(value));

/** Why a sessionless request's headers cannot be trusted, if they cannot (undefined: they match its body). */
export function headerRefusal(headers: Headers, frame: RequestFrame): HeaderRefusal | undefined {
  const params = paramsOf(frame.msg);
  const version = headers.get(VERSION_HEADER);
  const mismatch = (message: string): HeaderRefusal => ({ code: HEADER_MISMATCH, message: `Header mismatch: ${message}` });
  if (version === null) return mismatch("the MCP-Protocol-Version header is missing (a 2026-07-28 request must repeat its _meta protocol version there)");
  const claimed = claimedVersion(params);
  // A 2025 revision is served after initialize only, never sessionless.
  if (!MODERN_VERSIONS.includes(version) && (claimed === version || !LEGACY_VERSIONS.includes(version))) {
    // The versions a request of this kind may name (as server/discover says, and as over stdio).
    return {
      code: UNSUPPORTED_PROTOCOL_VERSION,
      message: `Unsupported protocol version ${JSON.stringify(version)}: Synartesis serves ${MODERN_VERSIONS.join(", ")} without sessions, and ${LEGACY_VERSIONS.join(", ")} after initialize`,
      data: { supported: MODERN_VERSIONS, requested: version },
    };
  }
  if (claimed !== undefined && claimed !== version)
    return mismatch(`the MCP-Protocol-Version header says ${JSON.stringify(version)} but the body's _meta says ${shown(claimed)}`);
  // The body's own envelope, judged as over stdio.
  const modern = modernEnvelope(params, true)!;
  if ("refusal" in modern) {
    const [code, message, data] = modern.refusal;
    return { code, message, ...(data !== undefined && { data }) };
  }
  const method = headers.get("mcp-method");
  if (method === null) return mismatch("the Mcp-Method header is missing");
  if (method !== frame.msg.method)
    return mismatch(`the Mcp-Method header says ${JSON.stringify(method)} but the body's method is ${JSON.stringify(frame.msg.method)}`);
  const field = NAMED_METHODS[frame.msg.method];
  if (!field) return undefined;
  const nameHeader = headers.get("mcp-name");
  if (nameHeader === null) return mismatch(`the Mcp-Name header is missing (${frame.msg.method} must repeat params.${field} there)`);
  const name = decodedHeader(nameHeader);
  if (name === undefined) return mismatch("the Mcp-Name header's =?base64?…?= value is not valid base64 of UTF-8 text");
  if (name !== params[field]) return mismatch(`the Mcp-Name header says ${JSON.stringify(name)} but params.${field} is ${shown(params[field])}`);
  return undefined;
}
