// `synartesis proxy`: the recording MCP proxy, over stdio for a client that
// starts it, or over Streamable HTTP (--http PORT) for clients that take a URL.
import { defineCommand } from "citty";
import { describeError, SynartesisError } from "../errors.ts";
import { openJournal, withheldSecrets } from "../journal/journal.ts";
import { findJournal, findManifest } from "../workspace/discover.ts";
import { loadManifest } from "../manifest/load.ts";
import { DEFAULT_HTTP_HOST, DEFAULT_IDLE_MINUTES, DEFAULT_MAX_SESSIONS, httpSettings, MIN_TOKEN_LENGTH, repeatedFlag } from "../http/options.ts";
import { createLogger, LOG_LEVELS, type LogLevel } from "../log.ts";
import { DEFAULT_DRAIN_SECONDS, serveStdio } from "../proxy/stdio.ts";
import { journalArg, manifestArg } from "./shared.ts";

export default defineCommand({
  meta: {
    name: "proxy",
    description:
      "Run the recording MCP proxy over stdio: point your MCP client's server command at `synartesis proxy --manifest /abs/synartesis.yaml`. With --http PORT, serve MCP Streamable HTTP at http://127.0.0.1:PORT/mcp instead, for clients that take a URL; every session is a run, all share the manifest's servers. The servers it starts are the manifest's: add one with synartesis init NAME -- COMMAND [ARGS…].",
  },
  args: {
    ...manifestArg,
    ...journalArg,
    server: {
      type: "string",
      valueHint: "name",
      description:
        "Serve only this server of the manifest, its tool names unchanged (what `synartesis wrap` writes: one client entry per server); the other servers' ${VAR}s need not be set",
    },
    "log-level": {
      type: "string",
      valueHint: LOG_LEVELS.join("|"),
      description:
        "JSON log lines on stderr at this level and above (default: info: held calls, denials, unknown outcomes, server starts, runs opened and closed)",
    },
    drain: {
      type: "string",
      valueHint: "seconds",
      description: `On EOF or SIGINT/SIGTERM, how long calls in flight may still take; then each gets an unknown-outcome error and its row stays pending (default: ${DEFAULT_DRAIN_SECONDS}). A second signal stops at once.`,
    },
    http: {
      type: "string",
      valueHint: "port",
      description: 'Serve over HTTP on this port (0: any free one, logged as a JSON line {"msg":"listening","url":…}); needs a token of 16 characters or more',
    },
    "http-host": {
      type: "string",
      valueHint: "address",
      description: `The address to bind (default: ${DEFAULT_HTTP_HOST}). Any other lets everyone who can reach it and holds the token write through every server in the manifest`,
    },
    "http-allow-host": {
      type: "string",
      valueHint: "name",
      description: "A name clients may use in Host and Origin besides the bound address and localhost (a tunnel's or a proxy's name); repeat for several",
    },
    "http-idle": {
      type: "string",
      valueHint: "minutes",
      description: `End a session (its run complete) after this long without a request (default: ${DEFAULT_IDLE_MINUTES}; decimals allowed; 0: never)`,
    },
    "http-max-sessions": {
      type: "string",
      valueHint: "n",
      description: `Serve at most this many sessions at once, sessionless runs included; one more gets 503 until one ends (default: ${DEFAULT_MAX_SESSIONS})`,
    },
    "token-file": {
      type: "string",
      valueHint: "file",
      description: `Read the bearer token for --http from this file (default: the SYNARTESIS_TOKEN environment variable); at least ${MIN_TOKEN_LENGTH} characters`,
    },
    token: {
      type: "string",
      valueHint: "token",
      description: "The bearer token for --http itself. Other users of this machine can read it in `ps`: prefer SYNARTESIS_TOKEN or --token-file",
    },
    "gate-timeout": {
      type: "string",
      valueHint: "seconds",
      description: "Accepted for compatibility; it never makes a call wait. A held call is refused at once with the command that approves it.",
    },
  },
  async run({ args, rawArgs }) {
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
    // Before anything starts: a missing or short token is a usage error (exit 2, R-HTTP-2).
    const http = httpSettings(args, repeatedFlag(rawArgs, "http-allow-host"), process.env);
    const log = createLogger(level);
    // Whatever goes wrong inside stays a JSON log line: stderr is the client's log view.
    process.on("uncaughtException", (error) => log.error("internal error", { error: describeError(error) }));
    process.on("unhandledRejection", (error) => log.error("internal error", { error: describeError(error) }));
    const cwd = process.cwd();
    const manifest = loadManifest(findManifest(cwd, args.manifest), process.env, args.server === undefined ? {} : { onlyServer: args.server });
    const journal = await openJournal(findJournal(cwd, { journal: args.journal, manifest: args.manifest ?? manifest.path }), { create: true });
    try {
      // A journal that cannot be written stops the proxy here, before any call relies on it (exit 2).
      await journal.proveWritable();
    } catch (error) {
      await journal.close();
      throw error;
    }
    for (const warning of journal.warnings) log.warn(warning);
    withheldSecrets(journal);
    if (gateTimeout !== undefined) log.info("--gate-timeout has no effect: held calls are refused at once, never kept waiting");

    const common = { manifest, journal, log, drainMs: drainSeconds * 1000, cwd };
    if (!http) await serveStdio(common);
    else {
      // Loaded only to serve HTTP: a stdio proxy never needs the HTTP server or the SDK's schemas it uses.
      const { serveHttp } = await import("../http/serve.ts");
      await serveHttp({ ...common, ...http });
    }
    return 0;
  },
});
