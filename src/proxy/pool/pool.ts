// The servers of one manifest, shared by every client session of the process:
// started and checked once, restarted on next use with what the clients set up
// on them put back, mutating calls queued per server across all sessions
// (R-PROXY-6), and what a server sends on its own routed to the session it is
// for: a request to the session whose call caused it, never a guess; a
// notification to every session (R-HTTP-4).
import type { SignInRequired } from "../../auth/provider.ts";
import { SynartesisError } from "../../errors.ts";
import { frameOf, type NotificationFrame, type RequestFrame } from "../../jsonrpc/frames.ts";
import { ErrorCode, errorLine, messageLine } from "../../jsonrpc/messages.ts";
import type { Logger } from "../../log.ts";
import { createMatcher, type Matcher } from "../../manifest/match.ts";
import type { Manifest } from "../../manifest/types.ts";
import type { Connector } from "../../servers/link.ts";
import { listTools, policyFit, toolNames } from "../../servers/tools.ts";
import { startFailure, Upstream, UpstreamError } from "../../servers/upstream.ts";
import { Router } from "./router.ts";
import { ServerSubscriptions } from "./server-subscriptions.ts";
import { ServerTurns, type ServerTurn } from "./server-turns.ts";
import { ToolCatalog } from "./tool-catalog.ts";
import type { Era } from "../../jsonrpc/eras.ts";

/** What the pool needs of a client session. */
export interface PoolMember {
  /** A request a server makes of this session's client (sampling, elicitation, roots). */
  serverRequest(upstream: Upstream, frame: RequestFrame): void;
  serverNotification(upstream: Upstream, frame: NotificationFrame): void;
  /** A server stopped ("stopped": we stopped it). */
  serverClosed(upstream: Upstream, reason: string): void;
  /** A server refused a request of this session for want of a sign-in: offer it through the client (true: send it again). */
  signIn(upstream: Upstream, needed: SignInRequired): Promise<boolean>;
}

export interface PoolOptions {
  manifest: Manifest;
  log: Logger;
  /** How servers are reached (default: the manifest's stdio or HTTP link; tests link servers in memory). */
  connector?: Connector;
}

export const NO_CLIENT = "Synartesis: the client disconnected; nobody can answer this request";
export const WHICH_CLIENT = "Synartesis cannot tell which client this request is for";

export class ServerPool {
  readonly manifest: Manifest;
  readonly matcher: Matcher;
  readonly router: Router;
  /** Which tools each server offers (R-PROXY-12); when a list changed without its server saying so, every session is told. */
  readonly catalog = new ToolCatalog((upstream) => this.toolsChanged(upstream));
  /** The resources clients follow, subscribed to at their servers, and Synartesis's own subscriptions at 2026-era servers. */
  readonly subscriptions: ServerSubscriptions;
  /** Servers that could not start for want of a sign-in: started on the first request after someone signs in. */
  readonly awaitingSignIn = new Set<Upstream>();
  private readonly turns = new ServerTurns();
  private readonly members = new Set<PoolMember>();
  private readonly closeWatchers = new Set<(upstream: Upstream, reason: string) => void>();
  private readonly log: Logger;
  private opened: Promise<void> | undefined;
  private started: Promise<void> | undefined;
  /** What clients set up on servers, put back when one restarts. */
  private logLevel: unknown;
  /** Tasks 2026-era servers run calls as (R-ERA-4): which server runs each, and who follows it. */
  private readonly tasks = new Map<string, { upstream: Upstream; followers: Set<() => void> }>();

  constructor(options: PoolOptions) {
    this.manifest = options.manifest;
    this.log = options.log;
    this.matcher = createMatcher(options.manifest);
    this.subscriptions = new ServerSubscriptions({ log: options.log, notify: (upstream, frame) => this.routeNotification(upstream, frame) });
    this.router = new Router(
      Object.values(options.manifest.servers).map(
        (spec) =>
          new Upstream(spec, {
            log: options.log,
            connector: options.connector,
            onMessage: (upstream, frame) => (frame.kind === "request" ? this.routeRequest(upstream, frame) : this.routeNotification(upstream, frame)),
            onClose: (upstream, reason) => {
              this.members.forEach((member) => member.serverClosed(upstream, reason));
              this.closeWatchers.forEach((watch) => watch(upstream, reason));
            },
            onRestart: (upstream) => this.replaySetup(upstream),
            signIn: (upstream, needed, origin) => {
              const member = origin && this.memberOf(new Set([origin.session]));
              return member ? member.signIn(upstream, needed) : Promise.resolve(false);
            },
          }),
      ),
    );
  }

  get upstreams(): Upstream[] {
    return this.router.upstreams;
  }

  server(name: string): Upstream {
    const upstream = this.router.server(name);
    if (!upstream) throw new SynartesisError("config", `there is no server "${name}" in the manifest ${this.manifest.path}`);
    return upstream;
  }

  join(member: PoolMember): void {
    this.members.add(member);
  }

  /** A session left: what it followed at the servers is given up, unless others follow it too. */
  leave(member: PoolMember): void {
    this.members.delete(member);
    this.subscriptions.release(member);
  }

  /** Be told when a server stops, as a session is (reason "stopped": we stopped it), while no session may be there to hear it; returns how to stop. */
  watchClosed(watch: (upstream: Upstream, reason: string) => void): () => void {
    this.closeWatchers.add(watch);
    return () => this.closeWatchers.delete(watch);
  }

  /** Start every server's process or connection now (once), so one that cannot start is known before a client asks. */
  open(): Promise<void> {
    this.opened ??= (async () => {
      const results = await Promise.allSettled(this.upstreams.map((upstream) => upstream.open()));
      const failed = results.findIndex((result) => result.status === "rejected");
      if (failed === -1) return;
      await this.stop();
      throw startFailure(this.upstreams[failed]!, (results[failed] as PromiseRejectedResult).reason);
    })();
    return this.opened;
  }

  /** Hand every server the first client's initialize (once), and prove the policy's tools exist (R-MAN-7). */
  start(initParams: unknown, clientEra?: Era): Promise<void> {
    this.started ??= this.startAndVerify(initParams, clientEra);
    return this.started;
  }

  private async startAndVerify(initParams: unknown, clientEra: Era | undefined): Promise<void> {
    const started = await Promise.allSettled(this.upstreams.map((upstream) => upstream.start(initParams, clientEra)));
    for (const [index, result] of started.entries()) {
      if (result.status === "fulfilled") {
        this.subscriptions.started(this.upstreams[index]!);
        continue;
      }
      const upstream = this.upstreams[index]!;
      // A server that needs a sign-in does not keep the others from serving: it is started when someone signs in (R-AUTH-4).
      if (!(result.reason instanceof UpstreamError && result.reason.signIn)) throw startFailure(upstream, result.reason);
      this.awaitingSignIn.add(upstream);
      this.log.warn("a server needs a sign-in; it starts once someone signs in (through a client that can show a URL, or with synartesis login)", {
        server: upstream.name,
        error: result.reason.message,
      });
    }
    const toolsByServer = new Map<string, Set<string>>();
    for (const upstream of this.upstreams) {
      if (this.awaitingSignIn.has(upstream)) continue;
      let tools: Array<Record<string, unknown>>;
      try {
        tools = await listTools(upstream);
      } catch (error) {
        // A server that let initialize in but wants a sign-in for the rest waits for one, like one that wanted it at once.
        if (error instanceof UpstreamError && error.signIn) {
          this.awaitingSignIn.add(upstream);
          this.log.warn("a server needs a sign-in; it starts once someone signs in (through a client that can show a URL, or with synartesis login)", {
            server: upstream.name,
            error: error.message,
          });
          continue;
        }
        throw new SynartesisError("server", `server "${upstream.name}" could not list its tools: ${(error as Error).message}`);
      }
      toolsByServer.set(upstream.name, toolNames(tools));
      this.catalog.remember(upstream, tools);
    }
    const { missing, unused } = policyFit(this.manifest, toolsByServer);
    for (const rule of unused) this.log.warn("a rule matches none of its server's tools (a typo?)", { match: rule.match, line: rule.line });
    if (missing.length) throw new SynartesisError("manifest", "the manifest names tools its servers do not have", { details: missing });
  }

  /** A place in `server`'s queue of mutating calls, taken now (R-PROXY-6, across every session). */
  reserveTurn(server: string): ServerTurn {
    return this.turns.reserve(server);
  }

  // ---- what a server sends on its own ----

  /** The session these candidates point to when it is exactly one; with no candidate, the only session there is. */
  private memberOf(candidates: Set<object>): PoolMember | undefined {
    const members = [...this.members].filter((member) => candidates.size === 0 || candidates.has(member));
    return members.length === 1 ? members[0] : undefined;
  }

  /**
   * A server's request goes to the one session with a request in flight to
   * that server (the call that caused it); when several are, or none is and
   * several sessions are open, nobody can tell, and the server is told so.
   */
  private routeRequest(upstream: Upstream, frame: RequestFrame): void {
    const member = this.memberOf(upstream.sessionsWaiting());
    if (member) return member.serverRequest(upstream, frame);
    const nobody = this.members.size === 0;
    // With no client left (shutting down) that is expected; with several, a server asked something nobody could route.
    this.log[nobody ? "debug" : "warn"]("a server's request was refused", { server: upstream.name, method: frame.msg.method });
    upstream.sendRaw(errorLine(frame.id, ErrorCode.InternalError, nobody ? NO_CLIENT : WHICH_CLIENT));
  }

  /** Progress goes to the session whose request carries its token; any other notification to every session. */
  private routeNotification(upstream: Upstream, frame: NotificationFrame): void {
    const method = frame.msg.method;
    if (method === "notifications/tools/list_changed") this.catalog.forget(upstream);
    if (method === "notifications/tasks") this.taskChanged(upstream, frame.msg.params?.taskId);
    if (method !== "notifications/progress") return this.members.forEach((member) => member.serverNotification(upstream, frame));
    const member = this.memberOf(upstream.sessionsWithToken(frame.msg.params?.progressToken));
    if (member) member.serverNotification(upstream, frame);
    else this.log.debug("progress for no single client; dropped", { server: upstream.name });
  }

  /**
   * The tools clients see changed without their server saying so (it started
   * once someone signed in, it restarted with other tools, a fresh list
   * differs): every session is told, as the server itself would tell it.
   */
  private toolsChanged(upstream: Upstream): void {
    const line = messageLine("notifications/tools/list_changed", {});
    const frame = frameOf(JSON.parse(line), line);
    if (frame.kind === "notification") this.members.forEach((member) => member.serverNotification(upstream, frame));
  }

  // ---- tasks ----

  /** Follow `taskId`, run by `upstream`: `wake` is called when a notification says it changed. Returns the unfollow. */
  followTask(upstream: Upstream, taskId: string, wake: () => void): () => void {
    let task = this.tasks.get(taskId);
    if (!task || task.upstream !== upstream) this.tasks.set(taskId, (task = { upstream, followers: new Set() }));
    task.followers.add(wake);
    return () => task.followers.delete(wake);
  }

  /** The server that runs a task (a client's tasks/get goes there). */
  taskOwner(taskId: unknown): Upstream | undefined {
    return typeof taskId === "string" ? this.tasks.get(taskId)?.upstream : undefined;
  }

  private taskChanged(upstream: Upstream, taskId: unknown): void {
    const task = typeof taskId === "string" ? this.tasks.get(taskId) : undefined;
    if (task?.upstream === upstream) for (const wake of task.followers) wake();
  }

  // ---- what clients set up on servers ----

  setLogLevel(level: unknown): void {
    this.logLevel = level;
  }

  /**
   * A restarted server gets the clients' logging level and what they follow
   * again (a 2026-era server: Synartesis's subscription there), and its tools
   * are listed again: when they changed, the clients are told.
   */
  private async replaySetup(upstream: Upstream): Promise<void> {
    if (this.awaitingSignIn.delete(upstream)) {
      this.catalog.forget(upstream);
      this.toolsChanged(upstream);
    } else {
      this.catalog.doubt(upstream);
      void this.catalog.relist(upstream).catch(() => {});
    }
    this.subscriptions.started(upstream);
    if (this.logLevel === undefined || !upstream.capabilities?.logging || upstream.era === "modern") return;
    try {
      const reply = await upstream.request("logging/setLevel", { level: this.logLevel });
      if ("error" in reply.msg) throw new Error(reply.msg.error.message);
    } catch (failure) {
      this.log.warn("could not restore the client's setup on a restarted server", {
        server: upstream.name,
        method: "logging/setLevel",
        error: (failure as Error).message,
      });
    }
  }

  // ---- lists over several servers ----

  /** A list method over every server that offers it: every page of each, in one list; names become SERVER__NAME when asked. */
  async aggregate(method: string, field: string, capability: string, rename: boolean): Promise<unknown[]> {
    const items: unknown[] = [];
    for (const upstream of this.upstreams) {
      if (!upstream.capabilities?.[capability]) continue;
      try {
        await upstream.ensureReady();
        const listed = await upstream.listAll(method, field);
        if (method === "resources/list") this.router.rememberResources(upstream, listed);
        if (method === "resources/templates/list") this.router.rememberTemplates(upstream, listed);
        items.push(...(rename ? listed.map((item) => ({ ...item, name: this.router.exposed(upstream, String(item.name)) })) : listed));
      } catch (error) {
        this.log.warn(`${method} failed on one server; its entries are missing`, { server: upstream.name, error: (error as Error).message });
      }
    }
    return items;
  }

  /** The server that offers a resource URI (or template); a URI learnt elsewhere makes every server list its resources again. */
  async ownerOf(uri: string): Promise<Upstream | undefined> {
    return (await this.ownersOf([uri])).get(uri);
  }

  /** The servers that offer these resource URIs (those no server offers left out); the servers list their resources again at most once. */
  async ownersOf(uris: string[]): Promise<Map<string, Upstream>> {
    const owners = () => {
      const found = new Map<string, Upstream>();
      for (const uri of uris) {
        const owner = this.router.ownerOf(uri);
        if (owner) found.set(uri, owner);
      }
      return found;
    };
    const known = owners();
    if (known.size === uris.length) return known;
    for (const upstream of this.upstreams) {
      if (!upstream.capabilities?.resources) continue;
      try {
        await upstream.ensureReady();
        this.router.rememberResources(upstream, await upstream.listAll("resources/list", "resources"));
        this.router.rememberTemplates(upstream, await upstream.listAll("resources/templates/list", "resourceTemplates"));
      } catch {}
    }
    return owners();
  }

  // ---- the end ----

  /** One session is ending: its requests still owed an answer fail with `reason`, and nothing more is sent for it. */
  abandon(member: PoolMember, reason: string): void {
    for (const upstream of this.upstreams) upstream.abandon(member, reason);
  }

  async stop(options: { quick?: boolean } = {}): Promise<void> {
    await Promise.all(this.upstreams.map((upstream) => upstream.stop(options)));
  }
}
