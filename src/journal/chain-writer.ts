// How a journal appends to its chains (chain.ts), the same for both backends:
// each copy of a row as Synartesis wrote it (the backend's triggers take
// them) becomes an entry of its run's chain holding what changed since the
// row's previous entry. A backend reads the copies and the heads of their
// runs, and inserts what `entriesForCopies` returns. Pure.
import { canonicalJson } from "../canonical.ts";
import { entryHash, genesis, runState, stateDelta, withDelta, type ActionState, type ChainEntry, type EntryKind } from "./chain.ts";
import type { Head } from "./anchors.ts";
import { toRun, type Row } from "./rows.ts";

/** How long after a write its entry is appended (writes meanwhile share one pass). */
export const CHAIN_DELAY_MS = 200;

/** The moment a journal's pass runs: CHAIN_DELAY_MS after it is first asked for, once for every ask meanwhile, never after close. */
export class ChainMoment {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private closed = false;

  constructor(private readonly pass: () => void) {}

  ask(): void {
    if (this.timer || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.pass();
    }, CHAIN_DELAY_MS);
    this.timer.unref?.();
  }

  /** The pass is run now, by the caller: the moment set is not needed. */
  cancel(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  close(): void {
    this.closed = true;
    this.cancel();
  }
}

/** A run's chain as far as a process knows it: its head, and the states its entries build. */
export interface RunChain {
  id: string;
  seq: number;
  hash: string;
  run: Record<string, unknown>;
  actions: Map<string, Record<string, unknown>>;
}

/** An entry to insert: its state as the canonical JSON it was hashed over. */
export interface NewEntry {
  run_id: string;
  seq: number;
  kind: EntryKind;
  action_id: string | null;
  state: string;
  at: string;
  hash: string;
}

/** A run's chain from its entries, in order (each with its state's JSON); `head` is the last one's place and hash. */
export function chainFromEntries(runId: string, entries: Iterable<{ kind: string; action_id: unknown; state: unknown }>, head: Head | undefined): RunChain {
  const chain: RunChain = { id: runId, seq: head?.seq ?? 0, hash: head?.hash ?? genesis(runId), run: {}, actions: new Map() };
  for (const entry of entries) {
    const state = JSON.parse(String(entry.state)) as Record<string, unknown>;
    if (entry.kind === "run") withDelta(chain.run, state);
    else if (entry.kind === "action") chain.actions.set(String(entry.action_id), withDelta(chain.actions.get(String(entry.action_id)) ?? {}, state));
  }
  return chain;
}

/** Append an entry to `chain` (moving its head); the row to insert. */
export function appendEntry(chain: RunChain, entry: { kind: EntryKind; action?: string; state: Record<string, unknown>; at: string }): NewEntry {
  const content = { run: chain.id, seq: chain.seq + 1, ...entry };
  const state = canonicalJson(entry.state);
  const hash = entryHash(chain.hash, content, state);
  chain.seq = content.seq;
  chain.hash = hash;
  return { run_id: chain.id, seq: content.seq, kind: entry.kind, action_id: entry.action ?? null, state, at: entry.at, hash };
}

/** The runs that copies of rows belong to (a run row's own id, an action row's run). */
export const runsOfCopies = (copies: { runs: Row[]; actions: Row[] }): string[] => [
  ...new Set([...copies.runs.map((row) => String(row.id)), ...copies.actions.map((row) => String(row.run_id))]),
];

/**
 * The entries for copies of rows, in the order they were written (runs
 * first: a run's entry comes before its actions'), each holding what changed
 * since its row's previous entry; a copy that changed nothing makes none.
 * `chains` has the chain of every run the copies name (runsOfCopies); their
 * heads move. `states` are the action copies' states (actionStateOfStoredRow),
 * in their order. Also the heads of the chains it added to, to keep once
 * committed (anchors.ts).
 */
export function entriesForCopies(
  chains: Map<string, RunChain>,
  copies: { runs: Row[]; actions: Row[] },
  states: ActionState[],
): { entries: NewEntry[]; heads: Map<string, Head> } {
  const entries: NewEntry[] = [];
  for (const row of copies.runs) {
    const run = toRun(row);
    const chain = chains.get(run.id)!;
    const state = runState(run);
    const delta = stateDelta(chain.run, state);
    if (Object.keys(delta).length) entries.push(appendEntry(chain, { kind: "run", state: delta, at: String(row.captured_at) }));
    chain.run = state;
  }
  for (const [i, row] of copies.actions.entries()) {
    const { id, state } = states[i]!;
    const chain = chains.get(String(row.run_id))!;
    const delta = stateDelta(chain.actions.get(id) ?? {}, state);
    if (Object.keys(delta).length) entries.push(appendEntry(chain, { kind: "action", action: id, state: delta, at: String(row.captured_at) }));
    chain.actions.set(id, state);
  }
  const touched = new Set(entries.map((entry) => entry.run_id));
  return { entries, heads: headsOf([...chains.values()].filter((chain) => touched.has(chain.id))) };
}

export const headsOf = (chains: Iterable<RunChain>) => new Map([...chains].map((chain) => [chain.id, { seq: chain.seq, hash: chain.hash }]));

/** How many runs' chains a process keeps in mind between passes (the one it records, those an undo touches). */
const RUNS_KEPT = 16;

/**
 * The chains a process knows, kept between passes: a run's is read again
 * only when another process added to it since (its head moved).
 */
export class KnownChains {
  private readonly runs = new Map<string, RunChain>();

  /** The chain of `runId` if what is known of it still ends at `head` (none: it has no entries yet). */
  current(runId: string, head: Head | undefined): RunChain | undefined {
    const known = this.runs.get(runId);
    return known && known.seq === (head?.seq ?? 0) && (head === undefined || known.hash === head.hash) ? known : undefined;
  }

  remember(chain: RunChain): RunChain {
    this.runs.delete(chain.id);
    this.runs.set(chain.id, chain);
    if (this.runs.size > RUNS_KEPT) this.runs.delete(this.runs.keys().next().value!);
    return chain;
  }
}

/** An entries row as read from either journal. */
export function entryOfRow(row: Record<string, unknown>): ChainEntry {
  return {
    run: String(row.run_id),
    seq: Number(row.seq),
    kind: String(row.kind) as EntryKind,
    ...(row.action_id === null ? {} : { action: String(row.action_id) }),
    state: JSON.parse(String(row.state)) as Record<string, unknown>,
    at: String(row.at),
    hash: Buffer.from(row.hash as Uint8Array).toString("hex"),
    stateText: String(row.state),
  };
}
