// Finds the manifest and the journal the way a version-control tool finds its
// root (R-CLI-1): explicit flags first, then this folder and every parent.
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { SynartesisError } from "../errors.ts";

export const MANIFEST_NAME = "synartesis.yaml";
export const JOURNAL_NAME = "synartesis.db";

function* upwards(from: string): Generator<string> {
  let dir = resolve(from);
  for (;;) {
    yield dir;
    const parent = dirname(dir);
    if (parent === dir) return;
    dir = parent;
  }
}

export function findManifest(cwd: string, explicit?: string): string {
  if (explicit) return resolve(cwd, explicit);
  for (const dir of upwards(cwd)) {
    const candidate = join(dir, MANIFEST_NAME);
    if (existsSync(candidate)) return candidate;
  }
  throw new SynartesisError("manifest", `no ${MANIFEST_NAME} in ${resolve(cwd)} or any folder above it`, {
    hint: "Create one with `synartesis init NAME -- COMMAND ARGS…`, or pass --manifest PATH.",
  });
}

/**
 * Where the journal is, whether or not it exists yet: --journal; else next to
 * an explicit --manifest; else the nearest folder upwards holding a journal or
 * a manifest (a journal that does not exist yet lives next to its manifest).
 */
export function findJournal(cwd: string, flags: { journal?: string; manifest?: string }): string {
  if (flags.journal) return resolve(cwd, flags.journal);
  if (flags.manifest) {
    const manifest = resolve(cwd, flags.manifest);
    if (!existsSync(manifest)) throw new SynartesisError("manifest", `there is no manifest at ${manifest}`);
    return join(dirname(manifest), JOURNAL_NAME);
  }
  for (const dir of upwards(cwd)) {
    if (existsSync(join(dir, JOURNAL_NAME)) || existsSync(join(dir, MANIFEST_NAME))) return join(dir, JOURNAL_NAME);
  }
  return join(resolve(cwd), JOURNAL_NAME);
}

/** For commands that only read: the journal must already exist. */
export function existingJournal(cwd: string, flags: { journal?: string; manifest?: string }): string {
  const path = findJournal(cwd, flags);
  if (!existsSync(path)) {
    throw new SynartesisError("no_journal", `there is no journal at ${path}`, {
      hint: "A journal is created by `synartesis proxy` when an agent first connects. Pass --journal PATH if it lives elsewhere.",
    });
  }
  return path;
}
