// `synartesis proxy --http PORT`: the proxy over MCP Streamable HTTP, for
// clients that take a URL (R-HTTP). One pool of the manifest's servers serves
// every session (R-HTTP-5); each MCP session is a client session with its own
// run (R-HTTP-4); sessionless 2026-07-28 clients are served on the same
// endpoint, a client session per run (R-ERA-5). /mcp answers only to a Host
// and Origin of its own (DNS-rebinding protection) and the bearer token
// (R-HTTP-2/3); /healthz says it is alive and nothing else (R-HTTP-6). The
// first SIGINT or SIGTERM drains every session and ends its run, then the
// servers stop (R-PROXY-13).
import { networkInterfaces } from "node:os";
import type { Server } from "bun";
import { SynartesisError } from "../errors.ts";
import { startupOver } from "../jit.ts";
import { ACCEPTED_LEGACY_VERSIONS } from "../jsonrpc/eras.ts";
import { readMessages } from "../jsonrpc/frames.ts";
import { ErrorCode } from "../jsonrpc/messages.ts";
import { clipped, createLogger } from "../log.ts";
import { onStopSignals, whenAborted } from "../proxy/drain.ts";
import { methodNotFound } from "../proxy/session/methods.ts";
import { ServerPool } from "../proxy/pool/pool.ts";
import { recordingOptions } from "../proxy/session/session-run.ts";
import type { StdioOptions } from "../proxy/stdio.ts";
import { startFailure, UpstreamError } from "../servers/upstream.ts";
import { allowedNames, hostAllowed, hostName, originAllowed, pathOf, tokenMatches } from "./guard.ts";
import { HttpSession } from "./http-session.ts";
import { isSessionless, namesModernVersion } from "./modern-headers.ts";
import type { HttpSettings } from "./options.ts";
import { jsonAnswer, plainText, refusal, SESSION_HEADER } from "./responses.ts";
import { SessionlessRuns } from "./sessionless.ts";

export const MCP_PATH = "/mcp";
export const HEALTH_PATH = "/healthz";
/** How often open event streams get a comment, well inside the minute after which tunnels and proxies tend to close a quiet connection. */
const KEEP_ALIVE_MS = 25_000;
const SESSION_GONE = -32001;
const SHUTTING_DOWN = "Service Unavailable: Synartesis is shutting down";

/** The proxy's own options (drainMs also bounds a session's end after DELETE or idle expiry), and the HTTP ones. */
export interface HttpOptions extends StdioOptions, HttpSettings {}

const WILDCARDS = new Set(["0.0.0.0", "::", "[::]"]);

/** Whether an address reaches only this machine. */
export function isLoopback(host: string): boolean {
  return /^(localhost|127(\.\d{1,3}){3}|::1|\[::1\])$/i.test(host);
}

/** Bound to every interface, the machine's own addresses are names of this server too. */
function interfaceAddresses(): string[] {
  return Object.values(networkInterfaces()).flatMap((addresses) => (addresses ?? []).map((address) => address.address));
}

function endpointUrl(host: string, port: number): string {
  const name = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  return `http://${name}:${port}${MCP_PATH}`;
}

/** Serve until a signal; throws why when the proxy could not go on (a server would not start, the journal broke, …). */
export async function serveHttp(options: HttpOptions): Promise<void> {
  const proxy = new HttpProxy(options);
  await proxy.open();
  const server = await proxy.listen();
  if (!isLoopback(options.host)) {
    options.log.warn("serving beyond this machine: anyone who can reach this address and holds the token can write through every server in the manifest", {
      host: options.host,
    });
  }
  // Scripts read where to connect from this line, whatever the log level.
  createLogger("info").info("listening", { url: endpointUrl(options.host, server.port!) });
  startupOver();
  await proxy.serveUntilStopped(server);
}

/**
 * The proxy over HTTP: one pool of servers, the sessions open on it, and the
 * one decision of who may send what to /mcp. Stopping is its own: the first
 * signal drains every session and ends its run, a second stops at once.
 */
class HttpProxy {
  private readonly pool: ServerPool;
  private readonly signals: ReturnType<typeof onStopSignals>;
  private readonly sessions = new Map<string, HttpSession>();
  private readonly sessionless: SessionlessRuns;
  private readonly names: ReadonlySet<string>;
  private readonly recording: ReturnType<typeof recordingOptions>;
  /** Why the proxy stopped, when something made it stop. */
  private failure: SynartesisError | undefined;
  private stopping = false;
  private malformedHostLogged = false;
  private readonly stopWatching: () => void;

  constructor(private readonly options: HttpOptions) {
    const { log, journal } = options;
    this.pool = new ServerPool({ manifest: options.manifest, log });
    this.signals = onStopSignals(log, options.drainMs);
    // Until a client comes, nobody else hears of a server that dies: then that is why the proxy stops (exit 1, naming it),
    // as over stdio. Once a session is initializing, it hears of it itself; later a dead server is restarted on next use.
    this.stopWatching = this.pool.watchClosed((upstream, reason) => {
      if (reason === "stopped") return;
      this.failure ??= startFailure(upstream, new UpstreamError(reason, "closed"));
      this.signals.stop();
    });
    this.recording = recordingOptions({ pool: this.pool, journal, log, cwd: options.cwd });
    this.names = allowedNames(options.host, [...options.allowHosts, ...(WILDCARDS.has(options.host) ? interfaceAddresses() : [])]);
    this.sessionless = new SessionlessRuns(
      () => this.full() ?? this.openSession("sessionless"),
      log,
      (method) => methodNotFound(method, this.pool.router.single !== undefined),
    );
  }

  /** Start the servers: one that cannot start is known before anyone is told where to connect. */
  async open(): Promise<void> {
    try {
      await this.pool.open();
    } catch (error) {
      await this.options.journal.close().catch(() => {});
      throw error;
    }
  }

  async listen(): Promise<Server<undefined>> {
    const { host, port, log } = this.options;
    try {
      return Bun.serve({
        hostname: host,
        port,
        development: false,
        fetch: (request, server) => this.route(request, server),
        error: (error) => {
          log.error("internal error", { error: error.message });
          return refusal(500, "Internal Server Error: Synartesis could not handle this request");
        },
      });
    } catch (error) {
      await this.pool.stop();
      const message = (error as Error).message ?? String(error);
      if ((error as { code?: string }).code === "EADDRINUSE" || /in use/i.test(message)) {
        throw new SynartesisError("config", `port ${port} on ${host} is in use`, { hint: "Choose another port, or 0 for any free port." });
      }
      throw new SynartesisError("config", `cannot serve on ${host}:${port}: ${message}`);
    }
  }

  async serveUntilStopped(server: Server<undefined>): Promise<void> {
    const { drainMs, log, journal } = this.options;
    const keepAlive = setInterval(() => this.sessions.forEach((session) => session.keepAlive()), KEEP_ALIVE_MS);
    await whenAborted(this.signals.stopRequested);
    this.stopping = true;
    void server.stop();
    const ends = await Promise.all([...this.sessions.values()].map((session) => session.end(drainMs, this.signals.forced)));
    clearInterval(keepAlive);
    await this.pool.stop({ quick: ends.includes("second signal") });
    try {
      await journal.close();
    } catch {}
    await Promise.race([server.stop(true), whenAborted(this.signals.forced)]);
    if (this.failure) throw this.failure;
    log.debug("proxy stopped");
  }

  // ---- sessions ----

  private async endSession(session: HttpSession): Promise<void> {
    try {
      await session.end(this.options.drainMs, this.signals.forced);
    } finally {
      this.sessions.delete(session.id);
      this.sessionless.ended(session);
    }
  }

  /** Why no session can be opened now: as many are open as --http-max-sessions allows. */
  private full(): Response | undefined {
    const most = this.options.maxSessions;
    if (this.sessions.size < most) return undefined;
    return refusal(
      503,
      `Service Unavailable: ${most} sessions are open, the most --http-max-sessions allows; one more can start when one ends (DELETE, or --http-idle)`,
    );
  }

  private openSession(kind: "session" | "sessionless" = "session"): HttpSession {
    this.stopWatching();
    const session = new HttpSession({
      id: crypto.randomUUID(),
      sessionless: kind === "sessionless",
      recording: this.recording,
      idleMs: this.options.idleMs,
      onIdle: (idle) => {
        this.options.log.info(`${kind === "session" ? "session" : "run"} ended: no request for --http-idle`, {
          client: idle.label,
          idleMinutes: this.options.idleMs / 60_000,
        });
        void this.endSession(idle);
      },
    });
    this.sessions.set(session.id, session);
    // What stops one session (a server that would not start, a broken journal) stops them all: stop, and say why.
    session.client.fatal.catch(() => {
      this.failure ??= session.client.failure;
      this.signals.stop();
    });
    return session;
  }

  /** The session a request names, or why not. */
  private sessionFor(request: Request): HttpSession | Response {
    const id = request.headers.get(SESSION_HEADER);
    if (id === null) return refusal(400, "Bad Request: the Mcp-Session-Id header is missing; start a session with initialize");
    const session = this.sessions.get(id);
    if (!session || session.ended || session.sessionless)
      return refusal(404, "Session not found: it ended (DELETE, --http-idle or a restart); start a new one with initialize", { code: SESSION_GONE });
    const version = request.headers.get("mcp-protocol-version");
    if (version !== null && !ACCEPTED_LEGACY_VERSIONS.includes(version)) {
      return refusal(400, `Bad Request: unsupported MCP-Protocol-Version ${JSON.stringify(version)} (supported: ${ACCEPTED_LEGACY_VERSIONS.join(", ")})`);
    }
    return session;
  }

  // ---- requests ----

  private async route(request: Request, server: Server<undefined>): Promise<Response> {
    const path = pathOf(request.url);
    if (path === HEALTH_PATH) {
      if (request.method !== "GET" && request.method !== "HEAD") return plainText(405, "Method Not Allowed", { Allow: "GET, HEAD" });
      return this.stopping ? plainText(503, "shutting down") : plainText(200, "ok");
    }
    if (path !== MCP_PATH) return plainText(404, `Not found: the MCP endpoint is ${MCP_PATH}`);
    const refused = this.refusal(request);
    if (refused) return refused;
    if (this.stopping) return refusal(503, SHUTTING_DOWN);
    switch (request.method) {
      case "POST":
        return this.post(request, server);
      case "GET": {
        if (!(request.headers.get("accept") ?? "").includes("text/event-stream"))
          return refusal(406, "Not Acceptable: the client must accept text/event-stream");
        const session = this.sessionFor(request);
        if (session instanceof Response) return session;
        server.timeout(request, 0);
        return session.listen();
      }
      case "DELETE": {
        const session = this.sessionFor(request);
        if (session instanceof Response) return session;
        await this.endSession(session);
        return new Response(null, { status: 200 });
      }
      default:
        return refusal(405, "Method Not Allowed: /mcp takes POST, GET and DELETE", { headers: { Allow: "GET, POST, DELETE" } });
    }
  }

  /** Why /mcp will not serve this request (R-HTTP-2/3): its Host, its Origin, its token; undefined when it may. */
  private refusal(request: Request): Response | undefined {
    const host = request.headers.get("host");
    if (hostName(host) === undefined) {
      // Said once: a client that sends it will send it again.
      if (!this.malformedHostLogged)
        this.options.log.warn("a request's Host header is not a host name with an optional port; answered 400", { host: clipped(host ?? "") });
      this.malformedHostLogged = true;
      return refusal(400, "Bad Request: the Host header is not a host name with an optional port");
    }
    if (!hostAllowed(host, this.names)) {
      return refusal(403, "Forbidden: the Host header names none of this server's names (its address, localhost, --http-allow-host)");
    }
    if (!originAllowed(request.headers.get("origin"), this.names)) {
      return refusal(403, "Forbidden: the Origin header names none of this server's names (its address, localhost, --http-allow-host)");
    }
    const presented = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(request.headers.get("authorization") ?? "")?.[1];
    if (tokenMatches(presented, this.options.token)) return undefined;
    const challenge = presented === undefined ? 'Bearer realm="synartesis"' : 'Bearer realm="synartesis", error="invalid_token"';
    return refusal(401, "Unauthorized: send Authorization: Bearer with the token this proxy was started with", { headers: { "WWW-Authenticate": challenge } });
  }

  private async post(request: Request, server: Server<undefined>): Promise<Response> {
    const accept = request.headers.get("accept") ?? "";
    if (!accept.includes("application/json") || !accept.includes("text/event-stream")) {
      return refusal(406, "Not Acceptable: the client must accept both application/json and text/event-stream");
    }
    const type = request.headers.get("content-type")?.split(";")[0]?.trim().toLowerCase();
    if (type !== "application/json") return refusal(415, "Unsupported Media Type: the body must be application/json");
    const body = await request.text();
    // A JSON array is a batch, even of one message (JSON-RPC answers it with an array).
    const batch = /^\s*\[/.test(body);
    const read = readMessages(body, "body");
    // The body may have taken a while: a session opened now would outlive the shutdown.
    if (this.stopping) return refusal(503, SHUTTING_DOWN);
    if ("refused" in read) return jsonAnswer(400, read.refused);
    const initializing = read.frames.some((frame) => frame.kind === "request" && frame.msg.method === "initialize");
    const alone = !batch && read.frames.length === 1 && read.frames[0]!.kind === "request" ? read.frames[0] : undefined;
    // An answer may take as long as its call (or a person's approval of what it asks): no idle cut-off.
    // initialize under a 2026-07-28 MCP-Protocol-Version header is that era's, where it does not exist.
    if ((!initializing || namesModernVersion(request.headers)) && isSessionless(request.headers, alone, request.headers.has(SESSION_HEADER))) {
      server.timeout(request, 0);
      return this.sessionless.post(request, read.frames, batch);
    }
    let session: HttpSession | Response;
    if (!initializing) session = this.sessionFor(request);
    else if (read.frames.length > 1) return refusal(400, "Invalid Request: initialize must come alone, not in a batch", { code: ErrorCode.InvalidRequest });
    else if (request.headers.has(SESSION_HEADER)) return refusal(400, "Bad Request: initialize starts a new session; send it without Mcp-Session-Id");
    else session = this.full() ?? this.openSession();
    if (session instanceof Response) return session;
    server.timeout(request, 0);
    return session.post(read.frames);
  }
}
