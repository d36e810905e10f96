// The way back from `wrap` (R-WRAP-2, R-WRAP-3): written beside each file it
// changes, a diff from what wrap wrote to what was there (no context lines),
// with the hashes of both texts. No secret is in it: every value of an entry's
// env or headers is replaced by a marker that says where the value is now in
// the client's file (its entry's env, where the client keeps it), and read
// back from there by `unwrap`. Pure.
import { applyPatch, createTwoFilesPatch } from "diff";
import { sha256 } from "../canonical.ts";
import { isObject } from "./clients.ts";

export const BACKUP_VERSION = 1;

/** A value the client keeps in its file, and where it is once the file is wrapped. */
export interface Secret {
  value: string;
  at: string[];
}

export interface Backup {
  version: typeof BACKUP_VERSION;
  client: string;
  file: string;
  manifest: string;
  /** SHA-256 of the file before wrap and of what wrap wrote. */
  before: string;
  after: string;
  /** From what wrap wrote back to what was there: a unified diff without context, its secrets as markers. */
  reverse: string;
  secrets: Array<{ marker: string; at: string[] }>;
  /** Each entry wrap changed, and the manifest's server it starts. */
  entries: Array<{ path: string[]; server: string }>;
}

/** Shorter values are not secrets, and masking them would garble the diff. */
const SECRET_MIN = 4;

/** `text` with each secret's value replaced by `mark(i)`, longest first (a value inside another is not split). */
export function masked(text: string, secrets: Secret[], mark: (index: number) => string): string {
  const ordered = secrets.map((secret, index) => ({ secret, index })).filter(({ secret }) => secret.value.length >= SECRET_MIN);
  ordered.sort((a, b) => b.secret.value.length - a.secret.value.length);
  let out = text;
  for (const { secret, index } of ordered) out = out.replaceAll(secret.value, mark(index));
  return out;
}

/** A marker no text of the file holds. */
function markerFor(index: number, texts: string[]): string {
  let marker = `<<synartesis secret ${index}>>`;
  while (texts.some((text) => text.includes(marker))) marker = `<${marker}>`;
  return marker;
}

export function makeBackup(
  fields: Omit<Backup, "version" | "before" | "after" | "reverse" | "secrets">,
  before: string,
  after: string,
  secrets: Secret[],
): Backup {
  const markers = secrets.map((_, index) => markerFor(index, [before, after]));
  const reverse = createTwoFilesPatch(fields.file, fields.file, after, before, undefined, undefined, { context: 0 });
  return {
    version: BACKUP_VERSION,
    ...fields,
    before: sha256(before),
    after: sha256(after),
    reverse: masked(reverse, secrets, (index) => markers[index]!),
    secrets: secrets.flatMap((secret, index) => (secret.value.length >= SECRET_MIN ? [{ marker: markers[index]!, at: secret.at }] : [])),
  };
}

export function valueAt(data: unknown, path: string[]): unknown {
  let at = data;
  for (const key of path) at = isObject(at) ? at[key] : undefined;
  return at;
}

export type Restored = { text: string; exact: boolean } | { problems: string[] };

/**
 * The file as it was before wrap: exactly, when it is still what wrap wrote;
 * otherwise the diff applied where it still fits (the person's other edits
 * kept), which `verify` must accept. Problems say why it cannot be done.
 */
export function restoreText(current: string, data: unknown, backup: Backup, verify: (text: string) => string[]): Restored {
  let reverse = backup.reverse;
  const problems: string[] = [];
  for (const { marker, at } of backup.secrets) {
    const value = valueAt(data, at);
    if (typeof value !== "string") problems.push(`${at.join(".")} is no longer in the file: the value wrap kept there cannot be put back`);
    else reverse = reverse.replaceAll(marker, value);
  }
  if (problems.length) return { problems };
  const exact = sha256(current) === backup.after;
  const text = applyPatch(current, reverse);
  if (text === false) return { problems: ["the lines wrap changed were edited since: its change no longer applies"] };
  if (exact && sha256(text) !== backup.before)
    return { problems: ["the file rebuilt from the backup is not the file wrap found (the backup does not match it)"] };
  if (exact) return { text, exact };
  const found = verify(text);
  return found.length ? { problems: found } : { text, exact };
}
