// A client's requests besides initialize and ping: tools/call goes through
// the call pipeline (calls.ts); list methods over several servers are answered
// from all of them (names become SERVER__NAME); everything else is routed to
// the server it belongs to and forwarded untouched (R-PROXY-1, R-PROXY-2).
import { JournalError } from "../../journal/journal.ts";
import { errorCodeOf, isRecord, paramsOf, type RequestFrame } from "../../jsonrpc/frames.ts";
import { firstAmbiguity } from "../../jsonrpc/json-check.ts";
import { ErrorCode, errorLine, resultLine, type Code } from "../../jsonrpc/messages.ts";
import { rawMember, withIdText } from "../../jsonrpc/raw-json.ts";
import { LISTEN } from "../../jsonrpc/subscriptions.ts";
import type { Logger } from "../../log.ts";
import { UpstreamError, type Upstream } from "../../servers/upstream.ts";
import { handleToolCall, unrecordedLine, type CallContext } from "../calls/calls.ts";
import type { ClientRequest } from "./client-request.ts";
import { exchange } from "../calls/exchange.ts";
import type { ServerPool } from "../pool/pool.ts";
import type { ServerTurn } from "../pool/server-turns.ts";
import type { SessionRun } from "./session-run.ts";

export interface MethodContext {
  pool: ServerPool;
  log: Logger;
  run: SessionRun;
  journalFailed(error: JournalError): void;
  /** Send the answer to a request (none when the client cancelled it). */
  answer(request: ClientRequest, line: string): void;
  /** A subscriptions/listen: served until the subscription ends. */
  listen(request: ClientRequest, params: Record<string, unknown>): Promise<void>;
}

/**
 * A tools/call takes its place in its server's queue as it arrives, before
 * anything is awaited: calls to one server then run in the order they came.
 */
export function placeInQueue(pool: ServerPool, frame: RequestFrame): ServerTurn | undefined {
  const name = frame.msg.method === "tools/call" ? paramsOf(frame.msg).name : undefined;
  const target = typeof name === "string" ? pool.router.resolve(name) : undefined;
  return target && pool.reserveTurn(target.upstream.name);
}

/** A list method with one server is forwarded; with several, answered from all of them. */
const LISTS = new Map([
  ["tools/list", { field: "tools", capability: "tools", rename: true }],
  ["prompts/list", { field: "prompts", capability: "prompts", rename: true }],
  ["resources/list", { field: "resources", capability: "resources", rename: false }],
  ["resources/templates/list", { field: "resourceTemplates", capability: "resources", rename: false }],
]);

/** The methods the proxy answers by its own rules, whatever its servers (every other one goes untouched to a single server). */
const OWN_METHODS = new Set([
  "initialize",
  "ping",
  "server/discover",
  "tools/call",
  ...LISTS.keys(),
  "prompts/get",
  "resources/read",
  "resources/subscribe",
  "resources/unsubscribe",
  "completion/complete",
  "tasks/get",
  "tasks/update",
  "tasks/cancel",
  "logging/setLevel",
  LISTEN,
]);

/**
 * Why a method is not found here (JSON-RPC -32601), decided before anything
 * runs: a method that is not one of the proxy's own is sent on to a single
 * server, and with several no server is asked. Undefined: the method is
 * served (or relayed).
 */
export function methodNotFound(method: string, single: boolean): string | undefined {
  if (OWN_METHODS.has(method) || single) return undefined;
  return `Method not found: ${method}`;
}

export async function dispatch(ctx: MethodContext, frame: RequestFrame, request: ClientRequest): Promise<void> {
  const { msg, raw, id } = frame;
  const params = paramsOf(msg);
  const { pool } = ctx;
  const single = pool.router.single;
  const refuse = (code: ErrorCode, message: string) => ctx.answer(request, errorLine(id, code, message));
  const renamed = (changes: Record<string, unknown>) => JSON.stringify({ ...msg, params: { ...params, ...changes } });
  if (msg.method === "tools/call") return toolCall(ctx, frame, request);
  const list = LISTS.get(msg.method);
  if (list && !single) return ctx.answer(request, resultLine(id, { [list.field]: await pool.aggregate(msg.method, list.field, list.capability, list.rename) }));
  switch (msg.method) {
    case "prompts/get": {
      const target = typeof params.name === "string" ? pool.router.resolve(params.name) : undefined;
      if (!target) return refuse(ErrorCode.InvalidParams, `unknown prompt ${JSON.stringify(params.name)}`);
      return forward(ctx, target.upstream, frame, single ? raw : renamed({ name: target.name }), request);
    }
    case "resources/read":
    case "resources/subscribe":
    case "resources/unsubscribe": {
      const uri = typeof params.uri === "string" ? params.uri : undefined;
      const owner = uri === undefined ? undefined : await pool.ownerOf(uri);
      if (uri === undefined || !owner) return refuse(ErrorCode.InvalidParams, `no server offers the resource ${JSON.stringify(params.uri)}`);
      if (msg.method === "resources/read") return forward(ctx, owner, frame, raw, request);
      return resourceSubscription(ctx, owner, frame, uri, request);
    }
    case "completion/complete": {
      if (single) return forward(ctx, single, frame, raw, request);
      const ref = isRecord(params.ref) ? params.ref : {};
      if (ref.type === "ref/prompt" && typeof ref.name === "string") {
        const target = pool.router.resolve(ref.name);
        if (!target) return refuse(ErrorCode.InvalidParams, `unknown prompt ${JSON.stringify(ref.name)}`);
        return forward(ctx, target.upstream, frame, renamed({ ref: { ...ref, name: target.name } }), request);
      }
      const owner = typeof ref.uri === "string" ? await pool.ownerOf(ref.uri) : undefined;
      if (!owner) return refuse(ErrorCode.InvalidParams, "completion/complete: no server owns this reference");
      return forward(ctx, owner, frame, raw, request);
    }
    case LISTEN:
      return ctx.listen(request, params);
    case "tasks/get":
    case "tasks/update":
    case "tasks/cancel": {
      const owner = single ?? pool.taskOwner(params.taskId);
      if (!owner) return refuse(ErrorCode.InvalidParams, `no server runs the task ${JSON.stringify(params.taskId)}`);
      return forward(ctx, owner, frame, raw, request);
    }
    case "logging/setLevel": {
      pool.setLogLevel(params.level);
      if (single) return forward(ctx, single, frame, raw, request);
      const targets = pool.upstreams.filter((upstream) => upstream.capabilities?.logging && upstream.era !== "modern");
      await Promise.allSettled(targets.map(async (upstream) => (await upstream.ensureReady(), upstream.request("logging/setLevel", params))));
      return ctx.answer(request, resultLine(id, {}));
    }
    default:
      if (single) return forward(ctx, single, frame, raw, request);
      return refuse(ErrorCode.MethodNotFound, methodNotFound(msg.method, false) ?? `Method not found: ${msg.method}`);
  }
}

/**
 * A 2025-era client's resources/subscribe or unsubscribe. The pool keeps who
 * follows what (2026-era clients' subscriptions may follow the same
 * resource): a 2025-era server gets the client's request as it came, unless
 * others still follow the resource it unsubscribes from (answered here); a
 * 2026-era server, which has no such request, follows it on Synartesis's own
 * subscription there.
 */
async function resourceSubscription(ctx: MethodContext, owner: Upstream, frame: RequestFrame, uri: string, request: ClientRequest): Promise<void> {
  const book = ctx.pool.subscriptions;
  const subscribe = frame.msg.method === "resources/subscribe";
  const holder = request.session;
  const answer = (line = resultLine(frame.id, {})) => ctx.answer(request, line);
  if (owner.era === "modern") {
    const followed = subscribe && (await book.hold(holder, new Map([[uri, owner]]))).has(uri);
    if (!followed) book.drop(holder, uri, owner);
    if (subscribe && !followed)
      return answer(errorLine(frame.id, ErrorCode.InvalidParams, `server "${owner.name}" offers no updates of the resource ${JSON.stringify(uri)}`));
    return answer();
  }
  if (!subscribe && book.drop(holder, uri, owner)) return answer();
  if (subscribe) book.note(holder, uri, owner);
  let answered: string | undefined;
  await forward({ ...ctx, answer: (to, line) => ctx.answer(to, (answered = line)) }, owner, frame, frame.raw, request);
  const ok = answered !== undefined && errorCodeOf(answered) === undefined;
  if (subscribe && !ok) book.drop(holder, uri, owner);
  if (ok) book.confirmed(owner, uri, subscribe);
}

/**
 * Send a request on to its server (started again if it died) and its answer
 * back, with the client's id; a 2026-era server's request for input is asked
 * of the client on the way (prompts/get and resources/read may need some).
 */
async function forward(ctx: MethodContext, upstream: Upstream, frame: RequestFrame, line: string, request: ClientRequest): Promise<void> {
  try {
    const exchanged = await exchange(upstream, line, frame.msg.method, { origin: request, progressToken: frame.msg.params?._meta?.progressToken });
    if ("stopped" in exchanged) return ctx.answer(request, errorLine(frame.id, ErrorCode.InternalError, `Synartesis: ${exchanged.stopped}`));
    ctx.answer(request, withIdText(exchanged.reply.raw, frame.id.text));
  } catch (error) {
    if (!(error instanceof UpstreamError)) throw error;
    ctx.answer(request, errorLine(frame.id, ErrorCode.InternalError, error.message));
  }
}

/** Check what the client asked for, find the tool's server, and run the call pipeline with the session's run. */
async function toolCall(ctx: MethodContext, frame: RequestFrame, request: ClientRequest): Promise<void> {
  const { msg, raw, id } = frame;
  const params = paramsOf(msg);
  const refuse = (message: string) => ctx.answer(request, errorLine(id, ErrorCode.InvalidParams, message));
  if (typeof params.name !== "string" || params.name === "") return refuse("Invalid params: tools/call needs params.name (the tool's name, a string)");
  const args = params.arguments;
  if (args !== undefined && !isRecord(args)) return refuse("Invalid params: tools/call params.arguments must be an object");
  // What a person approves, the journal records and the server receives must be the same arguments.
  const ambiguity = firstAmbiguity(rawMember(raw, "params") ?? "{}", "params", (path) => path.startsWith("params.arguments"));
  if (ambiguity) return refuse(`Invalid params: ${ambiguity}; Synartesis did not run this call`);
  const { router, catalog } = ctx.pool;
  const target = router.resolve(params.name);
  if (!target || !(await catalog.offers(target.upstream, target.name))) {
    // As a server answers it (R-PROXY-12): nobody is asked to approve a call that cannot happen.
    const hint = target ? "" : " (tool names here are SERVER__TOOL)";
    return refuse(`Unknown tool: ${params.name}${hint}`);
  }
  // Over HTTP in the 2026 era, the request's headers must agree with what runs (nothing has been recorded yet).
  const unvouched = request.vouch(catalog.inputSchema(target.upstream, target.name), args ?? {});
  if (unvouched) return ctx.answer(request, errorLine(id, unvouched.code as Code, unvouched.message));
  const line = router.single ? raw : JSON.stringify({ ...msg, params: { ...params, name: target.name } });
  let calls: CallContext;
  try {
    calls = await ctx.run.calls();
  } catch (error) {
    if (!(error instanceof JournalError)) throw error;
    const call = { server: target.upstream.name, tool: target.name, clientId: id.text };
    return ctx.answer(request, unrecordedLine({ log: ctx.log, onJournalError: ctx.journalFailed }, call, error));
  }
  const { name: _name, arguments: _arguments, ...otherParams } = params;
  const answer = await handleToolCall(calls, {
    clientId: id.text,
    server: target.upstream.name,
    tool: target.name,
    args: args ?? {},
    line,
    otherParams,
    progressToken: msg.params?._meta?.progressToken,
    origin: request,
    answerNow: (line) => ctx.answer(request, line),
    turn: request.turn ?? ctx.pool.reserveTurn(target.upstream.name),
    arrival: request.arrival,
  });
  ctx.answer(request, answer);
}
