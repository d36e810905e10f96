// The PostgreSQL journal's recording: a call's row from its intent to its outcome, and reading rows back.
import { SynartesisError } from "../../errors.ts";
import type { NewAction, Outcome, PendingNews, WriteOptions, RecordingRole } from "../journal.ts";
import { text } from "./bodies.ts";
import { finishedBody, insertedAction, likePrefix, notedBody, newBody, absentColumn, onlyMatch, textBody, warningsColumn, type Row } from "../rows.ts";
import type { Action } from "../types.ts";
import type { PostgresStore } from "./store.ts";

export class PostgresRecording implements RecordingRole {
  constructor(private readonly store: PostgresStore) {}

  /**
   * The run's row lock orders concurrent inserts: each takes the next seq, and a failed one rolls its number back.
   * Writes are never grouped here (WriteOptions): each is one statement, and with synchronous_commit off a commit costs little.
   */
  async insertAction(action: NewAction, _options?: WriteOptions): Promise<Action> {
    const body = newBody(action);
    const stored = action.status === "pending" ? textBody(body) : await this.store.bodies.stored(action.server, action.tool, body);
    const [row] = await this.store.sql`
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
    if (!row) throw new SynartesisError("refused", `no run ${action.runId} in the journal ${this.store.path}`);
    if (action.status === "pending") this.store.bodies.wrotePending(action.id, { server: action.server, tool: action.tool, body });
    return insertedAction(action, Number(row.seq));
  }

  async finishAction(id: string, outcome: Outcome, _options?: WriteOptions): Promise<void> {
    const before = await this.store.bodies.takePending(id);
    if (!before) return;
    const stored = await this.store.bodies.stored(before.server, before.tool, finishedBody(before.body, outcome));
    await this.store.sql`
      UPDATE actions SET status = ${outcome.status}, args = ${stored.args}, snapshot = ${stored.snapshot}, result = ${stored.result},
                         inverse = ${stored.inverse}, post_state = ${stored.post_state}, verify = ${stored.verify}, packed = ${stored.packed},
                         post_absent = ${absentColumn(outcome.postState)}, error = COALESCE(${text(outcome.error)}::text, error),
                         warnings = ${warningsColumn(outcome.warnings)}
       WHERE id = ${id} AND status = 'pending'`;
  }

  async notePending(id: string, news: PendingNews): Promise<void> {
    const pending = await this.store.bodies.takePending(id);
    if (!pending) return;
    const body = notedBody(pending.body, news);
    const stored = textBody(body);
    await this.store.sql`
      UPDATE actions SET args = ${stored.args}, snapshot = ${stored.snapshot}, result = ${stored.result}, inverse = ${stored.inverse},
                         post_state = ${stored.post_state}, verify = ${stored.verify}, packed = ${stored.packed},
                         snapshot_absent = CASE WHEN ${news.snapshot ? 1 : 0} = 1 THEN ${absentColumn(news.snapshot)}::integer ELSE snapshot_absent END,
                         task = COALESCE(${text(news.task)}::text, task)
       WHERE id = ${id} AND status = 'pending'`;
    this.store.bodies.wrotePending(id, { ...pending, body });
  }

  async getAction(id: string): Promise<Action | undefined> {
    const [row] = await this.store.sql`SELECT * FROM actions WHERE id = ${id}`;
    return row && this.store.bodies.action(row);
  }

  async findAction(prefix: string): Promise<Action> {
    const rows: Row[] = await this.store.sql`SELECT * FROM actions WHERE replace(id, '-', '') LIKE ${likePrefix(prefix)} ESCAPE '\\'`;
    return this.store.bodies.action(onlyMatch(rows, prefix, "action", (row) => row));
  }

  async actionsOfRun(runId: string): Promise<Action[]> {
    return this.store.bodies.actions(await this.store.sql`SELECT * FROM actions WHERE run_id = ${runId} ORDER BY seq`);
  }

  async recentActions(limit: number): Promise<Action[]> {
    return this.store.bodies.actions(await this.store.sql`SELECT * FROM actions ORDER BY ts DESC, position DESC LIMIT ${limit}`);
  }
}
