// One client connection of the proxy: reads the client's JSON-RPC lines,
// keeps its requests in flight (one per id) and their cancellations, answers
// initialize, hands every other request to the method dispatch, and carries
// what the servers send it (held until the client is initialized). It knows
// nothing of how servers are reached: they belong to the pool it joins, which
// other sessions may share.
import { ErrorCode } from "@modelcontextprotocol/sdk/types.js";
import type { SignInRequired } from "../auth/provider.ts";
import { SynartesisError } from "../errors.ts";
import type { JournalError } from "../journal/journal.ts";
import { deservesAnswer, isId, isRecord, paramsOf, readMessages, type Frame, type NotificationFrame, type RequestFrame } from "../jsonrpc/frames.ts";
import { idKey } from "../jsonrpc/json-check.ts";
import { errorLine, messageLine, NOT_INITIALIZED, resultLine, toolErrorLine } from "../jsonrpc/messages.ts";
import { rawMember } from "../jsonrpc/raw-json.ts";
import { startFailure, UpstreamError, type Upstream } from "../servers/upstream.ts";
import { ClientRequest, type RequestChannel } from "./client-request.ts";
import { drain, type DrainEnd } from "./drain.ts";
import { failureText, initializeResult, startServers } from "./handshake.ts";
import { dispatch, placeInQueue, type MethodContext } from "./methods.ts";
import { NO_CLIENT, type PoolMember } from "./pool.ts";
import { SessionRun, type RecordingOptions } from "./session-run.ts";
import { signInThroughClient } from "./sign-in.ts";
import { ToClient } from "./to-client.ts";

/** How long a session that never initialized waits at its end for a server to fail to start. */
const START_GRACE_MS = 300;

export interface ClientSessionOptions extends RecordingOptions {
  /**
   * Where lines for the client go (one JSON-RPC message each): the answers to
   * requests handed in without a channel of their own, and what the servers
   * send that concerns no single request of this client.
   */
  write(line: string): void;
  /**
   * When the session fails before any initialize arrived (a server would not
   * start), how long to wait for one so the client sees why (R-PROXY-14).
   */
  initializeWaitMs: number;
}

export class ClientSession implements PoolMember {
  readonly run: SessionRun;
  private phase: "waiting" | "initializing" | "ready" | "failed" = "waiting";
  private readonly ready: Promise<void>;
  private markReady!: () => void;
  private clientReady = false;
  private readonly heldForClient: Array<() => void> = [];
  private readonly inflight = new Set<Promise<void>>();
  /** Client requests received and not yet answered, by id key: an id is used by one request at a time. */
  private readonly requests = new Map<string, ClientRequest>();
  private readonly toClient: ToClient;
  private readonly methods: MethodContext;
  private clientCapabilities: Record<string, unknown> = {};
  private finishing = false;
  private finished: Promise<DrainEnd> | undefined;
  /** An initialize received and not answered yet: a failure is told to it (R-PROXY-14). */
  private pendingInitialize: ClientRequest | undefined;
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
    this.run = new SessionRun({ ...options, onJournalError: (error) => this.journalFailed(error) });
    this.toClient = new ToClient(options.log);
    this.output = { send: (line) => options.write(line), end: (answer) => answer !== undefined && options.write(answer) };
    this.methods = {
      pool: options.pool,
      log: options.log,
      run: this.run,
      journalFailed: (error) => this.journalFailed(error),
      answer: (request, line) => request.answer(line),
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
        canShowUrl: () => this.phase === "ready" && !this.finishing && isRecord(this.clientCapabilities.elicitation) && Boolean(this.clientCapabilities.elicitation.url),
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

  private get pool() {
    return this.options.pool;
  }

  /** Start the servers' processes now, so one that cannot start is reported as soon as the client says initialize. */
  async open(): Promise<void> {
    try {
      await this.pool.open();
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
    if (this.pendingInitialize) {
      this.pendingInitialize.answer(errorLine(this.pendingInitialize.id, ErrorCode.InternalError, failureText(failure)));
      this.pendingInitialize = undefined;
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

  // ---- from the client ----

  handleLine(line: string): void {
    if (line.trim() === "") return;
    const read = readMessages(line, "line");
    if ("refused" in read) return this.options.write(read.refused);
    for (const frame of read.frames) this.handleFrame(frame);
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
    if (this.requests.has(id.key)) {
      // Two requests under one id would get each other's answers (and one call another's record).
      channel.end(errorLine(id, ErrorCode.InvalidRequest, `Invalid Request: id ${id.text} is already used by a request still in progress`));
      return;
    }
    const request = new ClientRequest(this, id, msg.method, channel);
    request.turn = placeInQueue(this.pool, frame);
    this.requests.set(id.key, request);
    try {
      if (msg.method === "initialize") return await this.initialize(frame, request);
      if (msg.method === "ping") return request.answer(resultLine(id, {}));
      if (this.finishing) return request.answer(errorLine(id, ErrorCode.InternalError, "Synartesis is shutting down; this request was not run"));
      if (this.phase === "waiting") {
        return request.answer(errorLine(id, NOT_INITIALIZED, `${msg.method} before initialize: the client must send initialize first`));
      }
      await Promise.race([this.ready, this.fatal]);
      await dispatch(this.methods, frame, request);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.options.log.error("request failed", { method: msg.method, error: message });
      request.answer(errorLine(id, ErrorCode.InternalError, `Synartesis: ${message}`));
    } finally {
      this.requests.delete(id.key);
      request.turn?.release();
      request.finish();
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
        for (const upstream of this.pool.upstreams) if (upstream.alive) upstream.sendRaw(raw);
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
    if (this.whenReady(() => this.serverRequest(upstream, frame))) this.sendFor(upstream, this.toClient.forward(upstream, frame));
  }

  serverNotification(upstream: Upstream, frame: NotificationFrame): void {
    if (!this.whenReady(() => this.serverNotification(upstream, frame))) return;
    const method = frame.msg.method;
    if (method === "notifications/progress") return this.sendFor(upstream, frame.raw, frame.msg.params?.progressToken);
    if (method !== "notifications/cancelled") return this.sendFor(upstream, frame.raw);
    const withdrawn = this.toClient.withdrawn(upstream, frame);
    if (withdrawn) this.sendFor(upstream, withdrawn);
  }

  /**
   * A server's message goes out with the one request of this client it can be
   * about (waiting on that server; carrying that progress token), so over
   * HTTP it rides on that request's response; otherwise on the session's output.
   */
  private sendFor(upstream: Upstream, line: string, progressToken?: unknown): void {
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

  // ---- initialize ----

  private async initialize(frame: RequestFrame, request: ClientRequest): Promise<void> {
    const { id } = frame;
    if (this.failure) {
      request.answer(errorLine(id, ErrorCode.InternalError, failureText(this.failure)));
      return this.raiseFatal();
    }
    if (this.phase !== "waiting") return request.answer(errorLine(id, ErrorCode.InvalidRequest, "initialize was already received in this session"));
    this.phase = "initializing";
    this.pendingInitialize = request;
    const params = paramsOf(frame.msg);
    this.clientCapabilities = isRecord(params.capabilities) ? params.capabilities : {};
    try {
      await startServers(this.pool, params);
    } catch (error) {
      this.fail(error instanceof SynartesisError ? error : new SynartesisError("server", `the servers could not be set up: ${(error as Error).message}`));
      return;
    }
    // A server that died meanwhile already failed the session, and told this initialize.
    if (this.failure) return;
    this.pendingInitialize = undefined;

    const clientInfo = isRecord(params.clientInfo) ? params.clientInfo : {};
    if (typeof clientInfo.name === "string" && clientInfo.name) this.run.label = clientInfo.name;
    this.options.log.debug("session started", { client: this.run.label, journal: this.options.journal.path });
    this.phase = "ready";
    this.markReady();
    request.answer(resultLine(id, initializeResult(this.pool)));
    this.releaseHeld();
  }

  // ---- the end ----

  /**
   * Answer every request already received (within the drain time, R-PROXY-13)
   * and close the run; the session then leaves the pool. `forced` resolves on
   * a second signal. Stopping the servers is for whoever owns the pool.
   */
  finish(options: { drainMs: number; forced: Promise<void> }): Promise<DrainEnd> {
    this.finished ??= this.shutDown(options.drainMs, options.forced);
    return this.finished;
  }

  private async shutDown(drainMs: number, forced: Promise<void>): Promise<DrainEnd> {
    // A client that leaves at once must still learn that a server could not start (R-PROXY-10).
    if (this.phase === "waiting") await Promise.race([this.fatal.catch(() => {}), Bun.sleep(START_GRACE_MS)]);
    this.finishing = true;
    // Requests the servers made of the client can no longer be answered: refuse them, so the
    // calls waiting on them finish now instead of at their timeout.
    for (const deliver of this.heldForClient.splice(0)) deliver();
    this.toClient.refuseAll();
    const end = await drain(
      {
        settled: async () => {
          while (this.inflight.size) await Promise.allSettled([...this.inflight]);
        },
        abandon: (reason) => {
          this.options.log.warn("calls still in flight are given up; their outcome is unknown", { calls: this.requests.size, reason });
          this.pool.abandon(this, reason);
        },
        answerRest: (reason) => this.answerUnanswered(reason),
      },
      drainMs,
      forced,
    );
    this.pool.leave(this);
    await this.run.close();
    return end;
  }

  /** The last word for requests nothing else will answer now. */
  private answerUnanswered(reason: string): void {
    for (const request of this.requests.values()) {
      request.answer(
        request.method === "tools/call"
          ? toolErrorLine(request.id.text, `Synartesis could not finish this call: ${reason}. If it reached the server, its outcome is unknown (recorded as pending); check the state before trying again.`)
          : errorLine(request.id, ErrorCode.InternalError, `Synartesis: ${reason}`),
      );
      // Nothing more is forwarded for it.
      request.cancelled = true;
    }
  }
}
