// The SQLite journal's approvals: calls held for a person, decided, spent by the retry they allow, withdrawn.
import { SynartesisError } from "../../errors.ts";
import type { CallIdentity, SpendApproval, TakeDenial, WithdrawRequests, ApprovalsRole } from "../journal.ts";
import type { Row } from "../rows.ts";
import type { Action, ActionStatus } from "../types.ts";
import { type SqliteStore, OF_RUN } from "./store.ts";

export class SqliteApprovals implements ApprovalsRole {
  constructor(private readonly store: SqliteStore) {}

  async waiting(): Promise<Action[]> {
    // The IN is what lets SQLite use the partial index actions_waiting (it does not infer it from the =): without it, a scan of every action.
    return this.store.actions(
      this.store.reader.query("SELECT * FROM actions WHERE status = 'gated' AND status IN ('gated', 'approved', 'denied') ORDER BY ts, rowid").all() as Row[],
    );
  }

  async openRequest({ server, tool, argsKey }: CallIdentity): Promise<Action | undefined> {
    const row = this.store.reader
      .query("SELECT * FROM actions WHERE server = ? AND tool = ? AND args_key = ? AND status = 'gated' ORDER BY rowid LIMIT 1")
      .get(server, tool, argsKey) as Row | null;
    return row ? this.store.bodies.action(row) : undefined;
  }

  async spendApproval({ call: { server, tool, argsKey }, approvedSince, spender, now, rule }: SpendApproval): Promise<Action | undefined> {
    return this.store.write(() => {
      const row = this.store.db
        .query(
          `SELECT * FROM actions WHERE server = ? AND tool = ? AND args_key = ? AND status = 'approved'
              AND spent_by IS NULL AND approved_at >= ? AND (decided_rule IS NULL OR decided_rule = ?) ORDER BY approved_at LIMIT 1`,
        )
        .get(server, tool, argsKey, approvedSince, rule) as Row | null;
      if (!row) return undefined;
      this.store.db.query("UPDATE actions SET spent_by = ?, spent_at = ? WHERE id = ?").run(spender, now, String(row.id));
      return this.store.bodies.action({ ...row, spent_by: spender, spent_at: now });
    });
  }

  async returnApproval(approvalId: string, spender: string): Promise<void> {
    this.store.write(() => this.store.db.query("UPDATE actions SET spent_by = NULL, spent_at = NULL WHERE id = ? AND spent_by = ?").run(approvalId, spender));
  }

  async takeDenial({ call: { server, tool, argsKey }, runId, now }: TakeDenial): Promise<Action | undefined> {
    return this.store.write(() => {
      const row = this.store.db
        .query(
          `SELECT * FROM actions WHERE server = ? AND tool = ? AND args_key = ? AND status = 'denied' AND told_run IS NULL
              AND withdrawn_at IS NULL ORDER BY approved_at DESC LIMIT 1`,
        )
        .get(server, tool, argsKey) as Row | null;
      if (!row) return undefined;
      this.store.db.query("UPDATE actions SET told_run = ?, told_at = ? WHERE id = ?").run(runId, now, String(row.id));
      return this.store.bodies.action({ ...row, told_run: runId, told_at: now });
    });
  }

  async decide(
    id: string,
    decision: { status: "approved" | "denied"; by: string; at: string; reason?: string; rule?: string },
  ): Promise<{ action: Action } | { settled: ActionStatus }> {
    return this.store.write(() => {
      const changed = this.store.db
        .query("UPDATE actions SET status = ?, approved_by = ?, approved_at = ?, reason = ?, decided_rule = ? WHERE id = ? AND status = 'gated'")
        .run(decision.status, decision.by, decision.at, decision.reason ?? null, decision.rule ?? null, id);
      const row = this.store.db.query("SELECT * FROM actions WHERE id = ?").get(id) as Row | null;
      if (!row) throw new SynartesisError("unknown_id", `no action ${id}`);
      const action = this.store.bodies.action(row);
      return changed.changes === 1 ? { action } : { settled: action.status };
    });
  }

  async withdrawRequests({ runId, fromSeq, by, at }: WithdrawRequests): Promise<Action[]> {
    const rows = this.store.write(
      () =>
        this.store.db
          .query(
            `UPDATE actions SET status = 'denied', withdrawn_by = ?3, withdrawn_at = ?4
              WHERE ${OF_RUN} AND seq >= ?2 AND (status = 'gated' OR (status = 'approved' AND spent_by IS NULL)) RETURNING *`,
          )
          .all(runId, fromSeq, by, at) as Row[],
    );
    return this.store.actions(rows).sort((a, b) => a.seq - b.seq);
  }
}
