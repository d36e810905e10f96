// `synartesis proxy`: the recording MCP proxy an MCP client starts over stdio.
import { defineCommand } from "citty";
import { hostname } from "node:os";
import { describeError, SynartesisError } from "../errors.ts";
import { openJournal } from "../journal/journal.ts";
import { findJournal, findManifest } from "../manifest/discover.ts";
import { loadManifest } from "../manifest/load.ts";
import { DEFAULT_DRAIN_SECONDS } from "../proxy/drain.ts";
import { LineSplitter } from "../proxy/lines.ts";
import { createLogger, LOG_LEVELS, type LogLevel } from "../log.ts";
import { credentialsFolder, ProtectedPaths } from "../proxy/protected-paths.ts";
import { ProxySession } from "../proxy/session.ts";
import { approveCommandFor } from "../self.ts";
import { journalArg, manifestArg } from "./shared.ts";

/** How long a proxy whose servers would not start waits for the client's initialize, to answer it with why. */
const START_FAILURE_WAIT_MS = 5000;

export default defineCommand({
  meta: {
    name: "proxy",
    description:
      "Run the recording MCP proxy over stdio. Point your MCP client's server command at `synartesis proxy --manifest /abs/synartesis.yaml`.",
  },
  args: {
    ...manifestArg,
    ...journalArg,
    "log-level": {
      type: "string",
      valueHint: LOG_LEVELS.join("|"),
      description: "JSON log lines on stderr at this level and above (default: info: held calls, denials, unknown outcomes, server starts, runs opened and closed)",
    },
    drain: {
      type: "string",
      valueHint: "seconds",
      description: `On EOF or SIGINT/SIGTERM, how long calls in flight may still take; then each gets an unknown-outcome error and its row stays pending (default: ${DEFAULT_DRAIN_SECONDS}). A second signal stops at once.`,
    },
    "gate-timeout": {
      type: "string",
      valueHint: "seconds",
      description:
        "Accepted for compatibility; it never makes a call wait. A held call is refused at once with the command that approves it.",
    },
  },
  async run({ args }) {
    const level = (args["log-level"] ?? "info") as LogLevel;
    if (!LOG_LEVELS.includes(level)) {
      throw new SynartesisError("usage", `--log-level must be one of ${LOG_LEVELS.join(", ")} (got "${level}")`);
    }
    const drainSeconds = args.drain === undefined ? DEFAULT_DRAIN_SECONDS : Number(args.drain);
    if (args.drain !== undefined && !(args.drain.trim() !== "" && drainSeconds >= 0 && Number.isFinite(drainSeconds))) {
      throw new SynartesisError("usage", `--drain must be a number of seconds, 0 or more (got "${args.drain}")`);
    }
    const gateTimeout = args["gate-timeout"];
    if (gateTimeout !== undefined && !(Number(gateTimeout) >= 0)) {
      throw new SynartesisError("usage", `--gate-timeout must be a number of seconds (got "${gateTimeout}")`);
    }
    const log = createLogger(level);
    // Whatever goes wrong inside stays a JSON log line: stderr is the client's log view.
    process.on("uncaughtException", (error) => log.error("internal error", { error: describeError(error) }));
    process.on("unhandledRejection", (error) => log.error("internal error", { error: describeError(error) }));
    const cwd = process.cwd();
    const manifest = loadManifest(findManifest(cwd, args.manifest));
    const journal = await openJournal(findJournal(cwd, { journal: args.journal, manifest: args.manifest ?? manifest.path }), { create: true });
    try {
      // A journal that cannot be written stops the proxy here, before any call relies on it (exit 2).
      await journal.proveWritable();
    } catch (error) {
      await journal.close();
      throw error;
    }
    for (const warning of journal.warnings) log.warn(warning);
    if (gateTimeout !== undefined) log.info("--gate-timeout has no effect: held calls are refused at once, never kept waiting");

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
    const session = new ProxySession({
      manifest,
      journal,
      log,
      write: (line) => {
        unflushed++;
        try {
          process.stdout.write(line + "\n", flushed);
        } catch {
          // The client went away; its session ends with stdin.
          flushed();
        }
      },
      now: () => new Date(),
      newId: () => crypto.randomUUID(),
      approveCommand: approveCommandFor(journal.path),
      host: hostname(),
      pid: process.pid,
      // Someone typing at a terminal is told at once; a client gets a moment to send its initialize.
      initializeWaitMs: process.stdin.isTTY ? 0 : START_FAILURE_WAIT_MS,
      protectedPaths: new ProtectedPaths({ manifest: manifest.path, journal: journal.path, credentials: credentialsFolder(process.env) }),
      cwd,
    });
    await session.open();
    log.debug("proxy ready", { manifest: manifest.path, journal: journal.path });

    const input = (async () => {
      const splitter = new LineSplitter((line) => session.handleLine(line));
      const decoder = new TextDecoder();
      for await (const chunk of Bun.stdin.stream()) splitter.push(decoder.decode(chunk, { stream: true }));
      splitter.end();
    })();
    // The first signal starts a bounded shutdown; a second one cuts it short (R-PROXY-13).
    let stop!: () => void;
    let force!: () => void;
    const stopRequested = new Promise<void>((resolve) => (stop = resolve));
    const forced = new Promise<void>((resolve) => (force = resolve));
    let signals = 0;
    const onSignal = (signal: string) => {
      if (++signals === 1) {
        log.info("shutting down", { signal, drainSeconds });
        stop();
      } else {
        log.warn("a second signal: stopping now", { signal });
        force();
      }
    };
    process.on("SIGINT", () => onSignal("SIGINT"));
    process.on("SIGTERM", () => onSignal("SIGTERM"));
    // A client that stops reading (EPIPE) has gone: end the session as on EOF.
    process.stdout.on("error", (error: NodeJS.ErrnoException) => {
      log.warn("the client stopped reading the proxy's output", { error: error.code ?? error.message });
      stop();
    });
    await Promise.race([input.catch(() => {}), stopRequested, session.fatal.catch(() => {})]);
    await session.finish({ drainMs: drainSeconds * 1000, forced });
    try {
      await journal.close();
    } catch {}
    await Promise.race([flushStdout(), forced]);
    // stdin may close while a server is failing to start: that still ends with its error (R-PROXY-10).
    if (session.failure) throw session.failure;
    log.debug("proxy stopped");
    return 0;
  },
});
