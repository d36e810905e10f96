// Carries out an undo: starts the manifest's servers, walks the run newest
// first, claims each action before calling its inverse (so concurrent undos
// send each inverse once), and records every outcome (R-UNDO-1…8).
import { sameJson } from "../canonical.ts";
import { SynartesisError } from "../errors.ts";
import { processAlive } from "../processes.ts";
import type { Journal } from "../journal/journal.ts";
import type { Action, ResolvedCall, Run, RunStatus, VerifyCall } from "../journal/types.ts";
import { createMatcher, type Matcher } from "../manifest/match.ts";
import { textOf } from "../manifest/refs.ts";
import { DEFAULT_TIMEOUT_SECONDS, type Manifest } from "../manifest/types.ts";
import type { Logger } from "../log.ts";
import { errorOf, resultOf } from "../jsonrpc/frames.ts";
import { readState } from "../servers/observe.ts";
import { UpstreamError, type Upstream } from "../servers/upstream.ts";
import { OwnServers } from "../servers/with-servers.ts";
import {
  inScope,
  isStop,
  judge,
  judgeInterrupted,
  judgeUnknown,
  planUndo,
  readsNeeded,
  SETTLE_INVERSE_HINT,
  staticStep,
  staticVerdict,
  verifyKey,
  type Observed,
  type Step,
} from "./plan.ts";
import { replanAction } from "./replan.ts";

export const IDEMPOTENCY_KEY = "synartesis/idempotency-key";

/** Starts servers on first use, with a handshake of our own. */
export class ServerPool {
  private readonly servers: OwnServers;
  private readonly matcher: Matcher;

  constructor(
    readonly manifest: Manifest,
    log: Logger,
  ) {
    this.matcher = createMatcher(manifest);
    this.servers = new OwnServers(manifest.servers, { client: "synartesis-undo", log });
  }

  /** Whether the rule of an action declares its server honours idempotency keys. */
  idempotent(action: Action): boolean {
    return this.matcher.classify(action.server, action.tool).rule?.idempotent === true;
  }

  get(name: string): Promise<Upstream> {
    if (!this.manifest.servers[name]) {
      return Promise.reject(new SynartesisError("config", `the run used server "${name}", which is no longer in the manifest ${this.manifest.path}`));
    }
    return this.servers.get(name);
  }

  async stopAll(): Promise<void> {
    await this.servers.stop();
  }
}

async function observe(pool: ServerPool, verify: VerifyCall): Promise<Observed> {
  const read = await readState(await pool.get(verify.server), verify);
  return read.kind === "absent" ? { kind: "absent" } : read;
}

type InverseOutcome = { kind: "ok" } | { kind: "failed"; text: string } | { kind: "unknown"; text: string };

async function callInverse(pool: ServerPool, action: Action, call: ResolvedCall): Promise<InverseOutcome> {
  const upstream = await pool.get(call.server);
  try {
    const reply = await upstream.ask("tools/call", { name: call.tool, arguments: call.args, _meta: { [IDEMPOTENCY_KEY]: action.id } });
    const error = errorOf(reply.msg);
    if (error) return { kind: "failed", text: `${error.message} (JSON-RPC error ${error.code})` };
    const result = resultOf(reply.msg);
    if (result?.isError) return { kind: "failed", text: textOf(result) || "the tool reported an error" };
    return { kind: "ok" };
  } catch (error) {
    if (error instanceof UpstreamError) return { kind: error.kind === "not_sent" ? "failed" : "unknown", text: error.message };
    throw error;
  }
}

/**
 * Why the answer to a call of unknown outcome may still come: the proxy that
 * made it is still running, or it is younger than its server's timeout.
 * Undefined when it can no longer land.
 */
async function stillLanding(journal: Journal, manifest: Manifest, action: Action, now: Date): Promise<string | undefined> {
  const run = await journal.getRun(action.runId);
  if (run && processAlive(run.host, run.pid)) return `the proxy that made it (pid ${run.pid}) is still running, and its answer may still come`;
  const timeoutMs = manifest.servers[action.server]?.timeoutMs ?? DEFAULT_TIMEOUT_SECONDS * 1000;
  if (now.getTime() - new Date(action.ts).getTime() < timeoutMs) return `it was made less than its server's timeout (${timeoutMs / 1000} s) ago`;
  return undefined;
}

/**
 * Is the undo process that holds a claim still there? A claim is for one step
 * (a read and an inverse), so one older than `leaseMs` is stale whatever its
 * pid says (pids are reused); a younger one is alive while its process is.
 */
export function claimAlive(owner: string | undefined, claimedAt: string | undefined, now: Date, leaseMs: number): boolean {
  if (!owner || !claimedAt || now.getTime() - new Date(claimedAt).getTime() > leaseMs) return false;
  const [host, pid] = owner.split(":");
  return processAlive(host, Number(pid)) ?? true;
}

export interface UndoOptions {
  fromSeq: number;
  dryRun: boolean;
  replan: boolean;
  now(): Date;
  owner: string;
  /** The person undoing (recorded on the run). */
  by: string;
  log: Logger;
  /** Each step as it is decided (and, for reverts, done). */
  onStep(step: Step): void;
  onReplan?(action: Action, warnings: string[]): void;
}

export interface UndoReport {
  steps: Step[];
  /** The step undo stopped at, if it stopped. */
  halted?: Step;
  runStatus?: RunStatus;
}

const CLAIM_WAIT_MS = 100;

/** Longest one step can take (a server start, its read, its inverse and the read after, each up to a timeout), plus slack. */
function claimLease(manifest: Manifest): number {
  const slowest = Math.max(0, ...Object.values(manifest.servers).map((server) => server.timeoutMs));
  return 4 * slowest + 60_000;
}

export async function undoRun(journal: Journal, manifest: Manifest, run: Run, options: UndoOptions): Promise<UndoReport> {
  const pool = new ServerPool(manifest, options.log);
  try {
    let actions = await journal.actionsOfRun(run.id);
    if (options.replan) {
      const matcher = createMatcher(manifest);
      const replannedActions: Action[] = [];
      for (const action of actions) {
        const replanned = action.seq >= options.fromSeq ? replanAction(action, matcher) : undefined;
        if (!replanned) {
          replannedActions.push(action);
          continue;
        }
        // A dry run writes nothing: it plans with the rebuilt inverses in memory only.
        if (!options.dryRun) await journal.replan(action.id, replanned.inverse, replanned.verify, replanned.warnings);
        const updated = { ...action, inverse: replanned.inverse, verify: replanned.verify, warnings: replanned.warnings };
        options.onReplan?.(updated, replanned.warnings);
        replannedActions.push(updated);
      }
      actions = replannedActions;
    }
    if (options.dryRun) return await dryRun(journal, actions, pool, options);
    return await executeRun(journal, run, pool, options);
  } finally {
    await pool.stopAll();
  }
}

async function dryRun(journal: Journal, actions: Action[], pool: ServerPool, options: UndoOptions): Promise<UndoReport> {
  const observations = new Map<string, Observed>();
  for (const verify of readsNeeded(actions, options.fromSeq)) {
    try {
      observations.set(verifyKey(verify), await observe(pool, verify));
    } catch (error) {
      observations.set(verifyKey(verify), { kind: "error", text: (error as Error).message });
    }
  }
  const landing = new Map<string, string>();
  const interrupted = new Map<string, boolean>();
  for (const action of actions) {
    const why = action.status === "pending" ? await stillLanding(journal, pool.manifest, action, options.now()) : undefined;
    if (why) landing.set(action.id, why);
    if (interruptedInverse(action, options.now(), pool.manifest)) interrupted.set(action.id, pool.idempotent(action));
  }
  const steps = planUndo(actions, options.fromSeq, observations, landing, interrupted);
  steps.forEach((step) => options.onStep(step));
  const halted = steps.find(isStop);
  return { steps, ...(halted ? { halted } : {}) };
}

async function executeRun(journal: Journal, run: Run, pool: ServerPool, options: UndoOptions): Promise<UndoReport> {
  const steps: Step[] = [];
  const record = (step: Step) => {
    steps.push(step);
    options.onStep(step);
    return step;
  };
  let halted: Step | undefined;
  let touched = false;

  for (const planned of inScope(await journal.actionsOfRun(run.id), options.fromSeq)) {
    const step = await undoOne(journal, pool, planned.id, options);
    // Once something is undone the run is part undone, even if this undo is killed before it finishes.
    if (!touched && (step.outcome === "revert" || step.outcome === "already" || step.outcome === "left")) {
      await journal.setRunStatus(run.id, "partial", options.now().toISOString());
      touched = true;
    }
    record(step);
    if (isStop(step)) {
      halted = step;
      break;
    }
  }

  const remaining = (await journal.actionsOfRun(run.id)).filter((a) => {
    const verdict = staticVerdict(a);
    return verdict.kind !== "skip";
  });
  const runStatus: RunStatus = halted || remaining.length > 0 ? "partial" : "rolled_back";
  await journal.setRunStatus(run.id, runStatus, options.now().toISOString(), options.by);
  return { steps, runStatus, ...(halted ? { halted } : {}) };
}

/**
 * An inverse an earlier undo sent and never recorded the outcome of: the row
 * is claimed, marked sent, and the undo holding it is gone.
 */
function interruptedInverse(action: Action, now: Date, manifest: Manifest): boolean {
  return action.status === "rolling_back" && action.inverseSentAt !== undefined && !claimAlive(action.claimedBy, action.claimedAt, now, claimLease(manifest));
}

/** Undo one action, claiming it first; waits for (or takes over from) another undo holding it. */
async function undoOne(journal: Journal, pool: ServerPool, actionId: string, options: UndoOptions): Promise<Step> {
  let announced = false;
  for (;;) {
    const action = (await journal.getAction(actionId))!;
    const verdict = staticVerdict(action);
    if (verdict.kind === "skip" || verdict.kind === "halt") return staticStep(action, verdict);
    if (verdict.kind === "left") {
      await journal.markUnrecoverable(action.id);
      return staticStep(action, verdict);
    }
    if (verdict.kind === "unknown") {
      // Nothing is sent for a call of unknown outcome: a read decides whether it left a trace.
      const landing = await stillLanding(journal, pool.manifest, action, options.now());
      const observed = landing
        ? ({ kind: "error", text: landing } as Observed)
        : await observe(pool, verdict.verify).catch((error: Error): Observed => ({ kind: "error", text: error.message }));
      const step = judgeUnknown(action, observed, landing);
      // It stays pending (still unknown); the note says why undo stepped over it.
      if (step.outcome === "skip") await journal.noteUndo(action.id, step.why);
      return step;
    }

    const now = options.now();
    let interrupted = false;
    if (action.status === "rolling_back" && action.claimedBy !== options.owner) {
      if (claimAlive(action.claimedBy, action.claimedAt, now, claimLease(pool.manifest))) {
        if (!announced) options.log.warn(`waiting for another undo (${action.claimedBy?.split(":").slice(0, 2).join(" pid ")}) that is undoing #${action.seq}`);
        announced = true;
        await Bun.sleep(CLAIM_WAIT_MS);
        continue;
      }
      // An undo that is gone: take over. If it had sent the inverse, that inverse's outcome is unknown.
      if (!await journal.takeOverClaim(action.id, action.claimedBy ?? "", options.owner, now.toISOString())) continue;
      interrupted = action.inverseSentAt !== undefined;
    } else if (action.status === "applied") {
      if (!await journal.claim(action.id, options.owner, now.toISOString(), ["applied"])) continue;
    }

    const release = (why: string) => journal.settleClaim(action.id, options.owner, "applied", why);
    const call = verdict.call;
    let resent = false;

    if (interrupted) {
      const observed = action.verify
        ? await observe(pool, action.verify).catch((error: Error): Observed => ({ kind: "error", text: error.message }))
        : undefined;
      const judged = judgeInterrupted(action, call, observed, pool.idempotent(action));
      if (judged.outcome === "already") {
        await journal.settleClaim(action.id, options.owner, "rolled_back");
        return judged;
      }
      if (judged.outcome !== "revert") {
        // Still unknown: the claim (and the mark that the inverse was sent) stays for the next undo or a person.
        await journal.noteClaim(action.id, options.owner, judged.why);
        return judged;
      }
      resent = true;
    } else if (verdict.kind === "check") {
      let observed: Observed;
      try {
        observed = await observe(pool, verdict.verify);
      } catch (error) {
        await release(`undo could not read the current state: ${(error as Error).message}`);
        throw error;
      }
      const judged = judge(action, verdict, observed);
      if (judged.outcome === "already") {
        await journal.settleClaim(action.id, options.owner, "rolled_back");
        return judged;
      }
      if (judged.outcome !== "revert") {
        await release(judged.why);
        return judged;
      }
    }

    await journal.markInverseSent(action.id, options.owner, options.now().toISOString());
    let outcome: InverseOutcome;
    try {
      outcome = await callInverse(pool, action, call);
    } catch (error) {
      await release(`undo could not reach the server: ${(error as Error).message}`);
      throw error;
    }
    const unverified = verdict.kind === "revert" && !resent;
    if (outcome.kind === "ok") {
      // A compensating call is not built from the snapshot, so it may not give that state back
      // (a delete where a record existed before): read again, and say so loudly if it did not.
      if (action.class === "compensable" && action.verify && action.snapshot) {
        const after = await observe(pool, action.verify).catch((error: Error): Observed => ({ kind: "error", text: error.message }));
        const restored = after.kind === "absent" ? action.snapshot.absent : after.kind === "present" && !action.snapshot.absent && sameJson(after.payload, action.snapshot.payload);
        if (!restored) {
          const why =
            after.kind === "error"
              ? `the inverse ${call.server}.${call.tool} ran, but reading the record afterwards failed (${after.text}), so undo cannot tell whether it is as it was before`
              : `the inverse ${call.server}.${call.tool} ran, but the state is not what it was before the call`;
          // The inverse did run (sending it again would not help): what is left is for a person.
          await journal.settleClaim(action.id, options.owner, "unrecoverable", why);
          return {
            action,
            outcome: "unrestored",
            why,
            hint: "Compare the two states above and put the record right by hand; undo has stopped here so you can look.",
            call,
            expected: action.snapshot,
            ...(after.kind === "error" ? {} : { actual: after.kind === "absent" ? { absent: true } : { absent: false, payload: after.payload } }),
          };
        }
      }
      await journal.settleClaim(action.id, options.owner, "rolled_back");
      const why = resent ? "sent again with the same idempotency key (the rule is idempotent) and reverted" : verdict.kind === "revert" ? verdict.why : "reverted";
      return { action, outcome: "revert", why, call, ...(unverified ? { unverified } : {}), ...(resent ? { resent } : {}) };
    }
    if (outcome.kind === "failed") {
      await release(`undo's inverse failed: ${outcome.text}`);
      return {
        action,
        outcome: "halt",
        why: resent
          ? `an earlier undo was interrupted after sending this inverse, and ${call.server}.${call.tool} now refuses it: ${outcome.text}`
          : `the inverse ${call.server}.${call.tool} failed: ${outcome.text}`,
        hint: resent
          ? "The interrupted attempt most likely landed. Check the record by hand before doing anything else."
          : "Nothing was changed by this step. Fix the cause (or the manifest, then use --replan) and run undo again.",
        call,
      };
    }
    // No answer: the inverse may or may not have landed. The claim stays, marked sent: the next undo
    // treats it as an unknown outcome (and resends it only when the rule is idempotent).
    const idempotent = pool.idempotent(action);
    await journal.noteClaim(action.id, options.owner, `the inverse got no answer (${outcome.text}); whether it landed is unknown`);
    return {
      action,
      outcome: "halt",
      why: `the inverse ${call.server}.${call.tool} got no answer (${outcome.text}); whether it landed is unknown`,
      hint: idempotent
        ? "Run undo again: it reads the record first, and sends the inverse again only with the same idempotency key, which the rule says its server honours (idempotent: true)."
        : SETTLE_INVERSE_HINT,
      call,
      ...(idempotent ? {} : { settle: "inverse" as const }),
    };
  }
}
