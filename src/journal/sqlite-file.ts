// Opening the SQLite journal's file: made private to its user when created,
// WAL and the pragmas the journal relies on (read back), its identity (a file
// deleted or replaced under an open connection is noticed), and SQLite's
// failures as JournalErrors that name the file.
import { Database } from "bun:sqlite";
import { closeSync, existsSync, mkdirSync, openSync, statSync, type Stats } from "node:fs";
import { dirname } from "node:path";
import { SynartesisError } from "../errors.ts";
import { JournalError } from "./journal.ts";

const BUSY_TIMEOUT_MS = 10_000;

const BROKEN_CODES = ["SQLITE_CORRUPT", "SQLITE_NOTADB", "SQLITE_READONLY", "SQLITE_IOERR", "SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_NOLFS", "SQLITE_PROTOCOL", "SQLITE_AUTH"];

/** A SQLite failure as a JournalError naming the file; anything else unchanged. */
export function journalFailure(path: string, error: unknown): unknown {
  if (error instanceof JournalError || !(error instanceof Error) || error.name !== "SQLiteError") return error;
  const code = String((error as { code?: unknown }).code ?? "");
  if (code === "SQLITE_FULL") return new JournalError(path, "full", error.message);
  if (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")) return new JournalError(path, "busy", error.message);
  if (BROKEN_CODES.some((broken) => code.startsWith(broken))) return new JournalError(path, "broken", error.message);
  return error;
}

/** The file as it was when opened: a journal deleted or replaced underneath has another identity (or none). */
export type FileIdentity = Pick<Stats, "dev" | "ino">;

export interface OpenedFile {
  db: Database;
  identity: FileIdentity;
  /** Things about the file a person should know (e.g. other users can read it). */
  warnings: string[];
}

/**
 * Open the file. With `create`, a missing file (and its folder) is made,
 * private to this user (R-JOURNAL, issue 13 item 9: 0600, folder 0700; SQLite
 * gives the -wal and -shm files the journal's mode); without it, a missing
 * journal is refused rather than created.
 */
export function openJournalFile(path: string, options: { create: boolean }): OpenedFile {
  if (!existsSync(path)) {
    if (!options.create) throw new SynartesisError("no_journal", `there is no journal at ${path}`);
    try {
      if (!existsSync(dirname(path))) mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      closeSync(openSync(path, "wx", 0o600));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw new JournalError(path, "broken", (error as Error).message);
    }
  }
  const warnings: string[] = [];
  try {
    const stat = statSync(path);
    if (stat.mode & 0o077) {
      const mode = (stat.mode & 0o777).toString(8).padStart(4, "0");
      warnings.push(`the journal ${path} can be read by other users (mode ${mode}); it holds every recorded argument and result: chmod 600 it`);
    }
    const db = new Database(path, { create: options.create, strict: true });
    db.run(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    const mode = db.query("PRAGMA journal_mode = WAL").get() as { journal_mode: string };
    if (mode.journal_mode.toLowerCase() !== "wal") throw new Error(`journal_mode is ${mode.journal_mode}, not wal`);
    // NORMAL in WAL mode: a committed transaction survives a crash of this process (kill -9);
    // only an OS crash or power loss can lose the last commits.
    db.run("PRAGMA synchronous = NORMAL");
    db.run("PRAGMA foreign_keys = ON");
    return { db, identity: { dev: stat.dev, ino: stat.ino }, warnings };
  } catch (error) {
    const failure = journalFailure(path, error);
    throw failure instanceof JournalError ? failure : new JournalError(path, "broken", (error as Error).message);
  }
}

/** Why the file at `path` is no longer the one opened (deleted or replaced), if it is not. */
export function identityLost(path: string, identity: FileIdentity): string | undefined {
  let now: Stats;
  try {
    now = statSync(path);
  } catch {
    return `the journal ${path} was deleted while this proxy was recording into it`;
  }
  if (now.ino !== identity.ino || now.dev !== identity.dev) {
    return `the journal ${path} was replaced by another file while this proxy was recording into it`;
  }
  return undefined;
}
