// JSON-RPC lines Synartesis writes itself, with ids echoed as the exact bytes
// their sender wrote (2^53+1 stays 2^53+1, 1e400 stays 1e400).
import type { MessageId } from "./message-id.ts";

/**
 * JSON-RPC's error codes and the MCP SDK's own, as the SDK's ErrorCode has
 * them: the same numbers, without loading the SDK's schemas (frames.ts says why).
 */
export const ErrorCode = {
  ConnectionClosed: -32000,
  RequestTimeout: -32001,
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  UrlElicitationRequired: -32042,
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** Codes the SDK's ErrorCode lacks: a request before initialize (LSP's ServerNotInitialized), a declined sampling request (the MCP specification's "user rejected"). */
export const NOT_INITIALIZED = -32002;
export const USER_REJECTED = -1;
/** The 2026-07-28 revision's errors for a protocol version nobody serves, for a capability a request lacks, and (HTTP) for headers that do not say what the body says. */
export const UNSUPPORTED_PROTOCOL_VERSION = -32022;
export const MISSING_REQUIRED_CLIENT_CAPABILITY = -32021;
export const HEADER_MISMATCH = -32020;
export type Code =
  | ErrorCode
  | typeof NOT_INITIALIZED
  | typeof USER_REJECTED
  | typeof UNSUPPORTED_PROTOCOL_VERSION
  | typeof MISSING_REQUIRED_CLIENT_CAPABILITY
  | typeof HEADER_MISMATCH;

export function errorLine(id: MessageId | null, code: Code, message: string, data?: unknown): string {
  return `{"jsonrpc":"2.0","id":${id?.text ?? "null"},"error":${JSON.stringify({ code, message, ...(data === undefined ? {} : { data }) })}}`;
}

export function resultLine(id: MessageId, result: unknown): string {
  return `{"jsonrpc":"2.0","id":${id.text},"result":${JSON.stringify(result)}}`;
}

/** A tool error result for the request whose id was written as `idText`. */
export function toolErrorLine(idText: string, text: string): string {
  return `{"jsonrpc":"2.0","id":${idText},"result":${JSON.stringify({ content: [{ type: "text", text }], isError: true })}}`;
}

/** A request or notification of Synartesis's own (no id: a notification). */
export function messageLine(method: string, params?: unknown, id?: number): string {
  return JSON.stringify({ jsonrpc: "2.0", ...(id === undefined ? {} : { id }), method, ...(params === undefined ? {} : { params }) });
}
