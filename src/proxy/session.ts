// One client session of the proxy: reads the client's JSON-RPC lines,
// intercepts initialize, the list methods and tools/call, and routes every
// other message both ways with ids remapped (DESIGN.md).
import { SynartesisError } from "../errors.ts";
import { JournalError, type Journal } from "../journal/journal.ts";
import { createMatcher } from "../manifest/match.ts";
import type { Manifest } from "../manifest/types.ts";
import { missingTools, unusedRules } from "../manifest/verify.ts";
import { VERSION } from "../version.ts";
import { handleToolCall, unrecordedLine, type CallContext } from "./calls.ts";
import { drain } from "./drain.ts";
import { firstAmbiguity, idKey, MAX_NESTING, nestingDepth } from "./json-check.ts";
import type { Logger } from "../log.ts";
import { errorLine, isId, messageIdOf, resultLine, toolErrorLine, type MessageId } from "./messages.ts";
import { rawElements, rawMember, withId, withIdText } from "./raw-json.ts";
import { Router } from "./router.ts";
import { signInThroughClient, type ClientChannel } from "./sign-in.ts";
import type { ProtectedPaths } from "./protected-paths.ts";
import { ServerTurns } from "./server-turns.ts";
import { SessionRun } from "./session-run.ts";
import { ToolCatalog } from "./tool-catalog.ts";
import { startFailure, Upstream, UpstreamError } from "./upstream.ts";

export const INSTRUCTIONS_PREAMBLE = [
  "This connection goes through Synartesis, which records every tool call together with the state it replaced, so that a person can undo what was done.",
  "Some calls are held for a person's approval: such a call fails at once with a message that starts with \"HELD FOR APPROVAL\" and contains a command.",
  "When that happens, relay the command to the person, wait until they say it is approved, then make exactly the same call again (same tool, same arguments).",
  "A call may also come back \"DENIED\": do not retry it without asking the person.",
  "Never route around a held or denied call by using other tools to reach the same effect.",
].join(" ");

/** How long a session that never initialized waits at its end for a server to fail to start. */
const START_GRACE_MS = 300;

/** A server's own request id, unique across servers. */
function serverRequestKey(upstream: Upstream, idKey: string): string {
  return `${upstream.name}\u0000${idKey}`;
}

function mergeCapabilities(all: Array<Record<string, any>>): Record<string, any> {
  const merged: Record<string, any> = {};
  for (const capabilities of all) {
    for (const [key, value] of Object.entries(capabilities ?? {})) {
      if (value && typeof value === "object" && !Array.isArray(value)) {
        const into = (merged[key] ??= {});
        for (const [flag, setting] of Object.entries(value)) {
          into[flag] = typeof setting === "boolean" ? Boolean(into[flag]) || setting : (into[flag] ?? setting);
        }
      } else merged[key] ??= value;
    }
  }
  return merged;
}

export interface SessionOptions {
  manifest: Manifest;
  journal: Journal;
  log: Logger;
  write(line: string): void;
  now(): Date;
  newId(): string;
  approveCommand(id8: string): string;
  host: string;
  pid: number;
  /** Files of Synartesis's own that a call may name only with a person's approval. */
  protectedPaths?: ProtectedPaths;
  /** The proxy's working directory (a relative path in arguments may mean a file there). */
  cwd: string;
  /**
   * When the session fails before any initialize arrived (a server would not
   * start), how long to wait for one so the client sees why (R-PROXY-14).
   */
  initializeWaitMs: number;
}

/** The text a client gets for a session that cannot go on. */
function failureText(failure: SynartesisError): string {
  if (failure.code === "manifest") return `Synartesis will not run with this policy: ${failure.details.join("; ")}`;
  return [failure.message, ...failure.details].join("\n");
}

export class ProxySession {
  private readonly router: Router;
  private readonly matcher;
  private readonly run: SessionRun;
  private readonly catalog = new ToolCatalog();
  private phase: "waiting" | "initializing" | "ready" | "failed" = "waiting";
  private readonly ready: Promise<void>;
  private markReady!: () => void;
  private clientReady = false;
  private readonly heldForClient: Array<() => void> = [];
  private readonly inflight = new Set<Promise<void>>();
  /** By client id key: the upstream request that carries a client's request. */
  private readonly forwardedCalls = new Map<string, { upstream: Upstream; upstreamId: number }>();
  /** Keys of client requests it cancelled while they were forwarded: they get no reply (MCP cancellation). */
  private readonly cancelled = new Set<string>();
  /** Client requests received and not yet answered, by id key: an id is used by one request at a time. */
  private readonly handling = new Map<string, { id: MessageId; method: string }>();
  private readonly serverRequests = new Map<number, { upstream: Upstream; originalId: MessageId }>();
  private readonly serverRequestIds = new Map<string, number>();
  private nextServerRequestId = 1;
  /** Requests the proxy itself sent the client (a sign-in offered by URL elicitation), by their id. */
  private readonly ownRequests = new Map<number, { resolve(result: unknown): void; reject(error: Error): void }>();
  private clientCapabilities: Record<string, any> = {};
  private readonly turns = new ServerTurns();
  /** What the client set up on servers, put back when one restarts. */
  private logLevel: string | undefined;
  private readonly subscriptions = new Map<Upstream, Set<string>>();
  private finishing = false;
  private finished: Promise<void> | undefined;
  /** An initialize received and not answered yet: a failure is told to it (R-PROXY-14). */
  private pendingInitialize: MessageId | undefined;
  /** Rejects when the session cannot go on (a server would not start, a policy names missing tools, the journal broke). */
  readonly fatal: Promise<never>;
  /** Why the session cannot go on, once it cannot. */
  failure: SynartesisError | undefined;
  private raiseFatal!: () => void;
  private fatalTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly options: SessionOptions) {
    this.router = new Router(
      Object.values(options.manifest.servers).map(
        (spec) =>
          new Upstream(spec, {
            log: options.log,
            onMessage: (upstream, msg, raw) => this.fromUpstream(upstream, msg, raw),
            onClose: (upstream, reason) => this.upstreamClosed(upstream, reason),
            onRestart: (upstream) => this.replaySetup(upstream),
            signIn: signInThroughClient(this.clientChannel(), options.log),
          }),
      ),
    );
    this.matcher = createMatcher(options.manifest);
    this.run = new SessionRun({
      ...options,
      matcher: this.matcher,
      upstream: (server) => this.router.server(server)!,
      reserveServerTurn: (server) => this.turns.reserve(server),
      onJournalError: (error) => this.journalFailed(error),
    });
    this.ready = new Promise((resolve) => (this.markReady = resolve));
    this.fatal = new Promise<never>((_, reject) => {
      this.raiseFatal = () => {
        clearTimeout(this.fatalTimer);
        reject(this.failure);
      };
    });
    this.fatal.catch(() => {});
  }

  /** Start every server now, so one that cannot start is reported as soon as the client says initialize. */
  async open(): Promise<void> {
    const results = await Promise.allSettled(this.router.upstreams.map((u) => u.open()));
    const failed = results.findIndex((r) => r.status === "rejected");
    if (failed !== -1) {
      await this.stopUpstreams();
      this.fail(startFailure(this.router.upstreams[failed]!, (results[failed] as PromiseRejectedResult).reason));
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
      this.options.write(errorLine(this.pendingInitialize, -32603, failureText(failure)));
      this.pendingInitialize = undefined;
    } else if (neverInitialized && this.options.initializeWaitMs > 0) {
      this.fatalTimer = setTimeout(() => this.raiseFatal(), this.options.initializeWaitMs);
      return;
    }
    this.raiseFatal();
  }

  private upstreamClosed(upstream: Upstream, reason: string): void {
    if (reason === "stopped" || this.finishing) return;
    if (this.phase === "waiting" || this.phase === "initializing") this.fail(startFailure(upstream, new UpstreamError(reason, "closed")));
  }

  // ---- from the client ----

  handleLine(line: string): void {
    if (line.trim() === "") return;
    if (nestingDepth(line) > MAX_NESTING) {
      // Parsed, such a message would only overflow a stack further on: refuse it, naming why.
      const idText = rawMember(line, "id");
      const id = idText !== undefined && /^["\d-]/.test(idText) ? { text: idText, key: "" } : null;
      this.options.write(errorLine(id, -32600, `Invalid Request: nesting too deep (more than ${MAX_NESTING} levels of objects and arrays)`));
      return;
    }
    let msg: unknown;
    try {
      msg = JSON.parse(line);
    } catch {
      this.options.write(errorLine(null, -32700, "Parse error: the line is not valid JSON"));
      return;
    }
    if (Array.isArray(msg)) {
      if (msg.length === 0) this.options.write(errorLine(null, -32600, "Invalid Request: empty batch"));
      const raws = rawElements(line);
      msg.forEach((item, index) => this.handleMessage(item, raws[index] ?? JSON.stringify(item)));
      return;
    }
    this.handleMessage(msg, line);
  }

  private handleMessage(msg: any, raw: string): void {
    const id = messageIdOf(msg, raw);
    if (msg === null || typeof msg !== "object" || msg.jsonrpc !== "2.0") {
      this.options.write(errorLine(id ?? null, -32600, 'Invalid Request: expected a JSON-RPC 2.0 object ("jsonrpc": "2.0")'));
      return;
    }
    if (typeof msg.method === "string") {
      if (id) this.track(this.onRequest(msg, raw, id));
      else if (msg.id === undefined) this.onNotification(msg, raw);
      else this.options.write(errorLine(null, -32600, "Invalid Request: id must be a string or a number"));
      return;
    }
    if (id && (msg.result !== undefined || msg.error !== undefined)) {
      this.onClientResponse(msg, raw);
      return;
    }
    this.options.write(errorLine(id ?? null, -32600, "Invalid Request: no method"));
  }

  private track(work: Promise<void>): void {
    this.inflight.add(work);
    void work.finally(() => this.inflight.delete(work));
  }

  private async onRequest(msg: any, raw: string, id: MessageId): Promise<void> {
    if (this.handling.has(id.key)) {
      // Two requests under one id would get each other's answers (and one call another's record).
      this.options.write(errorLine(id, -32600, `Invalid Request: id ${id.text} is already used by a request still in progress`));
      return;
    }
    this.handling.set(id.key, { id, method: msg.method });
    try {
      if (msg.method === "initialize") return await this.initialize(msg, id);
      if (msg.method === "ping") return this.options.write(resultLine(id, {}));
      if (this.finishing) return this.options.write(errorLine(id, -32603, "Synartesis is shutting down; this request was not run"));
      if (this.phase === "waiting") {
        return this.options.write(errorLine(id, -32002, `${msg.method} before initialize: the client must send initialize first`));
      }
      await Promise.race([this.ready, this.fatal]);
      await this.dispatch(msg, raw, id);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.options.log.error("request failed", { method: msg.method, error: message });
      this.options.write(errorLine(id, -32603, `Synartesis: ${message}`));
    } finally {
      this.handling.delete(id.key);
      this.forwardedCalls.delete(id.key);
      this.cancelled.delete(id.key);
    }
  }

  private async dispatch(msg: any, raw: string, id: MessageId): Promise<void> {
    const params = msg.params;
    const single = this.router.single;
    switch (msg.method) {
      case "tools/call":
        return this.toolCall(msg, raw, id);
      case "tools/list":
        return single ? this.forward(single, msg, raw, id) : this.aggregate(id, "tools/list", "tools", "tools", true);
      case "prompts/list":
        return single ? this.forward(single, msg, raw, id) : this.aggregate(id, "prompts/list", "prompts", "prompts", true);
      case "resources/list":
        return single ? this.forward(single, msg, raw, id) : this.aggregate(id, "resources/list", "resources", "resources", false);
      case "resources/templates/list":
        return single ? this.forward(single, msg, raw, id) : this.aggregate(id, "resources/templates/list", "resourceTemplates", "resources", false);
      case "prompts/get": {
        const target = typeof params?.name === "string" ? this.router.resolve(params.name) : undefined;
        if (!target) return this.options.write(errorLine(id, -32602, `unknown prompt ${JSON.stringify(params?.name)}`));
        return this.forward(target.upstream, msg, single ? raw : JSON.stringify({ ...msg, params: { ...params, name: target.name } }), id);
      }
      case "resources/read":
      case "resources/subscribe":
      case "resources/unsubscribe": {
        const owner = typeof params?.uri === "string" ? await this.ownerOf(params.uri) : undefined;
        if (!owner) return this.options.write(errorLine(id, -32602, `no server offers the resource ${JSON.stringify(params?.uri)}`));
        if (msg.method !== "resources/read") this.remember(owner, msg.method, params.uri);
        return this.forward(owner, msg, raw, id);
      }
      case "completion/complete": {
        if (single) return this.forward(single, msg, raw, id);
        const ref = params?.ref;
        if (ref?.type === "ref/prompt" && typeof ref.name === "string") {
          const target = this.router.resolve(ref.name);
          if (!target) return this.options.write(errorLine(id, -32602, `unknown prompt ${JSON.stringify(ref.name)}`));
          return this.forward(target.upstream, msg, JSON.stringify({ ...msg, params: { ...params, ref: { ...ref, name: target.name } } }), id);
        }
        const owner = typeof ref?.uri === "string" ? await this.ownerOf(ref.uri) : undefined;
        if (!owner) return this.options.write(errorLine(id, -32602, "completion/complete: no server owns this reference"));
        return this.forward(owner, msg, raw, id);
      }
      case "logging/setLevel": {
        this.logLevel = params?.level;
        if (single) return this.forward(single, msg, raw, id);
        const targets = this.router.upstreams.filter((u) => u.capabilities?.logging);
        await Promise.allSettled(targets.map(async (u) => (await u.ensureReady(), u.request("logging/setLevel", params))));
        return this.options.write(resultLine(id, {}));
      }
      default:
        if (single) return this.forward(single, msg, raw, id);
        return this.options.write(errorLine(id, -32601, `Method not found: ${msg.method}`));
    }
  }

  private remember(upstream: Upstream, method: string, uri: string): void {
    const subscribed = this.subscriptions.get(upstream) ?? new Set<string>();
    if (method === "resources/subscribe") subscribed.add(uri);
    else subscribed.delete(uri);
    this.subscriptions.set(upstream, subscribed);
  }

  /** A restarted server gets the client's logging level and resource subscriptions again. */
  private async replaySetup(upstream: Upstream): Promise<void> {
    this.catalog.forget(upstream);
    const requests: Array<[string, unknown]> = [];
    if (this.logLevel !== undefined && upstream.capabilities?.logging) requests.push(["logging/setLevel", { level: this.logLevel }]);
    for (const uri of this.subscriptions.get(upstream) ?? []) requests.push(["resources/subscribe", { uri }]);
    for (const [method, params] of requests) {
      const reply = await upstream.request(method, params).catch((error: Error) => ({ msg: { error: { message: error.message } } }));
      if ("error" in reply.msg && reply.msg.error) {
        this.options.log.warn("could not restore the client's setup on a restarted server", { server: upstream.name, method, error: reply.msg.error.message });
      }
    }
  }

  private async forward(upstream: Upstream, msg: any, line: string, id: MessageId): Promise<void> {
    try {
      const answer = await upstream.deliver(line, msg.method, {
        onSent: (upstreamId) => this.forwardedCalls.set(id.key, { upstream, upstreamId }),
        progressToken: msg.params?._meta?.progressToken,
        stillWanted: () => !this.cancelled.has(id.key),
      });
      if (!this.cancelled.has(id.key)) this.options.write(withIdText(answer.raw, id.text));
    } catch (error) {
      if (!(error instanceof UpstreamError)) throw error;
      if (!this.cancelled.has(id.key)) this.options.write(errorLine(id, -32603, error.message));
    }
  }

  /** A list method over several servers: every page of every server, in one answer. */
  private async aggregate(id: MessageId, method: string, field: string, capability: string, rename: boolean): Promise<void> {
    const items: unknown[] = [];
    for (const upstream of this.router.upstreams) {
      if (!upstream.capabilities?.[capability]) continue;
      try {
        await upstream.ensureReady();
        const listed = await upstream.listAll(method, field);
        if (method === "resources/list") this.router.rememberResources(upstream, listed);
        if (method === "resources/templates/list") this.router.rememberTemplates(upstream, listed);
        items.push(...(rename ? listed.map((item) => ({ ...item, name: this.router.exposed(upstream, item.name) })) : listed));
      } catch (error) {
        this.options.log.warn(`${method} failed on one server; its entries are missing`, { server: upstream.name, error: (error as Error).message });
      }
    }
    this.options.write(resultLine(id, { [field]: items }));
  }

  private async ownerOf(uri: string): Promise<Upstream | undefined> {
    const known = this.router.ownerOf(uri);
    if (known) return known;
    // The client may read a URI it learnt elsewhere: refresh what each server offers.
    for (const upstream of this.router.upstreams) {
      if (!upstream.capabilities?.resources) continue;
      try {
        await upstream.ensureReady();
        this.router.rememberResources(upstream, await upstream.listAll("resources/list", "resources"));
        this.router.rememberTemplates(upstream, await upstream.listAll("resources/templates/list", "resourceTemplates"));
      } catch {}
    }
    return this.router.ownerOf(uri);
  }

  private async toolCall(msg: any, raw: string, id: MessageId): Promise<void> {
    const params = msg.params;
    if (params === null || typeof params !== "object" || typeof params.name !== "string" || params.name === "") {
      return this.options.write(errorLine(id, -32602, "Invalid params: tools/call needs params.name (the tool's name, a string)"));
    }
    const args = params.arguments;
    if (args !== undefined && (args === null || typeof args !== "object" || Array.isArray(args))) {
      return this.options.write(errorLine(id, -32602, "Invalid params: tools/call params.arguments must be an object"));
    }
    // What a person approves, the journal records and the server receives must be the same arguments.
    const ambiguity = firstAmbiguity(rawMember(raw, "params") ?? "{}", "params", (path) => path.startsWith("params.arguments"));
    if (ambiguity) return this.options.write(errorLine(id, -32602, `Invalid params: ${ambiguity}; Synartesis did not run this call`));
    const target = this.router.resolve(params.name);
    if (!target || !(await this.catalog.offers(target.upstream, target.name))) {
      // As a server answers it (R-PROXY-12): nobody is asked to approve a call that cannot happen.
      const hint = target ? "" : " (tool names here are SERVER__TOOL)";
      return this.options.write(errorLine(id, -32602, `Unknown tool: ${params.name}${hint}`));
    }
    const line = this.router.single ? raw : JSON.stringify({ ...msg, params: { ...params, name: target.name } });
    let calls: CallContext;
    try {
      calls = await this.run.calls();
    } catch (error) {
      if (!(error instanceof JournalError)) throw error;
      const call = { server: target.upstream.name, tool: target.name, clientId: id.text };
      return this.options.write(unrecordedLine({ log: this.options.log, onJournalError: (e) => this.journalFailed(e) }, call, error));
    }
    const ctx: CallContext = {
      ...calls,
      onForwarded: (upstream, upstreamId) => this.forwardedCalls.set(id.key, { upstream, upstreamId }),
    };
    const { name: _name, arguments: _arguments, ...otherParams } = params;
    const answer = await handleToolCall(ctx, {
      clientId: id.text,
      server: target.upstream.name,
      tool: target.name,
      args: args ?? {},
      line,
      otherParams,
      progressToken: params._meta?.progressToken,
      isCancelled: () => this.cancelled.has(id.key),
    });
    if (!this.cancelled.has(id.key)) this.options.write(answer);
  }

  private onNotification(msg: any, raw: string): void {
    switch (msg.method) {
      case "notifications/initialized":
        this.clientReady = true;
        this.releaseHeld();
        return;
      case "notifications/cancelled": {
        const requestIdText = isId(msg.params?.requestId) ? rawMember(rawMember(raw, "params") ?? "", "requestId") : undefined;
        const key = requestIdText === undefined ? undefined : idKey(requestIdText);
        if (key === undefined || !this.handling.has(key)) return;
        // Not forwarded yet (waiting for the lock or a pre-read): the call pipeline sees the flag and stops.
        this.cancelled.add(key);
        const forwarded = this.forwardedCalls.get(key);
        if (forwarded) forwarded.upstream.cancel(forwarded.upstreamId, msg.params?.reason);
        return;
      }
      default:
        for (const upstream of this.router.upstreams) if (upstream.alive) upstream.sendRaw(raw);
    }
  }

  /** The proxy's own way to ask the client something (the same id space as forwarded server requests). */
  private clientChannel(): ClientChannel {
    return {
      canShowUrl: () => this.phase === "ready" && !this.finishing && Boolean(this.clientCapabilities.elicitation?.url),
      ask: (method, params) =>
        new Promise((resolve, reject) => {
          const id = this.nextServerRequestId++;
          this.ownRequests.set(id, { resolve, reject });
          this.options.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
        }),
      notify: (method, params) => this.options.write(JSON.stringify({ jsonrpc: "2.0", method, params })),
    };
  }

  private onClientResponse(msg: any, raw: string): void {
    const own = typeof msg.id === "number" ? this.ownRequests.get(msg.id) : undefined;
    if (own) {
      this.ownRequests.delete(msg.id);
      if (msg.error) own.reject(new Error(`the client answered with an error: ${msg.error.message ?? "unknown"}`));
      else own.resolve(msg.result);
      return;
    }
    const request = typeof msg.id === "number" ? this.serverRequests.get(msg.id) : undefined;
    if (!request) {
      this.options.log.debug("response to no request of ours; ignored", { id: msg.id });
      return;
    }
    this.serverRequests.delete(msg.id);
    this.serverRequestIds.delete(serverRequestKey(request.upstream, request.originalId.key));
    request.upstream.sendRaw(withIdText(raw, request.originalId.text));
  }

  // ---- from the servers ----

  /** Nothing reaches the client before its initialize result, nor before it said it is initialized. */
  private releaseHeld(): void {
    if (this.clientReady && this.phase === "ready") for (const deliver of this.heldForClient.splice(0)) deliver();
  }

  private fromUpstream(upstream: Upstream, msg: any, raw: string): void {
    if (typeof msg?.method !== "string") return;
    if (msg.method === "notifications/tools/list_changed") this.catalog.forget(upstream);
    const id = messageIdOf(msg, raw);
    if (this.finishing && id) {
      // The client is gone (stdin closed) or we are stopping: it will never answer.
      upstream.sendRaw(errorLine(id, -32603, "Synartesis: the client disconnected; nobody can answer this request"));
      return;
    }
    if (!this.clientReady || this.phase !== "ready") {
      this.heldForClient.push(() => this.fromUpstream(upstream, msg, raw));
      return;
    }
    if (id) {
      const proxyId = this.nextServerRequestId++;
      this.serverRequests.set(proxyId, { upstream, originalId: id });
      this.serverRequestIds.set(serverRequestKey(upstream, id.key), proxyId);
      this.options.write(withId(raw, proxyId));
      return;
    }
    if (msg.method === "notifications/cancelled") {
      const requestIdText = rawMember(rawMember(raw, "params") ?? "", "requestId");
      if (requestIdText === undefined) return;
      const key = serverRequestKey(upstream, idKey(requestIdText));
      const proxyId = this.serverRequestIds.get(key);
      if (proxyId === undefined) return;
      this.serverRequestIds.delete(key);
      this.serverRequests.delete(proxyId);
      this.options.write(JSON.stringify({ ...msg, params: { ...msg.params, requestId: proxyId } }));
      return;
    }
    this.options.write(raw);
  }

  // ---- initialize ----

  private async initialize(msg: any, id: MessageId): Promise<void> {
    if (this.failure) {
      this.options.write(errorLine(id, -32603, failureText(this.failure)));
      return this.raiseFatal();
    }
    if (this.phase !== "waiting") return this.options.write(errorLine(id, -32600, "initialize was already received in this session"));
    this.phase = "initializing";
    this.pendingInitialize = id;
    const params = msg.params ?? {};
    this.clientCapabilities = params.capabilities && typeof params.capabilities === "object" ? params.capabilities : {};
    try {
      await this.startAndVerify(params);
    } catch (error) {
      this.fail(error instanceof SynartesisError ? error : new SynartesisError("server", `the servers could not be set up: ${(error as Error).message}`));
      return;
    }
    // A server that died meanwhile already failed the session, and told this initialize.
    if (this.failure) return;
    this.pendingInitialize = undefined;

    if (typeof params.clientInfo?.name === "string" && params.clientInfo.name) this.run.label = params.clientInfo.name;
    this.options.log.debug("session started", { client: this.run.label, journal: this.options.journal.path });
    this.phase = "ready";
    this.markReady();
    this.options.write(resultLine(id, this.initializeResult()));
    this.releaseHeld();
  }

  /** Start every server with the client's parameters and prove the policy's tools exist (R-MAN-7). */
  private async startAndVerify(params: unknown): Promise<void> {
    const started = await Promise.allSettled(this.router.upstreams.map((u) => u.start(params)));
    const failed = started.findIndex((r) => r.status === "rejected");
    if (failed !== -1) throw startFailure(this.router.upstreams[failed]!, (started[failed] as PromiseRejectedResult).reason);
    const toolsByServer = new Map<string, Set<string>>();
    for (const upstream of this.router.upstreams) {
      let tools: Array<{ name: string }> = [];
      try {
        if (upstream.initResult?.capabilities?.tools) tools = await upstream.listAll("tools/list", "tools");
      } catch (error) {
        throw new SynartesisError("server", `server "${upstream.name}" could not list its tools: ${(error as Error).message}`);
      }
      toolsByServer.set(upstream.name, new Set(tools.map((t) => t.name)));
      this.catalog.remember(upstream, toolsByServer.get(upstream.name)!);
    }
    for (const rule of unusedRules(this.options.manifest, toolsByServer)) {
      this.options.log.warn("a rule matches none of its server's tools (a typo?)", { match: rule.match, line: rule.line });
    }
    const problems = missingTools(this.options.manifest, toolsByServer);
    if (problems.length) throw new SynartesisError("manifest", "the manifest names tools its servers do not have", { details: problems });
  }

  private initializeResult(): Record<string, unknown> {
    const upstreams = this.router.upstreams;
    const single = this.router.single;
    const instructions = [INSTRUCTIONS_PREAMBLE];
    for (const upstream of upstreams) {
      const own = upstream.initResult?.instructions;
      if (typeof own === "string" && own.trim()) instructions.push(single ? own : `Server "${upstream.name}":\n${own}`);
    }
    if (single) return { ...single.initResult, instructions: instructions.join("\n\n") };
    const versions = upstreams.map((u) => String(u.initResult?.protocolVersion ?? "")).filter(Boolean).sort();
    return {
      protocolVersion: versions[0],
      capabilities: mergeCapabilities(upstreams.map((u) => u.initResult?.capabilities ?? {})),
      serverInfo: { name: "synartesis", version: VERSION },
      instructions: instructions.join("\n\n"),
    };
  }

  /** A journal that cannot be used at all ends the session (exit 2); one that is full may recover. */
  private journalFailed(error: JournalError): void {
    if (error.kind === "broken") this.fail(error);
  }

  // ---- the end ----

  /**
   * Answer every request already received (within the drain time, R-PROXY-13),
   * stop the servers, close the run. `forced` resolves on a second signal.
   */
  finish(options: { drainMs: number; forced: Promise<void> }): Promise<void> {
    this.finished ??= this.shutDown(options.drainMs, options.forced);
    return this.finished;
  }

  private async shutDown(drainMs: number, forced: Promise<void>): Promise<void> {
    // A client that leaves at once must still learn that a server could not start (R-PROXY-10).
    if (this.phase === "waiting") await Promise.race([this.fatal.catch(() => {}), Bun.sleep(START_GRACE_MS)]);
    this.finishing = true;
    // Requests the servers made of the client can no longer be answered: refuse them, so the
    // calls waiting on them finish now instead of at their timeout.
    for (const deliver of this.heldForClient.splice(0)) deliver();
    for (const request of this.serverRequests.values()) {
      request.upstream.sendRaw(errorLine(request.originalId, -32603, "Synartesis: the client disconnected before answering"));
    }
    this.serverRequests.clear();
    this.serverRequestIds.clear();
    for (const own of this.ownRequests.values()) own.reject(new Error("the client disconnected before answering"));
    this.ownRequests.clear();
    const end = await drain(
      {
        settled: async () => {
          while (this.inflight.size) await Promise.allSettled([...this.inflight]);
        },
        abandon: (reason) => {
          this.options.log.warn("calls still in flight are given up; their outcome is unknown", { calls: this.handling.size, reason });
          for (const upstream of this.router.upstreams) upstream.abandon(reason);
        },
        answerRest: (reason) => this.answerUnanswered(reason),
      },
      drainMs,
      forced,
    );
    await this.stopUpstreams({ quick: end === "second signal" });
    await this.run.close();
  }

  /** The last word for requests nothing else will answer now. */
  private answerUnanswered(reason: string): void {
    for (const [key, { id, method }] of this.handling) {
      if (this.cancelled.has(key)) continue;
      this.cancelled.add(key);
      this.options.write(
        method === "tools/call"
          ? toolErrorLine(id.text, `Synartesis could not finish this call: ${reason}. If it reached the server, its outcome is unknown (recorded as pending); check the state before trying again.`)
          : errorLine(id, -32603, `Synartesis: ${reason}`),
      );
    }
  }

  private async stopUpstreams(options: { quick?: boolean } = {}): Promise<void> {
    this.finishing = true;
    await Promise.all(this.router.upstreams.map((u) => u.stop(options)));
  }
}
