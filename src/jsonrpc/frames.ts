// JSON-RPC messages as Synartesis reads them, from a client or a server: each
// one checked as the SDK's guards check it and kept beside the raw text it came
// in, so it can be forwarded byte for byte and its id echoed as the exact bytes
// its sender wrote (2^53+1 stays 2^53+1, 1e400 stays 1e400).
//
// The checks are written out here rather than taken from the SDK: its guards
// are zod schemas, and loading them (types.js and zod) costs every process
// ~20 MB and tens of milliseconds before its first message, and every message
// a schema parse (issue 20). test/unit/frames.test.ts holds them to the SDK's.
import type { JSONRPCErrorResponse, JSONRPCNotification, JSONRPCRequest, JSONRPCResultResponse, Result } from "@modelcontextprotocol/sdk/types.js";
import { idKey, MAX_NESTING, nestingDepth, duplicateMember } from "./json-check.ts";
import { ErrorCode, errorLine } from "./messages.ts";
import { rawElements, rawMember } from "./raw-json.ts";
import type { MessageId } from "./message-id.ts";

export type { MessageId } from "./message-id.ts";

export type Response = JSONRPCResultResponse | JSONRPCErrorResponse;

export interface RequestFrame {
  kind: "request";
  raw: string;
  id: MessageId;
  msg: JSONRPCRequest;
}

export interface NotificationFrame {
  kind: "notification";
  raw: string;
  msg: JSONRPCNotification;
}

export interface ResponseFrame {
  kind: "response";
  raw: string;
  id: MessageId;
  msg: Response;
}

/** A message nobody can act on, with the error that answers it (`id` null when none could be read). */
export interface InvalidFrame {
  kind: "invalid";
  raw: string;
  id: MessageId | null;
  code: ErrorCode;
  message: string;
  /** What it looked like: a notification or a response gets no answer (JSON-RPC answers only requests). */
  looksLike: "request" | "notification" | "response" | "nothing";
}

export type Frame = RequestFrame | NotificationFrame | ResponseFrame | InvalidFrame;

export const isId = (value: unknown): value is string | number => typeof value === "string" || typeof value === "number";

export const isRecord = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object" && !Array.isArray(value);

/**
 * A message's id, found in its raw text when first asked for: a server's
 * answer is matched by its parsed id and never needs it, and finding it walks
 * the whole line, result and all.
 */
class WrittenId implements MessageId {
  readonly #raw: string;
  readonly #value: string | number;
  #text: string | undefined;
  #key: string | undefined;

  constructor(raw: string, value: string | number) {
    this.#raw = raw;
    this.#value = value;
  }

  get text(): string {
    return (this.#text ??= rawMember(this.#raw, "id") ?? JSON.stringify(this.#value));
  }

  get key(): string {
    return (this.#key ??= idKey(this.text));
  }

  toJSON(): { text: string; key: string } {
    return { text: this.text, key: this.key };
  }
}

/** The id of a message as it was written, when it is a valid request id. */
export function messageIdOf(value: unknown, raw: string): MessageId | undefined {
  if (!isRecord(value) || !isId(value.id)) return undefined;
  return new WrittenId(raw, value.id);
}

/** The id key of a number the proxy chose itself (its own requests, forwarded server requests). */
export function numberKey(id: number): string {
  return idKey(String(id));
}

function invalid(looksLike: InvalidFrame["looksLike"], raw: string, id: MessageId | null, code: ErrorCode, message: string): InvalidFrame {
  return { kind: "invalid", raw, id, code, message, looksLike };
}

/** Whether an invalid message is answered with its error (only what may be a request is). */
export function deservesAnswer(frame: InvalidFrame): boolean {
  return frame.looksLike === "request" || frame.looksLike === "nothing";
}

/**
 * The SDK's RequestMetaSchema: absent, or an object whose progressToken, if
 * any, is a string or a safe integer, and whose related task, if any, has a
 * string taskId.
 */
function metaFits(meta: unknown): boolean {
  if (meta === undefined) return true;
  if (!isRecord(meta)) return false;
  const token = meta.progressToken;
  if (token !== undefined && typeof token !== "string" && !Number.isSafeInteger(token)) return false;
  const related = meta["io.modelcontextprotocol/related-task"];
  return related === undefined || (isRecord(related) && typeof related.taskId === "string");
}

/** As the SDK's request and notification guards take params: absent, or an object whose _meta fits. */
export function paramsFit(params: unknown): boolean {
  return params === undefined || (isRecord(params) && metaFits(params._meta));
}

/** As the SDK's response guards take a result and an error (strict: exactly one of them). */
export function responseFits(result: unknown, error: unknown): boolean {
  if (result !== undefined) return error === undefined && isRecord(result) && metaFits(result._meta);
  return isRecord(error) && Number.isSafeInteger(error.code) && typeof error.message === "string";
}

/**
 * One parsed message, typed. The envelope is checked as the SDK's guards
 * check it (jsonrpc, method, params and its _meta, result, error); the id is
 * checked here, because any JSON string or number is an id to echo back
 * exactly, while the guards refuse numbers like 2^53+1. Members beyond the
 * envelope travel untouched and are left out of the check.
 */
export function frameOf(value: unknown, raw: string): Frame {
  const id = messageIdOf(value, raw) ?? null;
  if (!isRecord(value) || value.jsonrpc !== "2.0") {
    return invalid("nothing", raw, id, ErrorCode.InvalidRequest, 'Invalid Request: expected a JSON-RPC 2.0 object ("jsonrpc": "2.0")');
  }
  // `"params": null` is read as no params (some JSON-RPC libraries write absent params so).
  const params = value.params === null ? undefined : value.params;
  if (typeof value.method === "string") {
    const badParams = `Invalid params: the params of ${value.method} must be an object (with _meta an object, its progressToken a string or a number)`;
    if (value.id === undefined) {
      if (!paramsFit(params)) return invalid("notification", raw, null, ErrorCode.InvalidParams, badParams);
      return { kind: "notification", raw, msg: value as JSONRPCNotification };
    }
    if (!id) return invalid("request", raw, null, ErrorCode.InvalidRequest, "Invalid Request: id must be a string or a number");
    if (!paramsFit(params)) return invalid("request", raw, id, ErrorCode.InvalidParams, badParams);
    return { kind: "request", raw, id, msg: value as JSONRPCRequest };
  }
  if (id && (value.result !== undefined || value.error !== undefined)) {
    if (responseFits(value.result, value.error)) return { kind: "response", raw, id, msg: value as Response };
    return invalid(
      "response",
      raw,
      id,
      ErrorCode.InvalidRequest,
      "Invalid Request: not a valid JSON-RPC response (a result object, or an error with a code and a message)",
    );
  }
  return invalid("nothing", raw, id, ErrorCode.InvalidRequest, "Invalid Request: no method");
}

/** The error code of a JSON-RPC line, when it is an error; the rest of the line (a result of any size) is not parsed. */
export function errorCodeOf(line: string): number | undefined {
  try {
    const error: unknown = JSON.parse(rawMember(line, "error") ?? "null");
    return isRecord(error) && typeof error.code === "number" ? error.code : undefined;
  } catch {
    return undefined;
  }
}

/** A response's error, when it is an error response. */
export function errorOf(msg: Response): JSONRPCErrorResponse["error"] | undefined {
  return "error" in msg ? msg.error : undefined;
}

/** A response's result, when it is a result. */
export function resultOf(msg: Response): Result | undefined {
  return "result" in msg ? msg.result : undefined;
}

/** The params of a request or notification as a record (empty when it has none). */
export function paramsOf(msg: JSONRPCRequest | JSONRPCNotification): Record<string, unknown> {
  return msg.params ?? {};
}

/**
 * A text of JSON-RPC (a line from stdio, a POST's body) as its messages: one,
 * or each element of a batch. Line breaks in it can only be whitespace
 * between tokens: they become spaces, so each raw message is one line (a
 * stdio server reads lines). When it holds no message, `refused` is the
 * error that answers it.
 */
export function readMessages(text: string, what: "line" | "body"): { frames: Frame[] } | { refused: string } {
  if (nestingDepth(text) > MAX_NESTING) {
    // Parsed, such a message would only overflow a stack further on: refuse it, naming why.
    const idText = rawMember(text, "id");
    const id = idText !== undefined && /^["\d-]/.test(idText) ? { text: idText, key: "" } : null;
    return { refused: errorLine(id, ErrorCode.InvalidRequest, `Invalid Request: nesting too deep (more than ${MAX_NESTING} levels of objects and arrays)`) };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { refused: errorLine(null, ErrorCode.ParseError, `Parse error: the ${what} is not valid JSON`) };
  }
  const line = /[\r\n]/.test(text) ? text.replace(/[\r\n]/g, " ") : text;
  if (!Array.isArray(value)) return { frames: [unambiguousFrame(value, line)] };
  if (value.length === 0) return { refused: errorLine(null, ErrorCode.InvalidRequest, "Invalid Request: empty batch") };
  const raws = rawElements(line);
  return { frames: value.map((item, index) => unambiguousFrame(item, raws[index] ?? JSON.stringify(item))) };
}

/**
 * A message that gives a top-level key twice (two ids, two params) is refused
 * before anything is routed or recorded: which of the two a server would act
 * on is anyone's guess, so its answer could be taken for another call's.
 */
function unambiguousFrame(value: unknown, raw: string): Frame {
  const twice = duplicateMember(raw);
  if (twice === undefined) return frameOf(value, raw);
  return invalid("nothing", raw, null, ErrorCode.InvalidRequest, `Invalid Request: the message gives "${twice}" twice; nothing was run`);
}
