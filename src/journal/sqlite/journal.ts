// The journal in one SQLite file (bun:sqlite, WAL): the embedded default
// behind the Journal interface (whose comments say what each method does).
// Every change is one IMMEDIATE transaction, run to its end without yielding,
// which also commits the writes queued to be grouped (commits.ts); every read
// commits them first, so a connection reads its own writes. The file and its
// life are the store's (store.ts); each role has its file.
import type { Journal } from "../journal.ts";
import { assembleJournal } from "../roles.ts";
import { SqliteApprovals } from "./approvals.ts";
import { SqliteChainRole } from "./chain-role.ts";
import { journalFailure } from "./failures.ts";
import { SqliteRecording } from "./recording.ts";
import { SqliteRuns } from "./runs.ts";
import { SqliteStore } from "./store.ts";
import { SqliteUndo } from "./undo.ts";

/** Open a journal file (file.ts says how), its schema brought up to date. */
export function openSqliteJournal(path: string, options: { create: boolean }): Journal {
  const store = SqliteStore.open(path, options);
  const roles = {
    runs: new SqliteRuns(store),
    recording: new SqliteRecording(store),
    approvals: new SqliteApprovals(store),
    undo: new SqliteUndo(store),
    chain: new SqliteChainRole(store),
  };
  return assembleJournal(store, roles, { asJournalError: (error) => journalFailure(store.path, error) });
}
