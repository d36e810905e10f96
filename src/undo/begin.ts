// What an undo decides before its first step, for the CLI and the review page
// alike: a run still being recorded is refused (unless forced), the scope is
// checked, a run already rolled back or with nothing to revert says so, and
// the run's open requests for approval are withdrawn (R-GATE-7).
import { SynartesisError } from "../errors.ts";
import type { Journal } from "../journal/journal.ts";
import { shortId, type Action, type Run } from "../journal/types.ts";
import { processAlive } from "../processes.ts";
import { formatTime, printable } from "../text.ts";
import { checkScope, hasWork, inScope, staticVerdict } from "./plan.ts";

export type UndoOpening =
  /** Nothing to revert, because an undo already rolled the run back. */
  | { kind: "already"; when?: string; by?: string }
  /** Nothing to revert; `withdrawn` (real undo) or `wouldWithdraw` (dry run) are its open requests. */
  | { kind: "nothing"; withdrawn: Action[]; wouldWithdraw: Action[] }
  /** Steps to take, over `actions` (the run's, with the open requests in scope withdrawn first: none in a dry run). */
  | { kind: "work"; actions: Action[] };

export interface OpeningOptions {
  fromSeq: number;
  dryRun: boolean;
  /** Undo even though the run's proxy is still recording it. */
  force: boolean;
  /** The person undoing (recorded on withdrawn requests and on the run). */
  by: string;
  now: () => Date;
  /** Whether the run was picked as "the most recent" (then an empty one points at an older run with work). */
  picked: boolean;
}

export async function openUndo(journal: Journal, run: Run, actions: Action[], options: OpeningOptions): Promise<UndoOpening> {
  const { fromSeq, dryRun, by } = options;
  // Undoing a run while its proxy still records into it would race the agent.
  if (!dryRun && run.status === "active" && processAlive(run.host, run.pid) && !options.force) {
    throw new SynartesisError("refused", `run ${shortId(run.id)} is still being recorded: its proxy (pid ${run.pid}) is running`, {
      hint: "Undo it once its client has disconnected (the run is then complete), or pass --force to undo what it has recorded so far.",
    });
  }
  checkScope(actions, fromSeq, shortId(run.id));
  // Requests still waiting, and approvals given but never used: neither may run once the run is undone.
  const openRequests = inScope(actions, fromSeq).filter((a) => a.status === "gated" || (a.status === "approved" && !a.spentBy));
  if (hasWork(actions, fromSeq)) {
    // Requests go first, so none of them can be approved and run while the run is undone.
    const withdrawn = dryRun ? [] : await journal.withdrawRequests({ runId: run.id, fromSeq, by, at: options.now().toISOString() });
    return { kind: "work", actions: withWithdrawn(actions, withdrawn) };
  }
  if (run.status === "rolled_back") {
    const when = run.undoneAt ?? run.endedAt;
    return { kind: "already", ...(when ? { when } : {}), ...(run.undoneBy ? { by: run.undoneBy } : {}) };
  }
  // A client that reconnected after the damage leaves an empty newest run: point at the one that matters.
  const older = options.picked && fromSeq === 1 && openRequests.length === 0 ? await olderRunWithWork(journal, run) : undefined;
  if (older) {
    throw new SynartesisError("refused", `the most recent run ${shortId(run.id)} (${printable(run.label)}, ${run.status}) has nothing to undo`, {
      hint: `The most recent run with something to undo is ${shortId(older.id)} (${printable(older.label)}, started ${formatTime(older.startedAt)}): synartesis undo ${shortId(older.id)}`,
    });
  }
  if (dryRun) return { kind: "nothing", withdrawn: [], wouldWithdraw: openRequests };
  if (openRequests.length === 0) {
    // What an undo stopped at is settled now (kept, or found not to have run): the run is finished.
    if (run.status === "partial" && !actions.some((action) => staticVerdict(action).kind !== "skip")) {
      await journal.setRunStatus({ id: run.id, status: "rolled_back", at: options.now().toISOString(), undoneBy: by });
    }
    return { kind: "nothing", withdrawn: [], wouldWithdraw: [] };
  }
  const at = options.now().toISOString();
  const withdrawn = await journal.withdrawRequests({ runId: run.id, fromSeq, by, at });
  await journal.setRunStatus({ id: run.id, status: "rolled_back", at, undoneBy: by });
  return { kind: "nothing", withdrawn, wouldWithdraw: [] };
}

/** The run's actions with the requests just withdrawn as they are now. */
function withWithdrawn(actions: Action[], withdrawn: Action[]): Action[] {
  const now = new Map(withdrawn.map((action) => [action.id, action]));
  return actions.map((action) => now.get(action.id) ?? action);
}

/** The most recent run other than `run` that has something to undo. */
async function olderRunWithWork(journal: Journal, run: Run): Promise<Run | undefined> {
  for (const other of await journal.listRuns()) {
    if (other.id !== run.id && hasWork(await journal.actionsOfRun(other.id))) return other;
  }
  return undefined;
}
