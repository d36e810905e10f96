// How to run this same program again: from the compiled binary, or from
// source under bun. Used for `command: synartesis` in manifests and for the
// approve command printed to agents.
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

/** The exact shell command that approves a held action, pasteable from any folder (R-GATE-1). */
export function approveCommandFor(journalPath: string): (id8: string) => string {
  const command = selfCommandText();
  return (id8) => `${command} approve ${id8} --journal ${shellQuote(journalPath)}`;
}
