// Finds the manifest and the journal the way a version-control tool finds its
// root (R-CLI-1): explicit flags first, then this folder and every parent.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { parseDocument } from "yaml";
import { SynartesisError } from "../errors.ts";
import { isDatabaseUrl } from "../journal/journal.ts";
import { shortId, type Run } from "../journal/types.ts";
import { loadManifest } from "../manifest/load.ts";

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

/** A journal location as given: a database URL stays as it is, a file is resolved against `base`. */
function journalAt(location: string, base: string): string {
  return isDatabaseUrl(location) ? location : resolve(base, location);
}

/**
 * The journal a manifest names with its `journal:` key, if it has one. Only
 * then is the manifest loaded (which checks the key and expands its ${VAR}s),
 * so a command that only reads the journal does not need the servers' variables.
 */
function declaredJournal(manifest: string, env: Record<string, string | undefined>): string | undefined {
  let text: string;
  try {
    text = readFileSync(manifest, "utf8");
  } catch {
    return undefined;
  }
  // A key spelt out contains "journal"; one spelt with escapes contains a backslash. Without either, the (slow) parse is spared.
  if (!text.includes("journal") && !text.includes("\\")) return undefined;
  if (!parseDocument(text).has("journal")) return undefined;
  const declared = loadManifest(manifest, env, { unsetVariables: "warn" }).journal;
  return declared === undefined ? undefined : journalAt(declared, dirname(manifest));
}

/**
 * Where the journal is, whether or not it exists yet: --journal; else
 * SYNARTESIS_JOURNAL; else what the manifest's `journal:` key says; else
 * next to an explicit --manifest; else the nearest folder upwards holding a
 * journal or a manifest (a journal that does not exist yet lives next to its
 * manifest). A `postgres://` URL names a database (R-TEAM-1).
 */
export function findJournal(cwd: string, flags: { journal?: string; manifest?: string }, env: Record<string, string | undefined> = process.env): string {
  if (flags.journal) return journalAt(flags.journal, cwd);
  if (env.SYNARTESIS_JOURNAL) return journalAt(env.SYNARTESIS_JOURNAL, cwd);
  if (flags.manifest) {
    const manifest = resolve(cwd, flags.manifest);
    if (!existsSync(manifest)) throw new SynartesisError("manifest", `there is no manifest at ${manifest}`);
    return declaredJournal(manifest, env) ?? join(dirname(manifest), JOURNAL_NAME);
  }
  for (const dir of upwards(cwd)) {
    const manifest = join(dir, MANIFEST_NAME);
    const declared = declaredJournal(manifest, env);
    if (declared) return declared;
    if (existsSync(join(dir, JOURNAL_NAME)) || existsSync(manifest)) return join(dir, JOURNAL_NAME);
  }
  return join(resolve(cwd), JOURNAL_NAME);
}

/** For commands that only read: the journal must already exist (a database is asked when it is opened). */
export function existingJournal(cwd: string, flags: { journal?: string; manifest?: string }): string {
  const path = findJournal(cwd, flags);
  if (!isDatabaseUrl(path) && !existsSync(path)) {
    throw new SynartesisError("no_journal", `there is no journal at ${path}`, {
      hint: "A journal is created by `synartesis proxy` when an agent first connects. Pass --journal PATH if it lives elsewhere.",
    });
  }
  return path;
}

/**
 * The manifest to undo a run with: the one it was recorded with (undo must
 * start the same servers), unless an explicit one is given. `note` says when
 * the explicit one differs from the recorded one.
 */
export function manifestForRun(run: Run, explicit: string | undefined, cwd: string): { path: string; note?: string } {
  if (explicit) {
    const path = resolve(cwd, explicit);
    if (run.manifest && run.manifest !== path) {
      return { path, note: `run ${shortId(run.id)} was recorded with ${run.manifest}; undoing it with ${path} as you asked` };
    }
    return { path };
  }
  if (!run.manifest) return { path: findManifest(cwd) };
  if (!existsSync(run.manifest)) {
    throw new SynartesisError("manifest", `run ${shortId(run.id)} was recorded with the manifest ${run.manifest}, which is not there any more`, {
      hint: "Pass --manifest PATH to undo it with the manifest that now starts the same servers.",
    });
  }
  return { path: run.manifest };
}
