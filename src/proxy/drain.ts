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

/** A promise that resolves when `signal` aborts (at once when it has). */
export function whenAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
}

/** Let the calls in flight finish for `drainMs` (or until `forced` aborts), then abandon what still waits and answer the rest. */
export async function drain(work: Drainable, drainMs: number, forced: AbortSignal): Promise<DrainEnd> {
  const settled = work.settled().then(() => "finished" as const);
  const givenUp = AbortSignal.any([AbortSignal.timeout(drainMs), forced]);
  const end = await Promise.race([settled, whenAborted(givenUp).then(() => (forced.aborted ? ("second signal" as const) : ("drain time over" as const)))]);
  if (end === "finished") return end;
  const reason =
    end === "second signal"
      ? "the proxy was stopped by a second signal before the server answered"
      : `the proxy was shutting down and stopped waiting for the server after ${drainMs / 1000} s (--drain)`;
  work.abandon(reason);
  await Promise.race([settled, whenAborted(AbortSignal.timeout(end === "second signal" ? 50 : ANSWER_GRACE_MS))]);
  work.answerRest(reason);
  return end;
}

export interface StopSignals {
  /** Aborts at the first SIGINT or SIGTERM (or stop()): time to shut down. */
  stopRequested: AbortSignal;
  /** Aborts at a second one: stop waiting for anything. */
  forced: AbortSignal;
  /** Shut down as if a signal had come (the client went away). */
  stop(): void;
}

/** The first signal starts a bounded shutdown; a second one cuts it short (R-PROXY-13). */
export function onStopSignals(log: Logger, drainMs: number): StopSignals {
  const stopping = new AbortController();
  const forcing = new AbortController();
  let signals = 0;
  const onSignal = (signal: string) => {
    if (++signals === 1) {
      log.info("shutting down", { signal, drainSeconds: drainMs / 1000 });
      stopping.abort(signal);
    } else {
      log.warn("a second signal: stopping now", { signal });
      forcing.abort(signal);
    }
  };
  process.on("SIGINT", () => onSignal("SIGINT"));
  process.on("SIGTERM", () => onSignal("SIGTERM"));
  return { stopRequested: stopping.signal, forced: forcing.signal, stop: () => stopping.abort("stopped") };
}
