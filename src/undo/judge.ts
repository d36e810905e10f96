// Undo's judgements that need to look at the world (R-UNDO-2…5, R-UNDO-8): an
// action against what its verification read sees now, a call or an inverse of
// unknown outcome, and what an inverse's answer means. Pure: the loop (loop.ts)
// brings the reads and answers, from the live servers or a simulation.
import { canonicalJson, sameJson } from "../canonical.ts";
import { inverseCalls, readFailed, type Action, type Observation, type Read, type Inverse, type VerifyCall } from "../journal/types.ts";
import { SETTLE_CALL_HINT, type StaticVerdict, type Step } from "./plan.ts";

export const SETTLE_INVERSE_HINT =
  "Check the record by hand, then record whether that inverse ran with synartesis settle (below): undo then goes on without sending it twice.";

/** Where a verification read's state is kept: the same read whatever the key order of its arguments. */
export function verifyKey(verify: VerifyCall): string {
  return canonicalJson({ server: verify.server, tool: verify.tool, args: verify.args });
}

/** Whether a read saw exactly the recorded state (a failed read, or nothing recorded, is never the same). */
export function sameObservation(read: Read | undefined, recorded: Observation | undefined): boolean {
  if (!read || !recorded || readFailed(read)) return false;
  if (read.absent || recorded.absent) return read.absent === recorded.absent;
  return sameJson(read.payload, recorded.payload);
}

/** Judge a checked action against what its verification read sees now (R-UNDO-2). */
export function judge(action: Action, verdict: Extract<StaticVerdict, { kind: "check" }>, now: Read): Step {
  const name = `${action.server}.${action.tool}`;
  if (readFailed(now)) {
    return {
      action,
      outcome: "halt",
      why: `the verification read ${verdict.verify.server}.${verdict.verify.tool} failed: ${now.error}`,
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
    ...(action.postState ? { expected: action.postState } : {}),
    actual: now,
  };
}

/**
 * A call whose outcome is unknown: if the record is what it was before the
 * call, there is nothing to undo for it now, and undo steps over it (leaving
 * it pending: it is still unknown). Anything else is a change undo cannot
 * attribute, so it stops. `now` is not looked at while its answer may still come.
 */
export function judgeUnknown(action: Action, now: Read, stillLanding?: string): Step {
  const name = `${action.server}.${action.tool}`;
  if (stillLanding) {
    return {
      action,
      outcome: "halt",
      why: `the outcome of ${name} is not known yet: ${stillLanding}`,
      ...(action.task
        ? {
            hint: `Wait for the proxy following task ${action.task} to record its end, then run undo again; if no proxy follows it any more, ask ${action.server} about the task and record what you found with synartesis settle (below).`,
            settle: "call" as const,
          }
        : { hint: "Run undo again once its answer has come or its time is up." }),
    };
  }
  if (readFailed(now)) {
    return {
      action,
      outcome: "halt",
      why: `the outcome of ${name} is unknown, and undo could not read the record to see whether it left a trace: ${now.error}`,
      hint: "Fix the cause and run undo again.",
    };
  }
  if (sameObservation(now, action.snapshot)) {
    return { action, outcome: "skip", why: `the outcome of ${name} is unknown, but the record is what it was before the call: nothing to undo for it now` };
  }
  return {
    action,
    outcome: "halt",
    why: `the outcome of ${name} is unknown (the proxy never learnt whether it ran), and the state is not what it was before it`,
    hint: SETTLE_CALL_HINT,
    settle: "call",
    ...beforeAndNow(action, now),
  };
}

/** What was there before the agent's call, and what is there now: for a person deciding an unknown outcome. */
function beforeAndNow(action: Action, now: Read | undefined): Pick<Step, "expected" | "actual"> {
  return { ...(action.snapshot ? { expected: action.snapshot } : {}), ...(now && !readFailed(now) ? { actual: now } : {}) };
}

/**
 * An action whose inverse an earlier undo sent and never learnt the outcome
 * of (it was killed, or no answer came): that inverse is itself an unknown
 * outcome. A read that finds the state from before shows it landed; otherwise
 * undo sends it again only when the rule declares the server idempotent
 * (same idempotency key), and else stops for a person to settle it.
 * `now` is the verification read now, when the action has one.
 */
export function judgeInterrupted(action: Action, call: Inverse, now: Read | undefined, idempotent: boolean): Step {
  const inverse = inverseName(call);
  if (sameObservation(now, action.snapshot)) {
    return { action, outcome: "already", why: `an earlier undo sent ${inverse}, and the state is what it was before the call: it landed` };
  }
  if (now && readFailed(now)) {
    return {
      action,
      outcome: "halt",
      why: `an earlier undo sent ${inverse} without learning whether it landed, and undo could not read the record to see: ${now.error}`,
      hint: "Fix the cause and run undo again.",
      call,
    };
  }
  if (now && action.postState && !sameObservation(now, action.postState)) {
    return {
      action,
      outcome: "halt",
      why: `an earlier undo sent ${inverse} without learning whether it landed, and the state is neither what it was before the call nor what the agent left`,
      hint: SETTLE_INVERSE_HINT,
      call,
      settle: "inverse",
      ...beforeAndNow(action, now),
    };
  }
  if (idempotent) {
    return {
      action,
      outcome: "revert",
      why: `an earlier undo sent this inverse without learning whether it landed; sent again with the same idempotency key, which the rule says its server honours (idempotent: true)`,
      call,
      resent: true,
      ...(now ? {} : { unverified: true as const }),
    };
  }
  return {
    action,
    outcome: "halt",
    why: `an earlier undo sent ${inverse} without learning whether it landed; sending it again could apply it twice (the rule does not declare idempotent: true)`,
    hint: SETTLE_INVERSE_HINT,
    call,
    settle: "inverse",
    ...beforeAndNow(action, now),
  };
}

/** A planned revert once its inverse ran: the same decision, worded as done. */
export function reverted(planned: Step, call: Inverse): Step {
  const why = planned.resent ? "sent again with the same idempotency key (the rule is idempotent) and reverted" : planned.unverified ? planned.why : "reverted";
  return {
    action: planned.action,
    outcome: "revert",
    why,
    call,
    ...(planned.unverified ? { unverified: true } : {}),
    ...(planned.resent ? { resent: true } : {}),
  };
}

/**
 * A compensating inverse is not built from the snapshot, so it may not give
 * that state back (a delete where a record existed before): the read that
 * checks, after it ran, whether the record is as it was. Undefined when there
 * is nothing to compare.
 */
export function readBack(action: Action): VerifyCall | undefined {
  return action.class === "compensable" && action.snapshot ? action.verify : undefined;
}

/** What the read back after a compensating inverse saw: undefined when the record is as it was before the call. */
export function judgeReadBack(action: Action, call: Inverse, after: Read): Step | undefined {
  if (!action.snapshot || sameObservation(after, action.snapshot)) return undefined;
  const inverse = inverseName(call);
  return {
    action,
    outcome: "unrestored",
    why: readFailed(after)
      ? `the inverse ${inverse} ran, but reading the record afterwards failed (${after.error}), so undo cannot tell whether it is as it was before`
      : `the inverse ${inverse} ran, but the state is not what it was before the call`,
    hint: "Compare the two states above and put the record right by hand; undo has stopped here so you can look.",
    call,
    expected: action.snapshot,
    ...(readFailed(after) ? {} : { actual: after }),
  };
}

/** The server refused the inverse: nothing changed (or, for one sent again, the first attempt most likely landed). */
export function inverseFailed(planned: Step, call: Inverse, error: string): Step {
  const inverse = inverseName(call);
  return {
    action: planned.action,
    outcome: "halt",
    why: planned.resent
      ? `an earlier undo was interrupted after sending this inverse, and ${inverse} now refuses it: ${error}`
      : `the inverse ${inverse} failed: ${error}`,
    hint: planned.resent
      ? "The interrupted attempt most likely landed. Check the record by hand before doing anything else."
      : "Nothing was changed by this step. Fix the cause (or the manifest, then use --replan) and run undo again.",
    call,
  };
}

/** No answer came to the inverse: it may or may not have landed, so the next undo treats it as an unknown outcome. */
export function inverseUnanswered(planned: Step, call: Inverse, error: string, idempotent: boolean): Step {
  return {
    action: planned.action,
    outcome: "halt",
    why: `the inverse ${inverseName(call)} got no answer (${error}); whether it landed is unknown`,
    hint: idempotent
      ? "Run undo again: it reads the record first, and sends the inverse again only with the same idempotency key, which the rule says its server honours (idempotent: true)."
      : SETTLE_INVERSE_HINT,
    call,
    ...(idempotent ? {} : { settle: "inverse" as const }),
  };
}

/** Of an inverse's several calls, some ran and a later one did not: the record is partly put back until a read or a person says otherwise. */
export function inversePartial(planned: Step, call: Inverse, text: string): Step {
  return {
    action: planned.action,
    outcome: "halt",
    why: `the inverse ran only in part (${text}); the record is partly put back`,
    hint: "Run undo again once the cause is fixed: it reads the record first and finishes this call only if the record is as it was before the agent's call. Otherwise put it right by hand and record that with synartesis settle.",
    call,
  };
}

/** An inverse by its tools: `crm.restore`, or `memory.create_entities then memory.create_relations`. */
function inverseName(inverse: Inverse): string {
  return inverseCalls(inverse)
    .map((call) => `${call.server}.${call.tool}`)
    .join(" then ");
}
