// The journal in one SQLite file (bun:sqlite, WAL): the embedded default
// behind the Journal interface (whose comments say what each method does).
// Every multi-statement change is one IMMEDIATE transaction, run to its end
// without yielding.
import { Database } from "bun:sqlite";
import { closeSync, existsSync, mkdirSync, openSync, statSync } from "node:fs";
import { dirname } from "node:path";
import { SynartesisError } from "../errors.ts";
import { MIGRATIONS } from "./migrations.ts";
import { JournalFiles } from "./file-identity.ts";
import { journalFailure } from "./sqlite-failures.ts";
import { JournalError, type Journal, type NewAction, type Outcome, type PendingNews } from "./journal.ts";
import { insertedAction, json, likePrefix, observationColumns, onlyMatch, reportFailuresAsJournalErrors, toAction, toRun, warningsColumn, type Row } from "./rows.ts";
import type { Action, ActionStatus, ResolvedCall, Run, RunStatus, RunSummary, Settled, VerifyCall } from "./types.ts";

const BUSY_TIMEOUT_MS = 10_000;
/** How often a change subscription looks at the data version (it is one cheap pragma). */
const CHANGE_POLL_MS = 250;


export class SqliteJournal implements Journal {
  readonly path: string;
  /** Things about the file a person should know (e.g. other users can read it). */
  readonly warnings: string[];
  private readonly db: Database;
  private readonly files: JournalFiles;

  private constructor(path: string, db: Database, files: JournalFiles, warnings: string[]) {
    this.path = path;
    this.db = db;
    this.files = files;
    this.warnings = warnings;
  }

  /**
   * Open a journal. With `create`, a missing file (and its folder) is made,
   * private to this user (R-JOURNAL, issue 13 item 9: 0600, folder 0700; SQLite
   * gives the -wal and -shm files the journal's mode); without it, a missing
   * journal is refused rather than created.
   */
  static open(path: string, options: { create: boolean }): SqliteJournal {
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
    let db: Database;
    let files: JournalFiles;
    try {
      const stat = statSync(path);
      files = new JournalFiles(path);
      if (stat.mode & 0o077) {
        const mode = (stat.mode & 0o777).toString(8).padStart(4, "0");
        warnings.push(`the journal ${path} can be read by other users (mode ${mode}); it holds every recorded argument and result: chmod 600 it`);
      }
      db = new Database(path, { create: options.create, strict: true });
      db.run(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
      const mode = db.query("PRAGMA journal_mode = WAL").get() as { journal_mode: string };
      if (mode.journal_mode.toLowerCase() !== "wal") throw new Error(`journal_mode is ${mode.journal_mode}, not wal`);
      // NORMAL in WAL mode: a committed transaction survives a crash of this process (kill -9);
      // only an OS crash or power loss can lose the last commits.
      db.run("PRAGMA synchronous = NORMAL");
      db.run("PRAGMA foreign_keys = ON");
    } catch (error) {
      const failure = journalFailure(path, error);
      throw failure instanceof JournalError ? failure : new JournalError(path, "broken", (error as Error).message);
    }
    const journal = new SqliteJournal(path, db, files, warnings);
    try {
      journal.migrate();
    } catch (error) {
      throw journalFailure(path, error);
    }
    return journal;
  }

  async proveWritable(): Promise<void> {
    this.db.transaction(() => this.db.run("UPDATE migrations SET applied_at = applied_at WHERE rowid = (SELECT MIN(rowid) FROM migrations)")).immediate();
  }

  /** Why the files at `path` are no longer the journal this connection writes into (deleted or replaced), if they are not. */
  async identityLost(): Promise<string | undefined> {
    return this.files.lost();
  }

  async close(): Promise<void> {
    this.db.close();
  }

  private migrate(): void {
    const apply = this.db.transaction(() => {
      this.db.run("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL) STRICT");
      const done = new Set((this.db.query("SELECT name FROM migrations").all() as Row[]).map((r) => String(r.name)));
      for (const migration of MIGRATIONS) {
        if (done.has(migration.name)) continue;
        this.db.run(migration.sql);
        this.db.query("INSERT INTO migrations (name, applied_at) VALUES (?, ?)").run(migration.name, new Date().toISOString());
      }
    });
    apply.immediate();
  }

  async appliedMigrations(): Promise<string[]> {
    return (this.db.query("SELECT name FROM migrations ORDER BY rowid").all() as Row[]).map((r) => String(r.name));
  }

  /** Calls `onChange` when another connection committed: its data version moved (one cheap pragma per poll). */
  async watchChanges(onChange: () => void): Promise<() => Promise<void>> {
    let version = this.dataVersion();
    const timer = setInterval(() => {
      let now: number;
      try {
        now = this.dataVersion();
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

  private dataVersion(): number {
    return Number((this.db.query("PRAGMA data_version").get() as Row).data_version);
  }

  // ---- runs ----

  async startRun(run: { id: string; label: string; startedAt: string; host?: string; pid?: number; manifest?: string }): Promise<Run> {
    this.db
      .query("INSERT INTO runs (id, label, started_at, status, host, pid, manifest) VALUES (?, ?, ?, 'active', ?, ?, ?)")
      .run(run.id, run.label, run.startedAt, run.host ?? null, run.pid ?? null, run.manifest ?? null);
    return this.runById(run.id)!;
  }

  async completeRun(id: string, endedAt: string): Promise<void> {
    this.db.query("UPDATE runs SET status = 'complete', ended_at = ? WHERE id = ? AND status = 'active'").run(endedAt, id);
    this.db.query("UPDATE runs SET ended_at = COALESCE(ended_at, ?) WHERE id = ?").run(endedAt, id);
  }

  async setRunStatus(id: string, status: RunStatus, at: string, undoneBy?: string): Promise<void> {
    this.db.query("UPDATE runs SET status = ?, ended_at = COALESCE(ended_at, ?) WHERE id = ?").run(status, at, id);
    if (undoneBy !== undefined) this.db.query("UPDATE runs SET undone_by = ?, undone_at = ? WHERE id = ?").run(undoneBy, at, id);
  }

  async getRun(id: string): Promise<Run | undefined> {
    return this.runById(id);
  }

  private runById(id: string): Run | undefined {
    const row = this.db.query("SELECT * FROM runs WHERE id = ?").get(id) as Row | null;
    return row ? toRun(row) : undefined;
  }

  async findRun(prefix: string | undefined): Promise<Run> {
    if (prefix === undefined || prefix === "") {
      const row = this.db.query("SELECT * FROM runs ORDER BY started_at DESC, rowid DESC LIMIT 1").get() as Row | null;
      if (!row) throw new SynartesisError("refused", `the journal ${this.path} has no runs yet`);
      return toRun(row);
    }
    const rows = this.db.query("SELECT * FROM runs WHERE replace(id, '-', '') LIKE ? ESCAPE '\\' ORDER BY started_at DESC").all(likePrefix(prefix)) as Row[];
    return onlyMatch(rows, prefix, "run", toRun);
  }

  async listRuns(): Promise<RunSummary[]> {
    const rows = this.db
      .query(
        `SELECT runs.*,
                COUNT(actions.id) AS n_actions,
                COALESCE(SUM(actions.status = 'pending'), 0) AS n_unknown,
                COALESCE(SUM(actions.status = 'gated'), 0) AS n_waiting
           FROM runs LEFT JOIN actions ON actions.run_id = runs.id
          GROUP BY runs.id
          ORDER BY runs.started_at DESC, runs.rowid DESC`,
      )
      .all() as Row[];
    return rows.map((row) => ({ ...toRun(row), actions: Number(row.n_actions), unknown: Number(row.n_unknown), waiting: Number(row.n_waiting) }));
  }

  // ---- actions ----

  async insertAction(action: NewAction): Promise<Action> {
    const insert = this.db.transaction(() => {
      const { last_seq } = this.db.query("UPDATE runs SET last_seq = last_seq + 1 WHERE id = ? RETURNING last_seq").get(action.runId) as {
        last_seq: number;
      };
      this.db
        .query(
          `INSERT INTO actions (id, run_id, seq, server, tool, args, args_key, class, status, snapshot, snapshot_absent,
                                verify, result, error, held_reason, warnings, approved_by, approved_at, ts)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(
          ...[action.id, action.runId, last_seq, action.server, action.tool, JSON.stringify(action.args), action.argsKey ?? null, action.class, action.status],
          ...observationColumns(action.snapshot),
          ...[json(action.verify), action.resultText ?? null, action.error ?? null, action.heldReason ?? null, warningsColumn(action.warnings)],
          ...[action.approvedBy ?? null, action.approvedAt ?? null, action.ts],
        );
      return last_seq;
    });
    return insertedAction(action, insert.immediate());
  }

  async finishAction(id: string, outcome: Outcome): Promise<void> {
    this.db
      .query(
        `UPDATE actions SET status = ?, result = COALESCE(?, result), inverse = ?, post_state = ?, post_absent = ?,
                            error = COALESCE(?, error), warnings = ?
          WHERE id = ? AND status = 'pending'`,
      )
      .run(outcome.status, outcome.resultText ?? null, json(outcome.inverse), ...observationColumns(outcome.postState), outcome.error ?? null, warningsColumn(outcome.warnings), id);
  }

  async notePending(id: string, news: PendingNews): Promise<void> {
    const snapshot = news.snapshot ? observationColumns(news.snapshot) : [null, null];
    this.db
      .query(
        `UPDATE actions SET snapshot = CASE WHEN ? THEN ? ELSE snapshot END, snapshot_absent = COALESCE(?, snapshot_absent), task = COALESCE(?, task)
          WHERE id = ? AND status = 'pending'`,
      )
      .run(news.snapshot ? 1 : 0, snapshot[0], snapshot[1], news.task ?? null, id);
  }

  async getAction(id: string): Promise<Action | undefined> {
    return this.actionById(id);
  }

  private actionById(id: string): Action | undefined {
    const row = this.db.query("SELECT * FROM actions WHERE id = ?").get(id) as Row | null;
    return row ? toAction(row) : undefined;
  }

  async findAction(prefix: string): Promise<Action> {
    const rows = this.db.query("SELECT * FROM actions WHERE replace(id, '-', '') LIKE ? ESCAPE '\\'").all(likePrefix(prefix)) as Row[];
    return onlyMatch(rows, prefix, "action", toAction);
  }

  async actionsOfRun(runId: string): Promise<Action[]> {
    return (this.db.query("SELECT * FROM actions WHERE run_id = ? ORDER BY seq").all(runId) as Row[]).map(toAction);
  }

  async recentActions(limit: number): Promise<Action[]> {
    return (this.db.query("SELECT * FROM actions ORDER BY ts DESC, rowid DESC LIMIT ?").all(limit) as Row[]).map(toAction);
  }

  // ---- gates ----

  async waiting(): Promise<Action[]> {
    return (this.db.query("SELECT * FROM actions WHERE status = 'gated' ORDER BY ts, rowid").all() as Row[]).map(toAction);
  }

  async openRequest(server: string, tool: string, argsKey: string): Promise<Action | undefined> {
    const row = this.db
      .query("SELECT * FROM actions WHERE server = ? AND tool = ? AND args_key = ? AND status = 'gated' ORDER BY rowid LIMIT 1")
      .get(server, tool, argsKey) as Row | null;
    return row ? toAction(row) : undefined;
  }

  async spendApproval(server: string, tool: string, argsKey: string, approvedSince: string, spender: string, now: string): Promise<Action | undefined> {
    const spend = this.db.transaction(() => {
      const row = this.db
        .query(
          `SELECT * FROM actions WHERE server = ? AND tool = ? AND args_key = ? AND status = 'approved'
              AND spent_by IS NULL AND approved_at >= ? ORDER BY approved_at LIMIT 1`,
        )
        .get(server, tool, argsKey, approvedSince) as Row | null;
      if (!row) return undefined;
      this.db.query("UPDATE actions SET spent_by = ?, spent_at = ? WHERE id = ?").run(spender, now, String(row.id));
      return toAction({ ...row, spent_by: spender, spent_at: now });
    });
    return spend.immediate();
  }

  async returnApproval(approvalId: string, spender: string): Promise<void> {
    this.db.query("UPDATE actions SET spent_by = NULL, spent_at = NULL WHERE id = ? AND spent_by = ?").run(approvalId, spender);
  }

  async takeDenial(server: string, tool: string, argsKey: string, runId: string, now: string): Promise<Action | undefined> {
    const take = this.db.transaction(() => {
      const row = this.db
        .query(
          `SELECT * FROM actions WHERE server = ? AND tool = ? AND args_key = ? AND status = 'denied' AND told_run IS NULL
              AND withdrawn_at IS NULL ORDER BY approved_at DESC LIMIT 1`,
        )
        .get(server, tool, argsKey) as Row | null;
      if (!row) return undefined;
      this.db.query("UPDATE actions SET told_run = ?, told_at = ? WHERE id = ?").run(runId, now, String(row.id));
      return toAction({ ...row, told_run: runId, told_at: now });
    });
    return take.immediate();
  }

  async decide(id: string, decision: { status: "approved" | "denied"; by: string; at: string; reason?: string }): Promise<{ action: Action } | { settled: ActionStatus }> {
    const decideTx = this.db.transaction(() => {
      const changed = this.db
        .query("UPDATE actions SET status = ?, approved_by = ?, approved_at = ?, reason = ? WHERE id = ? AND status = 'gated'")
        .run(decision.status, decision.by, decision.at, decision.reason ?? null, id);
      const action = this.actionById(id);
      if (!action) throw new SynartesisError("unknown_id", `no action ${id}`);
      return changed.changes === 1 ? { action } : { settled: action.status };
    });
    return decideTx.immediate();
  }

  async withdrawRequests(runId: string, fromSeq: number, by: string, at: string): Promise<Action[]> {
    const rows = this.db
      .query(
        `UPDATE actions SET status = 'denied', withdrawn_by = ?, withdrawn_at = ?
          WHERE run_id = ? AND seq >= ? AND (status = 'gated' OR (status = 'approved' AND spent_by IS NULL)) RETURNING *`,
      )
      .all(by, at, runId, fromSeq) as Row[];
    return rows.map(toAction).sort((a, b) => a.seq - b.seq);
  }

  // ---- undo ----

  async claim(id: string, owner: string, now: string, from: ActionStatus[]): Promise<boolean> {
    const placeholders = from.map(() => "?").join(", ");
    const result = this.db
      .query(`UPDATE actions SET status = 'rolling_back', claimed_by = ?, claimed_at = ? WHERE id = ? AND status IN (${placeholders})`)
      .run(owner, now, id, ...from);
    return result.changes === 1;
  }

  async takeOverClaim(id: string, deadOwner: string, owner: string, now: string): Promise<boolean> {
    const result = this.db
      .query("UPDATE actions SET claimed_by = ?, claimed_at = ? WHERE id = ? AND status = 'rolling_back' AND claimed_by = ?")
      .run(owner, now, id, deadOwner);
    return result.changes === 1;
  }

  async settleClaim(id: string, owner: string, status: ActionStatus, undoNote?: string): Promise<void> {
    this.db
      .query("UPDATE actions SET status = ?, undo_note = ?, inverse_sent_at = NULL WHERE id = ? AND claimed_by = ?")
      .run(status, undoNote ?? null, id, owner);
  }

  async markInverseSent(id: string, owner: string, at: string): Promise<void> {
    this.db.query("UPDATE actions SET inverse_sent_at = ? WHERE id = ? AND claimed_by = ?").run(at, id, owner);
  }

  async noteClaim(id: string, owner: string, undoNote: string): Promise<void> {
    this.db.query("UPDATE actions SET undo_note = ? WHERE id = ? AND claimed_by = ?").run(undoNote, id, owner);
  }

  async noteUndo(id: string, note: string): Promise<void> {
    this.db.query("UPDATE actions SET undo_note = ? WHERE id = ?").run(note, id);
  }

  async settle(
    id: string,
    from: { status: ActionStatus; claimedBy?: string },
    finding: { status: ActionStatus; settled: Settled; by: string; at: string; note?: string; inverse?: ResolvedCall; warnings?: string[] },
  ): Promise<boolean> {
    const result = this.db
      .query(
        `UPDATE actions SET status = ?, settled = ?, settled_by = ?, settled_at = ?, settled_note = ?,
                            inverse = COALESCE(?, inverse), warnings = CASE WHEN ? THEN ? ELSE warnings END,
                            undo_note = NULL, inverse_sent_at = NULL
          WHERE id = ? AND status = ? AND (? IS NULL OR claimed_by = ?)`,
      )
      .run(
        ...[finding.status, finding.settled, finding.by, finding.at, finding.note ?? null, json(finding.inverse)],
        ...[finding.warnings ? 1 : 0, warningsColumn(finding.warnings)],
        ...[id, from.status, from.claimedBy ?? null, from.claimedBy ?? null],
      );
    return result.changes === 1;
  }

  async markUnrecoverable(id: string): Promise<void> {
    this.db.query("UPDATE actions SET status = 'unrecoverable' WHERE id = ? AND status = 'applied'").run(id);
  }

  async replan(id: string, inverse: ResolvedCall | undefined, verify: VerifyCall | undefined, warnings: string[]): Promise<void> {
    this.db
      .query("UPDATE actions SET inverse = ?, verify = ?, warnings = ? WHERE id = ?")
      .run(json(inverse), json(verify), warningsColumn(warnings), id);
  }
}

reportFailuresAsJournalErrors(SqliteJournal.prototype, (journal, error) => journalFailure(journal.path, error));
