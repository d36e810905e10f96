// One upstream MCP server: start it (a child process over stdio, or a
// Streamable HTTP endpoint), speak JSON-RPC to it, notice when it dies and
// start it again on next use.
import { existsSync } from "node:fs";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { AuthFailure, oauthLink, type OAuthLink } from "../auth/connection.ts";
import type { SignInRequired } from "../auth/provider.ts";
import { SynartesisError } from "../errors.ts";
import { callDeadlineMs, type ServerSpec } from "../manifest/types.ts";
import { selfArgv } from "../self.ts";
import type { Logger } from "../log.ts";
import { LineSplitter } from "./lines.ts";
import { withId } from "./raw-json.ts";

const STDERR_LINES_KEPT = 40;
const HTTP_CLOSE_WAIT_MS = 300;
/** After a failed write, how long a server that closed its input gets to exit by itself before it is stopped. */
const DEAF_GRACE_MS = 200;

/** Why a request got no answer: it timed out, or the server went away. */
export class UpstreamError extends Error {
  constructor(
    message: string,
    /** not_sent: the request never reached the server, so it certainly did not run. */
    readonly kind: "timeout" | "closed" | "start" | "cancelled" | "not_sent",
    /** Set when the server refused for want of a sign-in that a person could give now. */
    readonly signIn?: SignInRequired,
  ) {
    super(message);
    this.name = "UpstreamError";
  }
}

export interface Reply {
  /** The response line exactly as the server sent it. */
  raw: string;
  msg: { id: unknown; result?: any; error?: { code: number; message: string; data?: unknown } };
}

interface Link {
  send(line: string): void | Promise<void>;
  /** `quick`: no grace for the server to finish (a second signal). */
  close(quick?: boolean): Promise<void>;
  /** A write failed because the server closed its input: resolves once the link is closed (it exited, or it was stopped). */
  closedInput?(): Promise<void>;
  setProtocolVersion?(version: string): void;
}

interface LinkEvents {
  onLine(line: string): void;
  onClose(reason: string): void;
}

function spawnStdio(spec: Extract<ServerSpec, { kind: "command" }>, events: LinkEvents, stderrTail: string[], log: Logger): Link {
  const argv = spec.command === "synartesis" ? [...selfArgv(), ...spec.args] : [spec.command, ...spec.args];
  if (!existsSync(spec.cwd)) {
    throw new UpstreamError(`its working directory ${spec.cwd} does not exist`, "start");
  }
  let proc: Bun.Subprocess<"pipe", "pipe", "pipe">;
  try {
    proc = Bun.spawn(argv, {
      cwd: spec.cwd,
      env: { ...process.env, ...spec.env },
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
    });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === "ENOENT" ? `command not found: ${argv[0]}` : (error as Error).message;
    throw new UpstreamError(why, "start");
  }
  const stdout = new LineSplitter(events.onLine);
  void (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of proc.stdout) stdout.push(decoder.decode(chunk, { stream: true }));
    stdout.end();
  })();
  void (async () => {
    const errors = new LineSplitter((line) => {
      stderrTail.push(line);
      if (stderrTail.length > STDERR_LINES_KEPT) stderrTail.shift();
      log.debug("server stderr", { server: spec.name, line });
    });
    const decoder = new TextDecoder();
    for await (const chunk of proc.stderr) errors.push(decoder.decode(chunk, { stream: true }));
    errors.end();
  })();
  let closing = false;
  let deaf = false;
  void proc.exited.then((code) => {
    const reason = deaf ? "stopped reading its input (EPIPE)" : proc.signalCode ? `was killed by ${proc.signalCode}` : `exited with code ${code}`;
    events.onClose(closing ? "stopped" : reason);
  });
  const exitedWithin = (ms: number) => Promise.race([proc.exited.then(() => true), Bun.sleep(ms).then(() => false)]);
  const stop = async (graceMs: number) => {
    proc.kill("SIGTERM");
    if (!(await exitedWithin(graceMs))) proc.kill("SIGKILL");
    await proc.exited;
  };
  return {
    send(line) {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      // A server that closed its input fails the write (EPIPE): the caller learns it did not get the line.
      try {
        // A large write, or its flush, finishes later: either may fail then.
        const later = [proc.stdin.write(line + "\n"), proc.stdin.flush()].filter((step) => step instanceof Promise);
        return later.length ? Promise.all(later).then(() => {}) : undefined;
      } catch (error) {
        return Promise.reject(error);
      }
    },
    async close(quick = false) {
      closing = true;
      try {
        void Promise.resolve(proc.stdin.end()).catch(() => {});
      } catch {}
      if (!quick && (await exitedWithin(250))) return;
      await stop(quick ? 50 : 150);
    },
    async closedInput() {
      // A server that is exiting is reported as what it is (its exit code, its stderr); one that
      // stays alive without reading is of no use: stop it, so the next call starts a fresh one.
      if (await exitedWithin(DEAF_GRACE_MS)) return;
      deaf = true;
      await stop(150);
    },
  };
}

async function connectHttp(spec: Extract<ServerSpec, { kind: "url" }>, events: LinkEvents, log: Logger): Promise<Link> {
  let auth: OAuthLink | undefined;
  try {
    auth = spec.auth ? oauthLink({ ...spec, auth: spec.auth }) : undefined;
  } catch (error) {
    if (error instanceof SynartesisError) throw new UpstreamError([error.message, ...error.details].join(" "), "start");
    throw error;
  }
  const transport = new StreamableHTTPClientTransport(new URL(spec.url), { requestInit: { headers: spec.headers }, ...auth?.transportOptions });
  transport.onmessage = (message) => events.onLine(JSON.stringify(message));
  transport.onerror = (error) => log.warn("http upstream error", { server: spec.name, error: auth?.provider.redact(error.message) ?? error.message });
  let closing = false;
  transport.onclose = () => events.onClose(closing ? "stopped" : "closed the connection");
  await transport.start();
  return {
    send: (line) =>
      transport.send(JSON.parse(line) as JSONRPCMessage).catch((error: unknown) => {
        throw auth?.explain(error) ?? error;
      }),
    close: async () => {
      closing = true;
      // A server that never answers the session's DELETE must not keep the proxy from exiting.
      await Promise.race([transport.terminateSession().catch(() => {}), Bun.sleep(HTTP_CLOSE_WAIT_MS)]);
      await transport.close();
    },
    setProtocolVersion: (version) => transport.setProtocolVersion(version),
  };
}

/** An HTTP status, or a connection that never opened: the server did not take the request. */
/**
 * A 4xx status (the server refused the request: a lost session, bad auth) or a
 * connection that never opened: the server did not run it. A 5xx, or a
 * connection that broke, may come after the server ran it: unknown.
 */
function refusedBeforeRunning(error: Error): boolean {
  const status = (error as { code?: unknown }).code;
  if (typeof status === "number") return status >= 400 && status < 500;
  return /ECONNREFUSED|Unable to connect|ConnectionRefused|ENOTFOUND/i.test(`${error.message} ${(error as { cause?: Error }).cause?.message ?? ""}`);
}

interface Pending {
  method: string;
  resolve(reply: Reply): void;
  reject(error: UpstreamError): void;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** Start the timeout again: progress from the server shows it is still working. */
  rearm(): void;
  progressKey?: string;
}

export interface UpstreamOptions {
  log: Logger;
  /** Requests and notifications the server sends on its own. */
  onMessage(upstream: Upstream, msg: any, raw: string): void;
  /** A dead server was started again: put back what the client had set up on it. */
  onRestart?(upstream: Upstream): Promise<void>;
  /** The server stopped (crashed, closed, or was stopped by us: reason "stopped"). */
  onClose?(upstream: Upstream, reason: string): void;
  /** A request was refused for want of a sign-in: let a person sign in now (true: resend it once). */
  signIn?(upstream: Upstream, needed: SignInRequired): Promise<boolean>;
}

export class Upstream {
  readonly name: string;
  readonly spec: ServerSpec;
  /** The server's answer to initialize (parsed), while it is running. */
  initResult: any;
  /** What the server said it can do, kept across restarts (routing must not forget a dead server). */
  capabilities: Record<string, any> | undefined;
  private link: Link | undefined;
  private starting: Promise<void> | undefined;
  private initParams: unknown;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  /** Progress token (as JSON) → the request it belongs to. */
  private readonly progress = new Map<string, number>();
  private readonly stderrTail: string[] = [];
  private exitReason: string | undefined;
  private stopped = false;
  private generation = 0;
  /** Completed handshakes: every one after the first is a restart. */
  private starts = 0;

  constructor(
    spec: ServerSpec,
    private readonly options: UpstreamOptions,
  ) {
    this.name = spec.name;
    this.spec = spec;
  }

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
    };
    try {
      this.link =
        this.spec.kind === "command"
          ? spawnStdio(this.spec, events, this.stderrTail, this.options.log)
          : await connectHttp(this.spec, events, this.options.log);
    } catch (error) {
      if (error instanceof UpstreamError) throw error;
      throw new UpstreamError((error as Error).message, "start");
    }
  }

  /** Open (if needed) and run the initialize handshake with the client's parameters. */
  async start(initParams: unknown): Promise<any> {
    this.initParams = initParams;
    await this.open();
    const reply = await this.request("initialize", initParams);
    if (reply.msg.error) {
      throw new UpstreamError(`it refused initialize: ${reply.msg.error.message} (code ${reply.msg.error.code})`, "start");
    }
    this.initResult = reply.msg.result;
    this.options.log.info(this.starts++ ? "server restarted" : "server started", {
      server: this.name,
      serverInfo: `${this.initResult?.serverInfo?.name ?? "?"} ${this.initResult?.serverInfo?.version ?? ""}`.trim(),
    });
    this.capabilities = this.initResult?.capabilities ?? {};
    const version = this.initResult?.protocolVersion;
    if (typeof version === "string") this.link?.setProtocolVersion?.(version);
    this.notify("notifications/initialized");
    return this.initResult;
  }

  /** A dead server is started again (with the same handshake) before it is used. */
  async ensureReady(): Promise<void> {
    if (this.link && this.initResult) return;
    if (this.stopped) throw new UpstreamError(`server "${this.name}" is shutting down`, "not_sent");
    if (this.initParams === undefined) throw new UpstreamError(`server "${this.name}" has not been initialized`, "start");
    this.starting ??= (async () => {
      this.options.log.warn("restarting server", { server: this.name, reason: this.exitReason });
      try {
        await this.start(this.initParams);
        await this.options.onRestart?.(this);
      } finally {
        this.starting = undefined;
      }
    })();
    await this.starting;
  }

  /** Send a request the proxy makes itself. */
  request(method: string, params?: unknown, timeoutMs = this.spec.timeoutMs): Promise<Reply> {
    const id = this.nextId++;
    const line = JSON.stringify({ jsonrpc: "2.0", id, method, ...(params === undefined ? {} : { params }) });
    return this.send(id, method, line, timeoutMs);
  }

  /** Forward a client's request line as is, under an id of our own. */
  forward(rawLine: string, method: string, progressToken?: unknown): { upstreamId: number; reply: Promise<Reply> } {
    const id = this.nextId++;
    return { upstreamId: id, reply: this.send(id, method, withId(rawLine, id), this.spec.timeoutMs, progressToken) };
  }

  /**
   * Forward a client's request, (re)starting the server first. A request that
   * provably never reached it because the server was gone (it died, or an HTTP
   * server forgot our session) is sent once more to the restarted server.
   * `stillWanted` is asked before each attempt (a client may cancel meanwhile).
   */
  async deliver(
    rawLine: string,
    method: string,
    options: { onSent?: (upstreamId: number) => void; progressToken?: unknown; stillWanted?: () => boolean } = {},
  ): Promise<Reply> {
    return this.withRestart(() => {
      if (options.stillWanted && !options.stillWanted()) throw new UpstreamError(`the client cancelled the ${method} request before it was sent`, "not_sent");
      const { upstreamId, reply } = this.forward(rawLine, method, options.progressToken);
      options.onSent?.(upstreamId);
      return reply;
    });
  }

  /** A request of the proxy's own (a pre-read, an inverse), with the same restart-and-retry as deliver(). */
  ask(method: string, params?: unknown): Promise<Reply> {
    return this.withRestart(() => this.request(method, params));
  }

  private async withRestart(attempt: () => Promise<Reply>): Promise<Reply> {
    let signedIn = false;
    for (let tries = 1; ; tries++) {
      await this.ensureReady();
      try {
        return await attempt();
      } catch (error) {
        // Refused for want of a sign-in (so it did not run): once a person signs in, it is sent again.
        if (error instanceof UpstreamError && error.signIn && !signedIn && this.options.signIn) {
          signedIn = true;
          if (await this.options.signIn(this, error.signIn)) continue;
          throw error;
        }
        const retry = error instanceof UpstreamError && error.kind === "not_sent" && !this.alive && tries === 1;
        if (!retry) throw error;
      }
    }
  }

  private send(id: number, method: string, line: string, timeoutMs: number, progressToken?: unknown): Promise<Reply> {
    return new Promise<Reply>((resolve, reject) => {
      if (this.stopped) {
        reject(new UpstreamError(`server "${this.name}" is shutting down`, "not_sent"));
        return;
      }
      if (!this.link) {
        reject(new UpstreamError(`server "${this.name}" is not running (${this.exitReason ?? "not started"})`, "not_sent"));
        return;
      }
      const expire = (why: string) => {
        this.forget(id);
        this.notify("notifications/cancelled", { requestId: id, reason: "timed out in the Synartesis proxy" });
        reject(new UpstreamError(why, "timeout"));
      };
      const timedOut = () => expire(`server "${this.name}" did not answer ${method} within ${timeoutMs / 1000} s`);
      const deadlineMs = Math.max(timeoutMs, callDeadlineMs(this.spec));
      const pastDeadline = () =>
        expire(`server "${this.name}" kept reporting progress but did not answer ${method} within its timeout_max of ${deadlineMs / 1000} s`);
      const started = performance.now();
      const timer = timeoutMs > 0 ? setTimeout(timedOut, timeoutMs) : undefined;
      const progressKey = progressToken === undefined ? undefined : JSON.stringify(progressToken);
      const entry: Pending = {
        method,
        resolve,
        reject,
        timer,
        progressKey,
        rearm: () => {
          if (timeoutMs <= 0) return;
          clearTimeout(entry.timer);
          const left = deadlineMs - (performance.now() - started);
          entry.timer = left < timeoutMs ? setTimeout(pastDeadline, Math.max(0, left)) : setTimeout(timedOut, timeoutMs);
        },
      };
      if (progressKey !== undefined) this.progress.set(progressKey, id);
      this.pending.set(id, entry);
      const link = this.link;
      const sent = link.send(line);
      if (sent instanceof Promise) {
        sent.catch(async (error: Error) => {
          if (!this.pending.has(id)) return;
          this.forget(id);
          if ((error as { code?: unknown }).code === "EPIPE" && link.closedInput) {
            // It never read this line. Once the link is closed, the caller may send it to a fresh server.
            await link.closedInput();
            entry.reject(new UpstreamError(`server "${this.name}" ${this.exitReason ?? "stopped reading its input"} before it read the ${method} request`, "not_sent"));
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
        });
      }
    });
  }

  /**
   * Cancel one of our requests (the client cancelled the call it carried) and
   * stop waiting for it: a server that honours the cancellation never answers.
   */
  cancel(upstreamId: number, reason?: string): void {
    this.notify("notifications/cancelled", { requestId: upstreamId, ...(reason === undefined ? {} : { reason }) });
    const entry = this.forget(upstreamId);
    entry?.reject(new UpstreamError(`the client cancelled the ${entry.method} request`, "cancelled"));
  }

  notify(method: string, params?: unknown): void {
    this.sendRaw(JSON.stringify({ jsonrpc: "2.0", method, ...(params === undefined ? {} : { params }) }));
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
  async listAll(method: string, field: string): Promise<any[]> {
    const items: any[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 1000; page++) {
      const reply = await this.request(method, cursor === undefined ? {} : { cursor });
      if (reply.msg.error) throw new UpstreamError(`${method} failed: ${reply.msg.error.message}`, "closed");
      items.push(...(reply.msg.result?.[field] ?? []));
      cursor = reply.msg.result?.nextCursor;
      if (!cursor) break;
    }
    return items;
  }

  private onLine(line: string): void {
    if (line.trim() === "") return;
    let msg: any;
    try {
      msg = JSON.parse(line);
    } catch {
      this.options.log.warn("server wrote a line that is not JSON to stdout; ignored", { server: this.name, line: line.slice(0, 200) });
      return;
    }
    if (msg && typeof msg === "object" && msg.method === undefined && (msg.result !== undefined || msg.error !== undefined)) {
      const entry = typeof msg.id === "number" ? this.forget(msg.id) : undefined;
      if (!entry) {
        this.options.log.debug("response for no pending request; ignored", { server: this.name, id: msg.id });
        return;
      }
      entry.resolve({ raw: line, msg });
      return;
    }
    if (msg?.method === "notifications/progress") {
      const id = this.progress.get(JSON.stringify(msg.params?.progressToken));
      if (id !== undefined) this.pending.get(id)?.rearm();
    }
    this.options.onMessage(this, msg, line);
  }

  private onClose(reason: string): void {
    this.generation++;
    this.link = undefined;
    this.initResult = undefined;
    this.exitReason = reason;
    if (reason !== "stopped") {
      this.options.log.error("server stopped", { server: this.name, reason, stderr: this.stderrTail.slice(-10) });
    }
    const why = `server "${this.name}" ${reason} while a reply was owed`;
    for (const id of [...this.pending.keys()]) this.forget(id)?.reject(new UpstreamError(why, "closed"));
    this.options.onClose?.(this, reason);
  }

  /** Stop waiting for a request: its timer and its progress token go with it. */
  private forget(id: number): Pending | undefined {
    const entry = this.pending.get(id);
    if (!entry) return undefined;
    this.pending.delete(id);
    clearTimeout(entry.timer);
    if (entry.progressKey !== undefined) this.progress.delete(entry.progressKey);
    return entry;
  }

  /** Why the server stopped, if it did. */
  get stopReason(): string | undefined {
    return this.exitReason;
  }

  /** Send nothing more, and stop waiting: every request still owed an answer fails with `reason` (its outcome unknown). */
  abandon(reason: string): void {
    this.stopped = true;
    for (const id of [...this.pending.keys()]) this.forget(id)?.reject(new UpstreamError(reason, "closed"));
  }

  async stop(options: { quick?: boolean } = {}): Promise<void> {
    this.stopped = true;
    const link = this.link;
    if (!link) return;
    await link.close(options.quick);
    this.link = undefined;
  }
}

/** Turn a start failure into the error the CLI reports (exit 1, the server named, its stderr quoted). */
export function startFailure(upstream: Upstream, error: unknown): SynartesisError {
  const exited = error instanceof UpstreamError && (error.kind === "closed" || error.kind === "not_sent") && upstream.stopReason;
  const reason = exited ? `it ${upstream.stopReason} before answering` : error instanceof Error ? error.message : String(error);
  const stderr = upstream.stderr().filter((l) => l.trim() !== "").slice(-8);
  return new SynartesisError("server", `server "${upstream.name}" would not start: ${reason}`, {
    details: stderr.length ? ["its stderr said:", ...stderr.map((l) => `  ${l}`)] : [],
  });
}
