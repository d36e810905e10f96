// A client connection's era (R-ERA-1): a request whose `_meta` claims a
// protocol version is a 2026-era request, served if that version is one
// Synartesis serves (else -32022, naming the ones it does) and if it carries
// the envelope the revision requires (else -32602); an initialize opens a
// 2025-era connection. The first request decides, once.
import {
  asLegacyResult,
  asModernResult,
  claimedVersion,
  CLIENT_INFO_KEY,
  envelopeOf,
  LEGACY_VERSIONS,
  MODERN_VERSIONS,
  RUN_KEY,
  type Envelope,
  type Era,
} from "../../jsonrpc/eras.ts";
import { isRecord, paramsOf, type NotificationFrame, type RequestFrame } from "../../jsonrpc/frames.ts";
import { ErrorCode, errorLine, UNSUPPORTED_PROTOCOL_VERSION, type Code } from "../../jsonrpc/messages.ts";
import { rawMember, withIdText } from "../../jsonrpc/raw-json.ts";
import type { Upstream } from "../../servers/upstream.ts";
import { ClientRequest, type RequestChannel, requestIdentity, type AskClient } from "./client-request.ts";
import { askByRequests, HeldServerRequests, isContinuation, Retries } from "./input.ts";
import type { ToClient } from "./to-client.ts";

/** What a request sent before the connection opened is told. */
export const NOT_OPENED = `before initialize: the client must send initialize first (2025 revisions), or carry _meta["io.modelcontextprotocol/protocolVersion"] and its capabilities on every request (${MODERN_VERSIONS.join(", ")})`;

/**
 * A request's 2026 envelope; undefined when it claims no version (a 2025-era
 * request, unless the connection is already of the 2026 era: then it lacks
 * the envelope); a refusal (code, message, data) when it cannot be served.
 */
export function modernEnvelope(
  params: Record<string, unknown>,
  modernConnection: boolean,
): { envelope: Envelope } | { refusal: [Code, string, unknown?] } | undefined {
  const version = claimedVersion(params);
  if (version === undefined) {
    if (!modernConnection) return undefined;
    return {
      refusal: [
        ErrorCode.InvalidParams,
        'Invalid params: a 2026-07-28 request must carry _meta["io.modelcontextprotocol/protocolVersion"] and _meta["io.modelcontextprotocol/clientCapabilities"]',
      ],
    };
  }
  if (typeof version !== "string" || !MODERN_VERSIONS.includes(version)) {
    return {
      refusal: [
        UNSUPPORTED_PROTOCOL_VERSION,
        `Unsupported protocol version ${JSON.stringify(version)}: Synartesis serves ${MODERN_VERSIONS.join(", ")} this way, and ${LEGACY_VERSIONS.join(", ")} after initialize`,
        { supported: MODERN_VERSIONS, requested: version },
      ],
    };
  }
  const envelope = envelopeOf(params);
  if (typeof envelope === "string") return { refusal: [ErrorCode.InvalidParams, `Invalid params: ${envelope}`] };
  return { envelope };
}

/** The initialize a 2025-era server gets for a 2026-era client: its capabilities and identity, in the newest 2025 revision. */
export function initParamsOf(envelope: Envelope): Record<string, unknown> {
  return {
    protocolVersion: LEGACY_VERSIONS[0],
    capabilities: envelope.clientCapabilities,
    clientInfo: envelope.clientInfo ?? { name: "unnamed 2026-07-28 client", version: "0" },
  };
}

/** The label a 2026-era client gives its run (R-ERA-5): its own name for the run, else its clientInfo.name. */
export function runLabelOf(params: Record<string, unknown>): string | undefined {
  const meta = isRecord(params._meta) ? params._meta : {};
  const info = meta[CLIENT_INFO_KEY];
  const named = meta[RUN_KEY];
  if (typeof named === "string" && named.trim()) return named;
  return isRecord(info) && typeof info.name === "string" && info.name ? info.name : undefined;
}

/** What the era plumbing needs of its session. */
export interface EraSession {
  /** A server's line for the client: with the one request it can be about, else on the session's output. */
  sendFor(upstream: Upstream, line: string, progressToken?: unknown): void;
  /** The session's requests awaiting an answer, by id key. */
  readonly requests: Map<string, ClientRequest>;
  readonly toClient: ToClient;
}

/**
 * One client connection's era, decided by its first request, and how its
 * requests are answered (a 2026-era client's results carry resultType; a
 * request continued by a retry is answered under the retry's id) and how
 * its client is asked for input (R-ERA-2).
 */
export class ClientEra {
  era: Era | undefined;
  /** What a 2025-era client said of itself at initialize (2026-era clients say it on each request). */
  legacyEnvelope: Envelope = { clientCapabilities: {} };
  /** A 2026-era client's attempts answered input_required, waiting for the retries that continue them. */
  readonly retries: Retries;
  private readonly askLegacy: AskClient;
  /** A 2025-era server's requests during a 2026-era client's call, asked of the client as input_required. */
  private readonly heldServerRequests = new WeakMap<ClientRequest, HeldServerRequests>();

  constructor(private readonly session: EraSession) {
    this.retries = new Retries((request, line) => this.answerInterim(request, line));
    this.askLegacy = askByRequests((request, method, params) => {
      const { line, answer } = session.toClient.ask(method, params);
      request.send(line);
      return answer;
    });
  }

  /** How this connection's client is asked for input. */
  get ask(): AskClient {
    return this.era === "modern" ? this.retries.ask : this.askLegacy;
  }

  /** A 2025-era client's initialize: what it said of itself. */
  initialized(params: Record<string, unknown>): void {
    this.era = "legacy";
    this.legacyEnvelope = {
      clientCapabilities: isRecord(params.capabilities) ? params.capabilities : {},
      ...(isRecord(params.clientInfo) ? { clientInfo: params.clientInfo } : {}),
    };
  }

  /**
   * The envelope a request is served with; the first request decides the
   * era. Undefined when the request is refused (and answered so): a 2026
   * version not served here (-32022), a 2026-era request without the
   * envelope, an initialize on a 2026-era connection.
   */
  envelopeFor(frame: RequestFrame, channel: RequestChannel): Envelope | undefined {
    if (this.era === "legacy") return this.legacyEnvelope;
    if (frame.msg.method === "initialize") {
      if (this.era !== "modern") return this.legacyEnvelope;
      channel.end(
        errorLine(
          frame.id,
          ErrorCode.InvalidRequest,
          "Invalid Request: this connection speaks 2026-07-28 (its first request said so), which has no initialize",
        ),
      );
      return undefined;
    }
    const modern = modernEnvelope(paramsOf(frame.msg), this.era === "modern");
    if (modern === undefined) return this.legacyEnvelope;
    if ("refusal" in modern) {
      channel.end(errorLine(frame.id, ...modern.refusal));
      return undefined;
    }
    this.era = "modern";
    return modern.envelope;
  }

  /**
   * Whether a request is a 2026-era client's retry that continues an earlier
   * request. A connection's first request may be one too (over HTTP, a retry
   * that comes under another run): then no request here waits for it, and it
   * is refused as expired, never sent on as a call of its own.
   */
  continues(frame: RequestFrame): boolean {
    const params = paramsOf(frame.msg);
    return (this.era === "modern" || (this.era === undefined && claimedVersion(params) !== undefined)) && isContinuation(params);
  }

  /** A 2026-era client's retry: it continues the request it answers (that request waits for its input). */
  resume(frame: RequestFrame, channel: RequestChannel): void {
    const params = paramsOf(frame.msg);
    // A call's retry is a tools/call of its own: over HTTP its headers must agree with its arguments too.
    const vouch = (request: ClientRequest) =>
      request.method === "tools/call" ? channel.vouch?.(request.inputSchema, isRecord(params.arguments) ? params.arguments : {}) : undefined;
    const resumed = this.retries.resume(params, requestIdentity(frame.msg.method, params), vouch);
    if ("error" in resumed) return channel.end(errorLine(frame.id, (resumed.code ?? ErrorCode.InvalidParams) as Code, resumed.error));
    const { request } = resumed;
    request.id = frame.id;
    request.attemptAnswered = false;
    request.attach(channel);
    this.session.requests.set(frame.id.key, request);
    const final = request.finalLine;
    if (final === undefined) return resumed.proceed();
    // The request ended while the client was answering (its server no longer needed the input).
    request.finalLine = undefined;
    this.answer(request, final);
    this.session.requests.delete(frame.id.key);
  }

  /** Answer a request (its latest attempt; nothing when the client cancelled it, MCP cancellation), in the client's era. */
  answer(request: ClientRequest, line: string): void {
    // A request the client cancelled gets no answer (MCP cancellation); its channel still ends.
    if (request.cancelled || request.done) return request.endAttempt();
    if (request.attemptAnswered) {
      request.finalLine = line;
      return;
    }
    request.done = true;
    if (this.session.requests.get(request.id.key) === request) this.session.requests.delete(request.id.key);
    const out = request.continued ? withIdText(line, request.id.text) : line;
    request.endAttempt(this.era === "modern" ? asModernResult(out, request.method) : asLegacyResult(out));
  }

  /** Answer a 2026-era request's attempt with input_required: the request goes on when the client retries. */
  private answerInterim(request: ClientRequest, line: string): void {
    request.attemptAnswered = true;
    if (this.session.requests.get(request.id.key) === request) this.session.requests.delete(request.id.key);
    request.endAttempt(request.cancelled ? undefined : line);
  }

  /**
   * A 2025-era server's request for a 2026-era client: asked during the
   * client's call to that server, by input_required (R-ERA-2); outside a
   * call the client cannot be asked, and the server is told so.
   */
  serverRequest(upstream: Upstream, frame: RequestFrame): void {
    const request = this.callAt(upstream);
    if (!request) {
      upstream.sendRaw(
        errorLine(
          frame.id,
          ErrorCode.InternalError,
          `Synartesis: the client speaks 2026-07-28 and can be asked for ${frame.msg.method} only during one of its calls to this server`,
        ),
      );
      return;
    }
    let held = this.heldServerRequests.get(request);
    if (!held) this.heldServerRequests.set(request, (held = new HeldServerRequests(request)));
    held.add(upstream, frame);
  }

  /** A server withdrew one of its requests: the 2025-era client is told; a 2026-era client's answer to it is not passed on. */
  serverWithdrew(upstream: Upstream, frame: NotificationFrame): void {
    if (this.era !== "modern") {
      const withdrawn = this.session.toClient.withdrawn(upstream, frame);
      if (withdrawn) this.session.sendFor(upstream, withdrawn);
      return;
    }
    const requestIdText = rawMember(rawMember(frame.raw, "params") ?? "", "requestId");
    const request = this.callAt(upstream);
    if (request && requestIdText !== undefined) this.heldServerRequests.get(request)?.withdraw(upstream, requestIdText);
  }

  /** The one request of this connection in flight at `upstream` (the call a server's request belongs to). */
  private callAt(upstream: Upstream): ClientRequest | undefined {
    const waiting = [...upstream.originsOf(this.session)];
    return waiting.length === 1 && waiting[0] instanceof ClientRequest ? waiting[0] : undefined;
  }
}
