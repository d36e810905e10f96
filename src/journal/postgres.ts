// The journal in a PostgreSQL database a team shares (R-TEAM), through Bun's
// built-in client. Its tables live in the schema `synartesis`, with the same
// columns as the SQLite file. Every change is one statement or one
// transaction: seq comes from a row lock on the run (gapless per run), an
// approval is spent by the one statement that locks it, an undo claims a row
// only if no one else holds it (FOR UPDATE SKIP LOCKED), and every change
// NOTIFYs the listeners (watch, the review page).
import { SQL } from "bun";
import { SynartesisError } from "../errors.ts";
import { JournalError, type Journal, type NewAction, type Outcome, type PendingNews, type WriteOptions } from "./journal.ts";
import { migrate, SCHEMA } from "./postgres-migrations.ts";
import { postgresTarget, redact, type PostgresTarget } from "./postgres-connection.ts";
import { PostgresBodies, text } from "./postgres-bodies.ts";
import {
  KEEPABLE,
  finishedBody,
  insertedAction,
  likePrefix,
  notedBody,
  newBody,
  absentColumn,
  onlyMatch,
  reportFailuresAsJournalErrors,
  textBody,
  toRun,
  warningsColumn,
  type Row,
} from "./rows.ts";
import type { Action, ActionStatus, ResolvedCall, Run, RunStatus, RunSummary, Settled, VerifyCall } from "./types.ts";

const CHANNEL = "synartesis_journal";
/** Connections per process: a proxy writes one call at a time per server; reads are short. */
const POOL_SIZE = 4;

/** SQLSTATE classes and codes, and what they mean for a journal. */
const FULL = ["53100"]; // disk_full
const BUSY = ["53300", "55P03", "40001", "40P01", "57014"]; // too many connections, lock not available, serialization, deadlock, cancelled

export class PostgresJournal implements Journal {
  readonly path: string;
  readonly warnings: string[];
  readonly secretsFromEnvironment: string[];
  private readonly bodies: PostgresBodies;
  /** Calls in flight (close waits for them). */
  readonly inflight = new Set<Promise<unknown>>();

  private constructor(
    private readonly sql: SQL,
    private readonly target: PostgresTarget,
  ) {
    this.path = target.display;
    this.warnings = target.warnings;
    this.secretsFromEnvironment = target.passwordFrom === "PGPASSWORD" ? ["PGPASSWORD"] : [];
    this.bodies = new PostgresBodies(sql, this.path);
  }

  /**
   * Connect and bring the schema up to date (under an advisory lock, so two
   * processes starting at once on an empty database do not collide). Without
   * `create`, a database that holds no journal is refused, not given one.
   */
  static async open(location: string, options: { create: boolean }): Promise<PostgresJournal> {
    const target = postgresTarget(location);
    const sql = new SQL({
      adapter: "postgres",
      hostname: target.hostname,
      port: target.port,
      username: target.username,
      database: target.database,
      ...(target.password === undefined ? {} : { password: target.password }),
      tls: target.tls,
      connectionTimeout: target.connectionTimeout,
      // The promise of the SQLite journal (synchronous = NORMAL): nothing committed is lost when a
      // proxy, a CLI or their machine dies; a crash of the database server itself may lose its last
      // fraction of a second. Commits then need not wait for the server's disk, whose latency on a
      // busy machine is several times everything else a call costs. The URL's options may ask for on.
      connection: { synchronous_commit: "off", ...target.connection, search_path: SCHEMA },
      max: POOL_SIZE,
    });
    const journal = new PostgresJournal(sql, target);
    try {
      await migrate(sql, journal.path, options.create);
    } catch (error) {
      await sql.close({ timeout: 0 }).catch(() => {});
      throw error instanceof SynartesisError ? error : journal.failure(error);
    }
    return journal;
  }

  /** A failure of the database as a JournalError naming the journal, with no password in it; anything else unchanged. */
  failure(error: unknown): unknown {
    if (!(error instanceof SQL.SQLError)) return error;
    const { errno, code } = error as SQL.PostgresError;
    // The server's own errors say what they are; the client's (no connection) say where it tried.
    const reason = redact(
      errno ? error.message : `no connection to ${this.target.hostname}:${this.target.port}: ${error.message} (${code})`,
      this.target.password,
    );
    if (errno && FULL.includes(errno)) return new JournalError(this.path, "full", reason);
    if (errno && BUSY.includes(errno)) return new JournalError(this.path, "busy", reason);
    if (errno === "28P01" || errno === "28000") {
      const source = this.target.passwordFrom
        ? `The password came from ${this.target.passwordFrom}.`
        : "No password was given: set PGPASSWORD, add a line for this database to ~/.pgpass, or put it in the URL.";
      return new JournalError(this.path, "broken", reason, [source, ...this.warnings.map((w) => `Note: ${w}.`)].join(" "));
    }
    return new JournalError(this.path, "broken", reason);
  }

  async proveWritable(): Promise<void> {
    await this.sql`UPDATE migrations SET applied_at = applied_at WHERE position = (SELECT MIN(position) FROM migrations)`;
  }

  /**
   * A database is not a file that can be deleted or swapped under an open
   * connection: dropping it ends every connection, so the next write fails
   * loudly instead of landing where no one reads.
   */
  async identityLost(): Promise<string | undefined> {
    return undefined;
  }

  async close(): Promise<void> {
    // A write its caller did not wait for (an undo's records) still lands.
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
    await this.sql.close({ timeout: 5 });
  }

  async appliedMigrations(): Promise<string[]> {
    return (await this.sql`SELECT name FROM migrations ORDER BY position`).map((row: Row) => String(row.name));
  }

  /** Wakes on NOTIFY; after a reconnect (when notifications may have been missed) it reports a change too. */
  async watchChanges(onChange: () => void): Promise<() => Promise<void>> {
    let listening = false;
    const subscription = await this.sql.listen(
      CHANNEL,
      () => onChange(),
      () => {
        if (listening) onChange();
        listening = true;
      },
    );
    return () => subscription.unlisten();
  }

  // ---- runs ----

  async startRun(run: { id: string; label: string; startedAt: string; host?: string; pid?: number; manifest?: string }): Promise<Run> {
    const [row] = await this.sql`
      INSERT INTO runs (id, label, started_at, status, host, pid, manifest)
      VALUES (${run.id}, ${text(run.label)}, ${run.startedAt}, 'active', ${text(run.host)}, ${run.pid ?? null}, ${text(run.manifest)})
      RETURNING *`;
    return toRun(row);
  }

  async completeRun(id: string, endedAt: string): Promise<void> {
    await this.sql`
      UPDATE runs SET status = CASE WHEN status = 'active' THEN 'complete' ELSE status END,
                      ended_at = CASE WHEN status = 'active' THEN ${endedAt} ELSE COALESCE(ended_at, ${endedAt}) END
       WHERE id = ${id}`;
  }

  async setRunStatus(id: string, status: RunStatus, at: string, undoneBy?: string): Promise<void> {
    await this.sql`
      UPDATE runs SET status = ${status}, ended_at = COALESCE(ended_at, ${at}),
                      undone_by = COALESCE(${text(undoneBy)}::text, undone_by),
                      undone_at = CASE WHEN ${text(undoneBy)}::text IS NULL THEN undone_at ELSE ${at} END
       WHERE id = ${id}`;
  }

  async getRun(id: string): Promise<Run | undefined> {
    const [row] = await this.sql`SELECT * FROM runs WHERE id = ${id}`;
    return row ? toRun(row) : undefined;
  }

  async findRun(prefix: string | undefined): Promise<Run> {
    if (prefix === undefined || prefix === "") {
      const [row] = await this.sql`SELECT * FROM runs ORDER BY started_at DESC, position DESC LIMIT 1`;
      if (!row) throw new SynartesisError("refused", `the journal ${this.path} has no runs yet`);
      return toRun(row);
    }
    const rows: Row[] = await this.sql`SELECT * FROM runs WHERE replace(id, '-', '') LIKE ${likePrefix(prefix)} ESCAPE '\\' ORDER BY started_at DESC`;
    return onlyMatch(rows, prefix, "run", toRun);
  }

  async listRuns(): Promise<RunSummary[]> {
    const rows: Row[] = await this.sql`
      SELECT runs.*,
             COUNT(actions.id)::int AS n_actions,
             COUNT(actions.id) FILTER (WHERE actions.status = 'pending')::int AS n_unknown,
             COUNT(actions.id) FILTER (WHERE actions.status = 'gated')::int AS n_waiting
        FROM runs LEFT JOIN actions ON actions.run_id = runs.id
       GROUP BY runs.id
       ORDER BY runs.started_at DESC, runs.position DESC`;
    return rows.map((row) => ({ ...toRun(row), actions: Number(row.n_actions), unknown: Number(row.n_unknown), waiting: Number(row.n_waiting) }));
  }

  // ---- actions ----

  /**
   * The run's row lock orders concurrent inserts: each takes the next seq, and a failed one rolls its number back.
   * Writes are never grouped here (WriteOptions): each is one statement, and with synchronous_commit off a commit costs little.
   */
  async insertAction(action: NewAction, _options?: WriteOptions): Promise<Action> {
    const body = newBody(action);
    const stored = action.status === "pending" ? textBody(body) : await this.bodies.stored(action.server, action.tool, body);
    const [row] = await this.sql`
      WITH next AS (
        UPDATE runs SET last_seq = CASE WHEN ${action.seq ?? null}::integer IS NULL THEN last_seq + 1 ELSE GREATEST(last_seq, ${action.seq ?? null}::integer) END
         WHERE id = ${action.runId} RETURNING COALESCE(${action.seq ?? null}::integer, last_seq) AS last_seq
      )
      INSERT INTO actions (id, run_id, seq, server, tool, args, args_key, class, status, snapshot, snapshot_absent,
                           verify, result, error, held_reason, warnings, approved_by, approved_at, ts, packed)
      SELECT ${action.id}, ${action.runId}, next.last_seq, ${text(action.server)}, ${text(action.tool)}, ${stored.args},
             ${action.argsKey ?? null}, ${action.class}, ${action.status}, ${stored.snapshot}, ${absentColumn(action.snapshot)},
             ${stored.verify}, ${stored.result}, ${text(action.error)}, ${text(action.heldReason)}, ${warningsColumn(action.warnings)},
             ${text(action.approvedBy)}, ${action.approvedAt ?? null}, ${action.ts}, ${stored.packed}
        FROM next
      RETURNING seq`;
    if (!row) throw new SynartesisError("refused", `no run ${action.runId} in the journal ${this.path}`);
    if (action.status === "pending") this.bodies.wrotePending(action.id, { server: action.server, tool: action.tool, body });
    return insertedAction(action, Number(row.seq));
  }

  async finishAction(id: string, outcome: Outcome, _options?: WriteOptions): Promise<void> {
    const before = await this.bodies.takePending(id);
    if (!before) return;
    const stored = await this.bodies.stored(before.server, before.tool, finishedBody(before.body, outcome));
    await this.sql`
      UPDATE actions SET status = ${outcome.status}, args = ${stored.args}, snapshot = ${stored.snapshot}, result = ${stored.result},
                         inverse = ${stored.inverse}, post_state = ${stored.post_state}, verify = ${stored.verify}, packed = ${stored.packed},
                         post_absent = ${absentColumn(outcome.postState)}, error = COALESCE(${text(outcome.error)}::text, error),
                         warnings = ${warningsColumn(outcome.warnings)}
       WHERE id = ${id} AND status = 'pending'`;
  }

  async notePending(id: string, news: PendingNews): Promise<void> {
    const pending = await this.bodies.takePending(id);
    if (!pending) return;
    const body = notedBody(pending.body, news);
    const stored = textBody(body);
    await this.sql`
      UPDATE actions SET args = ${stored.args}, snapshot = ${stored.snapshot}, result = ${stored.result}, inverse = ${stored.inverse},
                         post_state = ${stored.post_state}, verify = ${stored.verify}, packed = ${stored.packed},
                         snapshot_absent = CASE WHEN ${news.snapshot ? 1 : 0} = 1 THEN ${absentColumn(news.snapshot)}::integer ELSE snapshot_absent END,
                         task = COALESCE(${text(news.task)}::text, task)
       WHERE id = ${id} AND status = 'pending'`;
    this.bodies.wrotePending(id, { ...pending, body });
  }

  async getAction(id: string): Promise<Action | undefined> {
    const [row] = await this.sql`SELECT * FROM actions WHERE id = ${id}`;
    return row && this.bodies.action(row);
  }

  async findAction(prefix: string): Promise<Action> {
    const rows: Row[] = await this.sql`SELECT * FROM actions WHERE replace(id, '-', '') LIKE ${likePrefix(prefix)} ESCAPE '\\'`;
    return this.bodies.action(onlyMatch(rows, prefix, "action", (row) => row));
  }

  async actionsOfRun(runId: string): Promise<Action[]> {
    return this.bodies.actions(await this.sql`SELECT * FROM actions WHERE run_id = ${runId} ORDER BY seq`);
  }

  async recentActions(limit: number): Promise<Action[]> {
    return this.bodies.actions(await this.sql`SELECT * FROM actions ORDER BY ts DESC, position DESC LIMIT ${limit}`);
  }

  // ---- gates ----

  async waiting(): Promise<Action[]> {
    return this.bodies.actions(await this.sql`SELECT * FROM actions WHERE status = 'gated' ORDER BY ts, position`);
  }

  async openRequest(server: string, tool: string, argsKey: string): Promise<Action | undefined> {
    const [row] = await this.sql`
      SELECT * FROM actions WHERE server = ${text(server)} AND tool = ${text(tool)} AND args_key = ${argsKey} AND status = 'gated'
       ORDER BY position LIMIT 1`;
    return row && this.bodies.action(row);
  }

  /** The approval's row is locked by the one statement that spends it: a retry on another machine waits, then finds it spent. */
  async spendApproval(server: string, tool: string, argsKey: string, approvedSince: string, spender: string, now: string): Promise<Action | undefined> {
    const [row] = await this.sql`
      UPDATE actions SET spent_by = ${spender}, spent_at = ${now}
       WHERE id = (SELECT id FROM actions
                    WHERE server = ${text(server)} AND tool = ${text(tool)} AND args_key = ${argsKey} AND status = 'approved'
                      AND spent_by IS NULL AND approved_at >= ${approvedSince}
                    ORDER BY approved_at LIMIT 1 FOR UPDATE)
         AND spent_by IS NULL
      RETURNING *`;
    return row && this.bodies.action(row);
  }

  async returnApproval(approvalId: string, spender: string): Promise<void> {
    await this.sql`UPDATE actions SET spent_by = NULL, spent_at = NULL WHERE id = ${approvalId} AND spent_by = ${spender}`;
  }

  async takeDenial(server: string, tool: string, argsKey: string, runId: string, now: string): Promise<Action | undefined> {
    const [row] = await this.sql`
      UPDATE actions SET told_run = ${runId}, told_at = ${now}
       WHERE id = (SELECT id FROM actions
                    WHERE server = ${text(server)} AND tool = ${text(tool)} AND args_key = ${argsKey} AND status = 'denied'
                      AND told_run IS NULL AND withdrawn_at IS NULL
                    ORDER BY approved_at DESC LIMIT 1 FOR UPDATE)
         AND told_run IS NULL
      RETURNING *`;
    return row && this.bodies.action(row);
  }

  async decide(
    id: string,
    decision: { status: "approved" | "denied"; by: string; at: string; reason?: string },
  ): Promise<{ action: Action } | { settled: ActionStatus }> {
    const [row] = await this.sql`
      UPDATE actions SET status = ${decision.status}, approved_by = ${text(decision.by)}, approved_at = ${decision.at}, reason = ${text(decision.reason)}
       WHERE id = ${id} AND status = 'gated'
      RETURNING *`;
    if (row) return { action: (await this.bodies.action(row))! };
    const [current] = await this.sql`SELECT status FROM actions WHERE id = ${id}`;
    if (!current) throw new SynartesisError("unknown_id", `no action ${id}`);
    return { settled: current.status as ActionStatus };
  }

  async withdrawRequests(runId: string, fromSeq: number, by: string, at: string): Promise<Action[]> {
    const rows: Row[] = await this.sql`
      UPDATE actions SET status = 'denied', withdrawn_by = ${text(by)}, withdrawn_at = ${at}
       WHERE run_id = ${runId} AND seq >= ${fromSeq} AND (status = 'gated' OR (status = 'approved' AND spent_by IS NULL))
      RETURNING *`;
    return (await this.bodies.actions(rows)).sort((a, b) => a.seq - b.seq);
  }

  // ---- undo ----

  /** A row another undo is claiming at this instant is skipped, not waited for: the caller reads it again and sees who holds it. */
  async claim(id: string, owner: string, now: string, from: ActionStatus[]): Promise<boolean> {
    const claimed = await this.sql`
      UPDATE actions SET status = 'rolling_back', claimed_by = ${owner}, claimed_at = ${now}
       WHERE id = (SELECT id FROM actions WHERE id = ${id} AND status IN ${this.sql(from)} FOR UPDATE SKIP LOCKED)`;
    return claimed.count === 1;
  }

  async claimMany(ids: string[], owner: string, now: string, from: ActionStatus[]): Promise<Action[]> {
    if (ids.length === 0) return [];
    const rows: Row[] = await this.sql`
      UPDATE actions SET status = 'rolling_back', claimed_by = ${owner}, claimed_at = ${now}
       WHERE id IN (SELECT id FROM actions WHERE id IN ${this.sql(ids)} AND status IN ${this.sql(from)} FOR UPDATE SKIP LOCKED)
      RETURNING *`;
    return this.bodies.actions(rows);
  }

  async takeOverClaim(id: string, judged: { owner: string; at: string | undefined }, owner: string, now: string): Promise<boolean> {
    const taken = await this.sql`UPDATE actions SET claimed_by = ${owner}, claimed_at = ${now} WHERE id = (SELECT id FROM actions WHERE id = ${id}
      AND status = 'rolling_back' AND claimed_by = ${judged.owner} AND claimed_at IS NOT DISTINCT FROM ${judged.at ?? null} FOR UPDATE SKIP LOCKED)`;
    return taken.count === 1;
  }

  async settleClaim(id: string, owner: string, status: ActionStatus, undoNote?: string, _options?: WriteOptions): Promise<void> {
    await this.sql`UPDATE actions SET status = ${status}, undo_note = ${text(undoNote)}, inverse_sent_at = NULL WHERE id = ${id} AND claimed_by = ${owner}`;
  }

  async markInverseSent(id: string, owner: string, at: string): Promise<boolean> {
    return (await this.sql`UPDATE actions SET inverse_sent_at = ${at} WHERE id = ${id} AND claimed_by = ${owner}`).count === 1;
  }

  async noteClaim(id: string, owner: string, undoNote: string, _options?: WriteOptions): Promise<void> {
    await this.sql`UPDATE actions SET undo_note = ${text(undoNote)} WHERE id = ${id} AND claimed_by = ${owner}`;
  }

  async noteUndo(id: string, note: string, _options?: WriteOptions): Promise<void> {
    await this.sql`UPDATE actions SET undo_note = ${text(note)} WHERE id = ${id}`;
  }

  async settle(
    id: string,
    from: { status: ActionStatus; claimedBy?: string },
    finding: { status: ActionStatus; settled: Settled; by: string; at: string; note?: string; inverse?: ResolvedCall; warnings?: string[] },
  ): Promise<boolean> {
    // A new inverse (one built now that the call is known to have run) replaces the row's.
    const stored = finding.inverse && (await this.bodies.rebuilt(id, { inverse: finding.inverse }));
    // One transaction: a connection ended between the two writes must not leave the status settled and the old inverse.
    return this.sql.begin(async (tx) => {
      const settled = await tx`
        UPDATE actions SET status = ${finding.status}, settled = ${finding.settled}, settled_by = ${text(finding.by)}, settled_at = ${finding.at},
                           settled_note = ${text(finding.note)},
                           warnings = CASE WHEN ${finding.warnings !== undefined} THEN ${warningsColumn(finding.warnings)}::text ELSE warnings END,
                           undo_note = NULL, inverse_sent_at = NULL
         WHERE id = ${id} AND status = ${from.status} AND (${from.claimedBy ?? null}::text IS NULL OR claimed_by = ${from.claimedBy ?? null})`;
      if (settled.count === 1 && stored) await this.bodies.write(id, stored, tx);
      return settled.count === 1;
    });
  }

  async keep(runId: string, seqs: number[], decision: { by: string; at: string; reason?: string }): Promise<string[]> {
    const mark = `UPDATE actions SET kept_by = $1, kept_at = $2, kept_reason = $3, undo_note = NULL
                   WHERE run_id = $4 AND seq = $5 AND ${KEEPABLE} RETURNING id`;
    return this.sql.begin(async (tx) => {
      const kept: string[] = [];
      for (const seq of seqs) {
        const [row] = await tx.unsafe(mark, [text(decision.by), decision.at, text(decision.reason), runId, seq]);
        if (row) kept.push(String(row.id));
      }
      return kept;
    });
  }

  async markUnrecoverable(id: string, _options?: WriteOptions): Promise<void> {
    await this.sql`UPDATE actions SET status = 'unrecoverable' WHERE id = ${id} AND status = 'applied'`;
  }

  async replan(id: string, inverse: ResolvedCall | undefined, verify: VerifyCall | undefined, warnings: string[]): Promise<void> {
    const stored = await this.bodies.rebuilt(id, { inverse: inverse ?? null, verify: verify ?? null });
    await this.sql.begin(async (tx) => {
      await tx`UPDATE actions SET warnings = ${warningsColumn(warnings)} WHERE id = ${id}`;
      if (stored) await this.bodies.write(id, stored, tx);
    });
  }
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

reportFailuresAsJournalErrors(PostgresJournal.prototype, (journal, error) => journal.failure(error), {
  retryable: connectionEndedFirst,
  // close() waits for the calls still running.
  track: (journal, call) => {
    journal.inflight.add(call);
    void call.finally(() => journal.inflight.delete(call)).catch(() => {});
  },
});
