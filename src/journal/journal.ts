// The journal as the rest of the program sees it: runs and actions, claims
// and approvals, each change one transaction (R-JOURNAL). Every method is
// async; all SQL lives in this folder: sqlite/ (a file, the embedded
// default) and postgres/ (a database a team shares, R-TEAM), each a store and
// one file per role, assembled by roles.ts.
import { existsSync, statSync } from "node:fs";
import { SynartesisError } from "../errors.ts";
import { withoutPassword } from "./postgres/connection.ts";
import type { ActionState, ChainEntry } from "./chain.ts";
import type { Action, ActionStatus, Observation, Run, RunStatus, RunSummary, Settled, VerifyCall, Inverse } from "./types.ts";

/** What a caller gives to record a new action; seq and the rest come from the journal. */
export type NewAction = Pick<Action, "id" | "runId" | "server" | "tool" | "args" | "class" | "status" | "ts"> &
  Partial<Pick<Action, "argsKey" | "snapshot" | "verify" | "resultText" | "error" | "heldReason" | "warnings" | "approvedBy" | "approvedAt">> & {
    /** Its number in the run when the caller knows it (the order its request arrived in); else the next one. */
    seq?: number;
  };

export interface Outcome {
  status: ActionStatus;
  resultText?: string;
  inverse?: Inverse;
  postState?: Observation;
  /** The read that checks for drift, when it could only be known once the call ran (the rows an INSERT added). */
  verify?: VerifyCall;
  error?: string;
  warnings?: string[];
}

/** What a call still in flight learnt: the state right before the attempt that executes (R-ERA-3), the task it runs as (R-ERA-4). */
export interface PendingNews {
  snapshot?: Observation;
  task?: string;
}

/**
 * How a write may be committed when it need not be at once (a backend that
 * cannot group writes commits each at once): "soon", with the other writes
 * of this turn of the event loop; "with-next", with the next write of this
 * connection, which the caller knows is coming (the next call's intent), at
 * most a moment later. Either way its promise resolves once it is committed;
 * until then a crash loses it, so only what a crash may lose is grouped (an
 * outcome, whose row then stays pending: unknown, never wrong).
 */
export type Grouping = "soon" | "with-next";

export interface WriteOptions {
  group?: Grouping;
}

/**
 * The journal could not be read or written. `full`: no space left (a later
 * write may succeed); `busy`: locked by others for too long; `broken`: it
 * cannot be used at all (corrupt, not a journal, not writable, I/O errors).
 */
export class JournalError extends SynartesisError {
  constructor(
    readonly journalPath: string,
    readonly kind: "full" | "busy" | "broken",
    reason: string,
    hint?: string,
  ) {
    super("journal", `the journal ${journalPath} ${kind === "broken" ? "cannot be used" : "could not be written"}: ${reason}`, hint ? { hint } : {});
    this.name = "JournalError";
  }
}

/** One exact call (its server, tool and canonical arguments): what an approval or a denial is for. */
export interface CallIdentity {
  server: string;
  tool: string;
  argsKey: string;
}

/** Spend an unexpired approval (given since `approvedSince`) of `call` for the action `spender`. */
export interface SpendApproval {
  call: CallIdentity;
  approvedSince: string;
  spender: string;
  now: string;
  /** The hash of the call's rule now: an approval given under another rule is not spent (one from before rules were bound is). */
  rule: string;
}

/** Take a denial of `call` not yet told to run `runId`'s agent. */
export interface TakeDenial {
  call: CallIdentity;
  runId: string;
  now: string;
}

/** Withdraw run `runId`'s open requests from seq `fromSeq` on (an undo of the run, `by` whom). */
export interface WithdrawRequests {
  runId: string;
  fromSeq: number;
  by: string;
  at: string;
}

/** Undo's verdict on a run; `undoneBy` when this undo is done with it. */
export interface RunVerdict {
  id: string;
  status: RunStatus;
  at: string;
  undoneBy?: string;
}

/** Claim action `id` for the undo `owner`, from one of the statuses `from`. */
export interface Claim {
  id: string;
  owner: string;
  now: string;
  from: ActionStatus[];
}

export type ClaimMany = Omit<Claim, "id"> & { ids: string[] };

/** Take over the claim on `id` the caller judged gone (`judged`: its owner and stamp then). */
export interface TakeOverClaim {
  id: string;
  judged: { owner: string; at: string | undefined };
  owner: string;
  now: string;
}

/** A claimed action's new status, and what stopped this attempt (none: the note is cleared). */
export interface SettleClaim {
  id: string;
  owner: string;
  status: ActionStatus;
  undoNote?: string;
}

export interface InverseSent {
  id: string;
  owner: string;
  at: string;
}

export interface ClaimNote {
  id: string;
  owner: string;
  undoNote: string;
}

/** Where the journal is and its life: opening checks, changes, closing. */
export interface JournalStore {
  /** Where it is, as people should see it and can paste it (a file path, or a URL without its password). */
  readonly path: string;
  /** Things about the journal a person should know (e.g. other users can read it). */
  readonly warnings: string[];
  /** The environment variables the journal took a secret from (PGPASSWORD): the proxy's servers must not get them. */
  readonly secretsFromEnvironment: string[];
  /** Commit one small write now, so a journal that cannot be written is found before any call relies on it. */
  proveWritable(): Promise<void>;
  /** Why `path` is no longer the journal this connection writes into (a file deleted or replaced), if it is not. */
  identityLost(): Promise<string | undefined>;
  close(): Promise<void>;
  /** Names of the migrations recorded in the journal, in the order applied. */
  appliedMigrations(): Promise<string[]>;
  /**
   * Call `onChange` soon after another connection commits a change (for
   * `watch` and the review page: SQLite polls its data version, PostgreSQL
   * wakes on LISTEN/NOTIFY). Resolves to the function that stops it.
   */
  watchChanges(onChange: () => void): Promise<() => Promise<void>>;
  /**
   * A mark that differs whenever anything was committed to the journal since
   * it was last taken, by any connection (SQLite: the data version and this
   * connection's own changes); undefined when the journal cannot tell cheaply
   * (PostgreSQL). What reads it may keep an answer until it moves.
   */
  changeMark(): Promise<string | undefined>;
}

/** Runs: one per client session, from its first call to its end, and after an undo. */
export interface RunsRole {
  startRun(run: { id: string; label: string; startedAt: string; host?: string; pid?: number; manifest?: string }): Promise<Run>;
  /** A run's session ended: active → complete (a run undo already marked keeps its status). */
  completeRun(id: string, endedAt: string): Promise<void>;
  /** Undo's verdict on a run (rolled_back or partial); `undoneBy` when this undo is done with it. */
  setRunStatus(verdict: RunVerdict): Promise<void>;
  getRun(id: string): Promise<Run | undefined>;
  /** A run by any unique prefix of its id, or the most recent when no prefix is given. */
  findRun(prefix: string | undefined): Promise<Run>;
  listRuns(): Promise<RunSummary[]>;
  /** Every run's id (what listRuns gives without counting each run's calls). */
  runIds(): Promise<string[]>;
}

/** Recording: a call's row from its intent to its outcome, and reading rows back. */
export interface RecordingRole {
  /**
   * Insert an action with the next seq of its run, in one transaction, so
   * several proxies and CLIs sharing the file never collide (R-JOURNAL-4).
   */
  insertAction(action: NewAction, options?: WriteOptions): Promise<Action>;
  /** Record how a call ended (applied, failed, …). Only a pending call can end: what undo settled stays. */
  finishAction(id: string, outcome: Outcome, options?: WriteOptions): Promise<void>;
  /** Record what a pending call learnt before it ended (a new pre-read, its task); a call no longer pending keeps its row. */
  notePending(id: string, news: PendingNews): Promise<void>;
  getAction(id: string): Promise<Action | undefined>;
  /** An action by any unique prefix of its id, among `statuses` when given. */
  findAction(prefix: string): Promise<Action>;
  actionsOfRun(runId: string): Promise<Action[]>;
  /** The most recent actions across runs (for `watch`). */
  recentActions(limit: number): Promise<Action[]>;
}

/** Approvals: calls held for a person, decided, spent by the retry they allow, withdrawn. */
export interface ApprovalsRole {
  /** Calls held for a decision, oldest first. */
  waiting(): Promise<Action[]>;
  /**
   * A request for this exact call already raised and not yet answered, in any
   * run: a client that restarts and retries must not raise a second request
   * (two approvals would let the call run twice).
   */
  openRequest(call: CallIdentity): Promise<Action | undefined>;
  /**
   * Atomically spend an unexpired approval for this exact call: the approval is
   * marked spent by `spender`; returns it, or undefined when there is none.
   */
  spendApproval(request: SpendApproval): Promise<Action | undefined>;
  /** Give back an approval spent by a call that then never ran (cancelled, server unavailable, failed pre-read). */
  returnApproval(approvalId: string, spender: string): Promise<void>;
  /** A denial of this exact call the agent has not been told about; marks it told. */
  takeDenial(request: TakeDenial): Promise<Action | undefined>;
  /**
   * Approve or deny a held call. Returns the updated action, or the current
   * status when it is no longer awaiting a decision.
   */
  decide(
    id: string,
    decision: { status: "approved" | "denied"; by: string; at: string; reason?: string; rule?: string },
  ): Promise<{ action: Action } | { settled: ActionStatus }>;
  /**
   * An undo of a run withdraws its open requests for approval from seq
   * `fromSeq` on (R-GATE-7): they leave `gates`, are settled as denied, and no
   * agent is ever told of them as a denial. Returns the withdrawn requests.
   */
  withdrawRequests(request: WithdrawRequests): Promise<Action[]>;
}

/** Undo: the claims that make each inverse go once, what undo found, what a person settled or kept. */
export interface UndoRole {
  /**
   * Claim an action for undo: only one undo process at a time may work on it.
   * `from` lists the statuses it may be claimed from.
   */
  claim(claim: Claim): Promise<boolean>;
  /** Claim each of `ids` that is in one of `from`, in one transaction; returns the claimed ones as they now stand. */
  claimMany(claim: ClaimMany): Promise<Action[]>;
  /**
   * Take over a claim left by an undo that is gone (or restamp one's own):
   * only while it is still the claim the caller judged, the same owner and
   * the same stamp — an undo that restamped it meanwhile is not gone.
   */
  takeOverClaim(takeover: TakeOverClaim): Promise<boolean>;
  /**
   * Settle a claimed action (rolled_back, back to applied, …). `undoNote` says
   * what stopped this attempt; it replaces the previous note (none: cleared).
   */
  settleClaim(settled: SettleClaim, options?: WriteOptions): Promise<void>;
  /**
   * Written before a claimed action's inverse leaves (like a call's intent):
   * an undo killed before it records the outcome leaves an unknown outcome,
   * not a row that looks untouched.
   */
  markInverseSent(sent: InverseSent): Promise<boolean>;
  /** Keep a claim whose inverse's outcome is unknown, saying why undo stopped there. */
  noteClaim(note: ClaimNote, options?: WriteOptions): Promise<void>;
  /** Say why undo stepped over an action, without changing its status. */
  noteUndo(id: string, note: string, options?: WriteOptions): Promise<void>;
  /**
   * Record what a person found about an unknown outcome (synartesis settle):
   * the row moves from `from` to `status`, only if it is still there (and, for
   * a claimed inverse, still held by `claimedBy`). `inverse` and `warnings`,
   * when given, replace the row's (an inverse built now that the call is known to have run).
   */
  settle(
    id: string,
    from: { status: ActionStatus; claimedBy?: string },
    finding: { status: ActionStatus; settled: Settled; by: string; at: string; note?: string; inverse?: Inverse; warnings?: string[] },
  ): Promise<boolean>;
  /**
   * Record that a person keeps these calls' effects (R-PEOPLE-1): each that
   * ran or may have run, and that no undo holds, is marked kept. Returns the
   * ids marked; the others are left as they were.
   */
  keep(runId: string, seqs: number[], decision: { by: string; at: string; reason?: string }): Promise<string[]>;
  /** Mark an action that undo can never revert (an irreversible call that ran). */
  markUnrecoverable(id: string, options?: WriteOptions): Promise<void>;
  /** `--replan`: store a rebuilt inverse and verification read. */
  replan(id: string, inverse: Inverse | undefined, verify: VerifyCall | undefined, warnings: string[]): Promise<void>;
}

/** The chain that makes the record tamper-evident (R-VERIFY, chain.ts). */
export interface ChainRole {
  /** A run's chain, oldest entry first. */
  chainOf(runId: string): Promise<ChainEntry[]>;
  /** The state of each action row of a run, as its chain holds states (chain.ts), in seq order. */
  actionStatesOf(runId: string): Promise<ActionState[]>;
  /** Every run that has a chain (one whose rows were removed included). */
  chainedRuns(): Promise<string[]>;
  /** For a journal that had runs before it kept a chain: when those were chained as they stood. */
  chainOrigin(): Promise<{ migratedAt?: string }>;
  /** Record that a person acted on a run in spite of breaks in its chain (`--force`). */
  noteOverride(runId: string, note: { by: string; breaks: string[] }): Promise<void>;
}

/** The journal: every role, over one connection (a SQLite file, or a PostgreSQL database). */
export interface Journal extends JournalStore, RunsRole, RecordingRole, ApprovalsRole, UndoRole, ChainRole {}

/**
 * The journal, once the variables it took a secret from (PGPASSWORD) are gone
 * from this process's environment: its connection holds the password, and a
 * server started from here (the proxy's, undo's) that runs SQL for the agent
 * could otherwise write the journal and approve the agent's own held calls.
 */
export function withheldSecrets<J extends Journal>(journal: J): J {
  for (const name of journal.secretsFromEnvironment) delete process.env[name];
  return journal;
}

/** A journal location that names a PostgreSQL database rather than a file. */
export function isDatabaseUrl(location: string): boolean {
  return /^postgres(ql)?:\/\//.test(location);
}

/** A journal location as people may see it: a database URL loses its password. */
export function shownLocation(location: string): string {
  return isDatabaseUrl(location) ? withoutPassword(location) : location;
}

/**
 * Whether there may be a journal to open: a database always (opening it
 * says); a file once it exists and is not empty (an empty one is a journal
 * a proxy is creating this instant: let it finish).
 */
export function journalMayExist(location: string): boolean {
  return isDatabaseUrl(location) || (existsSync(location) && statSync(location).size > 0);
}

/**
 * Open the journal at `location`: a `postgres://` or `postgresql://` URL, or a
 * file. With `create`, a missing one is made; without it, a missing journal
 * is refused rather than created.
 */
export async function openJournal(location: string, options: { create: boolean }): Promise<Journal> {
  if (isDatabaseUrl(location)) {
    const { openPostgresJournal } = await import("./postgres/journal.ts");
    return openPostgresJournal(location, options);
  }
  const { openSqliteJournal } = await import("./sqlite/journal.ts");
  return openSqliteJournal(location, options);
}
