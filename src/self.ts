// How to run this same program again: from the compiled binary, or from
// source under bun. Used for `command: synartesis` in manifests, and for the
// commands that decide a held call (approve, deny) or settle an unknown
// outcome, printed to people and agents.
import { realpathSync } from "node:fs";

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
