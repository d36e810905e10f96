// How to run this same program again: from the compiled binary, or from
// source under bun. Used for `command: synartesis` in manifests, and for the
// commands that decide a held call (approve, deny) or settle an unknown
// outcome, printed to people and agents.
import { existsSync, realpathSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";

function realpath(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

const compiled = Bun.main.startsWith("/$bunfs/") || Bun.main.startsWith("B:/~BUN/");

/** argv prefix that starts this program. */
export function selfArgv(): string[] {
  return compiled ? [process.execPath] : [process.execPath, realpath(Bun.main)];
}

/** The command a person should paste: plain `synartesis` when that is what PATH finds. */
export function selfCommandText(): string {
  const onPath = Bun.which("synartesis");
  if (compiled && onPath && realpath(onPath) === realpath(process.execPath)) return "synartesis";
  return selfArgv().map(shellQuote).join(" ");
}

/** Folders on the PATH an MCP client started from a desktop usually has (launchd's, a Linux session's, Homebrew's). */
const USUAL_CLIENT_PATH = ["/usr/local/bin", "/usr/bin", "/bin", "/opt/homebrew/bin"];

/** How an MCP client's configuration should start this program, and what to say when that will not last. */
export interface ClientCommand {
  /** The command and the arguments before synartesis's own. */
  argv: string[];
  /** Set when the command points at a file that may move (a clone's build): a sentence for the person. */
  caveat?: string;
}

/**
 * The command a client's configuration can rely on: the bare name when a
 * link in one of the client's usual PATH folders runs this program; else the
 * link that does (install.sh's, or the release install's ~/.local/bin);
 * the file itself only when nothing else runs it, said to be fragile.
 */
export function clientCommand(env: Record<string, string | undefined> = process.env): ClientCommand {
  if (!compiled) {
    return {
      argv: selfArgv(),
      caveat:
        "This runs synartesis from its source with bun: the entry breaks if the clone moves (./install.sh builds it and links synartesis onto your PATH).",
    };
  }
  const self = realpath(process.execPath);
  const home = env.HOME || homedir();
  const candidates = [
    Bun.which("synartesis", { PATH: env.PATH ?? "" }),
    join(home, ".local", "bin", "synartesis"),
    ...USUAL_CLIENT_PATH.map((folder) => join(folder, "synartesis")),
  ];
  for (const candidate of candidates) {
    if (!candidate || !existsSync(candidate) || realpath(candidate) !== self) continue;
    return { argv: [USUAL_CLIENT_PATH.includes(dirname(candidate)) ? "synartesis" : candidate] };
  }
  return {
    argv: [process.execPath],
    caveat: `${process.execPath} is the only synartesis found: the entry breaks if that file moves or is deleted (./install.sh in a clone links synartesis onto your PATH).`,
  };
}

export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_\/.,:=@%+-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** What a person decides about a call: approve or deny a held one, settle one whose outcome is unknown. */
export type DecisionVerb = "approve" | "deny" | "settle";

/** Where decision commands point: the program to run, and the journal (none: the command finds it from the folder). */
export interface CommandTarget {
  command: string;
  journalPath?: string;
}

/** The words of the shell command that decides call `id8`, each ready to paste (R-GATE-1). The one place such a command is built. */
export function decisionWords(verb: DecisionVerb, id8: string, target: CommandTarget): string[] {
  return [target.command, verb, id8, ...(target.journalPath === undefined ? [] : ["--journal", shellQuote(target.journalPath)])];
}

/** A decision command for one call, as one line. */
export type DecisionCommand = (verb: DecisionVerb, id8: string) => string;

/** Decision commands for the calls of one journal, pasteable from any folder; `command` defaults to how this program is run. */
export function decisionCommandFor(journalPath: string | undefined, command = selfCommandText()): DecisionCommand {
  return (verb, id8) => decisionWords(verb, id8, { command, journalPath }).join(" ");
}

/** The command that approves a held call (what the proxy tells the agent). */
export function approveCommandFor(journalPath: string): (id8: string) => string {
  const decisionCommand = decisionCommandFor(journalPath);
  return (id8) => decisionCommand("approve", id8);
}
