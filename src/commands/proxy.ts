// `synartesis proxy`: the recording MCP proxy an MCP client starts over stdio.
import { defineCommand } from "citty";
import { hostname } from "node:os";
import { SynartesisError } from "../errors.ts";
import { Journal } from "../journal/journal.ts";
import { findJournal, findManifest } from "../manifest/discover.ts";
import { loadManifest } from "../manifest/load.ts";
import { LineSplitter } from "../proxy/lines.ts";
import { createLogger, LOG_LEVELS, type LogLevel } from "../proxy/log.ts";
import { ProxySession } from "../proxy/session.ts";
import { approveCommandFor } from "../self.ts";
import { journalArg, manifestArg } from "./shared.ts";

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
      description: "JSON log lines on stderr at this level and above (default: warn)",
    },
    "gate-timeout": {
      type: "string",
      valueHint: "seconds",
      description:
        "Accepted for compatibility; it never makes a call wait. A held call is refused at once with the command that approves it.",
    },
  },
  async run({ args }) {
    const level = (args["log-level"] ?? "warn") as LogLevel;
    if (!LOG_LEVELS.includes(level)) {
      throw new SynartesisError("usage", `--log-level must be one of ${LOG_LEVELS.join(", ")} (got "${level}")`);
    }
    const gateTimeout = args["gate-timeout"];
    if (gateTimeout !== undefined && !(Number(gateTimeout) >= 0)) {
      throw new SynartesisError("usage", `--gate-timeout must be a number of seconds (got "${gateTimeout}")`);
    }
    const log = createLogger(level);
    const cwd = process.cwd();
    const manifest = loadManifest(findManifest(cwd, args.manifest));
    const journal = Journal.open(findJournal(cwd, { journal: args.journal, manifest: args.manifest ?? manifest.path }), { create: true });
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
    });
    await session.open();
    log.debug("proxy ready", { manifest: manifest.path, journal: journal.path });

    const input = (async () => {
      const splitter = new LineSplitter((line) => session.handleLine(line));
      const decoder = new TextDecoder();
      for await (const chunk of Bun.stdin.stream()) splitter.push(decoder.decode(chunk, { stream: true }));
      splitter.end();
    })();
    const signalled = new Promise<void>((resolve) => {
      process.once("SIGINT", () => resolve());
      process.once("SIGTERM", () => resolve());
      // A client that stops reading (EPIPE) has gone: end the session as on EOF.
      process.stdout.on("error", (error: NodeJS.ErrnoException) => {
        log.warn("the client stopped reading the proxy's output", { error: error.code ?? error.message });
        resolve();
      });
    });
    try {
      await Promise.race([input, signalled, session.fatal]);
    } catch (error) {
      await session.finish();
      journal.close();
      await flushStdout();
      throw error;
    }
    await session.finish();
    journal.close();
    await flushStdout();
    // stdin may close while a server is failing to start: that still ends with its error (R-PROXY-10).
    if (session.failure) throw session.failure;
    log.debug("proxy stopped");
    return 0;
  },
});
