// The journal in one SQLite file (bun:sqlite, WAL): the embedded default
// behind the Journal interface (whose comments say what each method does).
// Every change is one IMMEDIATE transaction, run to its end without yielding,
// which also commits the writes queued to be grouped (sqlite-commits.ts);
// every read commits them first, so a connection reads its own writes.
import type { Database } from "bun:sqlite";
import { SynartesisError } from "../errors.ts";
import { MIGRATIONS, runIdPrefix } from "./migrations.ts";
import type { Journal, NewAction, Outcome, PendingNews, WriteOptions } from "./journal.ts";
import {
  KEEPABLE,
  finishedBody,
  insertedAction,
  notedBody,
  likePrefix,
  newBody,
  absentColumn,
  onlyMatch,
  reportFailuresAsJournalErrors,
  textBody,
  toRun,
  warningsColumn,
  type Row,
} from "./rows.ts";
import { SqliteBodies } from "./sqlite-bodies.ts";
import { CommitQueue } from "./sqlite-commits.ts";
import type { JournalFiles } from "./file-identity.ts";
import { openJournalFile, watchDataVersion } from "./sqlite-file.ts";
import { journalFailure } from "./sqlite-failures.ts";
import type { Action, ActionStatus, ResolvedCall, Run, RunStatus, RunSummary, Settled, VerifyCall } from "./types.ts";

/** The actions of the run whose id is parameter ?1 (found through the actions_of_run index, or in an older journal its (run_id, seq) index). */
const OF_RUN = `${runIdPrefix("run_id")} = ${runIdPrefix("?1")} AND run_id = ?1`;

export class SqliteJournal implements Journal {
  readonly secretsFromEnvironment: string[] = [];
  private readonly bodies: SqliteBodies;
  private readonly commits: CommitQueue;

  private constructor(
    readonly path: string,
    private readonly db: Database,
    private readonly files: JournalFiles,
    /** Things about the file a person should know (e.g. other users can read it). */
    readonly warnings: string[],
  ) {
    this.bodies = new SqliteBodies(db, path);
    this.commits = new CommitQueue(db);
  }

  /** Open a journal (sqlite-file.ts says how) and bring its schema up to date. */
  static open(path: string, options: { create: boolean }): SqliteJournal {
    const { db, files, warnings } = openJournalFile(path, options);
    const journal = new SqliteJournal(path, db, files, warnings);
    try {
      journal.migrate();
    } catch (error) {
      throw journalFailure(path, error);
    }
    return journal;
  }

  async proveWritable(): Promise<void> {
    this.write(() => this.db.run("UPDATE migrations SET applied_at = applied_at WHERE rowid = (SELECT MIN(rowid) FROM migrations)"));
  }

  /** Why the files at `path` are no longer the journal this connection writes into (deleted or replaced), if they are not. */
  async identityLost(): Promise<string | undefined> {
    return this.files.lost();
  }

  async close(): Promise<void> {
    this.commits.flush();
    this.db.close();
  }

  private migrate(): void {
    const apply = this.db.transaction(() => {
      this.db.run("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL) STRICT");
      const done = new Set((this.db.query("SELECT name FROM migrations").all() as Row[]).map((r) => String(r.name)));
      for (const migration of MIGRATIONS) {
        if (done.has(migration.name)) continue;
        if (migration.onlyIf === undefined || this.db.query(migration.onlyIf).get() !== null) this.db.run(migration.sql);
        this.db.query("INSERT INTO migrations (name, applied_at) VALUES (?, ?)").run(migration.name, new Date().toISOString());
      }
    });
    apply.immediate();
  }

  /** A change: one IMMEDIATE transaction, with the queued writes before it. */
  private write<T>(work: () => T): T {
    return this.commits.transaction(work);
  }

  /** A change that may wait to be committed with others (`options.group`), or is committed now. */
  private writeGrouped<T>(work: () => T, options: WriteOptions | undefined): Promise<T> | T {
    return options?.group ? this.commits.add(work, options.group) : this.write(work);
  }

  /** The database to read: the queued writes are committed first. */
  private get reader(): Database {
    this.commits.flush();
    return this.db;
  }

  async appliedMigrations(): Promise<string[]> {
    return (this.reader.query("SELECT name FROM migrations ORDER BY rowid").all() as Row[]).map((r) => String(r.name));
  }

  async watchChanges(onChange: () => void): Promise<() => Promise<void>> {
    return watchDataVersion(this.db, onChange);
  }

  // ---- runs ----

  async startRun(run: { id: string; label: string; startedAt: string; host?: string; pid?: number; manifest?: string }): Promise<Run> {
    this.write(() =>
      this.db
        .query("INSERT INTO runs (id, label, started_at, status, host, pid, manifest) VALUES (?, ?, ?, 'active', ?, ?, ?)")
        .run(run.id, run.label, run.startedAt, run.host ?? null, run.pid ?? null, run.manifest ?? null),
    );
    return this.runById(run.id)!;
  }

  async completeRun(id: string, endedAt: string): Promise<void> {
    this.write(() => {
      this.db.query("UPDATE runs SET status = 'complete', ended_at = ? WHERE id = ? AND status = 'active'").run(endedAt, id);
      this.db.query("UPDATE runs SET ended_at = COALESCE(ended_at, ?) WHERE id = ?").run(endedAt, id);
    });
  }

  async setRunStatus(id: string, status: RunStatus, at: string, undoneBy?: string): Promise<void> {
    this.write(() => {
      this.db.query("UPDATE runs SET status = ?, ended_at = COALESCE(ended_at, ?) WHERE id = ?").run(status, at, id);
      if (undoneBy !== undefined) this.db.query("UPDATE runs SET undone_by = ?, undone_at = ? WHERE id = ?").run(undoneBy, at, id);
    });
  }

  async getRun(id: string): Promise<Run | undefined> {
    return this.runById(id);
  }

  private runById(id: string): Run | undefined {
    const row = this.reader.query("SELECT * FROM runs WHERE id = ?").get(id) as Row | null;
    return row ? toRun(row) : undefined;
  }

  async findRun(prefix: string | undefined): Promise<Run> {
    if (prefix === undefined || prefix === "") {
      const row = this.reader.query("SELECT * FROM runs ORDER BY started_at DESC, rowid DESC LIMIT 1").get() as Row | null;
      if (!row) throw new SynartesisError("refused", `the journal ${this.path} has no runs yet`);
      return toRun(row);
    }
    const rows = this.reader
      .query("SELECT * FROM runs WHERE replace(id, '-', '') LIKE ? ESCAPE '\\' ORDER BY started_at DESC")
      .all(likePrefix(prefix)) as Row[];
    return onlyMatch(rows, prefix, "run", toRun);
  }

  async listRuns(): Promise<RunSummary[]> {
    const rows = this.reader
      .query(
        `SELECT runs.*,
                COUNT(actions.id) AS n_actions,
                COALESCE(SUM(actions.status = 'pending'), 0) AS n_unknown,
                COALESCE(SUM(actions.status = 'gated'), 0) AS n_waiting
           FROM runs LEFT JOIN actions ON ${runIdPrefix("actions.run_id")} = ${runIdPrefix("runs.id")} AND actions.run_id = runs.id
          GROUP BY runs.id
          ORDER BY runs.started_at DESC, runs.rowid DESC`,
      )
      .all() as Row[];
    return rows.map((row) => ({ ...toRun(row), actions: Number(row.n_actions), unknown: Number(row.n_unknown), waiting: Number(row.n_waiting) }));
  }

  // ---- actions ----

  async insertAction(action: NewAction, options?: WriteOptions): Promise<Action> {
    const body = newBody(action);
    const stored = action.status === "pending" ? textBody(body) : this.bodies.stored(action.server, action.tool, body);
    const seq = await this.writeGrouped(() => {
      const { last_seq } = this.db
        .query("UPDATE runs SET last_seq = CASE WHEN ?2 IS NULL THEN last_seq + 1 ELSE max(last_seq, ?2) END WHERE id = ?1 RETURNING last_seq")
        .get(action.runId, action.seq ?? null) as { last_seq: number };
      const seq = action.seq ?? last_seq;
      this.db
        .query(
          `INSERT INTO actions (id, run_id, seq, server, tool, args, args_key, class, status, snapshot, snapshot_absent,
                                verify, result, error, held_reason, warnings, approved_by, approved_at, ts, packed)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(
          ...[action.id, action.runId, seq, action.server, action.tool, stored.args, action.argsKey ?? null, action.class, action.status],
          ...[stored.snapshot, absentColumn(action.snapshot), stored.verify, stored.result],
          ...[action.error ?? null, action.heldReason ?? null, warningsColumn(action.warnings)],
          ...[action.approvedBy ?? null, action.approvedAt ?? null, action.ts, stored.packed],
        );
      return seq;
    }, options);
    if (action.status === "pending") this.bodies.wrotePending(action.id, { server: action.server, tool: action.tool, body });
    return insertedAction(action, seq);
  }

  async finishAction(id: string, outcome: Outcome, options?: WriteOptions): Promise<void> {
    const before = this.bodies.takePending(id);
    if (!before) return;
    const stored = this.bodies.stored(before.server, before.tool, finishedBody(before.body, outcome));
    await this.writeGrouped(
      () =>
        this.db
          .query(
            `UPDATE actions SET status = ?, args = ?, snapshot = ?, result = ?, inverse = ?, post_state = ?, verify = ?, packed = ?,
                                post_absent = ?, error = COALESCE(?, error), warnings = ?
              WHERE id = ? AND status = 'pending'`,
          )
          .run(
            ...[outcome.status, stored.args, stored.snapshot, stored.result, stored.inverse, stored.post_state, stored.verify, stored.packed],
            ...[absentColumn(outcome.postState), outcome.error ?? null, warningsColumn(outcome.warnings), id],
          ),
      options,
    );
  }

  async notePending(id: string, news: PendingNews): Promise<void> {
    const pending = this.bodies.takePending(id);
    if (!pending) return;
    const body = notedBody(pending.body, news);
    const stored = textBody(body);
    this.write(() =>
      this.db
        .query(
          `UPDATE actions SET args = ?, snapshot = ?, result = ?, inverse = ?, post_state = ?, verify = ?, packed = ?,
                              snapshot_absent = CASE WHEN ? THEN ? ELSE snapshot_absent END, task = COALESCE(?, task)
            WHERE id = ? AND status = 'pending'`,
        )
        .run(
          ...[stored.args, stored.snapshot, stored.result, stored.inverse, stored.post_state, stored.verify, stored.packed],
          ...[news.snapshot ? 1 : 0, absentColumn(news.snapshot), news.task ?? null, id],
        ),
    );
    this.bodies.wrotePending(id, { ...pending, body });
  }

  async getAction(id: string): Promise<Action | undefined> {
    return this.actionById(id);
  }

  private actionById(id: string): Action | undefined {
    const row = this.reader.query("SELECT * FROM actions WHERE id = ?").get(id) as Row | null;
    return row ? this.bodies.action(row) : undefined;
  }

  private actions(rows: Row[]): Action[] {
    return rows.map((row) => this.bodies.action(row));
  }

  async findAction(prefix: string): Promise<Action> {
    const rows = this.reader.query("SELECT * FROM actions WHERE replace(id, '-', '') LIKE ? ESCAPE '\\'").all(likePrefix(prefix)) as Row[];
    return onlyMatch(rows, prefix, "action", (row) => this.bodies.action(row));
  }

  async actionsOfRun(runId: string): Promise<Action[]> {
    return this.actions(this.reader.query(`SELECT * FROM actions WHERE ${OF_RUN} ORDER BY seq`).all(runId) as Row[]);
  }

  async recentActions(limit: number): Promise<Action[]> {
    return this.actions(this.reader.query("SELECT * FROM actions ORDER BY ts DESC, rowid DESC LIMIT ?").all(limit) as Row[]);
  }

  // ---- gates ----

  async waiting(): Promise<Action[]> {
    return this.actions(this.reader.query("SELECT * FROM actions WHERE status = 'gated' ORDER BY ts, rowid").all() as Row[]);
  }

  async openRequest(server: string, tool: string, argsKey: string): Promise<Action | undefined> {
    const row = this.reader
      .query("SELECT * FROM actions WHERE server = ? AND tool = ? AND args_key = ? AND status = 'gated' ORDER BY rowid LIMIT 1")
      .get(server, tool, argsKey) as Row | null;
    return row ? this.bodies.action(row) : undefined;
  }

  async spendApproval(server: string, tool: string, argsKey: string, approvedSince: string, spender: string, now: string): Promise<Action | undefined> {
    return this.write(() => {
      const row = this.db
        .query(
          `SELECT * FROM actions WHERE server = ? AND tool = ? AND args_key = ? AND status = 'approved'
              AND spent_by IS NULL AND approved_at >= ? ORDER BY approved_at LIMIT 1`,
        )
        .get(server, tool, argsKey, approvedSince) as Row | null;
      if (!row) return undefined;
      this.db.query("UPDATE actions SET spent_by = ?, spent_at = ? WHERE id = ?").run(spender, now, String(row.id));
      return this.bodies.action({ ...row, spent_by: spender, spent_at: now });
    });
  }

  async returnApproval(approvalId: string, spender: string): Promise<void> {
    this.write(() => this.db.query("UPDATE actions SET spent_by = NULL, spent_at = NULL WHERE id = ? AND spent_by = ?").run(approvalId, spender));
  }

  async takeDenial(server: string, tool: string, argsKey: string, runId: string, now: string): Promise<Action | undefined> {
    return this.write(() => {
      const row = this.db
        .query(
          `SELECT * FROM actions WHERE server = ? AND tool = ? AND args_key = ? AND status = 'denied' AND told_run IS NULL
              AND withdrawn_at IS NULL ORDER BY approved_at DESC LIMIT 1`,
        )
        .get(server, tool, argsKey) as Row | null;
      if (!row) return undefined;
      this.db.query("UPDATE actions SET told_run = ?, told_at = ? WHERE id = ?").run(runId, now, String(row.id));
      return this.bodies.action({ ...row, told_run: runId, told_at: now });
    });
  }

  async decide(
    id: string,
    decision: { status: "approved" | "denied"; by: string; at: string; reason?: string },
  ): Promise<{ action: Action } | { settled: ActionStatus }> {
    return this.write(() => {
      const changed = this.db
        .query("UPDATE actions SET status = ?, approved_by = ?, approved_at = ?, reason = ? WHERE id = ? AND status = 'gated'")
        .run(decision.status, decision.by, decision.at, decision.reason ?? null, id);
      const row = this.db.query("SELECT * FROM actions WHERE id = ?").get(id) as Row | null;
      if (!row) throw new SynartesisError("unknown_id", `no action ${id}`);
      const action = this.bodies.action(row);
      return changed.changes === 1 ? { action } : { settled: action.status };
    });
  }

  async withdrawRequests(runId: string, fromSeq: number, by: string, at: string): Promise<Action[]> {
    const rows = this.write(
      () =>
        this.db
          .query(
            `UPDATE actions SET status = 'denied', withdrawn_by = ?3, withdrawn_at = ?4
              WHERE ${OF_RUN} AND seq >= ?2 AND (status = 'gated' OR (status = 'approved' AND spent_by IS NULL)) RETURNING *`,
          )
          .all(runId, fromSeq, by, at) as Row[],
    );
    return this.actions(rows).sort((a, b) => a.seq - b.seq);
  }

  // ---- undo ----

  private claimStatement(from: ActionStatus[]) {
    return this.db.query(
      `UPDATE actions SET status = 'rolling_back', claimed_by = ?, claimed_at = ? WHERE id = ? AND status IN (${from.map(() => "?").join(", ")}) RETURNING *`,
    );
  }

  async claim(id: string, owner: string, now: string, from: ActionStatus[]): Promise<boolean> {
    return this.write(() => this.claimStatement(from).get(owner, now, id, ...from) !== null);
  }

  async claimMany(ids: string[], owner: string, now: string, from: ActionStatus[]): Promise<Action[]> {
    const rows = this.write(() => ids.map((id) => this.claimStatement(from).get(owner, now, id, ...from) as Row | null));
    return this.actions(rows.filter((row): row is Row => row !== null));
  }

  async takeOverClaim(id: string, judged: { owner: string; at: string | undefined }, owner: string, now: string): Promise<boolean> {
    const sql = "UPDATE actions SET claimed_by = ?, claimed_at = ? WHERE id = ? AND status = 'rolling_back' AND claimed_by = ? AND claimed_at IS ?";
    return this.write(() => this.db.query(sql).run(owner, now, id, judged.owner, judged.at ?? null)).changes === 1;
  }

  async settleClaim(id: string, owner: string, status: ActionStatus, undoNote?: string, options?: WriteOptions): Promise<void> {
    await this.writeGrouped(
      () =>
        this.db
          .query("UPDATE actions SET status = ?, undo_note = ?, inverse_sent_at = NULL WHERE id = ? AND claimed_by = ?")
          .run(status, undoNote ?? null, id, owner),
      options,
    );
  }

  async markInverseSent(id: string, owner: string, at: string): Promise<boolean> {
    return this.write(() => this.db.query("UPDATE actions SET inverse_sent_at = ? WHERE id = ? AND claimed_by = ?").run(at, id, owner)).changes === 1;
  }

  async noteClaim(id: string, owner: string, undoNote: string, options?: WriteOptions): Promise<void> {
    await this.writeGrouped(() => this.db.query("UPDATE actions SET undo_note = ? WHERE id = ? AND claimed_by = ?").run(undoNote, id, owner), options);
  }

  async noteUndo(id: string, note: string, options?: WriteOptions): Promise<void> {
    await this.writeGrouped(() => this.db.query("UPDATE actions SET undo_note = ? WHERE id = ?").run(note, id), options);
  }

  async settle(
    id: string,
    from: { status: ActionStatus; claimedBy?: string },
    finding: { status: ActionStatus; settled: Settled; by: string; at: string; note?: string; inverse?: ResolvedCall; warnings?: string[] },
  ): Promise<boolean> {
    // A new inverse (one built now that the call is known to have run) replaces the row's.
    const stored = finding.inverse && this.bodies.rebuilt(id, { inverse: finding.inverse });
    return this.write(() => {
      const result = this.db
        .query(
          `UPDATE actions SET status = ?, settled = ?, settled_by = ?, settled_at = ?, settled_note = ?,
                              warnings = CASE WHEN ? THEN ? ELSE warnings END, undo_note = NULL, inverse_sent_at = NULL
            WHERE id = ? AND status = ? AND (? IS NULL OR claimed_by = ?)`,
        )
        .run(
          ...[finding.status, finding.settled, finding.by, finding.at, finding.note ?? null],
          ...[finding.warnings ? 1 : 0, warningsColumn(finding.warnings)],
          ...[id, from.status, from.claimedBy ?? null, from.claimedBy ?? null],
        );
      if (result.changes === 1 && stored) this.bodies.write(id, stored);
      return result.changes === 1;
    });
  }

  async keep(runId: string, seqs: number[], decision: { by: string; at: string; reason?: string }): Promise<string[]> {
    return this.write(() => {
      const kept: string[] = [];
      const mark = this.db.query(
        `UPDATE actions SET kept_by = ?3, kept_at = ?4, kept_reason = ?5, undo_note = NULL
          WHERE ${OF_RUN} AND seq = ?2 AND ${KEEPABLE} RETURNING id`,
      );
      for (const seq of seqs) {
        const row = mark.get(runId, seq, decision.by, decision.at, decision.reason ?? null) as { id: string } | null;
        if (row) kept.push(row.id);
      }
      return kept;
    });
  }

  async markUnrecoverable(id: string, options?: WriteOptions): Promise<void> {
    await this.writeGrouped(() => this.db.query("UPDATE actions SET status = 'unrecoverable' WHERE id = ? AND status = 'applied'").run(id), options);
  }

  async replan(id: string, inverse: ResolvedCall | undefined, verify: VerifyCall | undefined, warnings: string[]): Promise<void> {
    const stored = this.bodies.rebuilt(id, { inverse: inverse ?? null, verify: verify ?? null });
    this.write(() => {
      this.db.query("UPDATE actions SET warnings = ? WHERE id = ?").run(warningsColumn(warnings), id);
      if (stored) this.bodies.write(id, stored);
    });
  }
}

reportFailuresAsJournalErrors(SqliteJournal.prototype, (journal, error) => journalFailure(journal.path, error));
