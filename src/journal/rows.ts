// Rows as both backends store them (same columns, JSON as text, times as ISO
// text) turned into runs and actions, and back: written once for SQLite and
// PostgreSQL, so a journal reads the same whichever holds it.
import { SynartesisError } from "../errors.ts";
import type { ToolClass } from "../manifest/types.ts";
import { JournalError, type NewAction, type Outcome, type PendingNews } from "./journal.ts";
import { BODY_COLUMNS, packBody, PACKED_ARGS, unpackBody, type Body, type BodyColumn, type Dictionary } from "./packing.ts";
import { actionStateOfRow, type ActionState } from "./chain.ts";
import type { Action, ActionStatus, Observation, ResolvedCall, Run, RunStatus, Settled, VerifyCall, Inverse } from "./types.ts";

/** A row as a backend reads it; `packed` (a packed body) is bytes. */
export type Row = Record<string, string | number | null | Uint8Array>;
type Cell = Row[string] | undefined;

export function json(value: unknown): string | null {
  return value === undefined ? null : JSON.stringify(value);
}

function parse<T>(text: Cell): T | undefined {
  return typeof text === "string" ? (JSON.parse(text) as T) : undefined;
}

function str(value: Cell): string | undefined {
  return value === null || value === undefined ? undefined : String(value);
}

function observation(payload: Cell, absent: Cell): Observation | undefined {
  if (Number(absent) === 1) return { absent: true };
  return typeof payload === "string" ? { absent: false, payload: JSON.parse(payload) } : undefined;
}

/** An observation's payload as its column holds it (JSON text); NULL when it found nothing. */
export function observationPayload(value: Observation | undefined): string | null {
  return value && !value.absent ? JSON.stringify(value.payload) : null;
}

/** Whether an observation found nothing, as its column holds it (1/0). */
export function absentColumn(value: Observation | undefined): 0 | 1 {
  return value?.absent ? 1 : 0;
}

/** Warnings as a column: none is NULL. */
export function warningsColumn(warnings: string[] | undefined): string | null {
  return warnings?.length ? JSON.stringify(warnings) : null;
}

// ---- bodies (packing.ts) ----

/** `body` without the columns it has no value for. */
function defined(body: Partial<Record<BodyColumn, string | null>>): Body {
  const out: Body = {};
  for (const column of BODY_COLUMNS) {
    const text = body[column];
    if (text !== null && text !== undefined) out[column] = text;
  }
  return out;
}

/** A pending call's body, as its intent was written: its outcome is packed with it. */
export interface PendingBody {
  server: string;
  tool: string;
  body: Body;
}

/** The body a new action is written with. */
export function newBody(action: NewAction): Body {
  return defined({
    args: JSON.stringify(action.args),
    snapshot: observationPayload(action.snapshot),
    verify: json(action.verify),
    result: action.resultText,
  });
}

/** The body once a call ended (finishAction): its result, when it has none, stays what it was. */
export function finishedBody(before: Body, outcome: Outcome): Body {
  return defined({
    ...before,
    result: outcome.resultText ?? before.result,
    inverse: json(outcome.inverse),
    post_state: observationPayload(outcome.postState),
    verify: outcome.verify ? json(outcome.verify) : before.verify,
  });
}

/** The body of a pending call once it learnt a new pre-read (notePending); the rest stays. */
export function notedBody(before: Body, news: PendingNews): Body {
  return news.snapshot ? defined({ ...before, snapshot: observationPayload(news.snapshot) }) : before;
}

/** The body with its inverse and verification read replaced (--replan, settle). */
export function rebuiltBody(before: Body, change: { inverse?: Inverse | null; verify?: VerifyCall | null }): Body {
  const replaced = (value: ResolvedCall | VerifyCall | null | undefined, was: string | undefined) =>
    value === undefined ? was : value === null ? undefined : json(value);
  return defined({ ...before, inverse: replaced(change.inverse, before.inverse), verify: replaced(change.verify, before.verify) });
}

/** The six body columns and `packed` as a row stores them: packed (the text columns then empty), or as text. */
export interface StoredBody {
  args: string;
  snapshot: string | null;
  post_state: string | null;
  result: string | null;
  inverse: string | null;
  verify: string | null;
  packed: Uint8Array | null;
}

export function storedBody(body: Body, dictionary: Dictionary | undefined): StoredBody {
  const packed = packBody(body, dictionary);
  if (packed) return { args: PACKED_ARGS, snapshot: null, post_state: null, result: null, inverse: null, verify: null, packed };
  return textBody(body);
}

/**
 * `body` in its text columns, unpacked: how a pending call's intent is
 * stored, since it is packed with its outcome once the call ends (and
 * compressing it first would only delay the call it must precede).
 */
export function textBody(body: Body): StoredBody {
  const text = (column: BodyColumn) => body[column] ?? null;
  return {
    args: body.args ?? "null",
    snapshot: text("snapshot"),
    post_state: text("post_state"),
    result: text("result"),
    inverse: text("inverse"),
    verify: text("verify"),
    packed: null,
  };
}

/** A row's body: its text columns, or what its packed body holds (`dictionary` gives the content of a dictionary by id). */
function bodyOfRow(row: Row, dictionary: (id: number) => Uint8Array | undefined): Body {
  if (row.packed instanceof Uint8Array) return unpackBody(row.packed, dictionary);
  return defined(Object.fromEntries(BODY_COLUMNS.map((column) => [column, typeof row[column] === "string" ? row[column] : undefined])));
}

/** bodyOfRow(), where a packed body that cannot be read is a broken journal (`path`). */
export function readBody(row: Row, dictionary: (id: number) => Uint8Array | undefined, path: string): Body {
  try {
    return bodyOfRow(row, dictionary);
  } catch (error) {
    throw new JournalError(path, "broken", `the packed body of action ${String(row.id)} cannot be read: ${(error as Error).message}`);
  }
}

/** A row's state as its chain holds it (chain.ts), its bodies hashed as stored, never parsed. */
export function actionStateOfStoredRow(row: Row, dictionary: (id: number) => Uint8Array | undefined, path: string): ActionState {
  return { id: String(row.id), state: actionStateOfRow(toAction(row, {}), readBody(row, dictionary, path)) };
}

/** A row as an action, its packed body (if it has one) read: readBody(). */
export function actionOfRow(row: Row, dictionary: (id: number) => Uint8Array | undefined, path: string): Action {
  return row.packed instanceof Uint8Array ? toAction(row, readBody(row, dictionary, path)) : toAction(row);
}

/** The row with its body in its text columns (see readBody). */
export function unpackedRow(row: Row, dictionary: (id: number) => Uint8Array | undefined, path: string): Row {
  if (!(row.packed instanceof Uint8Array)) return row;
  const body = readBody(row, dictionary, path);
  const out: Row = { ...row, packed: null };
  for (const column of BODY_COLUMNS) out[column] = body[column] ?? null;
  return out;
}

/** `base` with every defined value of `optional` set on it (absent stays absent). */
function withDefined<T extends object>(base: T, optional: Partial<T>): T {
  for (const [key, value] of Object.entries(optional)) {
    if (value !== undefined) (base as Record<string, unknown>)[key] = value;
  }
  return base;
}

/**
 * The rows a person may keep (R-PEOPLE-1): a call that ran or may have run, not read-only, not kept yet, and
 * not held by an undo (a held row is rolling_back; claimed_by outlives a claim that was given back).
 */
export const KEEPABLE = "status IN ('applied', 'pending', 'unrecoverable') AND class <> 'readonly' AND kept_at IS NULL";

export function toRun(row: Row): Run {
  const run: Run = {
    id: String(row.id),
    label: String(row.label),
    startedAt: String(row.started_at),
    status: row.status as RunStatus,
  };
  return withDefined(run, {
    endedAt: str(row.ended_at),
    host: str(row.host),
    pid: row.pid === null || row.pid === undefined ? undefined : Number(row.pid),
    manifest: str(row.manifest),
    undoneBy: str(row.undone_by),
    undoneAt: str(row.undone_at),
  });
}

/** The optional text fields of an action and the columns that hold them. */
const OPTIONAL_TEXT: ReadonlyArray<readonly [keyof Action, string]> = [
  ["error", "error"],
  ["heldReason", "held_reason"],
  ["approvedBy", "approved_by"],
  ["approvedAt", "approved_at"],
  ["reason", "reason"],
  ["spentBy", "spent_by"],
  ["spentAt", "spent_at"],
  ["toldRun", "told_run"],
  ["toldAt", "told_at"],
  ["claimedBy", "claimed_by"],
  ["claimedAt", "claimed_at"],
  ["undoNote", "undo_note"],
  ["inverseSentAt", "inverse_sent_at"],
  ["settled", "settled"],
  ["settledBy", "settled_by"],
  ["settledAt", "settled_at"],
  ["settledNote", "settled_note"],
  ["withdrawnBy", "withdrawn_by"],
  ["withdrawnAt", "withdrawn_at"],
  ["task", "task"],
  ["keptBy", "kept_by"],
  ["keptAt", "kept_at"],
  ["keptReason", "kept_reason"],
  ["decidedRule", "decided_rule"],
];

/** A row as an action (each absent field left out); `body`: its packed body, read (readBody), which its text columns then lack. */
export function toAction(row: Row, body?: Body): Action {
  const text = (column: BodyColumn): Cell => (body ? (body[column] ?? null) : row[column]);
  const action: Action = {
    id: String(row.id),
    runId: String(row.run_id),
    seq: Number(row.seq),
    server: String(row.server),
    tool: String(row.tool),
    args: JSON.parse(String(text("args"))),
    class: row.class as ToolClass,
    status: row.status as ActionStatus,
    warnings: parse<string[]>(row.warnings) ?? [],
    ts: String(row.ts),
  };
  const argsKey = str(row.args_key);
  if (argsKey !== undefined) action.argsKey = argsKey;
  const snapshot = observation(text("snapshot"), row.snapshot_absent);
  if (snapshot) action.snapshot = snapshot;
  const postState = observation(text("post_state"), row.post_absent);
  if (postState) action.postState = postState;
  const resultText = str(text("result"));
  if (resultText !== undefined) action.resultText = resultText;
  const inverse = parse<Inverse>(text("inverse"));
  if (inverse !== undefined) action.inverse = inverse;
  const verify = parse<VerifyCall>(text("verify"));
  if (verify !== undefined) action.verify = verify;
  const set = action as unknown as Record<string, unknown>;
  for (const [field, column] of OPTIONAL_TEXT) {
    const value = row[column];
    if (value !== null && value !== undefined) set[field] = String(value);
  }
  return action;
}

/** The action just inserted, built from what was written rather than read back: arguments can be MiB. */
export function insertedAction(action: NewAction, seq: number): Action {
  const written: Action = {
    id: action.id,
    runId: action.runId,
    seq,
    server: action.server,
    tool: action.tool,
    args: action.args,
    class: action.class,
    status: action.status,
    warnings: action.warnings ?? [],
    ts: action.ts,
  };
  return withDefined(written, {
    argsKey: action.argsKey,
    snapshot: action.snapshot,
    verify: action.verify,
    resultText: action.resultText,
    error: action.error,
    heldReason: action.heldReason,
    approvedBy: action.approvedBy,
    approvedAt: action.approvedAt,
  });
}

/** Ids are matched without their dashes, so `4e77975e`, `4e77975e-1a` and `4e77975e1a` all work (LIKE … ESCAPE '\'). */
export function likePrefix(prefix: string): string {
  return prefix.replace(/-/g, "").replace(/[\\%_]/g, (c) => `\\${c}`) + "%";
}

/** The one row a prefix of an id matched, or the error that says none did, or which several did. */
export function onlyMatch<T>(rows: Row[], prefix: string, what: "run" | "action", convert: (row: Row) => T): T {
  if (rows.length === 1) return convert(rows[0]!);
  if (rows.length === 0) throw new SynartesisError("unknown_id", `no ${what} id starts with "${prefix}"`);
  const ids = rows.map((row) => String(row.id).slice(0, 12)).join(", ");
  throw new SynartesisError("unknown_id", `"${prefix}" matches ${rows.length} ${what}s: ${ids}`, { hint: `Give more characters of the ${what} id.` });
}
