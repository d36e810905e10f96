// The proxy over stdio: one client session on this process's stdin/stdout,
// over a pool of the manifest's servers, until stdin closes or a signal comes
// (R-PROXY-9, R-PROXY-13). The entry the `proxy` command uses.
import type { Journal } from "../journal/journal.ts";
import { startupOver } from "../jit.ts";
import { readLines } from "../jsonrpc/lines.ts";
import { LineBatch } from "../jsonrpc/line-batch.ts";
import type { Logger } from "../log.ts";
import type { Manifest } from "../manifest/types.ts";
import { ClientSession } from "./session/client-session.ts";
import { onStopSignals, whenAborted } from "./drain.ts";
import { ServerPool } from "./pool/pool.ts";
import { recordingOptions } from "./session/session-run.ts";

export { DEFAULT_DRAIN_SECONDS } from "./drain.ts";

/** How long a proxy whose servers would not start waits for the client's initialize, to answer it with why. */
const START_FAILURE_WAIT_MS = 5000;

/** What the proxy serves with, over stdio or HTTP. */
export interface StdioOptions {
  manifest: Manifest;
  /** Closed here once every session has ended. */
  journal: Journal;
  log: Logger;
  /** How long calls in flight may still take after EOF or a signal. */
  drainMs: number;
  cwd: string;
}

/** Serve until the client leaves; throws why when the session could not go on (a server would not start, …). */
export async function serveStdio(options: StdioOptions): Promise<void> {
  const { manifest, journal, log } = options;
  // process.exit drops stdout writes still queued (a large last reply would be cut):
  // count them, and wait for the last one before returning.
  let unflushed = 0;
  let drained: (() => void) | undefined;
  const flushed = () => {
    if (--unflushed === 0) drained?.();
  };
  const flushStdout = async () => {
    if (unflushed === 0) return;
    // A client that stopped reading gets a few seconds, not forever.
    await Promise.race([new Promise<void>((resolve) => (drained = resolve)), Bun.sleep(5000)]);
  };
  // Answers given in one turn of the event loop (a burst of reads) leave in one write.
  const toClient = new LineBatch((text) => {
    unflushed++;
    try {
      process.stdout.write(text, flushed);
    } catch {
      // The client went away; its session ends with stdin.
      flushed();
    }
  });
  const pool = new ServerPool({ manifest, log });
  const recording = recordingOptions({ pool, journal, log, cwd: options.cwd });
  const session = new ClientSession({
    ...recording,
    write: (line) => void toClient.add(line),
    // Someone typing at a terminal is told at once; a client gets a moment to send its initialize.
    initializeWaitMs: process.stdin.isTTY ? 0 : START_FAILURE_WAIT_MS,
  });
  await session.open();
  startupOver();
  log.debug("proxy ready", { manifest: manifest.path, journal: journal.path });

  const input = readLines(Bun.stdin.stream(), (line) => session.handleLine(line));
  const { stopRequested, forced, stop } = onStopSignals(log, options.drainMs);
  // A client that stops reading (EPIPE) has gone: end the session as on EOF.
  process.stdout.on("error", (error: NodeJS.ErrnoException) => {
    log.warn("the client stopped reading the proxy's output", { error: error.code ?? error.message });
    stop();
  });
  await Promise.race([input.catch(() => {}), whenAborted(stopRequested), session.fatal.catch(() => {})]);
  const end = await session.finish({ drainMs: options.drainMs, forced });
  // Announcements still being tried get the drain too; the calls they announce are held in the journal either way.
  if (recording.notifier) {
    let timer: Timer | undefined;
    const drained = new Promise<void>((resolve) => (timer = setTimeout(resolve, options.drainMs)));
    await Promise.race([recording.notifier.settled(), drained, whenAborted(forced)]);
    clearTimeout(timer);
  }
  await pool.stop({ quick: end === "second signal" });
  try {
    await journal.close();
  } catch {}
  toClient.flush(true);
  await Promise.race([flushStdout(), whenAborted(forced)]);
  // stdin may close while a server is failing to start: that still ends with its error (R-PROXY-10).
  if (session.failure) throw session.failure;
  log.debug("proxy stopped");
}
