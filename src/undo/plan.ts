// The undo plan (R-UNDO): which actions are in scope, what a journal row alone
// decides, and the Step every undo — dry run or real — reports. Pure: no I/O,
// no clock. judge.ts decides what needs a read; loop.ts walks the run.
import { SynartesisError } from "../errors.ts";
import type { Action, Observation, Inverse, VerifyCall } from "../journal/types.ts";

export type StaticVerdict =
  | { kind: "skip"; why: string }
  | { kind: "left"; why: string }
  | { kind: "halt"; why: string; hint?: string; settle?: "call" }
  | { kind: "check"; call: Inverse; verify: VerifyCall }
  /** A call whose outcome is unknown, but whose pre-state was captured: a read can tell whether it left a trace. */
  | { kind: "unknown"; verify: VerifyCall }
  | { kind: "revert"; call: Inverse; unverified: true; why: string };

/** unrestored: the inverse ran, but the state read afterwards is not the state from before the call. */
export type StepOutcome = "skip" | "left" | "halt" | "revert" | "already" | "drift" | "unrestored";

export interface Step {
  action: Action;
  outcome: StepOutcome;
  why: string;
  hint?: string;
  /** The inverse call, with literal values, for "revert". */
  call?: Inverse;
  /** A compensable action with no pre-read: reverted without a drift check (R-UNDO-4). */
  unverified?: boolean;
  /** Something a person should know about a revert before it runs. */
  caution?: string;
  /**
   * For "drift": what the agent left, and what is there now; for "unrestored"
   * and an unknown outcome: what was there before the agent's call, and now.
   */
  expected?: Observation;
  actual?: Observation;
  /** An unknown outcome a person can settle (synartesis settle) to let undo go on. */
  settle?: "call" | "inverse";
  /** An inverse sent again after an interrupted undo (the rule is idempotent). */
  resent?: boolean;
}

/** Stops: the steps after which undo does not go on. */
export function isStop(step: Pick<Step, "outcome">): boolean {
  return step.outcome === "halt" || step.outcome === "drift" || step.outcome === "unrestored";
}

/** Actions in scope for undo, newest first (R-UNDO-1, R-UNDO-6). */
export function inScope(actions: Action[], fromSeq = 1): Action[] {
  return actions.filter((a) => a.seq >= fromSeq).sort((a, b) => b.seq - a.seq);
}

/** Refuse a scope that starts past the run's last call (`--to` too high). */
export function checkScope(actions: Action[], fromSeq: number, runRef: string): void {
  const lastSeq = Math.max(0, ...actions.map((a) => a.seq));
  if (fromSeq > 1 && fromSeq > lastSeq) {
    throw new SynartesisError("usage", `--to ${fromSeq} is past the last call of run ${runRef} (#${lastSeq})`);
  }
}

/** Whether undo has anything to do here: something to revert or stop at (not only what it already left in place). */
export function hasWork(actions: Action[], fromSeq = 1): boolean {
  return inScope(actions, fromSeq).some((action) => staticVerdict(action).kind !== "skip" && action.status !== "unrecoverable");
}

/** What can be decided from the journal row alone. */
export function staticVerdict(action: Action): StaticVerdict {
  if (action.keptAt && (action.status === "applied" || action.status === "pending" || action.status === "unrecoverable")) {
    return {
      kind: "skip",
      why: `kept by ${action.keptBy ?? "a person"} (${action.keptAt})${action.keptReason ? `: ${action.keptReason}` : ""}; its effect stays`,
    };
  }
  return statusVerdict(action) ?? ranVerdict(action);
}

/** What a row's status alone decides (it never ran, it is undone, its outcome is unknown); undefined for a call that ran. */
function statusVerdict(action: Action): StaticVerdict | undefined {
  const name = `${action.server}.${action.tool}`;
  switch (action.status) {
    case "gated":
      return { kind: "skip", why: "held for approval; it never ran (a real undo withdraws the request)" };
    case "approved":
      return {
        kind: "skip",
        why: action.spentBy ? "an approval, spent by the call that ran" : "approved, but never retried; it never ran (a real undo withdraws the approval)",
      };
    case "denied":
      if (action.withdrawnAt) {
        const what = action.approvedBy ? `its approval (by ${action.approvedBy}, never used)` : "its request for approval";
        return { kind: "skip", why: `${what} was withdrawn by an undo (${action.withdrawnBy ?? "?"}, ${action.withdrawnAt}); it never ran` };
      }
      return { kind: "skip", why: "denied; it never ran" };
    case "failed":
      if (action.settled === "not_applied") return { kind: "skip", why: `${settledBy(action)} found that it did not run: nothing to undo` };
      return { kind: "skip", why: "it failed, so it changed nothing to undo" };
    case "rolled_back":
      return { kind: "skip", why: "already undone" };
    case "unrecoverable":
      return { kind: "left", why: action.undoNote ? `${name}: ${action.undoNote}; left for a person` : `${name} cannot be undone; left in place` };
    case "pending":
      // A read says whether it left a trace; a task still running may leave one later (claims.ts says so).
      if (action.verify && action.snapshot && (action.class === "reversible" || action.class === "compensable")) {
        return { kind: "unknown", verify: action.verify };
      }
      return {
        kind: "halt",
        why: action.task
          ? `the outcome of ${name} is unknown: it runs as task ${action.task}, which had not ended when Synartesis last saw it`
          : `the outcome of ${name} is unknown (the proxy never learnt whether it ran)`,
        hint: SETTLE_CALL_HINT,
        settle: "call",
      };
    case "applied":
    case "rolling_back":
      return undefined;
  }
}

/** A call that ran: what its class, its inverse and what was read around it allow. */
function ranVerdict(action: Action): StaticVerdict {
  const name = `${action.server}.${action.tool}`;
  if (action.class === "readonly") return { kind: "skip", why: "read only; nothing to undo" };
  if (action.class === "irreversible") {
    const by = action.approvedBy ? ` (approved by ${action.approvedBy})` : "";
    return { kind: "left", why: `${name} is irreversible and ran${by}; left in place` };
  }
  if (!action.inverse) {
    if (action.snapshot?.absent) {
      return {
        kind: "left",
        why: `there was nothing there before ${name} ran, and its rule's inverse can only write back a state from before; undo leaves what it created in place (remove it by hand if it must go)`,
      };
    }
    return {
      kind: "halt",
      why: `${name} has no usable inverse${action.warnings.length ? ` (${action.warnings.join("; ")})` : ""}`,
      hint: "Fix the rule in the manifest, then run undo again with --replan to rebuild the inverses from the state already captured.",
    };
  }
  if (action.verify && action.postState) return { kind: "check", call: action.inverse, verify: action.verify };
  if (action.verify && !action.postState && action.settled === "applied") {
    return {
      kind: "revert",
      call: action.inverse,
      unverified: true,
      why: `${settledBy(action)} found that it ran; no state after it was recorded, so it is reverted without a drift check`,
    };
  }
  if (action.verify && !action.postState) {
    return {
      kind: "halt",
      why: `${name} has no recorded post-state (its post-read failed), so undo cannot tell whether someone changed it since`,
      hint: "Compare the state by hand; undo will not overwrite what it cannot check.",
    };
  }
  return { kind: "revert", call: action.inverse, unverified: true, why: "no pre-read was declared, so drift cannot be checked" };
}

export const SETTLE_CALL_HINT =
  "Check the state by hand, then record what you found with synartesis settle (below). Undo will not guess past a call whose effect is unknown.";

function settledBy(action: Action): string {
  return `${action.settledBy ?? "a person"} (${action.settledAt ?? "?"})`;
}

/** The step for a verdict that needs no read: skip, left or halt. */
export function staticStep(action: Action, verdict: Extract<StaticVerdict, { kind: "skip" | "left" | "halt" }>): Step {
  if (verdict.kind !== "halt") return { action, outcome: verdict.kind, why: verdict.why };
  return { action, outcome: "halt", why: verdict.why, ...(verdict.hint ? { hint: verdict.hint } : {}), ...(verdict.settle ? { settle: verdict.settle } : {}) };
}
