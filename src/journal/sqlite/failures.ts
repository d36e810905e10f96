// SQLite's failures as the journal reports them: a JournalError that names
// the file and says whether a later write may succeed (full, busy) or not (broken).
import { JournalError } from "../journal.ts";

const BROKEN_CODES = [
  "SQLITE_CORRUPT",
  "SQLITE_NOTADB",
  "SQLITE_READONLY",
  "SQLITE_IOERR",
  "SQLITE_CANTOPEN",
  "SQLITE_PERM",
  "SQLITE_NOLFS",
  "SQLITE_PROTOCOL",
  "SQLITE_AUTH",
];

/** SQLite's error code (extended, e.g. SQLITE_BUSY_SNAPSHOT) of one of its failures, or "" for anything else. */
function sqliteCode(error: unknown): string {
  return error instanceof Error && error.name === "SQLiteError" ? String((error as { code?: unknown }).code ?? "") : "";
}

/** Whether `error` is SQLite saying another connection holds a lock this one needs (SQLITE_BUSY or one of its extended codes). */
export function isBusy(error: unknown): boolean {
  return sqliteCode(error).startsWith("SQLITE_BUSY");
}

/** A SQLite failure as a JournalError naming the file; anything else unchanged. */
export function journalFailure(path: string, error: unknown): unknown {
  if (error instanceof JournalError || !(error instanceof Error) || error.name !== "SQLiteError") return error;
  const code = sqliteCode(error);
  if (code === "SQLITE_FULL") return new JournalError(path, "full", error.message);
  if (isBusy(error) || code.startsWith("SQLITE_LOCKED")) return new JournalError(path, "busy", error.message);
  if (BROKEN_CODES.some((broken) => code.startsWith(broken))) return new JournalError(path, "broken", error.message);
  return error;
}
