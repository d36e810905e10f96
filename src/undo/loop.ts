// THE undo judgement loop (R-UNDO-1…8), written once: every in-scope action,
// newest first — look at it, judge it, act, record — stopping at the first
// halt, drift or state not restored. It runs over a world: the live one
// (live-world.ts: the journal and the real servers) for an undo, or a
// simulated one (simulated-world.ts) for --dry-run, so the dry run plans
// exactly what an undo would do from the same state (R-UNDO-5).
import type { Action, Read, Inverse, RunStatus, VerifyCall } from "../journal/types.ts";
import { inverseFailed, inversePartial, inverseUnanswered, judge, judgeInterrupted, judgeReadBack, judgeUnknown, readBack, reverted } from "./judge.ts";
import { inScope, isStop, staticStep, staticVerdict, type StaticVerdict, type Step } from "./plan.ts";
import type { SentInverse } from "./servers.ts";

/** What an inverse did: as sent to its server, or only rehearsed (a dry run sends nothing). */
export type InverseOutcome = SentInverse | { kind: "rehearsed" };

/**
 * How this undo leaves an action in the journal: done with it (rolled back,
 * or unrecoverable after an inverse that did not restore it), released for a
 * later undo with why, kept claimed because its inverse's outcome is unknown,
 * left in place (an irreversible call), or stepped over with a note.
 */
export type UndoRecord =
  | { kind: "done"; status: "rolled_back" | "unrecoverable"; why?: string }
  | { kind: "released"; why: string }
  | { kind: "kept"; why: string }
  | { kind: "left" }
  | { kind: "stepped-over"; why: string };

/** How many actions the loop lets the world prepare for at a time. */
const PREPARE_AHEAD = 32;

/** What the loop may ask of the world it undoes in. */
export interface UndoWorld {
  /**
   * The next actions the loop will look at, newest first, before it looks at
   * the first of them: the world may get ready for them (claim them; read
   * ahead what nothing will change meanwhile). Each is still looked at, claimed
   * and judged one at a time.
   */
  prepare(upcoming: Action[]): Promise<void>;
  /** The loop is over (done, stopped or failed): what was prepared and not used is given back, what it recorded is in. */
  giveBack(): Promise<void>;
  /** The action as it stands now (another undo may have moved it on since the run was read). */
  current(action: Action): Promise<Action>;
  /** What a verification read sees now. May reject when the server cannot be reached at all. */
  read(verify: VerifyCall): Promise<Read>;
  /** Why the answer to a call of unknown outcome may still come; undefined when it can no longer land. */
  stillLanding(action: Action): Promise<string | undefined>;
  /** Whether the action's rule says its server honours idempotency keys (its inverse may be sent again). */
  idempotent(action: Action): boolean;
  /**
   * Take the action for this undo: "claimed"; "interrupted" when it was taken
   * over from an undo that is gone after sending its inverse; "again" when it
   * changed meanwhile (look at it again).
   */
  claim(action: Action): Promise<"claimed" | "interrupted" | "again">;
  invert(action: Action, call: Inverse): Promise<InverseOutcome>;
  record(action: Action, entry: UndoRecord): Promise<void>;
  /** Something in the run was undone: it is part undone from now on, even if this undo is killed. */
  touchRun(): Promise<void>;
  /** The run's status once the loop is over (none for a dry run). */
  endRun(halted: Step | undefined): Promise<RunStatus | undefined>;
}

export interface UndoReport {
  steps: Step[];
  /** The step undo stopped at, if it stopped. */
  halted?: Step;
  runStatus?: RunStatus;
}

export async function undoActions(world: UndoWorld, actions: Action[], fromSeq: number, onStep: (step: Step) => void): Promise<UndoReport> {
  const steps: Step[] = [];
  let halted: Step | undefined;
  let touched = false;
  const scope = inScope(actions, fromSeq);
  try {
    for (const [index, planned] of scope.entries()) {
      if (index % PREPARE_AHEAD === 0) await world.prepare(scope.slice(index, index + PREPARE_AHEAD));
      const step = await undoOne(world, planned);
      if (!touched && (step.outcome === "revert" || step.outcome === "already" || step.outcome === "left")) {
        await world.touchRun();
        touched = true;
      }
      steps.push(step);
      onStep(step);
      if (isStop(step)) {
        halted = step;
        break;
      }
    }
  } catch (error) {
    await world.giveBack().catch(() => {});
    throw error;
  }
  await world.giveBack();
  const runStatus = await world.endRun(halted);
  return { steps, ...(halted ? { halted } : {}), ...(runStatus ? { runStatus } : {}) };
}

/** Undo one action, claiming it first; a claim that finds the action changed looks at it again. */
async function undoOne(world: UndoWorld, planned: Action): Promise<Step> {
  for (;;) {
    const action = await world.current(planned);
    const verdict = staticVerdict(action);
    if (verdict.kind === "skip" || verdict.kind === "halt") return staticStep(action, verdict);
    if (verdict.kind === "left") {
      await world.record(action, { kind: "left" });
      return staticStep(action, verdict);
    }
    if (verdict.kind === "unknown") return unknownOutcome(world, action, verdict.verify);
    const claim = await world.claim(action);
    if (claim === "again") continue;
    return claim === "interrupted" ? resume(world, action, verdict.call) : revert(world, action, verdict);
  }
}

/** A read whose failure to happen at all is a failed read, not an error of the undo. */
function readOrFailure(world: UndoWorld, verify: VerifyCall): Promise<Read> {
  return world.read(verify).catch((error: Error): Read => ({ error: error.message }));
}

/** Nothing is sent for a call of unknown outcome: a read decides whether it left a trace. */
async function unknownOutcome(world: UndoWorld, action: Action, verify: VerifyCall): Promise<Step> {
  const landing = await world.stillLanding(action);
  const step = judgeUnknown(action, landing ? { error: landing } : await readOrFailure(world, verify), landing);
  // It stays pending (still unknown); the note says why undo stepped over it.
  if (step.outcome === "skip") await world.record(action, { kind: "stepped-over", why: step.why });
  return step;
}

/** An inverse an interrupted undo sent: landed, sent again (idempotent), or a stop for a person. */
async function resume(world: UndoWorld, action: Action, call: Inverse): Promise<Step> {
  const now = action.verify ? await readOrFailure(world, action.verify) : undefined;
  // A stop keeps the claim (and the mark that the inverse was sent) for the next undo or a person: it is still unknown.
  return carryOut(world, judgeInterrupted(action, call, now, world.idempotent(action)), call, "kept");
}

async function revert(world: UndoWorld, action: Action, verdict: Extract<StaticVerdict, { kind: "check" | "revert" }>): Promise<Step> {
  if (verdict.kind === "revert") return send(world, { action, outcome: "revert", why: verdict.why, call: verdict.call, unverified: true }, verdict.call);
  let now: Read;
  try {
    now = await world.read(verdict.verify);
  } catch (error) {
    await world.record(action, { kind: "released", why: `undo could not read the current state: ${(error as Error).message}` });
    throw error;
  }
  return carryOut(world, judge(action, verdict, now), verdict.call, "released");
}

/** Act on a judgement made before the inverse is sent: nothing left to do, a stop recorded as `stop`, or the inverse sent. */
async function carryOut(world: UndoWorld, judged: Step, call: Inverse, stop: "kept" | "released"): Promise<Step> {
  if (judged.outcome === "already") {
    await world.record(judged.action, { kind: "done", status: "rolled_back" });
    return judged;
  }
  if (judged.outcome !== "revert") {
    await world.record(judged.action, { kind: stop, why: judged.why });
    return judged;
  }
  return send(world, judged, call);
}

/** Send the inverse of a planned revert and record what became of it. */
async function send(world: UndoWorld, planned: Step, call: Inverse): Promise<Step> {
  const action = planned.action;
  let outcome: InverseOutcome;
  try {
    outcome = await world.invert(action, call);
  } catch (error) {
    await world.record(action, { kind: "released", why: `undo could not reach the server: ${(error as Error).message}` });
    throw error;
  }
  switch (outcome.kind) {
    case "rehearsed":
      return planned;
    case "ok": {
      const verify = readBack(action);
      const unrestored = verify && judgeReadBack(action, call, await readOrFailure(world, verify));
      if (unrestored) {
        // The inverse did run (sending it again would not help): what is left is for a person.
        await world.record(action, { kind: "done", status: "unrecoverable", why: unrestored.why });
        return unrestored;
      }
      await world.record(action, { kind: "done", status: "rolled_back" });
      return reverted(planned, call);
    }
    case "failed":
      await world.record(action, { kind: "released", why: `undo's inverse failed: ${outcome.text}` });
      return inverseFailed(planned, call, outcome.text);
    case "unknown":
      // The claim stays, marked sent: the next undo treats it as an unknown outcome.
      await world.record(action, { kind: "kept", why: `the inverse got no answer (${outcome.text}); whether it landed is unknown` });
      return inverseUnanswered(planned, call, outcome.text, world.idempotent(action));
    case "partial":
      // Likewise: the next undo reads the record before anything is sent again.
      await world.record(action, { kind: "kept", why: `the inverse ran only in part: ${outcome.text}` });
      return inversePartial(planned, call, outcome.text);
  }
}
