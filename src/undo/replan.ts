// --replan (R-UNDO-7): rebuild an action's inverse and verification read from
// the current manifest, using the state captured when the call ran. Pure.
import type { Action, Inverse, VerifyCall } from "../journal/types.ts";
import { resolveRead, ruleInverse } from "../manifest/inverse.ts";
import type { Matcher } from "../manifest/match.ts";
import { payloadOf, ResolveError } from "../manifest/refs.ts";

export interface Replanned {
  inverse?: Inverse;
  verify?: VerifyCall;
  warnings: string[];
}

/**
 * Undefined when the action is not something undo would revert. `givenResult`:
 * the call's result payload as a person found it (its answer never came).
 */
export function replanAction(action: Action, matcher: Matcher, givenResult?: unknown): Replanned | undefined {
  if (action.status !== "applied" && action.status !== "rolling_back") return undefined;
  if (action.class === "readonly" || action.class === "irreversible") return undefined;
  const rule = matcher.classify(action.server, action.tool, action.args).rule;
  // Warnings about the inverse are what a replan recomputes; the others (a failed post-read, say) still hold.
  const warnings = action.warnings.filter((w) => !w.includes("undo has no usable inverse"));
  const out: Replanned = { warnings, ...(action.verify ? { verify: action.verify } : {}) };
  if (!rule?.inverse && !(action.snapshot?.absent && rule?.whenAbsent)) {
    warnings.push(`the current manifest has no inverse for ${action.server}.${action.tool}; undo has no usable inverse for this call`);
    return out;
  }
  const result = givenResult !== undefined ? givenResult : action.resultText === undefined ? undefined : payloadOf(JSON.parse(action.resultText));
  try {
    // Undefined when nothing existed before and the inverse writes that back: nothing to write.
    const inverse = ruleInverse(rule, { args: action.args, snapshot: action.snapshot, result });
    if (inverse) out.inverse = inverse;
  } catch (error) {
    if (!(error instanceof ResolveError)) throw error;
    warnings.push(`the inverse could not be resolved (${error.message}); undo has no usable inverse for this call`);
  }
  // The drift check stays whenever state was captured: a replan must never turn a checked revert into a blind one.
  if (rule.snapshot && action.snapshot) {
    try {
      out.verify = resolveRead(rule.snapshot, action.args);
    } catch (error) {
      if (!(error instanceof ResolveError)) throw error;
      warnings.push(`the verification read could not be resolved (${error.message})`);
    }
  }
  return out;
}
