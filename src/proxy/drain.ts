// Bounded shutdown (R-PROXY-13): after EOF or a signal, the calls in flight get
// `--drain` seconds to finish; what still waits on a server then is abandoned
// (its outcome unknown, its row pending) so the proxy always ends. A second
// signal cuts the wait short.
import type { Logger } from "../log.ts";

export const DEFAULT_DRAIN_SECONDS = 5;
/** After abandoning, how long the calls get to record their unknown outcome and answer. */
const ANSWER_GRACE_MS = 1000;

export interface Drainable {
  /** Resolves when every request received so far is answered. */
  settled(): Promise<void>;
  /** Stop waiting for the servers: each request still waiting fails with `reason`. */
  abandon(reason: string): void;
  /** Answer whatever is still unanswered after that (it waits on something other than a server). */
  answerRest(reason: string): void;
}

export type DrainEnd = "finished" | "drain time over" | "second signal";

export async function drain(work: Drainable, drainMs: number, forced: Promise<void>): Promise<DrainEnd> {
  const settled = work.settled().then(() => "finished" as const);
  const end = await Promise.race([settled, Bun.sleep(drainMs).then(() => "drain time over" as const), forced.then(() => "second signal" as const)]);
  if (end === "finished") return end;
  const reason =
    end === "second signal"
      ? "the proxy was stopped by a second signal before the server answered"
      : `the proxy was shutting down and stopped waiting for the server after ${drainMs / 1000} s (--drain)`;
  work.abandon(reason);
  await Promise.race([settled, Bun.sleep(end === "second signal" ? 50 : ANSWER_GRACE_MS)]);
  work.answerRest(reason);
  return end;
}

export interface StopSignals {
  /** Resolves at the first SIGINT or SIGTERM (or stop()): time to shut down. */
  stopRequested: Promise<void>;
  /** Resolves at a second one: stop waiting for anything. */
  forced: Promise<void>;
  /** Shut down as if a signal had come (the client went away). */
  stop(): void;
}

/** The first signal starts a bounded shutdown; a second one cuts it short (R-PROXY-13). */
export function onStopSignals(log: Logger, drainMs: number): StopSignals {
  let stop!: () => void;
  let force!: () => void;
  const stopRequested = new Promise<void>((resolve) => (stop = resolve));
  const forced = new Promise<void>((resolve) => (force = resolve));
  let signals = 0;
  const onSignal = (signal: string) => {
    if (++signals === 1) {
      log.info("shutting down", { signal, drainSeconds: drainMs / 1000 });
      stop();
    } else {
      log.warn("a second signal: stopping now", { signal });
      force();
    }
  };
  process.on("SIGINT", () => onSignal("SIGINT"));
  process.on("SIGTERM", () => onSignal("SIGTERM"));
  return { stopRequested, forced, stop };
}
