// The review page's JSON API: a thin layer over the journal, the undo code
// and the CLI's renderers. Reads answer views (views.ts); approve and deny
// are journal.decide as for the CLI; undo — dry run or real — is undoRun,
// streamed step by step as NDJSON.
import { hostname } from "node:os";
import { isSynartesisError, SynartesisError, type ErrorCode } from "../errors.ts";
import { shownLocation, type Journal } from "../journal/journal.ts";
import { shortId, type Run } from "../journal/types.ts";
import { requireIntact } from "../journal/integrity.ts";
import { decisionCheck } from "../workspace/deciders.ts";
import { manifestForRun } from "../workspace/discover.ts";
import { loadManifest } from "../manifest/load.ts";
import type { Logger } from "../log.ts";
import { processAlive } from "../processes.ts";
import { decisionText, settledText } from "../render/runs.ts";
import { plain } from "../render/style.ts";
import { continueCommand, keptText, nothingToUndo, replannedText, settleLines, undoHeading, undoSummary } from "../render/undo.ts";
import type { DecisionCommand } from "../self.ts";
import { openUndo } from "../undo/begin.ts";
import { keepCalls } from "../undo/keep.ts";
import { undoRun } from "../undo/execute.ts";
import { parseRunQuery, type RunList } from "./run-list.ts";
import type { JournalSource } from "./source.ts";
import { gateView, runRow, runView, stepJson, type Envelope, type GatesView, type RunListView, type UndoEvent } from "./views.ts";

export interface ApiContext {
  source: JournalSource;
  /** --manifest, resolved: what undo uses instead of the manifest a run was recorded with. */
  manifest?: string;
  cwd: string;
  now(): Date;
  decisionCommand: DecisionCommand;
  /** The default decider: the user running the page. */
  decider: string;
  /** Undos in progress (shutdown waits for them). */
  undos: Set<Promise<void>>;
  /** Lift the server's idle timeout for a long response. */
  keepOpen(request: Request): void;
  /** The run list: summaries kept while the journal does not move, and what each run's calls are about, for search. */
  runList: RunList;
}

const MAX_BODY = 64 * 1024;
const MAX_NAME = 100;
const MAX_REASON = 2000;

/** The one place error codes become HTTP statuses. */
const HTTP_STATUS: Record<ErrorCode, number> = {
  usage: 400,
  manifest: 400,
  config: 500,
  unknown_id: 404,
  no_journal: 404,
  journal: 500,
  server: 502,
  refused: 409,
};

export function jsonResponse(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json; charset=utf-8" } });
}

export function errorResponse(error: unknown): Response {
  if (isSynartesisError(error)) {
    return jsonResponse(HTTP_STATUS[error.code], { error: error.message, ...(error.hint ? { hint: error.hint } : {}), details: error.details });
  }
  return jsonResponse(500, { error: `internal error: ${(error as Error)?.message ?? String(error)}` });
}

const ROUTES: Array<{ method: string; pattern: RegExp; handle: (ctx: ApiContext, request: Request, id: string) => Response | Promise<Response> }> = [
  { method: "GET", pattern: /^\/api\/runs$/, handle: (ctx, request) => envelope(ctx, (journal) => listRuns(journal, request, ctx)) },
  { method: "GET", pattern: /^\/api\/runs\/([^/]+)$/, handle: (ctx, _request, id) => envelope(ctx, (journal) => showRun(journal, id, ctx)) },
  { method: "GET", pattern: /^\/api\/gates$/, handle: (ctx) => envelope(ctx, (journal) => listGates(journal, ctx)) },
  { method: "POST", pattern: /^\/api\/actions\/([^/]+)\/approve$/, handle: (ctx, request, id) => decide(ctx, request, id, "approve") },
  { method: "POST", pattern: /^\/api\/actions\/([^/]+)\/deny$/, handle: (ctx, request, id) => decide(ctx, request, id, "deny") },
  { method: "POST", pattern: /^\/api\/runs\/([^/]+)\/undo$/, handle: (ctx, request, id) => undo(ctx, request, id) },
  { method: "POST", pattern: /^\/api\/runs\/([^/]+)\/keep$/, handle: (ctx, request, id) => keep(ctx, request, id) },
];

/** POST /api/runs/ID/keep {seq, reason?}: R-PEOPLE-1 from the page, as `undo --keep SEQ`: the call's effect stays, recorded as the page's account's. */
async function keep(ctx: ApiContext, request: Request, id: string): Promise<Response> {
  const body = await readBody(request);
  const seq = body.seq;
  if (typeof seq !== "number" || !Number.isSafeInteger(seq) || seq < 1)
    throw new SynartesisError("usage", `"seq" must be a call's number (got ${JSON.stringify(seq)})`);
  const reason = textField(body, "reason", MAX_REASON, false);
  const journal = await journalOf(ctx);
  const run = await findRun(journal, id);
  const { kept, already } = await keepCalls(journal, run, await journal.actionsOfRun(run.id), [seq], {
    by: ctx.decider,
    at: ctx.now().toISOString(),
    ...(reason ? { reason } : {}),
  });
  return jsonResponse(200, { message: [...kept.map((a) => keptText(a, false)), ...already.map((a) => keptText(a, true))].join("\n") });
}

export async function handleApi(ctx: ApiContext, request: Request, path: string): Promise<Response> {
  try {
    for (const route of ROUTES) {
      const match = route.pattern.exec(path);
      if (!match) continue;
      if (request.method !== route.method) return jsonResponse(405, { error: `${path} takes ${route.method}, not ${request.method}` });
      let id = "";
      try {
        id = decodeURIComponent(match[1] ?? "");
      } catch {
        throw new SynartesisError("usage", `the id in ${path} is not valid`);
      }
      return await route.handle(ctx, request, id);
    }
    return jsonResponse(404, { error: `no such API path: ${path}` });
  } catch (error) {
    return errorResponse(error);
  }
}

async function journalOf(ctx: ApiContext): Promise<Journal> {
  const journal = await ctx.source.get();
  if (!journal) throw new SynartesisError("no_journal", `there is no journal at ${ctx.source.path} yet`);
  return journal;
}

async function envelope<T>(ctx: ApiContext, view: (journal: Journal) => Promise<T>): Promise<Response> {
  const journal = await ctx.source.get();
  const body: Envelope<T> = journal
    ? { journal: shownLocation(ctx.source.path), waiting: (await journal.waiting()).length, view: await view(journal) }
    : { journal: shownLocation(ctx.source.path), missing: true, waiting: 0 };
  return jsonResponse(200, body);
}

const gone = (run: Run) => run.status === "active" && processAlive(run.host, run.pid) === false;

/** GET /api/runs?q=&status=&held=1&unknown=1&page=: a page of runs, newest first (run-list.ts). */
async function listRuns(journal: Journal, request: Request, ctx: ApiContext): Promise<RunListView> {
  const { rows, ...page } = await ctx.runList.page(journal, parseRunQuery(new URL(request.url).searchParams));
  return { ...page, runs: rows.map(({ run, match }) => ({ ...runRow(run, gone(run)), ...(match && { match }) })) };
}

async function findRun(journal: Journal, id: string): Promise<Run> {
  const run = await journal.getRun(id);
  if (!run) throw new SynartesisError("unknown_id", `no run ${id} in this journal`);
  return run;
}

async function showRun(journal: Journal, id: string, ctx: ApiContext) {
  const run = await findRun(journal, id);
  return runView(run, await journal.actionsOfRun(run.id), gone(run), ctx.decisionCommand);
}

async function listGates(journal: Journal, ctx: ApiContext): Promise<GatesView> {
  const runs = new Map<string, Run | undefined>();
  const gates = [];
  for (const action of await journal.waiting()) {
    if (!runs.has(action.runId)) runs.set(action.runId, await journal.getRun(action.runId));
    gates.push(gateView(action, runs.get(action.runId), ctx.decisionCommand));
  }
  return { gates, decider: ctx.decider };
}

export async function readBody(request: Request): Promise<Record<string, unknown>> {
  if (!(request.headers.get("content-type") ?? "").toLowerCase().startsWith("application/json")) {
    throw new SynartesisError("usage", "the request body must be JSON (Content-Type: application/json)");
  }
  const text = await request.text();
  if (text.length > MAX_BODY) throw new SynartesisError("usage", `the request body is larger than ${MAX_BODY} bytes`);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new SynartesisError("usage", "the request body is not valid JSON");
  }
  if (body === null || typeof body !== "object" || Array.isArray(body)) throw new SynartesisError("usage", "the request body must be a JSON object");
  return body as Record<string, unknown>;
}

/** A person's text from the page: a string, one line, within `max` characters. */
function textField(body: Record<string, unknown>, key: string, max: number, required: boolean): string | undefined {
  const value = body[key];
  if (value === undefined || value === null || (typeof value === "string" && value.trim() === "" && !required)) {
    if (required) throw new SynartesisError("usage", `"${key}" is required`);
    return undefined;
  }
  if (typeof value !== "string") throw new SynartesisError("usage", `"${key}" must be text`);
  const text = value.trim();
  if (text === "") throw new SynartesisError("usage", `"${key}" must not be empty`);
  if ([...text].length > max) throw new SynartesisError("usage", `"${key}" is longer than ${max} characters`);
  if (/[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/.test(text)) throw new SynartesisError("usage", `"${key}" contains control characters`);
  return text;
}

async function decide(ctx: ApiContext, request: Request, id: string, verb: "approve" | "deny"): Promise<Response> {
  const body = await readBody(request);
  // The account running the page decides (R-PEOPLE-2): a name in the request is not taken.
  const by = ctx.decider;
  const reason = verb === "deny" ? textField(body, "reason", MAX_REASON, false) : undefined;
  const journal = await journalOf(ctx);
  const action = await journal.getAction(id);
  if (!action) throw new SynartesisError("unknown_id", `no action ${id} in this journal`);
  // A record changed outside Synartesis is not decided on from the page (the CLI's --force is the way, recorded).
  await requireIntact(journal, action.runId, { force: false, by, doing: verb });
  const allowed = await decisionCheck(journal, ctx.manifest)(action, by);
  if ("refused" in allowed) return jsonResponse(403, { error: `${verb === "approve" ? "Not approved" : "Not denied"}: ${allowed.refused}.` });
  const outcome = await journal.decide(id, { status: verb === "approve" ? "approved" : "denied", by, at: ctx.now().toISOString(), reason, rule: allowed.rule });
  if ("settled" in outcome) return jsonResponse(409, { error: settledText((await journal.getAction(id)) ?? action) });
  return jsonResponse(200, { message: decisionText(verb, action, by, reason) });
}

/** POST /api/runs/ID/undo {dryRun, fromSeq?, replan?, confirm?, force?}: the plan, or the real undo, as a stream of steps. */
async function undo(ctx: ApiContext, request: Request, id: string): Promise<Response> {
  const body = await readBody(request);
  const dryRun = body.dryRun === true;
  if (!dryRun && body.confirm !== true) throw new SynartesisError("usage", 'a real undo needs "confirm": true (look at its plan first)');
  const fromSeq = body.fromSeq ?? 1;
  if (typeof fromSeq !== "number" || !Number.isSafeInteger(fromSeq) || fromSeq < 1) {
    throw new SynartesisError("usage", `"fromSeq" must be a positive whole number (got ${JSON.stringify(fromSeq)})`);
  }
  const replan = body.replan === true;
  const journal = await journalOf(ctx);
  const run = await findRun(journal, id);
  await requireIntact(journal, run.id, { force: false, by: ctx.decider, doing: "undo" });
  const runRef = shortId(run.id);
  const actions = await journal.actionsOfRun(run.id);
  // Recorded under the page's account, as a decision is.
  const by = ctx.decider;
  // The page undoes the run it shows, never "the most recent"; past a live proxy only when the person chose to, after the plan.
  const force = body.force === true && !dryRun;
  const opening = await openUndo(journal, run, actions, { fromSeq, dryRun, force, by, now: ctx.now, picked: false });
  if (opening.kind !== "work") {
    return ndjson([{ kind: "nothing", heading: undoHeading(run, actions.length, false, plain), text: nothingToUndo(run, opening, fromSeq).join("\n") }]);
  }
  const heading = undoHeading(run, actions.length, dryRun, plain);
  const choice = manifestForRun(run, ctx.manifest, ctx.cwd);
  const manifest = loadManifest(choice.path);

  ctx.keepOpen(request);
  const stream = new EventStream();
  stream.send({ kind: "start", heading, ...(choice.note ? { note: choice.note } : {}) });
  const say = (text: string) => stream.send({ kind: "log", text });
  const log: Logger = { trace: () => {}, debug: () => {}, info: () => {}, warn: say, error: say };
  const work = undoRun(journal, manifest, run, {
    fromSeq,
    dryRun,
    replan,
    now: ctx.now,
    owner: `${hostname()}:${process.pid}:${crypto.randomUUID()}`,
    by,
    log,
    onStep: (step) => stream.send({ kind: "step", step: stepJson(step, dryRun) }),
    onReplan: (action) => stream.send({ kind: "replan", text: replannedText(action).trim() }),
    actions: opening.actions,
  })
    .then((report) => {
      const summary = undoSummary(report, { dryRun, runRef, fromSeq });
      const continueWith =
        report.halted && !dryRun
          ? continueCommand(runRef, fromSeq, { journal: journal.path, ...(ctx.manifest ? { manifest: ctx.manifest } : {}) })[0]
          : undefined;
      stream.send({
        kind: "end",
        tone: summary.tone,
        summary: summary.text,
        halted: Boolean(report.halted),
        ...(continueWith ? { continueWith } : {}),
        ...(report.halted?.settle ? { settle: settleLines(report.halted, journal.path) } : {}),
        ...(report.runStatus ? { runStatus: report.runStatus } : {}),
      });
    })
    .catch((error) => {
      const message = isSynartesisError(error) ? error.message : `internal error: ${(error as Error)?.message ?? String(error)}`;
      stream.send({ kind: "error", error: message, ...(isSynartesisError(error) && error.hint ? { hint: error.hint } : {}) });
    })
    .finally(() => {
      stream.close();
      ctx.undos.delete(work);
    });
  ctx.undos.add(work);
  return stream.response();
}

function ndjson(events: UndoEvent[]): Response {
  const stream = new EventStream();
  events.forEach((event) => stream.send(event));
  stream.close();
  return stream.response();
}

/** Newline-delimited JSON written as it happens; a page that went away stops nothing. */
class EventStream {
  private controller!: ReadableStreamDefaultController<Uint8Array>;
  private open = true;
  private readonly encoder = new TextEncoder();
  private readonly body = new ReadableStream<Uint8Array>({
    start: (controller) => {
      this.controller = controller;
    },
    cancel: () => {
      this.open = false;
    },
  });

  send(event: UndoEvent): void {
    if (!this.open) return;
    try {
      this.controller.enqueue(this.encoder.encode(JSON.stringify(event) + "\n"));
    } catch {
      this.open = false;
    }
  }

  close(): void {
    if (!this.open) return;
    this.open = false;
    try {
      this.controller.close();
    } catch {}
  }

  response(): Response {
    return new Response(this.body, { headers: { "Content-Type": "application/x-ndjson; charset=utf-8", "Cache-Control": "no-store" } });
  }
}
