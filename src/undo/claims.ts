// What the journal, the process table and the manifest say about an action's
// undo: whether the undo that claimed it is still there, whether an inverse it
// sent is now an unknown outcome, whether a call's own answer may still come,
// and whether its rule lets undo send its inverse again. Both worlds answer
// the loop from here (UndoSetting), so a dry run decides as an undo would.
import type { Journal } from "../journal/journal.ts";
import type { Action } from "../journal/types.ts";
import { createMatcher } from "../manifest/match.ts";
import { DEFAULT_TIMEOUT_SECONDS, type Manifest } from "../manifest/types.ts";
import { processAlive } from "../processes.ts";
import type { UndoServers } from "./servers.ts";

/** What both worlds stand on: the servers, the clock, and the facts above. */
export interface UndoSetting {
  servers: UndoServers;
  now(): Date;
  /** How long a claim on one action lasts at most (see claimAlive). */
  leaseMs: number;
  stillLanding(action: Action): Promise<string | undefined>;
  idempotent(action: Action): boolean;
}

export function undoSetting(journal: Journal, manifest: Manifest, servers: UndoServers, now: () => Date): UndoSetting {
  const matcher = createMatcher(manifest);
  return {
    servers,
    now,
    leaseMs: claimLease(manifest),
    stillLanding: (action) => stillLanding(journal, manifest, action, now()),
    idempotent: (action) => matcher.classify(action.server, action.tool, action.args).rule?.idempotent === true,
  };
}

/** Longest one step can take (a server start, its read, its inverse and the read after, each up to a timeout), plus slack. */
function claimLease(manifest: Manifest): number {
  const slowest = Math.max(0, ...Object.values(manifest.servers).map((server) => server.timeoutMs));
  return 4 * slowest + 60_000;
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

/**
 * An inverse an earlier undo sent and never recorded the outcome of: the row
 * is claimed, marked sent, and the undo holding it is gone.
 */
export function interruptedInverse(action: Action, now: Date, leaseMs: number): boolean {
  return action.status === "rolling_back" && action.inverseSentAt !== undefined && !claimAlive(action.claimedBy, action.claimedAt, now, leaseMs);
}

/**
 * Why the answer to a call of unknown outcome may still come: the proxy that
 * made it is still running, or it is younger than its server's timeout.
 * Undefined when it can no longer land.
 */
async function stillLanding(journal: Journal, manifest: Manifest, action: Action, now: Date): Promise<string | undefined> {
  // A task that was not seen to end may still be running, however long ago it started (R-ERA-4).
  if (action.task) return `${action.server} runs it as task ${action.task}, which had not ended when Synartesis last saw it; its effect may still come`;
  const run = await journal.getRun(action.runId);
  if (run && processAlive(run.host, run.pid)) return `the proxy that made it (pid ${run.pid}) is still running, and its answer may still come`;
  const timeoutMs = manifest.servers[action.server]?.timeoutMs ?? DEFAULT_TIMEOUT_SECONDS * 1000;
  if (now.getTime() - new Date(action.ts).getTime() < timeoutMs) return `it was made less than its server's timeout (${timeoutMs / 1000} s) ago`;
  return undefined;
}
