// The PostgreSQL journal's approvals: calls held for a person, decided, spent by the retry they allow, withdrawn.
import { SynartesisError } from "../../errors.ts";
import type { CallIdentity, SpendApproval, TakeDenial, WithdrawRequests, ApprovalsRole } from "../journal.ts";
import { text } from "./bodies.ts";
import type { Row } from "../rows.ts";
import type { Action, ActionStatus } from "../types.ts";
import type { PostgresStore } from "./store.ts";

export class PostgresApprovals implements ApprovalsRole {
  constructor(private readonly store: PostgresStore) {}

  async waiting(): Promise<Action[]> {
    return this.store.bodies.actions(await this.store.sql`SELECT * FROM actions WHERE status = 'gated' ORDER BY ts, position`);
  }

  async openRequest({ server, tool, argsKey }: CallIdentity): Promise<Action | undefined> {
    const [row] = await this.store.sql`
      SELECT * FROM actions WHERE server = ${text(server)} AND tool = ${text(tool)} AND args_key = ${argsKey} AND status = 'gated'
       ORDER BY position LIMIT 1`;
    return row && this.store.bodies.action(row);
  }

  /** The approval's row is locked by the one statement that spends it: a retry on another machine waits, then finds it spent. */
  async spendApproval({ call: { server, tool, argsKey }, approvedSince, spender, now, rule }: SpendApproval): Promise<Action | undefined> {
    const [row] = await this.store.sql`
      UPDATE actions SET spent_by = ${spender}, spent_at = ${now}
       WHERE id = (SELECT id FROM actions
                    WHERE server = ${text(server)} AND tool = ${text(tool)} AND args_key = ${argsKey} AND status = 'approved'
                      AND spent_by IS NULL AND approved_at >= ${approvedSince} AND (decided_rule IS NULL OR decided_rule = ${rule})
                    ORDER BY approved_at LIMIT 1 FOR UPDATE)
         AND spent_by IS NULL
      RETURNING *`;
    return row && this.store.bodies.action(row);
  }

  async returnApproval(approvalId: string, spender: string): Promise<void> {
    await this.store.sql`UPDATE actions SET spent_by = NULL, spent_at = NULL WHERE id = ${approvalId} AND spent_by = ${spender}`;
  }

  async takeDenial({ call: { server, tool, argsKey }, runId, now }: TakeDenial): Promise<Action | undefined> {
    const [row] = await this.store.sql`
      UPDATE actions SET told_run = ${runId}, told_at = ${now}
       WHERE id = (SELECT id FROM actions
                    WHERE server = ${text(server)} AND tool = ${text(tool)} AND args_key = ${argsKey} AND status = 'denied'
                      AND told_run IS NULL AND withdrawn_at IS NULL
                    ORDER BY approved_at DESC LIMIT 1 FOR UPDATE)
         AND told_run IS NULL
      RETURNING *`;
    return row && this.store.bodies.action(row);
  }

  async decide(
    id: string,
    decision: { status: "approved" | "denied"; by: string; at: string; reason?: string; rule?: string },
  ): Promise<{ action: Action } | { settled: ActionStatus }> {
    const [row] = await this.store.sql`
      UPDATE actions SET status = ${decision.status}, approved_by = ${text(decision.by)}, approved_at = ${decision.at}, reason = ${text(decision.reason)},
             decided_rule = ${decision.rule ?? null}
       WHERE id = ${id} AND status = 'gated'
      RETURNING *`;
    if (row) return { action: (await this.store.bodies.action(row))! };
    const [current] = await this.store.sql`SELECT status FROM actions WHERE id = ${id}`;
    if (!current) throw new SynartesisError("unknown_id", `no action ${id}`);
    return { settled: current.status as ActionStatus };
  }

  async withdrawRequests({ runId, fromSeq, by, at }: WithdrawRequests): Promise<Action[]> {
    const rows: Row[] = await this.store.sql`
      UPDATE actions SET status = 'denied', withdrawn_by = ${text(by)}, withdrawn_at = ${at}
       WHERE run_id = ${runId} AND seq >= ${fromSeq} AND (status = 'gated' OR (status = 'approved' AND spent_by IS NULL))
      RETURNING *`;
    return (await this.store.bodies.actions(rows)).sort((a, b) => a.seq - b.seq);
  }
}
