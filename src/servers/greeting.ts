// How Synartesis opens with a server, once per server start (R-ERA-1): a
// process is probed with server/discover in the 2026-07-28 era; a server that
// answers with its versions is spoken to in that era, one that answers
// anything else (or nothing, or exits) gets the 2025 initialize handshake.
// Some servers ignore a request they do not know: a probe not answered
// soon after a ping is, or within PROBE_MS, is raced by initialize, and the
// first useful answer decides. A
// server found to be of the 2025 era is not probed again when it restarts.
// A server reached over HTTP is probed the same way unless it signs in (OAuth
// lives in the SDK transport, which speaks only the 2025 era).
import type { Result } from "@modelcontextprotocol/sdk/types.js";
import { errorOf, isRecord, resultOf } from "../jsonrpc/frames.ts";
import { CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, LEGACY_VERSIONS, MODERN_VERSION, PROTOCOL_VERSION_KEY, SERVER_INFO_KEY, type Era } from "../jsonrpc/eras.ts";
import { ErrorCode, UNSUPPORTED_PROTOCOL_VERSION } from "../jsonrpc/messages.ts";
import type { Reply } from "./pending.ts";
import { UpstreamError } from "./pending.ts";

/** What a server said about itself when it was opened, in either era. */
export interface Hello {
  era: Era;
  protocolVersion: string;
  capabilities: Record<string, unknown>;
  serverInfo: Record<string, unknown>;
  instructions?: string;
  /** A 2025-era server's initialize result as it came (a single server's client gets it back). */
  initResult?: Result;
  /** Why a process was spoken to in the 2025 era (the probe's outcome), for the log. */
  why?: string;
}

/** What opening needs of the upstream. */
export interface Greeted {
  readonly probes: boolean;
  /** A process (it may still be starting when probed); else a server reached over HTTP, up already. */
  readonly startsProcess: boolean;
  request(method: string, params?: unknown): Promise<Reply>;
  /** Whether the connection is still open (a server may exit on the probe). */
  readonly alive: boolean;
  /** The era an earlier start of this server found: a 2025-era one is not probed again. */
  readonly knownEra?: Era;
  open(): Promise<void>;
}

type ProbeOutcome = { modern: Hello } | { legacy: string; version?: string; initialized?: Reply; unanswered?: true };

/** How long a probe waits for its answer, with no sign of the server, before initialize joins the race. */
export const PROBE_MS = 2000;
/** How long after its answer to a ping the server has to answer the probe (its handlers may run side by side). */
const PING_GRACE_MS = 500;

/** Probe (a process), then initialize when the server is not of the 2026 era. */
export async function greet(upstream: Greeted, initParams: unknown, clientEra?: Era): Promise<Hello> {
  const params = isRecord(initParams) ? initParams : {};
  let version: string | undefined;
  let why: string | undefined;
  let initialized: Reply | undefined;
  let unanswered = false;
  if (upstream.probes && clientEra === "legacy" && upstream.knownEra !== "modern") {
    // A 2025-era client gets a server that speaks both eras in its own: logging levels, sampling,
    // elicitation and subscriptions then pass through as they are. A server that refuses initialize
    // (2026-07-28 only) is probed and spoken to in its era, bridged.
    const attempt = await upstream.request("initialize", params).then(
      (reply) => ({ reply }),
      (error: unknown) => ({ error }),
    );
    if ("reply" in attempt && !errorOf(attempt.reply.msg)) [initialized, why] = [attempt.reply, "its client speaks 2025, and so does it"];
    else if ("error" in attempt && !(attempt.error instanceof UpstreamError)) throw attempt.error;
    else if (!upstream.alive) await upstream.open();
  }
  if (!initialized && upstream.probes && upstream.knownEra !== "legacy") {
    const outcome = await probeRacing(upstream, params);
    if ("modern" in outcome) return outcome.modern;
    ({ legacy: why, version, initialized } = outcome);
    unanswered = outcome.unanswered === true;
    // A server that exits on a request before initialize is of the 2025 era: start it again for that.
    if (!upstream.alive) await upstream.open();
  }
  const reply = initialized ?? (await upstream.request("initialize", version ? { ...params, protocolVersion: version } : params));
  const refusal = errorOf(reply.msg);
  if (refusal && unanswered && refusal.code === ErrorCode.MethodNotFound && upstream.alive) {
    // A 2026-era server too slow to start to answer the probe within its timeout (a busy machine): it is up now.
    const again = await settledOf(upstream.request("server/discover", { _meta: probeMeta(params) }));
    const outcome = probeOutcome(again);
    if ("modern" in outcome) return outcome.modern;
  }
  if (refusal) throw new UpstreamError(`it refused initialize: ${refusal.message} (code ${refusal.code})`, "start");
  const result = resultOf(reply.msg) ?? {};
  return {
    era: "legacy",
    protocolVersion: typeof result.protocolVersion === "string" ? result.protocolVersion : String(params.protocolVersion ?? ""),
    capabilities: isRecord(result.capabilities) ? result.capabilities : {},
    serverInfo: isRecord(result.serverInfo) ? result.serverInfo : {},
    ...(typeof result.instructions === "string" ? { instructions: result.instructions } : {}),
    initResult: result,
    ...(why ? { why } : {}),
  };
}

/**
 * The probe, raced by initialize once it has gone unanswered (PING_GRACE_MS
 * after the server answered a ping, or PROBE_MS with no sign of it): a
 * 2026-era server answers the probe, one that ignores what it does not know
 * answers initialize, and the probe's late answer, if any, is dropped.
 */
async function probeRacing(upstream: Greeted, params: Record<string, unknown>): Promise<ProbeOutcome> {
  const probed = settledOf(upstream.request("server/discover", { _meta: probeMeta(params) }));
  // A ping (allowed before initialize in either era) says when the server is up: one that answers it and not the
  // probe ignored the probe. Without that sign (a server still starting, or one that ignores everything before
  // initialize) the race starts after PROBE_MS.
  // It carries the 2026 envelope as the probe does: a server of both eras would take a bare one as a 2025 client's.
  // Only a process may still be starting: an HTTP server is up, and its probe is raced on the clock alone.
  const pinged = upstream.startsProcess ? settledOf(upstream.request("ping", { _meta: probeMeta(params) })) : new Promise<never>(() => {});
  const first = await Promise.race([probed, pinged.then(() => "up" as const), delay(PROBE_MS)]);
  if (first !== undefined && first !== "up") return probeOutcome(first);
  if (first === "up") {
    const answered = await Promise.race([probed, delay(PING_GRACE_MS)]);
    if (answered) return probeOutcome(answered);
  }
  const initializing = settledOf(upstream.request("initialize", params));
  const winner = await Promise.race([probed.then((outcome) => ({ probe: outcome })), initializing.then((outcome) => ({ init: outcome }))]);
  if ("probe" in winner) {
    const outcome = probeOutcome(winner.probe);
    // A 2025-era verdict from the probe while initialize is on its way: that answer is the one to use.
    if ("legacy" in outcome && upstream.alive) {
      const init = await initializing;
      if ("value" in init) return { ...outcome, version: undefined, initialized: init.value };
    }
    return outcome;
  }
  // An initialize that failed, or was refused (a 2026-era server slow to start), decides nothing: the probe does.
  if ("error" in winner.init || errorOf(winner.init.value.msg)) return probeOutcome(await probed);
  // A server of both eras may answer the second request first (its handlers run side by side): the probe
  // gets another moment, and a 2026-era answer to it still decides.
  const late = await Promise.race([probed, delay(PROBE_MS)]);
  if (late) {
    const outcome = probeOutcome(late);
    if ("modern" in outcome) return outcome;
  }
  return { legacy: "it did not answer server/discover, and answered initialize", initialized: winner.init.value };
}

/** A promise's value or error, as a value. */
const settledOf = <T>(promise: Promise<T>): Promise<{ value: T } | { error: unknown }> =>
  promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );

const delay = (ms: number) => new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), ms).unref?.());

function probeMeta(params: Record<string, unknown>): Record<string, unknown> {
  return {
    [PROTOCOL_VERSION_KEY]: MODERN_VERSION,
    [CLIENT_CAPABILITIES_KEY]: {},
    ...(isRecord(params.clientInfo) ? { [CLIENT_INFO_KEY]: params.clientInfo } : {}),
  };
}

/** What the probe's answer (or its failure) says of the server's era. */
function probeOutcome(probed: { value: Reply } | { error: unknown }): ProbeOutcome {
  if ("error" in probed) {
    const error = probed.error;
    if (!(error instanceof UpstreamError)) throw error;
    return error.kind === "timeout"
      ? { legacy: "it did not answer server/discover", unanswered: true }
      : { legacy: `it closed on server/discover (${error.message})` };
  }
  const reply = probed.value;
  const refusal = errorOf(reply.msg);
  if (refusal?.code === UNSUPPORTED_PROTOCOL_VERSION) {
    // A server of the 2026 era that does not serve this revision: one of its 2025 ones, if it names any.
    const supported = isRecord(refusal.data) && Array.isArray(refusal.data.supported) ? refusal.data.supported.map(String) : [];
    const legacy = LEGACY_VERSIONS.find((v) => supported.includes(v));
    if (legacy) return { legacy: `it does not serve ${MODERN_VERSION} (it serves ${supported.join(", ")})`, version: legacy };
    throw new UpstreamError(
      `it serves only the protocol versions ${supported.join(", ") || "(none named)"}; Synartesis speaks ${MODERN_VERSION} and ${LEGACY_VERSIONS.join(", ")}`,
      "start",
    );
  }
  if (refusal) return { legacy: `it answered server/discover with error ${refusal.code} (${refusal.message})` };
  const result = resultOf(reply.msg) ?? {};
  if (!Array.isArray(result.supportedVersions)) return { legacy: "its answer to server/discover names no supportedVersions" };
  const versions = result.supportedVersions.map(String);
  if (!versions.includes(MODERN_VERSION)) {
    const legacy = LEGACY_VERSIONS.find((v) => versions.includes(v));
    if (legacy) return { legacy: `it does not serve ${MODERN_VERSION}`, version: legacy };
    throw new UpstreamError(
      `it serves only the protocol versions ${versions.join(", ")}; Synartesis speaks ${MODERN_VERSION} and ${LEGACY_VERSIONS.join(", ")}`,
      "start",
    );
  }
  const meta2 = isRecord(result._meta) ? result._meta : {};
  return {
    modern: {
      era: "modern",
      protocolVersion: MODERN_VERSION,
      capabilities: isRecord(result.capabilities) ? result.capabilities : {},
      serverInfo: isRecord(meta2[SERVER_INFO_KEY]) ? meta2[SERVER_INFO_KEY] : {},
      ...(typeof result.instructions === "string" ? { instructions: result.instructions } : {}),
    },
  };
}
