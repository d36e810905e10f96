// R-PEOPLE-1: a person keeps the effect of calls undo stopped at (a drifted
// record, an unknown outcome), so the rest of the run can be undone and the
// run finished. What may be kept is decided here, for the CLI and the page.
import { SynartesisError } from "../errors.ts";
import type { Journal } from "../journal/journal.ts";
import { shortId, type Action, type Run } from "../journal/types.ts";
import type { Step } from "./plan.ts";

/** Why this call's effect cannot be kept; undefined when it can. Mirrors the journal's KEEPABLE. */
export function keepRefusal(action: Action): string | undefined {
  if (action.keptAt) return undefined;
  if (action.class === "readonly") return "it only read; there is no effect to keep";
  switch (action.status) {
    case "gated":
    case "approved":
    case "denied":
      return "it never ran; there is no effect to keep";
    case "failed":
      return "it failed, so it changed nothing to keep";
    case "rolled_back":
      return "an undo already reverted it";
    case "rolling_back":
      return "an undo is reverting it right now (or was interrupted: run undo again to finish that first)";
  }
  return undefined;
}

/**
 * Whether the way out of a stop is also to keep the call: not when undo's own
 * inverse is what is unknown (settle that); the step's row may still show the
 * claim this undo gave back when it stopped.
 */
export function keepOffered(step: Step): boolean {
  if (step.settle === "inverse") return false;
  const action = step.action.status === "rolling_back" ? { ...step.action, status: "applied" as const } : step.action;
  return keepRefusal(action) === undefined;
}

export interface KeepDecision {
  by: string;
  at: string;
  reason?: string;
}

/**
 * Record that the calls numbered `seqs` keep their effect. Every number is
 * checked first: one that names no call of the run, or a call that cannot be
 * kept, refuses the whole request and records nothing. Returns the calls
 * kept now and those kept before.
 */
export async function keepCalls(
  journal: Journal,
  run: Run,
  actions: Action[],
  seqs: number[],
  decision: KeepDecision,
): Promise<{ kept: Action[]; already: Action[] }> {
  const chosen = seqs.map((seq) => {
    const action = actions.find((a) => a.seq === seq);
    if (!action) throw new SynartesisError("usage", `run ${shortId(run.id)} has no call #${seq}`);
    return action;
  });
  const refusals = chosen.flatMap((action) => {
    const why = keepRefusal(action);
    return why ? [`#${action.seq} ${action.server}.${action.tool}: ${why}`] : [];
  });
  if (refusals.length) throw new SynartesisError("refused", "nothing was kept", { details: refusals });
  const already = chosen.filter((action) => action.keptAt);
  const marked = new Set(
    await journal.keep(
      run.id,
      chosen.filter((action) => !action.keptAt).map((action) => action.seq),
      decision,
    ),
  );
  const fresh = await journal.actionsOfRun(run.id);
  const kept = fresh.filter((action) => marked.has(action.id));
  if (kept.length + already.length < chosen.length) {
    throw new SynartesisError("refused", "an undo took some of these calls meanwhile; nothing more was kept", {
      details: kept.map((a) => `#${a.seq} was kept`),
    });
  }
  return { kept, already };
}
