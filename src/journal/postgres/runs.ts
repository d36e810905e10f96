// The PostgreSQL journal's runs: one per client session, from its first call to its end, and after an undo.
import { SynartesisError } from "../../errors.ts";
import type { RunVerdict, RunsRole } from "../journal.ts";
import { text } from "./bodies.ts";
import { likePrefix, onlyMatch, toRun, type Row } from "../rows.ts";
import type { Run, RunSummary } from "../types.ts";
import type { PostgresStore } from "./store.ts";

export class PostgresRuns implements RunsRole {
  constructor(private readonly store: PostgresStore) {}

  async startRun(run: { id: string; label: string; startedAt: string; host?: string; pid?: number; manifest?: string }): Promise<Run> {
    const [row] = await this.store.sql`
      INSERT INTO runs (id, label, started_at, status, host, pid, manifest)
      VALUES (${run.id}, ${text(run.label)}, ${run.startedAt}, 'active', ${text(run.host)}, ${run.pid ?? null}, ${text(run.manifest)})
      RETURNING *`;
    return toRun(row);
  }

  async completeRun(id: string, endedAt: string): Promise<void> {
    await this.store.sql`
      UPDATE runs SET status = CASE WHEN status = 'active' THEN 'complete' ELSE status END,
                      ended_at = CASE WHEN status = 'active' THEN ${endedAt} ELSE COALESCE(ended_at, ${endedAt}) END
       WHERE id = ${id}`;
  }

  async setRunStatus({ id, status, at, undoneBy }: RunVerdict): Promise<void> {
    await this.store.sql`
      UPDATE runs SET status = ${status}, ended_at = COALESCE(ended_at, ${at}),
                      undone_by = COALESCE(${text(undoneBy)}::text, undone_by),
                      undone_at = CASE WHEN ${text(undoneBy)}::text IS NULL THEN undone_at ELSE ${at} END
       WHERE id = ${id}`;
  }

  async getRun(id: string): Promise<Run | undefined> {
    const [row] = await this.store.sql`SELECT * FROM runs WHERE id = ${id}`;
    return row ? toRun(row) : undefined;
  }

  async findRun(prefix: string | undefined): Promise<Run> {
    if (prefix === undefined || prefix === "") {
      const [row] = await this.store.sql`SELECT * FROM runs ORDER BY started_at DESC, position DESC LIMIT 1`;
      if (!row) throw new SynartesisError("refused", `the journal ${this.store.path} has no runs yet`);
      return toRun(row);
    }
    const rows: Row[] = await this.store.sql`SELECT * FROM runs WHERE replace(id, '-', '') LIKE ${likePrefix(prefix)} ESCAPE '\\' ORDER BY started_at DESC`;
    return onlyMatch(rows, prefix, "run", toRun);
  }

  async runIds(): Promise<string[]> {
    return ((await this.store.sql`SELECT id FROM runs`) as Row[]).map((row) => String(row.id));
  }

  async listRuns(): Promise<RunSummary[]> {
    const rows: Row[] = await this.store.sql`
      SELECT runs.*,
             COUNT(actions.id)::int AS n_actions,
             COUNT(actions.id) FILTER (WHERE actions.status = 'pending')::int AS n_unknown,
             COUNT(actions.id) FILTER (WHERE actions.status = 'gated')::int AS n_waiting
        FROM runs LEFT JOIN actions ON actions.run_id = runs.id
       GROUP BY runs.id
       ORDER BY runs.started_at DESC, runs.position DESC`;
    return rows.map((row) => ({ ...toRun(row), actions: Number(row.n_actions), unknown: Number(row.n_unknown), waiting: Number(row.n_waiting) }));
  }
}
