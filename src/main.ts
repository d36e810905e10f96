#!/usr/bin/env bun
// Entry point: split argv at the first "--", find the command, load it lazily,
// check its flags strictly, run it, and turn errors into exit codes.
//
// Output, decided here for every command:
// - stdout carries data only (a listing, --json, a frame of watch) and, under
//   `proxy`, the protocol. What is said to a person goes to stderr: a note as
//   one line "synartesis: …" (commands/shared.ts `tell`), an error through
//   printError below, made printable, since either may quote an agent's or a
//   server's words.
// - Colour is decided once, by render/style.ts colourEnabled() (a terminal,
//   no NO_COLOR, not TERM=dumb): for help below as for every command.
// - No logging library. consola was a dependency and has been removed: the
//   CLI's messages are fixed sentences whose exact text the README and the
//   tests quote, and consola would decorate them (badges, its own colour and
//   TTY detection), throttle repeated ones (one warning per server is not a
//   repeat to hide), and write info to stdout by default. Nothing needs levels
//   beyond the proxy's own JSON-lines logger (--log-level), and no command
//   prompts: init takes everything as flags, since agents run it too.
import type { CommandDef } from "citty";
import { parseArgs } from "citty";
import { describeError, isSynartesisError, SynartesisError, type ErrorCode } from "./errors.ts";
import { checkFlags, didYouMean, type CommandData } from "./commands/shared.ts";
import { renderHelp } from "./render/help.ts";
import { withoutJit } from "./jit.ts";
import { printable, styleFor } from "./render/style.ts";
import { versionLine } from "./version.ts";

type CommandModule = { default: CommandDef<any> };

interface CommandEntry {
  summary: string;
  /** Usage lines, when the one built from the arguments does not say it all (a server command after --). */
  usage?: string[];
  example: string;
  load: () => Promise<CommandModule>;
}

const COMMANDS: Record<string, CommandEntry> = {
  proxy: {
    summary: "Run the recording MCP proxy over stdio (what your MCP client starts), or over HTTP (--http PORT)",
    example: "synartesis proxy --manifest ~/crm-demo/synartesis.yaml",
    load: () => import("./commands/proxy.ts"),
  },
  init: {
    summary: "Start a server, list its tools and write a first policy to synartesis.yaml",
    usage: ["synartesis init NAME [options] -- COMMAND [ARGS…]", "synartesis init NAME --url URL [options]"],
    example: "synartesis init crm -- synartesis toy-crm --state ./crm.json",
    load: () => import("./commands/init.ts"),
  },
  wrap: {
    summary: "Put every MCP server a client uses (Claude, Cursor, VS Code, …) behind Synartesis, in one command",
    usage: ["synartesis wrap CLIENT [--dry-run] [--yes] [--manifest FILE]", "synartesis wrap --list"],
    example: "synartesis wrap cursor --dry-run",
    load: () => import("./commands/wrap.ts"),
  },
  unwrap: { summary: "Take wrap back: the client's files as they were", example: "synartesis unwrap cursor", load: () => import("./commands/unwrap.ts") },
  check: {
    summary: "Load the manifest, start its servers and verify every tool it names exists",
    example: "synartesis check",
    load: () => import("./commands/check.ts"),
  },
  list: { summary: "List recorded runs, newest first", example: "synartesis list --json", load: () => import("./commands/list.ts") },
  show: {
    summary: "Show every call of a run, with the exact call that would undo it",
    example: "synartesis show 30a05f8b",
    load: () => import("./commands/show.ts"),
  },
  undo: {
    summary: "Put back the state a run replaced, newest first, refusing on drift",
    example: "synartesis undo --dry-run",
    load: () => import("./commands/undo.ts"),
  },
  gates: { summary: "List calls held for a person's approval", example: "synartesis gates", load: () => import("./commands/gates.ts") },
  approve: {
    summary: "Approve a held call (it runs when the agent retries it)",
    example: "synartesis approve 702e2812",
    load: () => import("./commands/approve.ts"),
  },
  deny: {
    summary: "Deny a held call (the agent is told why on its next retry)",
    example: 'synartesis deny 9e4f1a20 --reason "we do not pressure customers"',
    load: () => import("./commands/deny.ts"),
  },
  watch: { summary: "Live view of calls, runs and pending approvals", example: "synartesis watch", load: () => import("./commands/watch.ts") },
  ui: {
    summary: "Serve the review page: runs, calls, approvals and undo in a browser",
    example: "synartesis ui --no-open",
    load: () => import("./commands/ui.ts"),
  },
  login: {
    summary: "Sign in to a url server that declares auth: oauth (opens a browser)",
    example: "synartesis login notes",
    load: () => import("./commands/login.ts"),
  },
  logout: { summary: "Forget the sign-in kept for a server", example: "synartesis logout notes", load: () => import("./commands/logout.ts") },
  settle: {
    summary: "Record whether a call of unknown outcome (or an interrupted undo's inverse) ran",
    example: 'synartesis settle 1a365c8a --applied --note "the row is there"',
    load: () => import("./commands/settle.ts"),
  },
  verify: {
    summary: "Check that the journal's record is as Synartesis wrote it (every run's SHA-256 chain)",
    example: "synartesis verify",
    load: () => import("./commands/verify.ts"),
  },
  export: {
    summary: "Write one run as a self-contained file that verify --file checks anywhere",
    example: "synartesis export 30a05f8b > run.json",
    load: () => import("./commands/export.ts"),
  },
  close: { summary: "Mark an abandoned active run complete", example: "synartesis close 30a05f8b", load: () => import("./commands/close.ts") },
  "toy-crm": {
    summary: "A toy CRM MCP server built into the binary, to try the whole loop",
    example: "synartesis toy-crm --state ./crm.json",
    load: () => import("./commands/toy-crm.ts"),
  },
};

/** Commands whose arguments after "--" are a server command (R-CLI-6). */
const TAKES_A_COMMAND = new Set(["init"]);

/** The one place error codes become exit codes (R-UNDO-9). */
const EXIT_CODES: Record<ErrorCode, 1 | 2> = {
  usage: 2,
  manifest: 2,
  config: 2,
  unknown_id: 2,
  no_journal: 1,
  journal: 2,
  server: 1,
  refused: 1,
};

function topLevelHelp(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((n) => n.length));
  const lines = [
    "synartesis — an undo layer for AI agents",
    "",
    "Usage: synartesis <command> [flags] [-- server command]",
    "",
    "Commands:",
    ...Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`),
    "",
    "Flags:",
    "  --help, -h     Show help (also: synartesis <command> --help)",
    "  --version, -v  Print the version",
    "",
    "Exit codes: 0 success, 1 stopped or refused, 2 bad usage or configuration.",
  ];
  return lines.join("\n") + "\n";
}

async function commandHelp(name: string, entry: CommandEntry, def: CommandDef<any>, argsDef: Record<string, any>): Promise<string> {
  const meta = (typeof def.meta === "function" ? await def.meta() : await def.meta) ?? {};
  return renderHelp(
    { name, description: meta.description ?? entry.summary, args: argsDef, ...(entry.usage ? { usage: entry.usage } : {}), example: entry.example },
    styleFor(process.stdout),
  );
}

/** citty's "Missing required positional argument: NAME" in our words: what is missing and what it is. */
function missingArgument(message: string, argsDef: Record<string, { description?: string }>): string {
  const missing = /^Missing required positional argument: (\S+)$/.exec(message)?.[1];
  if (!missing) return message;
  const description = argsDef[missing.toLowerCase()]?.description;
  return `missing ${missing.toUpperCase()}${description ? ` (${description.charAt(0).toLowerCase()}${description.slice(1)})` : ""}`;
}

async function writeAll(stream: NodeJS.WriteStream, text: string): Promise<void> {
  if (text === "") return;
  await new Promise<void>((resolve) => stream.write(text, () => resolve()));
}

/** An error's lines; each is made printable, since a message may quote a tool name, a client name or a server's words. */
function printError(error: unknown): void {
  if (isSynartesisError(error)) {
    const lines = [`synartesis: ${error.message}`, ...error.details.map((d) => `  ${d}`)];
    if (error.hint) lines.push(error.hint);
    process.stderr.write(lines.map(printable).join("\n") + "\n");
    return;
  }
  process.stderr.write(`synartesis: internal error: ${printable(describeError(error))}\n`);
  if (process.env.SYNARTESIS_DEBUG) process.stderr.write(`${(error as Error)?.stack ?? ""}\n`);
}

export async function main(argv: string[]): Promise<number> {
  const dashes = argv.indexOf("--");
  const before = dashes === -1 ? argv : argv.slice(0, dashes);
  const afterDashes = dashes === -1 ? undefined : argv.slice(dashes + 1);
  const [name, ...rest] = before;

  if (name === undefined) {
    process.stderr.write(topLevelHelp());
    return 2;
  }
  if (name === "--help" || name === "-h" || name === "help") {
    await writeAll(process.stdout, topLevelHelp());
    return 0;
  }
  if (name === "--version" || name === "-v") {
    await writeAll(process.stdout, versionLine() + "\n");
    return 0;
  }
  const entry = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  // Before anything is read from stdin or loaded: with SYNARTESIS_JIT=0 the proxy replaces itself with one without the JIT (src/jit.ts).
  if (name === "proxy" && !rest.includes("--help") && !rest.includes("-h")) withoutJit();
  if (!entry) {
    const what = name.startsWith("-") ? `unknown flag ${name}` : `unknown command "${name}"${didYouMean(name, Object.keys(COMMANDS), (c) => `"${c}"`)}`;
    process.stderr.write(printable(`synartesis: ${what} (see synartesis --help)`) + "\n");
    return 2;
  }

  const def = (await entry.load()).default;
  const argsDef = (typeof def.args === "function" ? await def.args() : await def.args) ?? {};
  if (rest.includes("--help") || rest.includes("-h")) {
    await writeAll(process.stdout, await commandHelp(name, entry, def, argsDef));
    return 0;
  }
  try {
    if (afterDashes !== undefined && !TAKES_A_COMMAND.has(name)) {
      throw new SynartesisError("usage", `synartesis ${name} takes nothing after "--" (got "-- ${afterDashes.join(" ")}"); only init passes a server command`);
    }
    checkFlags(rest, argsDef);
    let args;
    try {
      args = parseArgs(rest, argsDef);
    } catch (error) {
      throw new SynartesisError("usage", missingArgument(describeError(error), argsDef));
    }
    const data: CommandData = { afterDashes };
    const result = await def.run?.({ rawArgs: rest, args, cmd: def, data });
    return typeof result === "number" ? result : 0;
  } catch (error) {
    // One line for a usage error, pointing at the help (R-PROXY-10).
    printError(
      isSynartesisError(error) && error.code === "usage"
        ? new SynartesisError("usage", `${error.message} (see synartesis ${name} --help)`, { details: error.details, hint: error.hint })
        : error,
    );
    return isSynartesisError(error) ? EXIT_CODES[error.code] : 1;
  }
}

/**
 * Let stdout and stderr drain before the process exits: process.exit drops
 * whatever a slow reader has not taken yet (R-CLI-9). A reader that has gone
 * (EPIPE) ends the wait at once. `boundMs` limits it for the proxy, whose
 * client may stop reading without closing the pipe (R-PROXY-13).
 */
export async function finishOutput(boundMs?: number): Promise<void> {
  const finish = (stream: NodeJS.WriteStream) =>
    new Promise<void>((resolve) => {
      stream.once("error", () => resolve());
      try {
        stream.end(() => resolve());
      } catch {
        resolve();
      }
    });
  const both = Promise.all([finish(process.stdout), finish(process.stderr)]);
  await (boundMs === undefined ? both : Promise.race([both, Bun.sleep(boundMs)]));
}

/** The proxy's reader is a client that may stop reading without closing: its last output waits only this long. */
const PROXY_FLUSH_MS = 5000;

if (import.meta.main) {
  const argv = process.argv.slice(2);
  const code = await main(argv);
  await finishOutput(argv[0] === "proxy" ? PROXY_FLUSH_MS : undefined);
  process.exit(code);
}
