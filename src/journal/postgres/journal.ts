// The journal in a PostgreSQL database a team shares (R-TEAM), through Bun's
// built-in client. Its tables live in the schema `synartesis`, with the same
// columns as the SQLite file. Every change is one statement or one
// transaction: seq comes from a row lock on the run (gapless per run), an
// approval is spent by the one statement that locks it, an undo claims a row
// only if no one else holds it (FOR UPDATE SKIP LOCKED), and every change
// NOTIFYs the listeners (watch, the review page). The connection and its
// life are the store's (store.ts); each role has its file.
import { SQL } from "bun";
import type { Journal } from "../journal.ts";
import { assembleJournal } from "../roles.ts";
import { PostgresApprovals } from "./approvals.ts";
import { PostgresRecording } from "./recording.ts";
import { PostgresRuns } from "./runs.ts";
import { POOL_SIZE, PostgresStore } from "./store.ts";
import { PostgresChainRole } from "./chain-role.ts";
import { PostgresUndo } from "./undo.ts";

/** Connect, the schema brought up to date (store.ts). */
export async function openPostgresJournal(location: string, options: { create: boolean }): Promise<Journal> {
  const store = await PostgresStore.open(location, options);
  const roles = {
    runs: new PostgresRuns(store),
    recording: new PostgresRecording(store),
    approvals: new PostgresApprovals(store),
    undo: new PostgresUndo(store),
    chain: new PostgresChainRole(store),
  };
  return assembleJournal(store, roles, {
    asJournalError: (error) => store.failure(error),
    retryable: connectionEndedFirst,
    // close() waits for the calls still running; what they wrote is chained a moment later.
    track: (call) => {
      store.chain.written();
      store.inflight.add(call);
      void call.finally(() => store.inflight.delete(call)).catch(() => {});
    },
  });
}

/**
 * The server ended the connection (restarted, or an administrator closed it)
 * before this statement committed: a shut-down server rolls back what was in
 * flight, so running it again does it once. Each pooled connection may have
 * been ended: as many tries as there are, and one on a fresh connection.
 */
function connectionEndedFirst(error: unknown, attempt: number): boolean {
  return attempt <= POOL_SIZE && error instanceof SQL.SQLError && ["57P01", "57P02", "57P03"].includes((error as SQL.PostgresError).errno ?? "");
}
