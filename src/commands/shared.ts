// Argument definitions shared by several commands, and the strict flag check
// citty does not do (it accepts unknown flags silently).
import { osAccount } from "../workspace/deciders.ts";
import type { ArgsDef } from "citty";
import { SynartesisError } from "../errors.ts";
import type { Journal } from "../journal/journal.ts";
import type { Run } from "../journal/types.ts";
import { manifestForRun } from "../workspace/discover.ts";
import { printable } from "../render/style.ts";

export const manifestArg = {
  manifest: {
    type: "string",
    valueHint: "path",
    description: "The manifest (default: synartesis.yaml, looked for from this folder upwards)",
  },
} as const satisfies ArgsDef;

export const journalArg = {
  journal: {
    type: "string",
    valueHint: "PATH|URL",
    description:
      "The journal: a file, or a postgres:// URL for a team (default: SYNARTESIS_JOURNAL, else the manifest's journal: key, else synartesis.db next to the manifest or looked for upwards)",
  },
} as const satisfies ArgsDef;

export const runArg = {
  run: { type: "positional", required: false, description: "Run id or any unique prefix of it (default: the most recent run)" },
} as const satisfies ArgsDef;

export const jsonArg = {
  json: { type: "boolean", description: "Print JSON (stable shape: docs/commands.md)" },
} as const satisfies ArgsDef;

/** What main.ts hands every command besides its parsed flags. */
export interface CommandData {
  /** Everything after the first `--`, untouched. */
  afterDashes: string[] | undefined;
}

function kebab(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

/**
 * Refuse flags a command does not declare, string flags without a value and
 * surplus positionals. `rawArgs` holds only what came before the first `--`.
 */
export function checkFlags(rawArgs: string[], argsDef: ArgsDef): void {
  const strings = new Set<string>();
  const booleans = new Set<string>();
  let positionals = 0;
  for (const [name, def] of Object.entries(argsDef)) {
    const aliases = "alias" in def && def.alias !== undefined ? [def.alias].flat() : [];
    const names = [name, kebab(name), ...aliases];
    if (def.type === "positional") positionals++;
    else if (def.type === "boolean") names.forEach((n) => booleans.add(n));
    else names.forEach((n) => strings.add(n));
  }
  booleans.add("help");
  booleans.add("h");

  let seenPositionals = 0;
  for (let i = 0; i < rawArgs.length; i++) {
    const token = rawArgs[i]!;
    if (token === "-" || !token.startsWith("-")) {
      seenPositionals++;
      if (seenPositionals > positionals) {
        throw new SynartesisError("usage", `unexpected argument "${token}"`);
      }
      continue;
    }
    const long = token.startsWith("--");
    const body = token.slice(long ? 2 : 1);
    const eq = body.indexOf("=");
    const name = eq === -1 ? body : body.slice(0, eq);
    if (!long && name.length > 1 && eq === -1) {
      // Grouped short flags (-hx): every letter must be a known boolean.
      for (const letter of name) {
        if (!booleans.has(letter)) throw new SynartesisError("usage", `unknown flag -${letter} (in ${token})`);
      }
      continue;
    }
    if (booleans.has(name)) {
      if (eq !== -1 && !["true", "false"].includes(body.slice(eq + 1))) {
        throw new SynartesisError("usage", `flag ${long ? "--" : "-"}${name} takes no value`);
      }
      continue;
    }
    if (long && name.startsWith("no-") && booleans.has(name.slice(3))) continue;
    if (strings.has(name)) {
      if (eq === -1) {
        const value = rawArgs[i + 1];
        if (value === undefined) throw new SynartesisError("usage", `flag ${token} needs a value`);
        i++;
      }
      continue;
    }
    const known = [...strings, ...booleans].filter((flag) => flag.length > 1);
    throw new SynartesisError("usage", `unknown flag ${long ? "--" : "-"}${name}${didYouMean(name, known, (flag) => `--${flag}`)}`);
  }
}

/** Edit distance (insertions, deletions, substitutions) between two words. */
function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = current;
  }
  return previous[b.length]!;
}

/** `; did you mean X?` for the closest candidate within a few edits (hyphens aside), else nothing. */
export function didYouMean(word: string, candidates: string[], shown: (candidate: string) => string): string {
  const bare = (text: string) => text.toLowerCase().replace(/-/g, "");
  let best: { candidate: string; edits: number } | undefined;
  for (const candidate of candidates) {
    const edits = Math.min(distance(word.toLowerCase(), candidate), distance(bare(word), bare(candidate)));
    if (!best || edits < best.edits) best = { candidate, edits };
  }
  return best && best.edits <= Math.max(1, Math.floor(word.length / 3)) ? `; did you mean ${shown(best.candidate)}?` : "";
}

/** The journal for a command that only reads: it must exist already (R-CLI-1). */
export async function openExistingJournal(flags: { journal?: string; manifest?: string }) {
  const [{ openJournal, withheldSecrets }, { existingJournal }] = await Promise.all([import("../journal/journal.ts"), import("../workspace/discover.ts")]);
  return withheldSecrets(await openJournal(existingJournal(process.cwd(), flags), { create: false }));
}

/** Run `work` with the existing journal, closing it whatever happens. */
export async function withExistingJournal<T>(flags: { journal?: string; manifest?: string }, work: (journal: Journal) => T | Promise<T>): Promise<T> {
  const journal = await openExistingJournal(flags);
  try {
    return await work(journal);
  } finally {
    await journal.close();
  }
}

/** Say something to the person at the terminal (never to stdout, which carries data): one printable line on stderr. */
export function tell(message: string): void {
  process.stderr.write(`synartesis: ${printable(message)}\n`);
}

export function writeLines(lines: string[]): void {
  process.stdout.write(lines.length ? lines.join("\n") + "\n" : "");
}

export function writeJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + "\n");
}

/** The logged-in user: $USER, then $LOGNAME, then the OS account name (records of who did what; a decision takes the account itself: decider()). */
export function currentUser(env: Record<string, string | undefined> = process.env): string {
  if (env.USER) return env.USER;
  if (env.LOGNAME) return env.LOGNAME;
  return osAccount();
}

/** The manifest to use for a run (the one it was recorded with, unless --manifest says otherwise); a note about the choice goes to stderr. */
export function manifestPathForRun(run: Run, explicit: string | undefined, cwd: string): string {
  const choice = manifestForRun(run, explicit, cwd);
  if (choice.note) tell(`note: ${choice.note}`);
  return choice.path;
}
