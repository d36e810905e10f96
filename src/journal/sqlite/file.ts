// Opening the SQLite journal's file: made private to its user when created,
// WAL and the pragmas the journal relies on (read back), its identity (a file
// deleted or replaced under an open connection is noticed), and SQLite's
// failures as JournalErrors that name the file; other connections' commits
// noticed by polling the data version.
import { Database } from "bun:sqlite";
import { closeSync, existsSync, mkdirSync, openSync, statSync } from "node:fs";
import { dirname } from "node:path";
import { SynartesisError } from "../../errors.ts";
import { JournalFiles } from "../file-identity.ts";
import { JournalError } from "../journal.ts";
import { isBusy, journalFailure } from "./failures.ts";

/** How long a connection waits for another one's lock before the journal counts as busy. */
const BUSY_TIMEOUT_MS = 10_000;
/** The longest pause between two attempts to put a new journal in WAL mode. */
const WAL_RETRY_MAX_PAUSE_MS = 50;
/** How often a change subscription looks at the data version (it is one cheap pragma). */
const CHANGE_POLL_MS = 250;

export interface OpenedFile {
  db: Database;
  /** The journal's files as opened: one deleted or replaced underneath is noticed. */
  files: JournalFiles;
  /** Things about the file a person should know (e.g. other users can read it). */
  warnings: string[];
}

export interface OpenOptions {
  /** Make a missing journal (and its folder) rather than refuse it. */
  create: boolean;
  /** How to wait `ms` before trying again (a test passes its own). */
  pause?: (ms: number) => void;
}

/**
 * Open the file. With `create`, a missing file (and its folder) is made,
 * private to this user (R-JOURNAL, issue 13 item 9: 0600, folder 0700; SQLite
 * gives the -wal and -shm files the journal's mode); without it, a missing
 * journal is refused rather than created.
 */
export function openJournalFile(path: string, options: OpenOptions): OpenedFile {
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
    const files = new JournalFiles(path);
    if (stat.mode & 0o077) {
      const mode = (stat.mode & 0o777).toString(8).padStart(4, "0");
      warnings.push(`the journal ${path} can be read by other users (mode ${mode}); it holds every recorded argument and result: chmod 600 it`);
    }
    const db = new Database(path, { create: options.create, strict: true });
    db.run(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    useWal(db, options.pause ?? Bun.sleepSync);
    // NORMAL in WAL mode: a committed transaction survives a crash of this process (kill -9);
    // only an OS crash or power loss can lose the last commits.
    db.run("PRAGMA synchronous = NORMAL");
    db.run("PRAGMA foreign_keys = ON");
    return { db, files, warnings };
  } catch (error) {
    const failure = journalFailure(path, error);
    throw failure instanceof JournalError ? failure : new JournalError(path, "broken", (error as Error).message);
  }
}

/**
 * Put the journal in WAL mode (a no-op once it is). Doing so to a new file is
 * a write in the old rollback mode: when two connections do it at the same
 * moment (two processes opening a new journal at once), SQLite refuses one
 * with SQLITE_BUSY at once, without calling the busy handler (waiting there
 * would deadlock: each would hold a lock the other waits for). That one
 * pauses and tries again (by then the other has made the file WAL, and there
 * is nothing left to do), for as long as the busy timeout.
 */
function useWal(db: Database, pause: (ms: number) => void): void {
  let waited = 0;
  for (let delay = 1; ; delay = Math.min(delay * 2, WAL_RETRY_MAX_PAUSE_MS)) {
    try {
      const { journal_mode } = db.query("PRAGMA journal_mode = WAL").get() as { journal_mode: string };
      if (journal_mode.toLowerCase() !== "wal") throw new Error(`journal_mode is ${journal_mode}, not wal`);
      return;
    } catch (error) {
      if (!isBusy(error) || waited >= BUSY_TIMEOUT_MS) throw error;
    }
    const ms = Math.min(delay, BUSY_TIMEOUT_MS - waited);
    pause(ms);
    waited += ms;
  }
}

/** Calls `onChange` when another connection committed: its data version moved (one cheap pragma per poll). Returns the unsubscribe. */
export function watchDataVersion(db: Database, onChange: () => void): () => Promise<void> {
  const dataVersion = () => Number((db.query("PRAGMA data_version").get() as { data_version: number }).data_version);
  let version = dataVersion();
  const timer = setInterval(() => {
    let now: number;
    try {
      now = dataVersion();
    } catch {
      // A journal closed or gone: its owner finds out on its next read.
      return;
    }
    if (now === version) return;
    version = now;
    onChange();
  }, CHANGE_POLL_MS);
  return async () => clearInterval(timer);
}
