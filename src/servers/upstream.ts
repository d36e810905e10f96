// One upstream MCP server: connect to it (through a Link), speak JSON-RPC to
// it, notice when it dies and start it again on next use.
import { AuthFailure } from "../auth/failure.ts";
import type { SignInRequired } from "../auth/provider.ts";
import { SynartesisError } from "../errors.ts";
import { withEnvelope, withoutEnvelope, type Envelope, type Era } from "../jsonrpc/eras.ts";
import type { SubscriptionFilter } from "../jsonrpc/subscriptions.ts";
import { deservesAnswer, errorOf, frameOf, isRecord, resultOf, type NotificationFrame, type RequestFrame } from "../jsonrpc/frames.ts";
import { errorLine, messageLine } from "../jsonrpc/messages.ts";
import { withId } from "../jsonrpc/raw-json.ts";
import type { Logger } from "../log.ts";
import type { ServerSpec } from "../manifest/types.ts";
import { greet, type Hello } from "./greeting.ts";
import { connectServer, type Connector, type Link, type LinkEvents } from "./link.ts";
import { OwnListens, type ListenEvents, type OwnListen } from "./own-listens.ts";
import { PendingRequests, refusedBeforeRunning, UpstreamError, type Origin, type Reply } from "./pending.ts";

export { UpstreamError, type Origin, type Reply } from "./pending.ts";

const STDERR_LINES_KEPT = 40;

export interface UpstreamOptions {
  log: Logger;
  /** How the server is reached (default: the manifest's stdio or HTTP link). */
  connector?: Connector;
  /** Requests and notifications the server sends on its own. */
  onMessage(upstream: Upstream, frame: RequestFrame | NotificationFrame): void;
  /** A dead server was started again: put back what the clients had set up on it. */
  onRestart?(upstream: Upstream): Promise<void>;
  /** The server stopped (crashed, closed, or was stopped by us: reason "stopped"). */
  onClose?(upstream: Upstream, reason: string): void;
  /** A request was refused for want of a sign-in: let a person sign in now (true: resend it once). */
  signIn?(upstream: Upstream, needed: SignInRequired, origin: Origin | undefined): Promise<boolean>;
}

export class Upstream {
  readonly name: string;
  readonly spec: ServerSpec;
  /** What the server said of itself when it was opened (either era), while it is running. */
  hello: Hello | undefined;
  /** What the server said it can do, kept across restarts (routing must not forget a dead server). */
  capabilities: Record<string, unknown> | undefined;
  private link: Link | undefined;
  private starting: Promise<void> | undefined;
  private initParams: unknown;
  private nextId = 1;
  private readonly pending: PendingRequests;
  private readonly listens = new OwnListens({
    send: (line) => this.link?.send(this.forEra(line, undefined)),
    cancel: (id) => this.notify("notifications/cancelled", { requestId: id }),
  });
  /** Client sessions whose requests were given up (they are ending): nothing more is sent for them. */
  private readonly abandoned = new WeakMap<object, string>();
  private readonly stderrTail: string[] = [];
  private exitReason: string | undefined;
  private stopped = false;
  private generation = 0;
  /** Completed handshakes: every one after the first is a restart. */
  private starts = 0;
  /** While the server is being greeted, its closing is the greeting's to handle (a 2025-era server may exit on the probe). */
  private greeting = false;

  constructor(
    spec: ServerSpec,
    private readonly options: UpstreamOptions,
  ) {
    this.name = spec.name;
    this.spec = spec;
    this.pending = new PendingRequests(spec, (id) => this.notify("notifications/cancelled", { requestId: id, reason: "timed out in the Synartesis proxy" }));
  }

  /** The era of the client whose opening started the servers: a 2025-era client gets a server that speaks both in 2025. */
  private clientEra: Era | undefined;

  /** The era this server was found to speak at its last start (a restart of a 2025-era server is not probed again). */
  knownEra: Era | undefined;

  get alive(): boolean {
    return this.link !== undefined;
  }

  /** The last lines the server wrote to stderr (to explain a failure). */
  stderr(): string[] {
    return [...this.stderrTail];
  }

  /** Start the process or connection, without the MCP handshake. */
  async open(): Promise<void> {
    if (this.link) return;
    this.exitReason = undefined;
    // Events from a link that was already given up (a lost HTTP session) must not touch its successor.
    const generation = ++this.generation;
    const events: LinkEvents = {
      onLine: (line) => generation === this.generation && this.onLine(line),
      onClose: (reason) => generation === this.generation && this.onClose(reason),
      onStderr: (line) => {
        this.stderrTail.push(line);
        if (this.stderrTail.length > STDERR_LINES_KEPT) this.stderrTail.shift();
      },
    };
    try {
      this.link = await (this.options.connector ?? connectServer)(this.spec, events, this.options.log);
    } catch (error) {
      throw new UpstreamError(error instanceof Error ? error.message : String(error), "start");
    }
  }

  /**
   * Open (if needed) and greet the server with the client's initialize
   * parameters: in the newest era it speaks, decided here for this start of it
   * (R-ERA-1), and logged.
   */
  async start(initParams: unknown, clientEra?: Era): Promise<Hello> {
    this.initParams = initParams;
    this.clientEra = clientEra ?? this.clientEra;
    await this.open();
    this.greeting = true;
    let hello: Hello;
    try {
      hello = await greet(this, initParams, this.clientEra);
    } finally {
      this.greeting = false;
    }
    this.hello = hello;
    this.knownEra = hello.era;
    const info = hello.serverInfo;
    this.options.log.info(this.starts++ ? "server restarted" : "server started", {
      server: this.name,
      serverInfo: `${info.name ?? "?"} ${info.version ?? ""}`.trim(),
      protocol: hello.protocolVersion,
    });
    // A 2025 server refusing the 2026 probe is the normal case, not something a person must act on.
    if (hello.why) this.options.log.debug("server speaks the 2025 protocol", { server: this.name, why: hello.why });
    this.capabilities = hello.capabilities;
    if (hello.era === "legacy") {
      if (hello.protocolVersion) this.link?.setProtocolVersion?.(hello.protocolVersion);
      this.notify("notifications/initialized");
    }
    return hello;
  }

  /** The era this server is spoken to in (known once it is started). */
  get era(): Era | undefined {
    return this.hello?.era;
  }

  /** A process is probed for its era, and so is an HTTP server that does not sign in (the sign-in speaks the 2025 era only). */
  get probes(): boolean {
    return this.spec.kind === "command" || !this.spec.auth;
  }

  get startsProcess(): boolean {
    return this.spec.kind === "command";
  }

  /** Who Synartesis is on its own requests (reads, lists) to a 2026-era server: the client it was started for, asking for nothing. */
  private ownEnvelope(): Envelope {
    const params = isRecord(this.initParams) ? this.initParams : {};
    return { clientCapabilities: {}, ...(isRecord(params.clientInfo) ? { clientInfo: params.clientInfo } : {}) };
  }

  /** A request line as this server's era wants it: a 2026-era server gets the envelope, a 2025-era one none. */
  private forEra(line: string, envelope: Envelope | undefined): string {
    if (this.hello?.era === "modern") return withEnvelope(line, envelope ?? this.ownEnvelope());
    return this.hello ? withoutEnvelope(line) : line;
  }

  /** A dead server is started again (with the same handshake) before it is used. */
  async ensureReady(origin?: Origin): Promise<void> {
    const given = origin && this.abandoned.get(origin.session);
    if (given) throw new UpstreamError(given, "not_sent");
    if (this.link && this.hello) return;
    if (this.stopped) throw new UpstreamError(`server "${this.name}" is shutting down`, "not_sent");
    if (this.initParams === undefined) throw new UpstreamError(`server "${this.name}" has not been initialized`, "start");
    this.starting ??= (async () => {
      // A server that never started (it waited for a sign-in) is started, not restarted.
      if (this.starts) this.options.log.warn("restarting server", { server: this.name, reason: this.exitReason });
      try {
        await this.start(this.initParams);
        await this.options.onRestart?.(this);
      } finally {
        this.starting = undefined;
      }
    })();
    await this.starting;
  }

  /** A subscription of Synartesis's own at this (2026-era) server; undefined while it is not running. */
  listen(filter: SubscriptionFilter, events: ListenEvents): OwnListen | undefined {
    return this.link && this.hello ? this.listens.start(this.nextId++, filter, events) : undefined;
  }

  /** Send a request the proxy makes itself. */
  request(method: string, params?: unknown, origin?: Origin, envelope?: Envelope): Promise<Reply> {
    const id = this.nextId++;
    return this.send(id, method, this.forEra(messageLine(method, params, id), envelope), origin);
  }

  /**
   * Forward a client's request line (under an id of our own), (re)starting the
   * server first. A request that provably never reached it because the server
   * was gone (it died, or an HTTP server forgot our session) is sent once more
   * to the restarted server, unless the client cancelled it meanwhile.
   */
  deliver(
    rawLine: string,
    method: string,
    options: { origin?: Origin; progressToken?: unknown; envelope?: Envelope; onSent?: () => void } = {},
  ): Promise<Reply> {
    const { origin } = options;
    return this.withRestart(origin, () => {
      const signal = origin?.signal;
      if (signal?.aborted) throw new UpstreamError(`the client cancelled the ${method} request before it was sent`, "not_sent");
      const id = this.nextId++;
      const reply = this.send(id, method, this.forEra(withId(rawLine, id), options.envelope), origin, options.progressToken);
      if (signal) {
        const cancel = () => this.cancel(id, typeof signal.reason === "string" ? signal.reason : undefined);
        signal.addEventListener("abort", cancel, { once: true });
        const answered = () => signal.removeEventListener("abort", cancel);
        reply.then(answered, answered);
      }
      options.onSent?.();
      return reply;
    });
  }

  /** A request of the proxy's own (a pre-read, an inverse), with the same restart-and-retry as deliver(). */
  ask(method: string, params?: unknown, origin?: Origin, envelope?: Envelope): Promise<Reply> {
    return this.withRestart(origin, () => this.request(method, params, origin, envelope));
  }

  private async withRestart(origin: Origin | undefined, attempt: () => Promise<Reply>): Promise<Reply> {
    let signedIn = false;
    for (let tries = 1; ; tries++) {
      try {
        await this.ensureReady(origin);
        return await attempt();
      } catch (error) {
        // Refused for want of a sign-in (its start, or the request itself: either way nothing ran): once a person signs in, it is sent again.
        if (error instanceof UpstreamError && error.signIn && !signedIn && this.options.signIn) {
          signedIn = true;
          if (await this.options.signIn(this, error.signIn, origin)) continue;
          throw error;
        }
        const retry = error instanceof UpstreamError && error.kind === "not_sent" && !this.alive && tries === 1;
        if (!retry) throw error;
      }
    }
  }

  private send(id: number, method: string, line: string, origin: Origin | undefined, progressToken?: unknown): Promise<Reply> {
    const given = origin && this.abandoned.get(origin.session);
    if (given) return Promise.reject(new UpstreamError(given, "not_sent"));
    if (this.stopped) return Promise.reject(new UpstreamError(`server "${this.name}" is shutting down`, "not_sent"));
    const link = this.link;
    if (!link) return Promise.reject(new UpstreamError(`server "${this.name}" is not running (${this.exitReason ?? "not started"})`, "not_sent"));
    const reply = this.pending.wait(id, method, origin, progressToken);
    const sent = link.send(line);
    if (sent instanceof Promise) sent.catch((error: Error) => this.sendFailed(link, id, error));
    return reply;
  }

  private async sendFailed(link: Link, id: number, error: Error): Promise<void> {
    const entry = this.pending.take(id);
    if (!entry) return;
    if ((error as { code?: unknown }).code === "EPIPE" && link.closedInput) {
      // It never read this line. Once the link is closed, the caller may send it to a fresh server.
      await link.closedInput();
      entry.reject(
        new UpstreamError(`server "${this.name}" ${this.exitReason ?? "stopped reading its input"} before it read the ${entry.method} request`, "not_sent"),
      );
      return;
    }
    const refused = refusedBeforeRunning(error);
    if (error instanceof AuthFailure) entry.reject(new UpstreamError(error.message, "not_sent", error.signIn));
    else entry.reject(new UpstreamError(`could not reach server "${this.name}": ${error.message}`, refused ? "not_sent" : "closed"));
    // An HTTP server that forgot our session (it restarted) is started afresh on next use.
    if ((error as { code?: unknown }).code === 404 && this.link) {
      const stale = this.link;
      this.onClose("lost its session (HTTP 404)");
      void stale.close().catch(() => {});
    }
  }

  /**
   * Cancel one of our requests (the client cancelled the call it carried) and
   * stop waiting for it: a server that honours the cancellation never answers.
   */
  cancel(upstreamId: number, reason?: string): void {
    this.notify("notifications/cancelled", { requestId: upstreamId, ...(reason === undefined ? {} : { reason }) });
    const entry = this.pending.take(upstreamId);
    entry?.reject(new UpstreamError(`the client cancelled the ${entry.method} request`, "cancelled"));
  }

  notify(method: string, params?: unknown): void {
    this.sendRaw(messageLine(method, params));
  }

  /** Send a line as is (forwarded notifications, answers to the server's requests). */
  sendRaw(line: string): void {
    let sent: void | Promise<void>;
    try {
      sent = this.link?.send(line);
    } catch (error) {
      sent = Promise.reject(error);
    }
    if (sent instanceof Promise) sent.catch((error: Error) => this.options.log.warn("send failed", { server: this.name, error: error.message }));
  }

  /** Every item of a paginated list (tools/list, prompts/list, …). */
  async listAll(method: string, field: string): Promise<Array<Record<string, unknown>>> {
    const items: Array<Record<string, unknown>> = [];
    let cursor: string | undefined;
    for (let page = 0; page < 1000; page++) {
      const reply = await this.request(method, cursor === undefined ? {} : { cursor });
      const refusal = errorOf(reply.msg);
      if (refusal) throw new UpstreamError(`${method} failed: ${refusal.message}`, "closed");
      const result = resultOf(reply.msg) ?? {};
      const listed = result[field];
      if (Array.isArray(listed)) items.push(...listed.filter(isRecord));
      cursor = typeof result.nextCursor === "string" ? result.nextCursor : undefined;
      if (!cursor) break;
    }
    return items;
  }

  /** The client sessions with a request in flight here (routing: a server request comes from one of their calls). */
  sessionsWaiting(): Set<object> {
    return this.pending.sessions();
  }

  /** The requests of one client session in flight here. */
  originsOf(session: object): Set<Origin> {
    return this.pending.originsOf(session);
  }

  /** The client sessions whose requests carry this progress token (one, unless two clients chose the same token). */
  sessionsWithToken(token: unknown): Set<object> {
    return token === undefined ? new Set() : this.pending.sessions(token);
  }

  /** The client requests in flight here (only those carrying `progressToken`, when one is given). */
  originsWaiting(progressToken?: unknown): Set<Origin> {
    return this.pending.origins(progressToken);
  }

  private onLine(line: string): void {
    if (line.trim() === "") return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      this.options.log.warn("server wrote a line that is not JSON to stdout; ignored", { server: this.name, line: line.slice(0, 200) });
      return;
    }
    const frame = frameOf(value, line);
    if (this.listens.take(frame)) return;
    if (frame.kind === "request" || frame.kind === "notification") {
      if (frame.msg.method === "notifications/progress") {
        this.pending.progressed(frame.msg.params?.progressToken);
      }
      this.options.onMessage(this, frame);
      return;
    }
    if (frame.kind === "response" || frame.looksLike === "response") {
      const ours = (value as { id?: unknown }).id;
      const entry = typeof ours === "number" ? this.pending.take(ours) : undefined;
      if (!entry) this.options.log.debug("response for no pending request; ignored", { server: this.name, id: frame.id?.text });
      else if (frame.kind === "response") entry.resolve({ raw: line, msg: frame.msg });
      // The server answered, but in a form nobody can read: whether it did what was asked is unknown.
      else entry.reject(new UpstreamError(`server "${this.name}" answered ${entry.method} with a message that is not a valid JSON-RPC response`, "closed"));
      return;
    }
    this.options.log.warn("server sent a message that is not valid JSON-RPC; refused", { server: this.name, error: frame.message, line: line.slice(0, 200) });
    if (frame.id && deservesAnswer(frame)) this.sendRaw(errorLine(frame.id, frame.code, frame.message));
  }

  private onClose(reason: string): void {
    this.generation++;
    this.link = undefined;
    this.hello = undefined;
    this.exitReason = reason;
    if (reason !== "stopped" && !this.greeting) {
      this.options.log.error("server stopped", { server: this.name, reason, stderr: this.stderrTail.slice(-10) });
    }
    const why = `server "${this.name}" ${reason} while a reply was owed`;
    this.pending.rejectAll(new UpstreamError(why, "closed"));
    this.listens.closed(reason);
    if (!this.greeting) this.options.onClose?.(this, reason);
  }

  /** Why the server stopped, if it did. */
  get stopReason(): string | undefined {
    return this.exitReason;
  }

  /**
   * Give up one client session's requests (it is ending): each one still owed
   * an answer fails with `reason` (its outcome unknown), and nothing more is
   * sent for that session.
   */
  abandon(session: object, reason: string): void {
    this.abandoned.set(session, reason);
    this.pending.rejectAll(new UpstreamError(reason, "closed"), session);
  }

  async stop(options: { quick?: boolean } = {}): Promise<void> {
    this.stopped = true;
    const link = this.link;
    if (!link) return;
    await link.close(options.quick);
    this.link = undefined;
  }
}

/** Turn a start failure into the error the CLI reports (exit 1, the server named, its stderr quoted); the cause is kept. */
export function startFailure(upstream: Upstream, error: unknown): SynartesisError {
  const exited = error instanceof UpstreamError && (error.kind === "closed" || error.kind === "not_sent") && upstream.stopReason;
  const reason = exited ? `it ${upstream.stopReason} before answering` : error instanceof Error ? error.message : String(error);
  const stderr = upstream
    .stderr()
    .filter((l) => l.trim() !== "")
    .slice(-8);
  return new SynartesisError("server", `server "${upstream.name}" would not start: ${reason}`, {
    details: stderr.length ? ["its stderr said:", ...stderr.map((l) => `  ${l}`)] : [],
    cause: error,
  });
}
