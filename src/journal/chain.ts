// The journal's record made tamper-evident (R-VERIFY, SPEC §17): every state
// a run or an action takes is an entry of its run's chain — the canonical
// JSON (RFC 8785: keys sorted, ECMAScript number and string forms) of what it
// says, hashed with SHA-256 together with the hash of the entry before it.
// An action's state keeps its small fields as they are and each body (the
// arguments, the states read, the result, the inverse) as a hash of its own,
// so a break can say which field moved; an entry holds only what changed
// since the previous entry of the same run or action (a removed field: null),
// which keeps the chain a fraction of the journal. `verifyRun` compares a
// run's chain with the rows: an entry changed, removed or inserted; a row
// changed, removed or inserted without its entry; an approval no decision
// made. Pure.
import { canonicalJson, sha256 } from "../canonical.ts";
import type { Body } from "./packing.ts";
import { shortId, type Action, type Observation, type Run } from "./types.ts";

export type EntryKind = "run" | "action" | "override";

export interface ChainEntry {
  run: string;
  /** From 1, without gaps, in its run. */
  seq: number;
  kind: EntryKind;
  /** For an action's entry. */
  action?: string;
  /** What changed since the previous entry of the same run or action (all of it, for the first); null: no longer there. */
  state: Record<string, unknown>;
  at: string;
  hash: string;
  /** The state's canonical JSON as the journal keeps it (read from a journal; an exported entry has none). */
  stateText?: string;
}

/** What the first entry of a run is chained to. */
export const genesis = (runId: string) => sha256(`synartesis chain of run ${runId}`);

/** An entry's hash: of the hash before it, its place, and its state's canonical JSON (`stateText`, when the caller has it already). */
export function entryHash(previous: string, entry: Omit<ChainEntry, "hash">, stateText = canonicalJson(entry.state)): string {
  const { run, seq, kind, action, at } = entry;
  return sha256(`${previous}\n${run}\n${seq}\n${kind}\n${action ?? ""}\n${at}\n${stateText}`);
}

/** The fields of an action kept in its entry as hashes: they may be large, and only whether they moved matters. */
const BODIES = ["args", "argsKey", "snapshot", "postState", "resultText", "inverse", "verify"] as const;

/**
 * A body's digest in a state: 128 bits of SHA-256 (enough to make a changed
 * body undeniable, and short) over its JSON text as the journal keeps it — a
 * body read back, or exported and read again, gives the same text.
 */
const bodyHash = (value: unknown) => (Bun.SHA256.hash(typeof value === "string" ? value : (JSON.stringify(value) ?? ""), "base64url") as string).slice(0, 22);

const isBody = new Set<string>(BODIES);

/**
 * An action's state from its row's small fields (`action`, read with no body)
 * and its body's texts as stored: what actionState() gives for the action
 * read whole, without parsing the bodies only to hash them again. Each text
 * is JSON.stringify's of what it holds, so its digest is the same (a test
 * holds them to that).
 */
export function actionStateOfRow(action: Action, body: Body): Record<string, unknown> {
  const state = actionState(action);
  state.args = bodyHash(body.args ?? "null");
  const observed = (key: "snapshot" | "postState", text: string | undefined) => {
    if (text !== undefined && !(action[key] as Observation | undefined)?.absent) state[key] = bodyHash(`{"absent":false,"payload":${text}}`);
  };
  observed("snapshot", body.snapshot);
  observed("postState", body.post_state);
  for (const [key, text] of [
    ["resultText", body.result],
    ["inverse", body.inverse],
    ["verify", body.verify],
  ] as const) {
    if (text !== undefined) state[key] = bodyHash(text);
  }
  return state;
}

/** An action's id and its state (actionState, or actionStateOfRow as a journal reads it). */
export interface ActionState {
  id: string;
  state: Record<string, unknown>;
}

export const statesOf = (actions: Action[]): ActionState[] => actions.map((action) => ({ id: action.id, state: actionState(action) }));

/** An action's state: every field, the large ones as digests (an absent field is absent); its id and run are the entry's own. */
export function actionState(action: Action): Record<string, unknown> {
  const state: Record<string, unknown> = {};
  const fields = action as unknown as Record<string, unknown>;
  for (const key in fields) {
    const value = fields[key];
    if (value === undefined || key === "id" || key === "runId") continue;
    state[key] = isBody.has(key) ? bodyHash(value) : value;
  }
  return state;
}

export function runState(run: Run): Record<string, unknown> {
  const state: Record<string, unknown> = {};
  const fields = run as unknown as Record<string, unknown>;
  for (const key in fields) {
    const value = fields[key];
    if (value !== undefined && key !== "id") state[key] = value;
  }
  return state;
}

/** The small fields (text, numbers, lists of text) compared as JSON: their order is the journal's, the same whenever they are read. */
const same = (a: unknown, b: unknown) => a === b || (typeof a === "object" && typeof b === "object" && JSON.stringify(a) === JSON.stringify(b));

/** What changed from `before` to `after` (a field gone: null); empty when nothing did. */
export function stateDelta(before: Record<string, unknown>, after: Record<string, unknown>): Record<string, unknown> {
  const delta: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(after)) if (!same(before[key], value)) delta[key] = value;
  for (const key of Object.keys(before)) if (!(key in after)) delta[key] = null;
  return delta;
}

/** `state` with an entry's changes applied (null: the field is gone); returned for chaining. */
export function withDelta(state: Record<string, unknown>, delta: Record<string, unknown>): Record<string, unknown> {
  for (const key in delta) {
    const value = delta[key];
    if (value === null) delete state[key];
    else state[key] = value;
  }
  return state;
}

/** A state from the entries that built it, in order. */
export function stateOf(entries: ChainEntry[]): Record<string, unknown> {
  const state: Record<string, unknown> = {};
  for (const entry of entries) withDelta(state, entry.state);
  return state;
}

export interface ChainBreak {
  /** The entry where the break is (its number in the run), when it is one. */
  entry?: number;
  /** The action the break is about, as people know it (#seq server.tool, its short id). */
  action?: string;
  what: string;
}

const label = (state: Record<string, unknown>, id: string) => `#${state.seq} ${state.server}.${state.tool} (${shortId(id)})`;

/** The fields of two states that differ, named as a person reads them (none, at once, for the same states: the common case). */
function differences(recorded: Record<string, unknown>, now: Record<string, unknown>): string[] {
  let fields = 0;
  let alike = true;
  for (const key in now) {
    fields++;
    if (!same(recorded[key], now[key])) {
      alike = false;
      break;
    }
  }
  if (alike) {
    for (const _ in recorded) fields--;
    if (fields === 0) return [];
  }
  const keys = [...new Set([...Object.keys(recorded), ...Object.keys(now)])].sort();
  return keys.filter((key) => !same(recorded[key], now[key]));
}

const DECIDED = new Set(["approved", "denied"]);

/** An action row against its entries: what moved without being recorded, and an approval or denial no decision made. */
function actionBreaks({ id, state }: ActionState, history: ChainEntry[]): ChainBreak[] {
  const moved = differences(stateOf(history), state);
  if (moved.length === 0) return [];
  const name = label(state, id);
  const last = history.at(-1)!;
  const breaks: ChainBreak[] = [{ action: name, what: `its row was changed outside Synartesis (${moved.join(", ")} differ from its last entry, ${last.seq})` }];
  const decided = history.some((entry) => DECIDED.has(String(entry.state.status)) || entry.state.approvedBy !== undefined);
  if (moved.includes("status") && DECIDED.has(String(state.status)) && !decided) {
    breaks.push({ action: name, what: `it is ${state.status}, but no approve, deny or page decision recorded it` });
  }
  return breaks;
}

/** The chain itself: numbered from 1 without gaps, each hash what its content and the hash before it give. */
function linkBreaks(runId: string, entries: ChainEntry[]): ChainBreak[] {
  let previous = genesis(runId);
  for (const [index, entry] of entries.entries()) {
    if (entry.seq !== index + 1) {
      return [
        { entry: index + 1, what: entry.seq > index + 1 ? `entry ${index + 1} was removed (the next is ${entry.seq})` : `entry ${entry.seq} appears twice` },
      ];
    }
    if (entry.run !== runId) return [{ entry: entry.seq, what: `entry ${entry.seq} belongs to another run (${entry.run})` }];
    const { hash, stateText, ...content } = entry;
    if (entryHash(previous, content, stateText) !== hash)
      return [{ entry: entry.seq, what: `entry ${entry.seq} was changed or inserted (its hash does not follow from its content and the entry before)` }];
    previous = hash;
  }
  return [];
}

/**
 * Every break between a run's chain and its rows. `run` is the runs row (none:
 * removed), `actions` the states of its action rows, `entries` its chain in order.
 */
export function verifyRun(runId: string, run: Run | undefined, actions: ActionState[], entries: ChainEntry[]): ChainBreak[] {
  const breaks = linkBreaks(runId, entries);
  const runEntries = entries.filter((entry) => entry.kind === "run");
  const lastRun = runEntries.at(-1);
  if (!run && lastRun) breaks.push({ what: "its row in runs was removed" });
  if (run && !lastRun) breaks.push({ what: "its row in runs has no entry: it was inserted outside Synartesis" });
  if (run && lastRun) {
    const moved = differences(stateOf(runEntries), runState(run));
    if (moved.length) breaks.push({ what: `its row in runs was changed outside Synartesis (${moved.join(", ")} differ from entry ${lastRun.seq})` });
  }
  const byAction = new Map<string, ChainEntry[]>();
  for (const entry of entries) {
    if (entry.kind !== "action" || !entry.action) continue;
    const history = byAction.get(entry.action);
    if (history) history.push(entry);
    else byAction.set(entry.action, [entry]);
  }
  for (const action of actions) {
    const history = byAction.get(action.id);
    if (!history) breaks.push({ action: label(action.state, action.id), what: "its row has no entry: it was inserted outside Synartesis" });
    else breaks.push(...actionBreaks(action, history));
  }
  const present = new Set(actions.map((action) => action.id));
  for (const [id, history] of byAction) {
    if (!present.has(id)) breaks.push({ entry: history.at(-1)!.seq, action: label(stateOf(history), id), what: "its row was removed" });
  }
  return breaks;
}

/** A chain against its head kept a second time (anchors.ts, `where`): cut short, or rewritten whole. */
export function anchorBreaks(entries: ChainEntry[], head: { seq: number; hash: string } | undefined, where: string): ChainBreak[] {
  if (!head) return [];
  if (entries.length < head.seq) {
    return [{ entry: entries.length + 1, what: `entries ${entries.length + 1} to ${head.seq} were removed: the head kept at ${where} is entry ${head.seq}` }];
  }
  if (entries[head.seq - 1]!.hash !== head.hash)
    return [{ entry: head.seq, what: `the chain was rewritten: entry ${head.seq}'s hash is not the one kept at ${where}` }];
  return [];
}
