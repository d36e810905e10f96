// The SQLite journal's recording: a call's row from its intent to its outcome, and reading rows back.
import type { NewAction, Outcome, PendingNews, WriteOptions, RecordingRole } from "../journal.ts";
import { finishedBody, insertedAction, notedBody, likePrefix, newBody, absentColumn, onlyMatch, textBody, warningsColumn, type Row } from "../rows.ts";
import type { Action } from "../types.ts";
import { type SqliteStore, OF_RUN } from "./store.ts";

export class SqliteRecording implements RecordingRole {
  constructor(private readonly store: SqliteStore) {}

  async insertAction(action: NewAction, options?: WriteOptions): Promise<Action> {
    const body = newBody(action);
    // A read's row is packed a moment later (store.packLater), off the path of its answer.
    const later = action.class === "readonly";
    const stored = action.status === "pending" || later ? textBody(body) : this.store.bodies.stored(action.server, action.tool, body);
    const seq = await this.store.writeGrouped(() => {
      const { last_seq } = this.store.db
        .query("UPDATE runs SET last_seq = CASE WHEN ?2 IS NULL THEN last_seq + 1 ELSE max(last_seq, ?2) END WHERE id = ?1 RETURNING last_seq")
        .get(action.runId, action.seq ?? null) as { last_seq: number };
      const seq = action.seq ?? last_seq;
      this.store.db
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
    if (action.status === "pending") this.store.bodies.wrotePending(action.id, { server: action.server, tool: action.tool, body });
    else if (later) this.store.packLater({ id: action.id, server: action.server, tool: action.tool, body });
    return insertedAction(action, seq);
  }

  async finishAction(id: string, outcome: Outcome, options?: WriteOptions): Promise<void> {
    const before = this.store.bodies.takePending(id);
    if (!before) return;
    const stored = this.store.bodies.stored(before.server, before.tool, finishedBody(before.body, outcome));
    await this.store.writeGrouped(
      () =>
        this.store.db
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
    const pending = this.store.bodies.takePending(id);
    if (!pending) return;
    const body = notedBody(pending.body, news);
    const stored = textBody(body);
    this.store.write(() =>
      this.store.db
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
    this.store.bodies.wrotePending(id, { ...pending, body });
  }

  async getAction(id: string): Promise<Action | undefined> {
    return this.store.actionById(id);
  }

  async findAction(prefix: string): Promise<Action> {
    const rows = this.store.reader.query("SELECT * FROM actions WHERE replace(id, '-', '') LIKE ? ESCAPE '\\'").all(likePrefix(prefix)) as Row[];
    return onlyMatch(rows, prefix, "action", (row) => this.store.bodies.action(row));
  }

  async actionsOfRun(runId: string): Promise<Action[]> {
    return this.store.actions(this.store.reader.query(`SELECT * FROM actions WHERE ${OF_RUN} ORDER BY seq`).all(runId) as Row[]);
  }

  async recentActions(limit: number): Promise<Action[]> {
    return this.store.actions(this.store.reader.query("SELECT * FROM actions ORDER BY ts DESC, rowid DESC LIMIT ?").all(limit) as Row[]);
  }
}
