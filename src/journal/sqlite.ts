// The journal in one SQLite file (bun:sqlite, WAL): the embedded default
// behind the Journal interface (whose comments say what each method does).
// Every multi-statement change is one IMMEDIATE transaction, run to its end
// without yielding.
import { Database } from "bun:sqlite";
import { closeSync, existsSync, mkdirSync, openSync, statSync, type Stats } from "node:fs";
import { dirname } from "node:path";
import { SynartesisError } from "../errors.ts";
import { MIGRATIONS } from "./migrations.ts";
import { JournalError, type Journal, type NewAction, type Outcome } from "./journal.ts";
import { ToolDictionaries, type Body, type Dictionary } from "./packing.ts";
import {
  bodyOfRow,
  finishedBody,
  insertedAction,
  likePrefix,
  newBody,
  observationColumns,
  onlyMatch,
  rebuiltBody,
  reportFailuresAsJournalErrors,
  storedBody,
  toAction,
  toRun,
  unpackedRow,
  warningsColumn,
  type Row,
  type StoredBody,
} from "./rows.ts";
import type { Action, ActionStatus, ResolvedCall, Run, RunStatus, RunSummary, Settled, VerifyCall } from "./types.ts";

const BUSY_TIMEOUT_MS = 10_000;
/** How often a change subscription looks at the data version (it is one cheap pragma). */
const CHANGE_POLL_MS = 250;

const BROKEN_CODES = ["SQLITE_CORRUPT", "SQLITE_NOTADB", "SQLITE_READONLY", "SQLITE_IOERR", "SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_NOLFS", "SQLITE_PROTOCOL", "SQLITE_AUTH"];

/** A SQLite failure as a JournalError naming the file; anything else unchanged. */
function journalFailure(path: string, error: unknown): unknown {
  if (error instanceof JournalError || !(error instanceof Error) || error.name !== "SQLiteError") return error;
  const code = String((error as { code?: unknown }).code ?? "");
  if (code === "SQLITE_FULL") return new JournalError(path, "full", error.message);
  if (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")) return new JournalError(path, "busy", error.message);
  if (BROKEN_CODES.some((broken) => code.startsWith(broken))) return new JournalError(path, "broken", error.message);
  return error;
}

/** The file as it was when opened: a journal deleted or replaced underneath has another identity (or none). */
type FileIdentity = Pick<Stats, "dev" | "ino">;

export class SqliteJournal implements Journal {
  readonly path: string;
  /** Things about the file a person should know (e.g. other users can read it). */
  readonly warnings: string[];
  private readonly db: Database;
  private readonly identity: FileIdentity;
  private readonly dictionaries = new ToolDictionaries();
  /** The bodies of the pending rows this connection wrote: their outcome is packed with them without reading them back. */
  private readonly pendingBodies = new Map<string, { server: string; tool: string; body: Body }>();

  private constructor(path: string, db: Database, identity: FileIdentity, warnings: string[]) {
    this.path = path;
    this.db = db;
    this.identity = identity;
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
    let identity: FileIdentity;
    try {
      const stat = statSync(path);
      identity = { dev: stat.dev, ino: stat.ino };
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
    const journal = new SqliteJournal(path, db, identity, warnings);
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

  /** Why the file at `path` is no longer the journal this connection writes into (deleted or replaced), if it is not. */
  async identityLost(): Promise<string | undefined> {
    let now: Stats;
    try {
      now = statSync(this.path);
    } catch {
      return `the journal ${this.path} was deleted while this proxy was recording into it`;
    }
    if (now.ino !== this.identity.ino || now.dev !== this.identity.dev) {
      return `the journal ${this.path} was replaced by another file while this proxy was recording into it`;
    }
    return undefined;
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
    const body = newBody(action);
    const stored = this.stored(action.server, action.tool, body);
    const insert = this.db.transaction(() => {
      const { last_seq } = this.db.query("UPDATE runs SET last_seq = last_seq + 1 WHERE id = ? RETURNING last_seq").get(action.runId) as {
        last_seq: number;
      };
      this.db
        .query(
          `INSERT INTO actions (id, run_id, seq, server, tool, args, args_key, class, status, snapshot, snapshot_absent,
                                verify, result, error, held_reason, warnings, approved_by, approved_at, ts, packed)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(
          ...[action.id, action.runId, last_seq, action.server, action.tool, stored.args, action.argsKey ?? null, action.class, action.status],
          ...[stored.snapshot, observationColumns(action.snapshot)[1], stored.verify, stored.result],
          ...[action.error ?? null, action.heldReason ?? null, warningsColumn(action.warnings)],
          ...[action.approvedBy ?? null, action.approvedAt ?? null, action.ts, stored.packed],
        );
      return last_seq;
    });
    const seq = insert.immediate();
    if (action.status === "pending") this.pendingBodies.set(action.id, { server: action.server, tool: action.tool, body });
    return insertedAction(action, seq);
  }

  async finishAction(id: string, outcome: Outcome): Promise<void> {
    const before = this.pendingBodies.get(id) ?? this.pendingBody(id);
    this.pendingBodies.delete(id);
    if (!before) return;
    const stored = this.stored(before.server, before.tool, finishedBody(before.body, outcome));
    this.db
      .query(
        `UPDATE actions SET status = ?, args = ?, snapshot = ?, result = ?, inverse = ?, post_state = ?, verify = ?, packed = ?,
                            post_absent = ?, error = COALESCE(?, error), warnings = ?
          WHERE id = ? AND status = 'pending'`,
      )
      .run(
        ...[outcome.status, ...this.bodyValues(stored)],
        ...[observationColumns(outcome.postState)[1], outcome.error ?? null, warningsColumn(outcome.warnings), id],
      );
  }

  /** A pending row's body as stored (another connection wrote it); undefined when it is not pending. */
  private pendingBody(id: string): { server: string; tool: string; body: Body } | undefined {
    const row = this.db.query("SELECT * FROM actions WHERE id = ? AND status = 'pending'").get(id) as Row | null;
    return row ? { server: String(row.server), tool: String(row.tool), body: bodyOfRow(this.unpacked(row), this.dictionaryById) } : undefined;
  }

  async getAction(id: string): Promise<Action | undefined> {
    return this.actionById(id);
  }

  private actionById(id: string): Action | undefined {
    const row = this.db.query("SELECT * FROM actions WHERE id = ?").get(id) as Row | null;
    return row ? this.action(row) : undefined;
  }

  async findAction(prefix: string): Promise<Action> {
    const rows = this.db.query("SELECT * FROM actions WHERE replace(id, '-', '') LIKE ? ESCAPE '\\'").all(likePrefix(prefix)) as Row[];
    return onlyMatch(rows, prefix, "action", (row) => this.action(row));
  }

  async actionsOfRun(runId: string): Promise<Action[]> {
    return (this.db.query("SELECT * FROM actions WHERE run_id = ? ORDER BY seq").all(runId) as Row[]).map((row) => this.action(row));
  }

  async recentActions(limit: number): Promise<Action[]> {
    return (this.db.query("SELECT * FROM actions ORDER BY ts DESC, rowid DESC LIMIT ?").all(limit) as Row[]).map((row) => this.action(row));
  }

  // ---- gates ----

  async waiting(): Promise<Action[]> {
    return (this.db.query("SELECT * FROM actions WHERE status = 'gated' ORDER BY ts, rowid").all() as Row[]).map((row) => this.action(row));
  }

  async openRequest(server: string, tool: string, argsKey: string): Promise<Action | undefined> {
    const row = this.db
      .query("SELECT * FROM actions WHERE server = ? AND tool = ? AND args_key = ? AND status = 'gated' ORDER BY rowid LIMIT 1")
      .get(server, tool, argsKey) as Row | null;
    return row ? this.action(row) : undefined;
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
      return this.action({ ...row, spent_by: spender, spent_at: now });
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
      return this.action({ ...row, told_run: runId, told_at: now });
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
          WHERE run_id = ? AND seq >= ? AND status = 'gated' RETURNING *`,
      )
      .all(by, at, runId, fromSeq) as Row[];
    return rows.map((row) => this.action(row)).sort((a, b) => a.seq - b.seq);
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
    const conditions = [id, from.status, from.claimedBy ?? null, from.claimedBy ?? null];
    const settleTx = this.db.transaction((stored: StoredBody | undefined) => {
      const result = this.db
        .query(
          `UPDATE actions SET status = ?, settled = ?, settled_by = ?, settled_at = ?, settled_note = ?,
                              warnings = CASE WHEN ? THEN ? ELSE warnings END, undo_note = NULL, inverse_sent_at = NULL
            WHERE id = ? AND status = ? AND (? IS NULL OR claimed_by = ?)`,
        )
        .run(
          ...[finding.status, finding.settled, finding.by, finding.at, finding.note ?? null],
          ...[finding.warnings ? 1 : 0, warningsColumn(finding.warnings)],
          ...conditions,
        );
      if (result.changes === 1 && stored) this.writeBody(id, stored);
      return result.changes === 1;
    });
    // A new inverse (one built now that the call is known to have run) replaces the row's.
    return settleTx.immediate(finding.inverse && this.rebuilt(id, { inverse: finding.inverse }));
  }

  async markUnrecoverable(id: string): Promise<void> {
    this.db.query("UPDATE actions SET status = 'unrecoverable' WHERE id = ? AND status = 'applied'").run(id);
  }

  async replan(id: string, inverse: ResolvedCall | undefined, verify: VerifyCall | undefined, warnings: string[]): Promise<void> {
    const stored = this.rebuilt(id, { inverse: inverse ?? null, verify: verify ?? null });
    this.db.transaction(() => {
      this.db.query("UPDATE actions SET warnings = ? WHERE id = ?").run(warningsColumn(warnings), id);
      if (stored) this.writeBody(id, stored);
    }).immediate();
  }

  // ---- bodies (packing.ts) ----

  private action(row: Row): Action {
    return toAction(this.unpacked(row));
  }

  private unpacked(row: Row): Row {
    return unpackedRow(row, this.dictionaryById, this.path);
  }

  /** The content of dictionary `id`, read once. */
  private readonly dictionaryById = (id: number): Uint8Array | undefined => {
    let content = this.dictionaries.contents.get(id);
    if (content === undefined) {
      const row = this.db.query("SELECT content FROM dictionaries WHERE id = ?").get(id) as { content: Uint8Array } | null;
      if (row) this.dictionaries.contents.set(id, (content = row.content));
    }
    return content;
  };

  /**
   * How `body` is stored: packed against its tool's dictionary, or as text.
   * A dictionary proposed from samples is committed on its own, before any
   * row names it, so no rollback can take it back from under them.
   */
  private stored(server: string, tool: string, body: Body): StoredBody {
    let dictionary = this.dictionaries.known(server, tool, body);
    if (dictionary === undefined) {
      const proposal = this.dictionaries.proposal(server, tool, body);
      if (proposal) {
        this.db
          .query("INSERT INTO dictionaries (server, tool, content, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (server, tool) DO NOTHING")
          .run(server, tool, proposal, new Date().toISOString());
      }
      const row = this.db.query("SELECT id, content FROM dictionaries WHERE server = ? AND tool = ?").get(server, tool) as Dictionary | null;
      dictionary = row && { id: row.id, content: row.content };
      this.dictionaries.remember(server, tool, dictionary);
    }
    return storedBody(body, dictionary ?? undefined);
  }

  /** The stored body of row `id` with its inverse or verification read replaced; undefined when there is no such row. */
  private rebuilt(id: string, change: Parameters<typeof rebuiltBody>[1]): StoredBody | undefined {
    const row = this.db.query("SELECT * FROM actions WHERE id = ?").get(id) as Row | null;
    if (!row) return undefined;
    return this.stored(String(row.server), String(row.tool), rebuiltBody(bodyOfRow(this.unpacked(row), this.dictionaryById), change));
  }

  private bodyValues(stored: StoredBody): Array<string | Uint8Array | null> {
    return [stored.args, stored.snapshot, stored.result, stored.inverse, stored.post_state, stored.verify, stored.packed];
  }

  private writeBody(id: string, stored: StoredBody): void {
    this.db
      .query("UPDATE actions SET args = ?, snapshot = ?, result = ?, inverse = ?, post_state = ?, verify = ?, packed = ? WHERE id = ?")
      .run(...this.bodyValues(stored), id);
  }
}

reportFailuresAsJournalErrors(SqliteJournal.prototype, (journal, error) => journalFailure(journal.path, error));
