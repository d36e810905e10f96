// What the journal stores, as the rest of the program sees it (R-JOURNAL-2/3).
import type { Inverse, ResolvedRead as VerifyCall } from "../manifest/inverse.ts";
import type { ToolClass } from "../manifest/types.ts";

export { inverseCalls, type Inverse, type ResolvedCall } from "../manifest/inverse.ts";

export type RunStatus = "active" | "complete" | "rolled_back" | "partial";

export type ActionStatus = "pending" | "gated" | "approved" | "denied" | "applied" | "failed" | "rolling_back" | "rolled_back" | "unrecoverable";

export interface Run {
  id: string;
  label: string;
  startedAt: string;
  endedAt?: string;
  status: RunStatus;
  host?: string;
  pid?: number;
  /** The manifest the proxy ran with (absolute path). */
  manifest?: string;
  /** Who ran the last undo of this run, and when it ended. */
  undoneBy?: string;
  undoneAt?: string;
}

export interface RunSummary extends Run {
  actions: number;
  /** Actions whose outcome is unknown (pending). */
  unknown: number;
  /** Actions held for a person's decision. */
  waiting: number;
}

export type { ResolvedRead as VerifyCall } from "../manifest/inverse.ts";

/** What a read observed: a payload, or that the thing does not exist. */
export type Observation = { absent: false; payload: unknown } | { absent: true };

/** A read that did not happen as a read: no answer, a protocol error, or a tool error that does not mean absence. */
export interface ReadFailure {
  error: string;
}

/** What a read came back with: what it observed, or why it failed. */
export type Read = Observation | ReadFailure;

export function readFailed(read: Read): read is ReadFailure {
  return "error" in read;
}

export interface Action {
  id: string;
  runId: string;
  seq: number;
  server: string;
  tool: string;
  args: unknown;
  argsKey?: string;
  class: ToolClass;
  status: ActionStatus;
  snapshot?: Observation;
  postState?: Observation;
  /** The result exactly as the upstream sent it (raw JSON text). */
  resultText?: string;
  inverse?: Inverse;
  verify?: VerifyCall;
  /** What went wrong with the call (or, for a pending one, why its outcome is unknown). */
  error?: string;
  /** Why the call was held for a person's decision (gated, approved, denied). */
  heldReason?: string;
  warnings: string[];
  approvedBy?: string;
  approvedAt?: string;
  /** The hash of the rule a decision was made under (ruleHash): an approval is spent only while the call's rule is still that one. */
  decidedRule?: string;
  /** Why a person denied it. */
  reason?: string;
  /** For an approval: the action that ran under it, and when it was spent. */
  spentBy?: string;
  spentAt?: string;
  /** For a denial: the run whose agent was told of it, and when. */
  toldRun?: string;
  toldAt?: string;
  claimedBy?: string;
  claimedAt?: string;
  /** What the last undo attempt ran into, when it did not finish the action. */
  undoNote?: string;
  /** When an undo sent this action's inverse without (yet) learning its outcome. */
  inverseSentAt?: string;
  /** What a person found about an unknown outcome (`synartesis settle`), by whom, when, and their note. */
  settled?: Settled;
  settledBy?: string;
  settledAt?: string;
  settledNote?: string;
  /** A person decided that this call's effect stays (R-PEOPLE-1, `undo --keep`): who, when, why. Undo steps over it. */
  keptBy?: string;
  keptAt?: string;
  keptReason?: string;
  /** The task a 2026-era server runs this call as (R-ERA-4): a pending call with a task waits for it to complete. */
  task?: string;
  /** A request for approval withdrawn by an undo of its run (R-GATE-7): by whom, when. */
  withdrawnBy?: string;
  withdrawnAt?: string;
  ts: string;
}

/**
 * A person's finding on an unknown outcome: the agent's call ran (applied) or
 * did not; or the inverse an interrupted undo sent ran (inverse_applied) or did not.
 */
export type Settled = "applied" | "not_applied" | "inverse_applied" | "inverse_not_applied";

/** The short form of a run or action id people type: its first 8 hex digits. */
export function shortId(id: string): string {
  return id.replace(/-/g, "").slice(0, 8);
}
