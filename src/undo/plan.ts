// The undo planner (R-UNDO): journal rows + observations of the current state
// → steps. Pure: no I/O, no clock. execute.ts applies the same judgements one
// action at a time; planUndo() runs them all for --dry-run, simulating the
// effect of newer steps so a record touched twice is not reported as drifted.
import { canonicalJson, sameJson } from "../canonical.ts";
import { SynartesisError } from "../errors.ts";
import type { Action, Observation, ResolvedCall, VerifyCall } from "../journal/types.ts";

/** What a verification read saw now. */
export type Observed = { kind: "present"; payload: unknown } | { kind: "absent" } | { kind: "error"; text: string };

export type StaticVerdict =
  | { kind: "skip"; why: string }
  | { kind: "left"; why: string }
  | { kind: "halt"; why: string; hint?: string; settle?: "call" }
  | { kind: "check"; call: ResolvedCall; verify: VerifyCall }
  /** A call whose outcome is unknown, but whose pre-state was captured: a read can tell whether it left a trace. */
  | { kind: "unknown"; verify: VerifyCall }
  | { kind: "revert"; call: ResolvedCall; unverified: true; why: string };

/** unrestored: the inverse ran, but the state read afterwards is not the state from before the call. */
export type StepOutcome = "skip" | "left" | "halt" | "revert" | "already" | "drift" | "unrestored";

export interface Step {
  action: Action;
  outcome: StepOutcome;
  why: string;
  hint?: string;
  /** The inverse call, with literal values, for "revert". */
  call?: ResolvedCall;
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
  const name = `${action.server}.${action.tool}`;
  switch (action.status) {
    case "gated":
      return { kind: "skip", why: "held for approval; it never ran (a real undo withdraws the request)" };
    case "approved":
      return { kind: "skip", why: action.spentBy ? "an approval, spent by the call that ran" : "approved, but never retried; it never ran" };
    case "denied":
      if (action.withdrawnAt) return { kind: "skip", why: `its request for approval was withdrawn by an undo (${action.withdrawnBy ?? "?"}, ${action.withdrawnAt}); it never ran` };
      return { kind: "skip", why: "denied; it never ran" };
    case "failed":
      if (action.settled === "not_applied") return { kind: "skip", why: `${settledBy(action)} found that it did not run: nothing to undo` };
      return { kind: "skip", why: "it failed, so it changed nothing to undo" };
    case "rolled_back":
      return { kind: "skip", why: "already undone" };
    case "unrecoverable":
      return { kind: "left", why: action.undoNote ? `${name}: ${action.undoNote}; left for a person` : `${name} cannot be undone; left in place` };
    case "pending":
      if (action.verify && action.snapshot && (action.class === "reversible" || action.class === "compensable")) {
        return { kind: "unknown", verify: action.verify };
      }
      return {
        kind: "halt",
        why: `the outcome of ${name} is unknown (the proxy never learnt whether it ran)`,
        hint: SETTLE_CALL_HINT,
        settle: "call",
      };
    case "applied":
    case "rolling_back":
      break;
  }
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

const SETTLE_CALL_HINT =
  "Check the state by hand, then record what you found with synartesis settle (below). Undo will not guess past a call whose effect is unknown.";

function settledBy(action: Action): string {
  return `${action.settledBy ?? "a person"} (${action.settledAt ?? "?"})`;
}

/** The step for a verdict that needs no read: skip, left or halt. */
export function staticStep(action: Action, verdict: Extract<StaticVerdict, { kind: "skip" | "left" | "halt" }>): Step {
  if (verdict.kind !== "halt") return { action, outcome: verdict.kind, why: verdict.why };
  return { action, outcome: "halt", why: verdict.why, ...(verdict.hint ? { hint: verdict.hint } : {}), ...(verdict.settle ? { settle: verdict.settle } : {}) };
}

function observationOf(observed: Observed): Observation | undefined {
  if (observed.kind === "present") return { absent: false, payload: observed.payload };
  if (observed.kind === "absent") return { absent: true };
  return undefined;
}

function sameObservation(a: Observation | undefined, b: Observation | undefined): boolean {
  if (!a || !b) return false;
  if (a.absent || b.absent) return a.absent === b.absent;
  return sameJson(a.payload, b.payload);
}

/** Judge a checked action against what its verification read sees now (R-UNDO-2). */
export function judge(action: Action, verdict: Extract<StaticVerdict, { kind: "check" }>, observed: Observed): Step {
  const name = `${action.server}.${action.tool}`;
  const now = observationOf(observed);
  if (!now) {
    return {
      action,
      outcome: "halt",
      why: `the verification read ${verdict.verify.server}.${verdict.verify.tool} failed: ${observed.kind === "error" ? observed.text : ""}`,
      hint: "Undo cannot check this record for drift; fix the cause and run undo again.",
    };
  }
  if (sameObservation(now, action.postState)) {
    // A compensating inverse is not built from the snapshot: when something existed before, say that it is checked afterwards.
    const caution =
      action.class === "compensable" && action.snapshot && !action.snapshot.absent
        ? "the record existed before this call and this inverse is not built from it: undo reads it again afterwards and stops if it is not as it was"
        : undefined;
    return { action, outcome: "revert", why: "state is as the agent left it", call: verdict.call, ...(caution ? { caution } : {}) };
  }
  if (sameObservation(now, action.snapshot)) return { action, outcome: "already", why: "already reverted (the state equals what it was before)" };
  return {
    action,
    outcome: "drift",
    why: `${name}: the state changed after the agent's call; undo will not overwrite it`,
    hint: "Something else changed this record after the agent did. If the older agent changes must still go, put this record right by hand, then run undo again.",
    expected: action.postState,
    actual: now,
  };
}

/**
 * A call whose outcome is unknown: if the record is what it was before the
 * call, there is nothing to undo for it now, and undo steps over it (leaving
 * it pending: it is still unknown). Anything else is a change undo cannot
 * attribute, so it stops.
 */
export function judgeUnknown(action: Action, observed: Observed, stillLanding?: string): Step {
  const name = `${action.server}.${action.tool}`;
  if (stillLanding) {
    return {
      action,
      outcome: "halt",
      why: `the outcome of ${name} is not known yet: ${stillLanding}`,
      hint: "Run undo again once its answer has come or its time is up.",
    };
  }
  if (observed.kind === "error") {
    return {
      action,
      outcome: "halt",
      why: `the outcome of ${name} is unknown, and undo could not read the record to see whether it left a trace: ${observed.text}`,
      hint: "Fix the cause and run undo again.",
    };
  }
  if (sameObservation(observationOf(observed), action.snapshot)) {
    return { action, outcome: "skip", why: `the outcome of ${name} is unknown, but the record is what it was before the call: nothing to undo for it now` };
  }
  return {
    action,
    outcome: "halt",
    why: `the outcome of ${name} is unknown (the proxy never learnt whether it ran), and the state is not what it was before it`,
    hint: SETTLE_CALL_HINT,
    settle: "call",
    ...beforeAndNow(action, observed),
  };
}

/** What was there before the agent's call, and what is there now: for a person deciding an unknown outcome. */
function beforeAndNow(action: Action, observed: Observed | undefined): Pick<Step, "expected" | "actual"> {
  const now = observed ? observationOf(observed) : undefined;
  return { ...(action.snapshot ? { expected: action.snapshot } : {}), ...(now ? { actual: now } : {}) };
}

/**
 * An action whose inverse an earlier undo sent and never learnt the outcome
 * of (it was killed, or no answer came): that inverse is itself an unknown
 * outcome. A read that finds the state from before shows it landed; otherwise
 * undo sends it again only when the rule declares the server idempotent
 * (same idempotency key), and else stops for a person to settle it.
 * `observed` is the verification read now, when the action has one.
 */
export function judgeInterrupted(action: Action, call: ResolvedCall, observed: Observed | undefined, idempotent: boolean): Step {
  const inverse = `${call.server}.${call.tool}`;
  if (observed && sameObservation(observationOf(observed), action.snapshot)) {
    return { action, outcome: "already", why: `an earlier undo sent ${inverse}, and the state is what it was before the call: it landed` };
  }
  if (observed?.kind === "error") {
    return {
      action,
      outcome: "halt",
      why: `an earlier undo sent ${inverse} without learning whether it landed, and undo could not read the record to see: ${observed.text}`,
      hint: "Fix the cause and run undo again.",
      call,
    };
  }
  if (observed && action.postState && !sameObservation(observationOf(observed), action.postState)) {
    return {
      action,
      outcome: "halt",
      why: `an earlier undo sent ${inverse} without learning whether it landed, and the state is neither what it was before the call nor what the agent left`,
      hint: SETTLE_INVERSE_HINT,
      call,
      settle: "inverse",
      ...beforeAndNow(action, observed),
    };
  }
  if (idempotent) {
    return {
      action,
      outcome: "revert",
      why: `an earlier undo sent this inverse without learning whether it landed; sent again with the same idempotency key, which the rule says its server honours (idempotent: true)`,
      call,
      resent: true,
      ...(observed ? {} : { unverified: true as const }),
    };
  }
  return {
    action,
    outcome: "halt",
    why: `an earlier undo sent ${inverse} without learning whether it landed; sending it again could apply it twice (the rule does not declare idempotent: true)`,
    hint: SETTLE_INVERSE_HINT,
    call,
    settle: "inverse",
    ...beforeAndNow(action, observed),
  };
}

export const SETTLE_INVERSE_HINT =
  "Check the record by hand, then record whether that inverse ran with synartesis settle (below): undo then goes on without sending it twice.";

export function verifyKey(verify: VerifyCall): string {
  return canonicalJson({ server: verify.server, tool: verify.tool, args: verify.args });
}

/**
 * The whole plan for --dry-run: every in-scope action newest first, stopping
 * at the first halt or drift. `observations` holds the current state per
 * verification read (verifyKey); planned reverts update a simulated copy.
 */
export function planUndo(
  actions: Action[],
  fromSeq: number,
  observations: Map<string, Observed>,
  /** Calls of unknown outcome whose answer may still come, with why. */
  stillLanding: Map<string, string> = new Map(),
  /** Actions whose inverse an interrupted undo sent with no outcome recorded, and whether their rule is idempotent. */
  interrupted: Map<string, boolean> = new Map(),
): Step[] {
  const simulated = new Map(observations);
  const steps: Step[] = [];
  for (const action of inScope(actions, fromSeq)) {
    const verdict = staticVerdict(action);
    if (verdict.kind === "skip" || verdict.kind === "left" || verdict.kind === "halt") {
      steps.push(staticStep(action, verdict));
      if (verdict.kind === "halt") break;
      continue;
    }
    const idempotent = interrupted.get(action.id);
    if (idempotent !== undefined && (verdict.kind === "check" || verdict.kind === "revert")) {
      const observed = action.verify ? (simulated.get(verifyKey(action.verify)) ?? { kind: "error", text: "not observed" }) : undefined;
      const step = judgeInterrupted(action, verdict.call, observed, idempotent);
      steps.push(step);
      if (isStop(step)) break;
      if (action.verify && action.snapshot) simulated.set(verifyKey(action.verify), observedOf(action.snapshot));
      continue;
    }
    if (verdict.kind === "revert") {
      steps.push({ action, outcome: "revert", why: verdict.why, call: verdict.call, unverified: true });
      if (action.verify && action.snapshot) simulated.set(verifyKey(action.verify), observedOf(action.snapshot));
      continue;
    }
    if (verdict.kind === "unknown") {
      const step = judgeUnknown(action, simulated.get(verifyKey(verdict.verify)) ?? { kind: "error", text: "not observed" }, stillLanding.get(action.id));
      steps.push(step);
      if (isStop(step)) break;
      continue;
    }
    const key = verifyKey(verdict.verify);
    const observed = simulated.get(key) ?? { kind: "error", text: "not observed" };
    const step = judge(action, verdict, observed);
    steps.push(step);
    if (isStop(step)) break;
    simulated.set(key, observedOf(action.snapshot!));
  }
  return steps;
}

function observedOf(observation: Observation): Observed {
  return observation.absent ? { kind: "absent" } : { kind: "present", payload: observation.payload };
}

/** The verification reads a dry run needs (distinct, newest first). */
export function readsNeeded(actions: Action[], fromSeq: number): VerifyCall[] {
  const reads = new Map<string, VerifyCall>();
  for (const action of inScope(actions, fromSeq)) {
    const verdict = staticVerdict(action);
    if (verdict.kind === "check" || verdict.kind === "unknown") reads.set(verifyKey(verdict.verify), verdict.verify);
    else if (verdict.kind === "revert" && action.verify && action.inverseSentAt) reads.set(verifyKey(action.verify), action.verify);
  }
  return [...reads.values()];
}
