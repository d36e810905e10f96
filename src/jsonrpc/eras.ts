// The two protocol eras (R-ERA): 2025 revisions open with initialize and keep
// a session; 2026-07-28 has none, and every request carries its protocol
// version, client capabilities and client info in `_meta`. What each era's
// messages look like, and how a raw line is moved from one to the other with
// every byte of its arguments kept. Pure.
import { isRecord, resultOf, type Response } from "./frames.ts";
import { rawMember, withMembers } from "./raw-json.ts";

export type Era = "legacy" | "modern";

/** The sessionless revision, served to clients and spoken to servers that offer it. */
export const MODERN_VERSION = "2026-07-28";
export const MODERN_VERSIONS = [MODERN_VERSION];
/** initialize-era revisions, newest first. */
export const LEGACY_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
/** Those and 2024-10-07, which the SDK's own servers accept too (as their list does): in an initialize, an MCP-Protocol-Version header. */
export const ACCEPTED_LEGACY_VERSIONS = [...LEGACY_VERSIONS, "2024-10-07"];
/**
 * Requests the 2026-07-28 revision removed (its changelog: no handshake, no
 * ping or logging/setLevel, subscriptions/listen instead of resources/subscribe,
 * tasks polled with tasks/get): not found for a client of that era.
 */
export const REMOVED_IN_MODERN = new Set([
  "initialize",
  "ping",
  "logging/setLevel",
  "resources/subscribe",
  "resources/unsubscribe",
  "tasks/result",
  "tasks/list",
]);

export const PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion";
export const CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo";
export const CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities";
export const LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel";
export const SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo";
/** A client's own name for its run (R-ERA-5); Synartesis's, never forwarded. */
export const RUN_KEY = "io.synartesis/run";
export const TASKS_EXTENSION = "io.modelcontextprotocol/tasks";

/** Results a 2026-era client caches: they carry ttlMs and cacheScope. */
export const CACHEABLE_METHODS = new Set(["tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read", "server/discover"]);

/** Who a request is from and what it can do, as a 2026-era request says in its `_meta`. */
export interface Envelope {
  clientInfo?: Record<string, unknown>;
  clientCapabilities: Record<string, unknown>;
  logLevel?: string;
}

/** The protocol version a request's `_meta` claims (a 2026-era request always does), if any. */
export function claimedVersion(params: Record<string, unknown>): unknown {
  const meta = isRecord(params._meta) ? params._meta : {};
  return meta[PROTOCOL_VERSION_KEY];
}

/** The envelope of a 2026-era request; a string saying what is missing when it is not one. */
export function envelopeOf(params: Record<string, unknown>): Envelope | string {
  const meta = isRecord(params._meta) ? params._meta : {};
  const capabilities = meta[CLIENT_CAPABILITIES_KEY];
  if (!isRecord(capabilities)) return `_meta["${CLIENT_CAPABILITIES_KEY}"] must be an object (the client's capabilities for this request)`;
  const info = meta[CLIENT_INFO_KEY];
  return {
    clientCapabilities: capabilities,
    ...(isRecord(info) ? { clientInfo: info } : {}),
    ...(typeof meta[LOG_LEVEL_KEY] === "string" ? { logLevel: meta[LOG_LEVEL_KEY] as string } : {}),
  };
}

/** The `_meta` keys a request carries for the protocol, as opposed to the caller's own (progressToken, …). */
const ENVELOPE_KEYS = [PROTOCOL_VERSION_KEY, CLIENT_INFO_KEY, CLIENT_CAPABILITIES_KEY, LOG_LEVEL_KEY, RUN_KEY];

/** A request line with its params' members changed (see withMembers); a line without params gets some. */
export function withParams(line: string, changes: Record<string, string | undefined>): string {
  const params = rawMember(line, "params");
  const edited = withMembers(params ?? "{}", changes);
  return params === edited ? line : withMembers(line, { params: edited });
}

function metaOf(line: string): Record<string, unknown> | undefined {
  const text = rawMember(rawMember(line, "params") ?? "{}", "_meta");
  if (text === undefined) return undefined;
  const meta: unknown = JSON.parse(text);
  return isRecord(meta) ? meta : undefined;
}

/** A request as a 2026-era server must get it: `_meta` carrying this envelope (the caller's other keys kept). */
export function withEnvelope(line: string, envelope: Envelope, version = MODERN_VERSION): string {
  const meta = { ...metaOf(line) };
  for (const key of ENVELOPE_KEYS) delete meta[key];
  meta[PROTOCOL_VERSION_KEY] = version;
  meta[CLIENT_CAPABILITIES_KEY] = envelope.clientCapabilities;
  if (envelope.clientInfo) meta[CLIENT_INFO_KEY] = envelope.clientInfo;
  if (envelope.logLevel) meta[LOG_LEVEL_KEY] = envelope.logLevel;
  return withParams(line, { _meta: JSON.stringify(meta) });
}

/** A request as a 2025-era server may get it: without the 2026 envelope (the line is untouched when it has none). */
export function withoutEnvelope(line: string): string {
  // Most lines (every one from a 2025 client) carry no envelope: a scan of the text says so without parsing.
  if (!line.includes("io.modelcontextprotocol/") && !line.includes(RUN_KEY)) return line;
  const meta = metaOf(line);
  if (!meta || !ENVELOPE_KEYS.some((key) => key in meta)) return line;
  for (const key of ENVELOPE_KEYS) delete meta[key];
  return withParams(line, { _meta: Object.keys(meta).length ? JSON.stringify(meta) : undefined });
}

/**
 * A result line as a 2026-era client must get it: `resultType` (absent means
 * complete, in a 2025 server's results), and the cache fields a cacheable
 * result needs (a 2025 server gives none: never cached).
 */
export function asModernResult(line: string, method: string): string {
  const result = rawMember(line, "result");
  if (result === undefined || !result.trimStart().startsWith("{")) return line;
  const missing = (key: string) => rawMember(result, key) === undefined;
  const changes: Record<string, string> = {};
  if (missing("resultType")) changes.resultType = '"complete"';
  const complete = changes.resultType !== undefined || rawMember(result, "resultType") === '"complete"';
  if (complete && CACHEABLE_METHODS.has(method)) {
    if (missing("ttlMs")) changes.ttlMs = "0";
    if (missing("cacheScope")) changes.cacheScope = '"private"';
  }
  return Object.keys(changes).length ? withMembers(line, { result: withMembers(result, changes) }) : line;
}

/**
 * A result line as a 2025-era client must get it from a 2026-era server:
 * without what only 2026-07-28 has — `resultType` "complete", the cache
 * fields of a complete result, the `_meta` keys the protocol reserves
 * (io.modelcontextprotocol/…). Everything else stays byte for byte; a line
 * with none of them is not looked into.
 */
export function asLegacyResult(line: string): string {
  if (!line.includes('"resultType"') && !line.includes('"io.modelcontextprotocol/')) return line;
  const result = rawMember(line, "result");
  if (result === undefined || !result.trimStart().startsWith("{")) return line;
  const changes: Record<string, string | undefined> = {};
  if (rawMember(result, "resultType") === '"complete"') Object.assign(changes, { resultType: undefined, ttlMs: undefined, cacheScope: undefined });
  const meta = rawMember(result, "_meta");
  if (meta?.trimStart().startsWith("{")) {
    const keys = Object.keys(JSON.parse(meta) as Record<string, unknown>);
    const reserved = keys.filter((key) => key.startsWith("io.modelcontextprotocol/"));
    if (reserved.length === keys.length && keys.length > 0) changes._meta = undefined;
    else if (reserved.length) changes._meta = withMembers(meta, Object.fromEntries(reserved.map((key) => [key, undefined])));
  }
  return Object.keys(changes).length ? withMembers(line, { result: withMembers(result, changes) }) : line;
}

/** What a result is: complete, or (2026-07-28) interim: input required, or a task handle (the tasks extension). */
export function resultTypeOf(reply: Response): string {
  const type = resultOf(reply)?.resultType;
  return typeof type === "string" ? type : "complete";
}

/** The requests an `input_required` result carries (key → {method, params}), and the state to echo. */
export interface InputRequired {
  inputRequests: Record<string, { method: string; params?: unknown }>;
  requestState?: string;
}

export function inputRequiredOf(reply: Response): InputRequired | undefined {
  const result = resultOf(reply);
  if (result?.resultType !== "input_required") return undefined;
  const inputRequests: InputRequired["inputRequests"] = {};
  if (isRecord(result.inputRequests)) {
    for (const [key, request] of Object.entries(result.inputRequests)) {
      if (isRecord(request) && typeof request.method === "string")
        inputRequests[key] = { method: request.method, ...("params" in request ? { params: request.params } : {}) };
    }
  }
  return { inputRequests, ...(typeof result.requestState === "string" ? { requestState: result.requestState } : {}) };
}

/** The capability a client must have declared to be asked this (sampling, elicitation, roots). */
export function capabilityFor(method: string): string | undefined {
  return { "sampling/createMessage": "sampling", "elicitation/create": "elicitation", "roots/list": "roots" }[method];
}
