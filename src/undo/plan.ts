// The undo planner (R-UNDO): journal rows + observations of the current state
// → steps. Pure: no I/O, no clock. execute.ts applies the same judgements one
// action at a time; planUndo() runs them all for --dry-run, simulating the
// effect of newer steps so a record touched twice is not reported as drifted.
import { canonicalJson, sameJson } from "../canonical.ts";
import type { Action, Observation, ResolvedCall, VerifyCall } from "../journal/types.ts";

/** What a verification read saw now. */
export type Observed = { kind: "present"; payload: unknown } | { kind: "absent" } | { kind: "error"; text: string };

export type StaticVerdict =
  | { kind: "skip"; why: string }
  | { kind: "left"; why: string }
  | { kind: "halt"; why: string; hint?: string }
  | { kind: "check"; call: ResolvedCall; verify: VerifyCall }
  | { kind: "revert"; call: ResolvedCall; unverified: true };

export type StepOutcome = "skip" | "left" | "halt" | "revert" | "already" | "drift";

export interface Step {
  action: Action;
  outcome: StepOutcome;
  why: string;
  hint?: string;
  /** The inverse call, with literal values, for "revert". */
  call?: ResolvedCall;
  /** A compensable action with no pre-read: reverted without a drift check (R-UNDO-4). */
  unverified?: boolean;
  /** For "drift": what the agent left, and what is there now. */
  expected?: Observation;
  actual?: Observation;
}

/** Actions in scope for undo, newest first (R-UNDO-1, R-UNDO-6). */
export function inScope(actions: Action[], fromSeq = 1): Action[] {
  return actions.filter((a) => a.seq >= fromSeq).sort((a, b) => b.seq - a.seq);
}

/** Whether undo has anything to do here: something to revert, report or stop at. */
export function hasWork(actions: Action[], fromSeq = 1): boolean {
  return inScope(actions, fromSeq).some((action) => staticVerdict(action).kind !== "skip");
}

/** What can be decided from the journal row alone. */
export function staticVerdict(action: Action): StaticVerdict {
  const name = `${action.server}.${action.tool}`;
  switch (action.status) {
    case "gated":
      return { kind: "skip", why: "held for approval; it never ran" };
    case "approved":
      return { kind: "skip", why: action.spentBy ? "an approval, spent by the call that ran" : "approved, but never retried; it never ran" };
    case "denied":
      return { kind: "skip", why: "denied; it never ran" };
    case "failed":
      return { kind: "skip", why: "it failed, so it changed nothing to undo" };
    case "rolled_back":
      return { kind: "skip", why: "already undone" };
    case "unrecoverable":
      return { kind: "left", why: `${name} cannot be undone; left in place` };
    case "pending":
      return {
        kind: "halt",
        why: `the outcome of ${name} is unknown (the proxy never learnt whether it ran)`,
        hint: "Check the state by hand. Undo will not guess past a call whose effect is unknown.",
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
      return { kind: "left", why: `${name} ran where nothing existed before, so there is no earlier state to restore; left in place` };
    }
    return {
      kind: "halt",
      why: `${name} has no usable inverse${action.warnings.length ? ` (${action.warnings.join("; ")})` : ""}`,
      hint: "Fix the rule in the manifest, then run undo again with --replan to rebuild the inverses from the state already captured.",
    };
  }
  if (action.verify && action.postState) return { kind: "check", call: action.inverse, verify: action.verify };
  if (action.verify && !action.postState) {
    return {
      kind: "halt",
      why: `${name} has no recorded post-state (its post-read failed), so undo cannot tell whether someone changed it since`,
      hint: "Compare the state by hand; undo will not overwrite what it cannot check.",
    };
  }
  return { kind: "revert", call: action.inverse, unverified: true };
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
  if (sameObservation(now, action.postState)) return { action, outcome: "revert", why: "state is as the agent left it", call: verdict.call };
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

export function verifyKey(verify: VerifyCall): string {
  return canonicalJson({ server: verify.server, tool: verify.tool, args: verify.args });
}

/**
 * The whole plan for --dry-run: every in-scope action newest first, stopping
 * at the first halt or drift. `observations` holds the current state per
 * verification read (verifyKey); planned reverts update a simulated copy.
 */
export function planUndo(actions: Action[], fromSeq: number, observations: Map<string, Observed>): Step[] {
  const simulated = new Map(observations);
  const touched = new Set<string>();
  const reverted: Array<{ key: string; post: Observation; pre: Observation }> = [];
  const steps: Step[] = [];
  for (const action of inScope(actions, fromSeq)) {
    const verdict = staticVerdict(action);
    if (verdict.kind === "skip" || verdict.kind === "left" || verdict.kind === "halt") {
      steps.push({ action, outcome: verdict.kind, why: verdict.why, ...(verdict.kind === "halt" && verdict.hint ? { hint: verdict.hint } : {}) });
      if (verdict.kind === "halt") break;
      continue;
    }
    if (verdict.kind === "revert") {
      steps.push({ action, outcome: "revert", why: "no pre-read was declared, so drift cannot be checked", call: verdict.call, unverified: true });
      continue;
    }
    const key = verifyKey(verdict.verify);
    let observed = simulated.get(key) ?? { kind: "error", text: "not observed" };
    if (!touched.has(key)) observed = throughReverts(observed, key, reverted);
    const step = judge(action, verdict, observed);
    steps.push(step);
    if (step.outcome === "halt" || step.outcome === "drift") break;
    const before = action.snapshot!;
    simulated.set(key, toObserved(before));
    touched.add(key);
    reverted.push({ key, post: action.postState!, pre: before });
  }
  return steps;
}

function toObserved(observation: Observation): Observed {
  return observation.absent ? { kind: "absent" } : { kind: "present", payload: observation.payload };
}

/**
 * The same record can be read through different arguments (a relative and an
 * absolute path, say). When what this read sees now is exactly what a newer,
 * planned revert expects to find, assume that revert changes it too.
 */
function throughReverts(observed: Observed, key: string, reverted: Array<{ key: string; post: Observation; pre: Observation }>): Observed {
  let current = observed;
  for (const revert of reverted) {
    if (revert.key !== key && sameObservation(observationOf(current), revert.post)) current = toObserved(revert.pre);
  }
  return current;
}

/** The verification reads a dry run needs (distinct, newest first). */
export function readsNeeded(actions: Action[], fromSeq: number): VerifyCall[] {
  const reads = new Map<string, VerifyCall>();
  for (const action of inScope(actions, fromSeq)) {
    const verdict = staticVerdict(action);
    if (verdict.kind === "check") reads.set(verifyKey(verdict.verify), verdict.verify);
  }
  return [...reads.values()];
}
