// One client connection of the proxy: reads the client's JSON-RPC lines,
// keeps its requests in flight (one per id) and their cancellations, opens
// with the client in its era (R-ERA-1: initialize, or a first request that
// carries the 2026-07-28 envelope), hands every other request to the method
// dispatch, and carries what the servers send it (held until the client is
// ready). It knows nothing of how servers are reached: they belong to the
// pool it joins, which other sessions may share.
import type { SignInRequired } from "../../auth/provider.ts";
import { SynartesisError } from "../../errors.ts";
import type { JournalError } from "../../journal/journal.ts";
import { deservesAnswer, isId, isRecord, paramsOf, readMessages, type Frame, type NotificationFrame, type RequestFrame } from "../../jsonrpc/frames.ts";
import { idKey } from "../../jsonrpc/json-check.ts";
import { ErrorCode, errorLine, messageLine, NOT_INITIALIZED, resultLine, toolErrorLine } from "../../jsonrpc/messages.ts";
import { rawMember } from "../../jsonrpc/raw-json.ts";
import { startFailure, UpstreamError, type Upstream } from "../../servers/upstream.ts";
import { ClientEra, initParamsOf, NOT_OPENED, runLabelOf } from "./client-era.ts";
import { ClientRequest, type RequestChannel } from "./client-request.ts";
import { ClientSubscriptions } from "./client-subscriptions.ts";
import { drain, type DrainEnd } from "../drain.ts";
import { discoverResult, failureText, initializeResult, startServers } from "./handshake.ts";
import { dispatch, placeInQueue, type MethodContext } from "./methods.ts";
import { NO_CLIENT, type PoolMember } from "../pool/pool.ts";
import { SessionRun, type RecordingOptions } from "./session-run.ts";
import { signInThroughClient } from "./sign-in.ts";
import { ToClient } from "./to-client.ts";
import { batchChannel, wantsAnswer } from "./batch-channel.ts";

/** How long a session that never initialized waits at its end for a server to fail to start. */
const START_GRACE_MS = 300;

export interface ClientSessionOptions extends RecordingOptions {
  /**
   * Where lines for the client go (one JSON-RPC message each): the answers to
   * requests handed in without a channel of their own, and what the servers
   * send that concerns no single request of this client.
   */
  write(line: string): void;
  /** When the session fails before any initialize arrived (a server would not start), how long to wait for one so the client sees why (R-PROXY-14). */
  initializeWaitMs: number;
}

export class ClientSession implements PoolMember {
  readonly run: SessionRun;
  private phase: "waiting" | "initializing" | "ready" | "failed" = "waiting";
  /** The client's era, decided by its first request, and how its requests are answered and it is asked for input. */
  private readonly client: ClientEra;
  private readonly ready: Promise<void>;
  private markReady!: () => void;
  private clientReady = false;
  private readonly heldForClient: Array<() => void> = [];
  private readonly inflight = new Set<Promise<void>>();
  /** Client requests received and not yet answered, by id key: an id is used by one request at a time. */
  readonly requests = new Map<string, ClientRequest>();
  readonly toClient: ToClient;
  private readonly subscriptions: ClientSubscriptions;
  private readonly methods: MethodContext;
  private finishing = false;
  private finished: Promise<DrainEnd> | undefined;
  /** Aborts, with why, when the session gives up on its calls still going on (tasks it follows, R-ERA-4). */
  private readonly ending = new AbortController();
  /** The opening request (initialize, or a 2026-era client's first) not answered yet: a failure is told to it (R-PROXY-14). */
  private pendingOpening: ClientRequest | undefined;
  /** Lines of requests that came without a channel of their own (stdio): all on the one output. */
  private readonly output: RequestChannel;
  /** Rejects when the session cannot go on (a server would not start, a policy names missing tools, the journal broke). */
  readonly fatal: Promise<never>;
  /** Why the session cannot go on, once it cannot. */
  failure: SynartesisError | undefined;
  private raiseFatal!: () => void;
  private fatalTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly signInFor: (upstream: Upstream, needed: SignInRequired) => Promise<boolean>;

  constructor(private readonly options: ClientSessionOptions) {
    this.output = { send: (line) => options.write(line), end: (answer) => answer !== undefined && options.write(answer) };
    this.run = new SessionRun({ ...options, onJournalError: (error) => this.journalFailed(error) });
    this.toClient = new ToClient(options.log);
    this.client = new ClientEra(this);
    this.subscriptions = new ClientSubscriptions(options.pool, options.log, (request, line) => this.client.answer(request, line));
    this.methods = {
      pool: options.pool,
      log: options.log,
      run: this.run,
      journalFailed: (error) => this.journalFailed(error),
      answer: (request, line) => this.client.answer(request, line),
      listen: (request, params) => this.subscriptions.listen(request, params, this.client.era === "modern"),
    };
    this.ready = new Promise((resolve) => (this.markReady = resolve));
    this.fatal = new Promise<never>((_, reject) => {
      this.raiseFatal = () => {
        clearTimeout(this.fatalTimer);
        reject(this.failure);
      };
    });
    this.fatal.catch(() => {});
    this.signInFor = signInThroughClient(
      {
        canShowUrl: () => {
          const elicitation = this.client.legacyEnvelope.clientCapabilities.elicitation;
          return this.client.era === "legacy" && this.phase === "ready" && !this.finishing && isRecord(elicitation) && Boolean(elicitation.url);
        },
        ask: (method, params) => {
          const { line, answer } = this.toClient.ask(method, params);
          this.options.write(line);
          return answer;
        },
        notify: (method, params) => this.options.write(messageLine(method, params)),
      },
      options.log,
    );
    options.pool.join(this);
  }

  /** Start the servers' processes now, so one that cannot start is reported as soon as the client says initialize. */
  async open(): Promise<void> {
    try {
      await this.options.pool.open();
    } catch (error) {
      this.fail(error instanceof SynartesisError ? error : new SynartesisError("server", String(error)));
    }
  }

  /**
   * The session cannot go on. The client learns why from its initialize
   * (R-PROXY-14): the one pending now, or the one it is about to send, for a
   * little while; then `fatal` rejects and the proxy ends.
   */
  private fail(failure: SynartesisError): void {
    if (this.failure) return;
    this.failure = failure;
    const neverInitialized = this.phase === "waiting";
    // A session that was ready keeps relaying what its servers send while it drains.
    if (this.phase !== "ready") this.phase = "failed";
    if (this.pendingOpening) {
      this.client.answer(this.pendingOpening, errorLine(this.pendingOpening.id, ErrorCode.InternalError, failureText(failure)));
      this.pendingOpening = undefined;
    } else if (neverInitialized && this.options.initializeWaitMs > 0) {
      this.fatalTimer = setTimeout(() => this.raiseFatal(), this.options.initializeWaitMs);
      return;
    }
    this.raiseFatal();
  }

  /** A journal that cannot be used at all ends the session (exit 2); one that is full may recover. */
  private journalFailed(error: JournalError): void {
    if (error.kind === "broken") this.fail(error);
  }

  /** Whether one of its requests waits for the client's retry with input (it is not idle then). */
  get awaitingRetry(): boolean {
    return this.client.retries.awaited;
  }

  // ---- from the client ----

  handleLine(line: string): void {
    if (line.trim() === "") return;
    const read = readMessages(line, "line");
    if ("refused" in read) return this.options.write(read.refused);
    if (!/^\s*\[/.test(line)) {
      for (const frame of read.frames) this.handleFrame(frame);
      return;
    }
    // A batch (JSON-RPC 2.0; MCP 2025-03-26): its answers leave together, as one array, once all are in.
    const channel = batchChannel(read.frames.filter(wantsAnswer).length, this.output);
    for (const frame of read.frames) this.handleFrame(frame, channel);
  }

  /**
   * One message from the client. A request's answer (and what a server sends
   * on its behalf) goes to `channel`, by default the session's one output.
   */
  handleFrame(frame: Frame, channel: RequestChannel = this.output): void {
    switch (frame.kind) {
      case "request":
        return this.track(this.onRequest(frame, channel));
      case "notification":
        return this.onNotification(frame);
      case "response":
        return this.toClient.answered(frame);
      case "invalid":
        if (frame.looksLike === "response") return this.toClient.malformed(frame);
        if (deservesAnswer(frame)) channel.end(errorLine(frame.id, frame.code, frame.message));
    }
  }

  private track(work: Promise<void>): void {
    this.inflight.add(work);
    void work.finally(() => this.inflight.delete(work));
  }

  private async onRequest(frame: RequestFrame, channel: RequestChannel): Promise<void> {
    const { id, msg } = frame;
    const params = paramsOf(msg);
    // Two requests under one id would get each other's answers (and one call another's record).
    if (this.requests.has(id.key))
      return channel.end(errorLine(id, ErrorCode.InvalidRequest, `Invalid Request: id ${id.text} is already used by a request still in progress`));
    if (msg.method === "ping") return channel.end(resultLine(id, {}));
    if (this.client.continues(frame)) return this.client.resume(frame, channel);
    const envelope = this.client.envelopeFor(frame, channel);
    if (!envelope) return;
    const modern = this.client.era === "modern";
    // A 2026-era client has no handshake to wait for.
    if (modern) this.clientReady = true;
    const request = new ClientRequest(this, id, msg.method, params, envelope, this.client.ask, channel);
    request.turn = placeInQueue(this.options.pool, frame);
    if (msg.method === "tools/call") request.arrival = this.run.arrive();
    request.ending = this.ending.signal;
    this.requests.set(id.key, request);
    try {
      if (msg.method === "initialize") return await this.initialize(frame, request);
      if (this.finishing) return this.client.answer(request, errorLine(id, ErrorCode.InternalError, "Synartesis is shutting down; this request was not run"));
      if (this.phase === "waiting" && !modern) return this.client.answer(request, errorLine(id, NOT_INITIALIZED, `${msg.method} ${NOT_OPENED}`));
      // A 2026-era client has no handshake: its first request starts the servers.
      if (modern && this.phase !== "ready") {
        if (!(await this.startFor(request, initParamsOf(envelope)))) return;
        this.releaseHeld();
      }
      await Promise.race([this.ready, this.fatal]);
      if (msg.method === "server/discover") return this.client.answer(request, resultLine(id, discoverResult(this.options.pool)));
      if (modern && msg.method === "tools/call") this.run.proposeLabel(runLabelOf(params));
      await dispatch(this.methods, frame, request);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.options.log.error("request failed", { method: msg.method, error: message });
      this.client.answer(request, errorLine(request.id, ErrorCode.InternalError, `Synartesis: ${message}`));
    } finally {
      if (this.requests.get(request.id.key) === request) this.requests.delete(request.id.key);
      request.turn?.release();
      // One that got no answer (cancelled) still closes its channel.
      if (request.done || request.cancelled) request.endAttempt();
    }
  }

  private onNotification(frame: NotificationFrame): void {
    const { msg, raw } = frame;
    const params = paramsOf(msg);
    switch (msg.method) {
      case "notifications/initialized":
        this.clientReady = true;
        this.releaseHeld();
        return;
      case "notifications/cancelled": {
        const requestIdText = isId(params.requestId) ? rawMember(rawMember(raw, "params") ?? "", "requestId") : undefined;
        // Not forwarded yet (waiting for its turn or a pre-read): the call pipeline sees the flag and stops.
        if (requestIdText !== undefined) this.requests.get(idKey(requestIdText))?.cancel(typeof params.reason === "string" ? params.reason : undefined);
        return;
      }
      default:
        // A 2026-era client sends no other notification, and a 2026-era server takes none but cancellations.
        if (this.client.era === "modern") return;
        for (const upstream of this.options.pool.upstreams) if (upstream.alive && upstream.era !== "modern") upstream.sendRaw(raw);
    }
  }

  // ---- from the servers (through the pool) ----

  /** Nothing reaches the client before its initialize result, nor before it said it is initialized. */
  private releaseHeld(): void {
    if (this.clientReady && this.phase === "ready") for (const deliver of this.heldForClient.splice(0)) deliver();
  }

  private whenReady(deliver: () => void): boolean {
    if (this.clientReady && this.phase === "ready") return true;
    this.heldForClient.push(deliver);
    return false;
  }

  serverRequest(upstream: Upstream, frame: RequestFrame): void {
    if (this.finishing) {
      // The client is gone (stdin closed) or we are stopping: it will never answer.
      upstream.sendRaw(errorLine(frame.id, ErrorCode.InternalError, NO_CLIENT));
      return;
    }
    if (!this.whenReady(() => this.serverRequest(upstream, frame))) return;
    if (this.client.era === "modern") return this.client.serverRequest(upstream, frame);
    this.sendFor(upstream, this.toClient.forward(upstream, frame));
  }

  serverNotification(upstream: Upstream, frame: NotificationFrame): void {
    if (!this.whenReady(() => this.serverNotification(upstream, frame))) return;
    const method = frame.msg.method;
    if (method === "notifications/cancelled") return this.client.serverWithdrew(upstream, frame);
    // A 2026-era client takes notifications about its requests (progress), and the rest on the subscriptions that ask for them.
    if (this.client.era === "modern" && method !== "notifications/progress") return this.subscriptions.deliver(frame);
    this.sendFor(upstream, frame.raw, method === "notifications/progress" ? frame.msg.params?.progressToken : undefined);
  }

  /**
   * A server's message goes out with the one request of this client it can be
   * about (waiting on that server; carrying that progress token), so over
   * HTTP it rides on that request's response; otherwise on the session's output.
   */
  sendFor(upstream: Upstream, line: string, progressToken?: unknown): void {
    const waiting = upstream.originsWaiting(progressToken);
    const mine = [...this.requests.values()].filter((request) => waiting.has(request));
    if (mine.length === 1) mine[0]!.send(line);
    else this.options.write(line);
  }

  serverClosed(upstream: Upstream, reason: string): void {
    if (reason === "stopped" || this.finishing) return;
    if (this.phase === "waiting" || this.phase === "initializing") {
      this.fail(startFailure(upstream, new UpstreamError(reason, "closed")));
    }
  }

  signIn(upstream: Upstream, needed: SignInRequired): Promise<boolean> {
    return this.signInFor(upstream, needed);
  }

  // ---- the opening ----

  private async initialize(frame: RequestFrame, request: ClientRequest): Promise<void> {
    const { id } = frame;
    if (this.phase !== "waiting" && !this.failure)
      return this.client.answer(request, errorLine(id, ErrorCode.InvalidRequest, "initialize was already received in this session"));
    const params = paramsOf(frame.msg);
    this.client.initialized(params);
    if (!(await this.startFor(request, params))) return;
    const clientInfo = this.client.legacyEnvelope.clientInfo ?? {};
    if (typeof clientInfo.name === "string" && clientInfo.name) this.run.label = clientInfo.name;
    this.client.answer(request, resultLine(id, initializeResult(this.options.pool, params.protocolVersion)));
    this.releaseHeld();
  }

  /**
   * Start the servers for this session's opening request (initialize, or a
   * 2026-era client's first request), once. False when the session cannot
   * go on: the opening request was then answered with why (R-PROXY-14).
   */
  private async startFor(opening: ClientRequest, initParams: unknown): Promise<boolean> {
    if (this.failure) {
      this.client.answer(opening, errorLine(opening.id, ErrorCode.InternalError, failureText(this.failure)));
      this.raiseFatal();
      return false;
    }
    if (this.phase === "initializing") return true;
    this.phase = "initializing";
    this.pendingOpening = opening;
    try {
      await startServers(this.options.pool, initParams, this.client.era ?? "legacy");
    } catch (error) {
      this.fail(error instanceof SynartesisError ? error : new SynartesisError("server", `the servers could not be set up: ${(error as Error).message}`));
      return false;
    }
    // A server that died meanwhile already failed the session, and told the opening request.
    if (this.failure) return false;
    this.pendingOpening = undefined;
    this.options.log.debug("session started", { era: this.client.era, journal: this.options.journal.path });
    this.phase = "ready";
    this.markReady();
    return true;
  }

  // ---- the end ----

  /**
   * Answer every request already received (within the drain time, R-PROXY-13)
   * and close the run; the session then leaves the pool. `forced` resolves on
   * a second signal. Stopping the servers is for whoever owns the pool.
   */
  finish(options: { drainMs: number; forced: AbortSignal }): Promise<DrainEnd> {
    this.finished ??= this.shutDown(options.drainMs, options.forced);
    return this.finished;
  }

  private async shutDown(drainMs: number, forced: AbortSignal): Promise<DrainEnd> {
    // A client that leaves at once must still learn that a server could not start (R-PROXY-10).
    if (this.phase === "waiting") await Promise.race([this.fatal.catch(() => {}), Bun.sleep(START_GRACE_MS)]);
    this.finishing = true;
    this.subscriptions.endAll();
    // Requests the servers made of the client can no longer be answered: refuse them, so the
    // calls waiting on them finish now instead of at their timeout.
    for (const deliver of this.heldForClient.splice(0)) deliver();
    this.toClient.refuseAll();
    this.client.retries.abandonAll("the client left before it retried with the input it was asked for");
    const end = await drain(
      {
        settled: async () => {
          while (this.inflight.size) await Promise.allSettled([...this.inflight]);
        },
        abandon: (reason) => {
          this.options.log.warn("calls still in flight are given up; their outcome is unknown", { calls: this.requests.size, reason });
          this.ending.abort(reason);
          this.options.pool.abandon(this, reason);
        },
        answerRest: (reason) => this.answerUnanswered(reason),
      },
      drainMs,
      forced,
    );
    this.options.pool.leave(this);
    await this.run.close();
    return end;
  }

  /** The last word for requests nothing else will answer now. */
  private answerUnanswered(reason: string): void {
    for (const request of this.requests.values()) {
      if (request.cancelled) continue;
      this.client.answer(
        request,
        request.method === "tools/call"
          ? toolErrorLine(
              request.id.text,
              `Synartesis could not finish this call: ${reason}. If it reached the server, its outcome is unknown (recorded as pending); check the state before trying again.`,
            )
          : errorLine(request.id, ErrorCode.InternalError, `Synartesis: ${reason}`),
      );
      request.cancel();
    }
  }
}
