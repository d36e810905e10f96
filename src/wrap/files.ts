// Where `wrap` reads and writes: the client's files (rewritten whole through a
// temporary file, keeping their mode), the backups beside them and the
// manifest (0600: only their owner reads them), the diffs it shows (every
// secret hidden), and the one question it asks.
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { createTwoFilesPatch } from "diff";
import { SynartesisError } from "../errors.ts";
import { masked, type Backup, type Secret } from "./backup.ts";
import type { Place } from "./clients.ts";

export const backupPath = (file: string) => `${file}.synartesis-backup.json`;

export function placeHere(env: Record<string, string | undefined> = process.env): Place {
  return { home: env.HOME || homedir(), cwd: process.cwd(), platform: process.platform, env };
}

/** Where wrap keeps the manifest of every server it wraps (the journal beside it): the user's config folder. */
export function defaultManifest(place: Place): string {
  const base =
    place.platform === "win32" ? (place.env.APPDATA ?? join(place.home, "AppData", "Roaming")) : place.env.XDG_CONFIG_HOME || join(place.home, ".config");
  return join(base, "synartesis", "synartesis.yaml");
}

export function readIfThere(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new SynartesisError("config", `cannot read ${path}: ${(error as Error).message}`);
  }
}

/** Replace a file whole (a temporary file renamed over it), keeping its mode; a new one gets `mode`. */
export function replaceFile(path: string, text: string, mode?: number): void {
  const kept = existsSync(path) ? statSync(path).mode & 0o777 : undefined;
  mkdirSync(dirname(path), { recursive: true });
  const partial = `${path}.${process.pid}.tmp`;
  writeFileSync(partial, text, { mode: mode ?? kept ?? 0o600 });
  chmodSync(partial, mode ?? kept ?? 0o600);
  renameSync(partial, path);
}

export function writeBackup(backup: Backup): void {
  replaceFile(backupPath(backup.file), `${JSON.stringify(backup, null, 2)}\n`, 0o600);
}

export function readBackup(file: string): Backup | undefined {
  const text = readIfThere(backupPath(file));
  if (text === undefined) return undefined;
  try {
    const backup = JSON.parse(text) as Backup;
    if (backup.version !== 1 || typeof backup.reverse !== "string" || !Array.isArray(backup.secrets)) throw new Error("not a backup wrap wrote");
    return backup;
  } catch (error) {
    throw new SynartesisError("config", `${backupPath(file)} cannot be read as wrap's backup: ${(error as Error).message}`, {
      hint: "Nothing was changed. Restore the file by hand, or move the backup away.",
    });
  }
}

export function removeBackup(file: string): void {
  unlinkSync(backupPath(file));
}

const HIDDEN = "‹secret›";

/** A unified diff of a file's change, each secret shown as ‹secret›. */
export function shownDiff(path: string, before: string, after: string, secrets: Secret[]): string {
  const hide = (text: string) => masked(text, secrets, () => HIDDEN);
  return createTwoFilesPatch(path, path, hide(before), hide(after), undefined, undefined, { context: 3 })
    .split("\n")
    .filter((line) => !line.startsWith("Index: ") && !/^=+$/.test(line))
    .join("\n");
}

/** Ask once on a terminal; without one, refuse (the caller says to pass --yes). */
export function confirmed(question: string): boolean | undefined {
  if (!process.stdin.isTTY) return undefined;
  const answer = prompt(`${question} [y/N]`);
  return answer !== null && /^y(es)?$/i.test(answer.trim());
}
