// JSON-RPC lines the proxy writes itself, with ids echoed as the exact bytes
// their sender wrote (2^53+1 stays 2^53+1, 1e400 stays 1e400).
import { idKey } from "./json-check.ts";
import { rawMember } from "./raw-json.ts";

/** A request's id: `text` is the exact bytes its sender wrote (echoed back as they came), `key` its identity. */
export interface MessageId {
  text: string;
  key: string;
}

export const isId = (value: unknown): value is string | number => typeof value === "string" || typeof value === "number";

/** The id of a message as it was written, when it is a valid request id. */
export function messageIdOf(msg: any, raw: string): MessageId | undefined {
  if (!isId(msg?.id)) return undefined;
  const text = rawMember(raw, "id") ?? JSON.stringify(msg.id);
  return { text, key: idKey(text) };
}

export function errorLine(id: MessageId | null, code: number, message: string): string {
  return `{"jsonrpc":"2.0","id":${id?.text ?? "null"},"error":${JSON.stringify({ code, message })}}`;
}

export function resultLine(id: MessageId, result: unknown): string {
  return `{"jsonrpc":"2.0","id":${id.text},"result":${JSON.stringify(result)}}`;
}

/** A tool error result for the request whose id was written as `idText`. */
export function toolErrorLine(idText: string, text: string): string {
  return `{"jsonrpc":"2.0","id":${idText},"result":${JSON.stringify({ content: [{ type: "text", text }], isError: true })}}`;
}
