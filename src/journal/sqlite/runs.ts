// The SQLite journal's runs: one per client session, from its first call to its end, and after an undo.
import { SynartesisError } from "../../errors.ts";
import { runIdPrefix } from "../migrations.ts";
import type { RunVerdict, RunsRole } from "../journal.ts";
import { likePrefix, onlyMatch, toRun, type Row } from "../rows.ts";
import type { Run, RunSummary } from "../types.ts";
import type { SqliteStore } from "./store.ts";

export class SqliteRuns implements RunsRole {
  constructor(private readonly store: SqliteStore) {}

  async startRun(run: { id: string; label: string; startedAt: string; host?: string; pid?: number; manifest?: string }): Promise<Run> {
    this.store.write(() =>
      this.store.db
        .query("INSERT INTO runs (id, label, started_at, status, host, pid, manifest) VALUES (?, ?, ?, 'active', ?, ?, ?)")
        .run(run.id, run.label, run.startedAt, run.host ?? null, run.pid ?? null, run.manifest ?? null),
    );
    return this.store.runById(run.id)!;
  }

  async completeRun(id: string, endedAt: string): Promise<void> {
    this.store.write(() => {
      this.store.db.query("UPDATE runs SET status = 'complete', ended_at = ? WHERE id = ? AND status = 'active'").run(endedAt, id);
      this.store.db.query("UPDATE runs SET ended_at = COALESCE(ended_at, ?) WHERE id = ?").run(endedAt, id);
    });
  }

  async setRunStatus({ id, status, at, undoneBy }: RunVerdict): Promise<void> {
    this.store.write(() => {
      this.store.db.query("UPDATE runs SET status = ?, ended_at = COALESCE(ended_at, ?) WHERE id = ?").run(status, at, id);
      if (undoneBy !== undefined) this.store.db.query("UPDATE runs SET undone_by = ?, undone_at = ? WHERE id = ?").run(undoneBy, at, id);
    });
  }

  async getRun(id: string): Promise<Run | undefined> {
    return this.store.runById(id);
  }

  async findRun(prefix: string | undefined): Promise<Run> {
    if (prefix === undefined || prefix === "") {
      const row = this.store.reader.query("SELECT * FROM runs ORDER BY started_at DESC, rowid DESC LIMIT 1").get() as Row | null;
      if (!row) throw new SynartesisError("refused", `the journal ${this.store.path} has no runs yet`);
      return toRun(row);
    }
    const rows = this.store.reader
      .query("SELECT * FROM runs WHERE replace(id, '-', '') LIKE ? ESCAPE '\\' ORDER BY started_at DESC")
      .all(likePrefix(prefix)) as Row[];
    return onlyMatch(rows, prefix, "run", toRun);
  }

  async runIds(): Promise<string[]> {
    return (this.store.reader.query("SELECT id FROM runs").all() as Row[]).map((row) => String(row.id));
  }

  async listRuns(): Promise<RunSummary[]> {
    const rows = this.store.reader
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
}
