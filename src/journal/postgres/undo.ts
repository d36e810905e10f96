// The PostgreSQL journal's undo: the claims that make each inverse go once, what undo found, what a person settled or kept.
import type { Claim, ClaimMany, ClaimNote, InverseSent, SettleClaim, TakeOverClaim, WriteOptions, UndoRole } from "../journal.ts";
import { text } from "./bodies.ts";
import { KEEPABLE, warningsColumn, type Row } from "../rows.ts";
import type { Action, ActionStatus, Settled, VerifyCall, Inverse } from "../types.ts";
import type { PostgresStore } from "./store.ts";

export class PostgresUndo implements UndoRole {
  constructor(private readonly store: PostgresStore) {}

  /** A row another undo is claiming at this instant is skipped, not waited for: the caller reads it again and sees who holds it. */
  async claim({ id, owner, now, from }: Claim): Promise<boolean> {
    const claimed = await this.store.sql`
      UPDATE actions SET status = 'rolling_back', claimed_by = ${owner}, claimed_at = ${now}
       WHERE id = (SELECT id FROM actions WHERE id = ${id} AND status IN ${this.store.sql(from)} FOR UPDATE SKIP LOCKED)`;
    return claimed.count === 1;
  }

  async claimMany({ ids, owner, now, from }: ClaimMany): Promise<Action[]> {
    if (ids.length === 0) return [];
    const rows: Row[] = await this.store.sql`
      UPDATE actions SET status = 'rolling_back', claimed_by = ${owner}, claimed_at = ${now}
       WHERE id IN (SELECT id FROM actions WHERE id IN ${this.store.sql(ids)} AND status IN ${this.store.sql(from)} FOR UPDATE SKIP LOCKED)
      RETURNING *`;
    return this.store.bodies.actions(rows);
  }

  async takeOverClaim({ id, judged, owner, now }: TakeOverClaim): Promise<boolean> {
    const taken = await this.store.sql`UPDATE actions SET claimed_by = ${owner}, claimed_at = ${now} WHERE id = (SELECT id FROM actions WHERE id = ${id}
      AND status = 'rolling_back' AND claimed_by = ${judged.owner} AND claimed_at IS NOT DISTINCT FROM ${judged.at ?? null} FOR UPDATE SKIP LOCKED)`;
    return taken.count === 1;
  }

  async settleClaim({ id, owner, status, undoNote }: SettleClaim, _options?: WriteOptions): Promise<void> {
    await this.store
      .sql`UPDATE actions SET status = ${status}, undo_note = ${text(undoNote)}, inverse_sent_at = NULL WHERE id = ${id} AND claimed_by = ${owner}`;
  }

  async markInverseSent({ id, owner, at }: InverseSent): Promise<boolean> {
    return (await this.store.sql`UPDATE actions SET inverse_sent_at = ${at} WHERE id = ${id} AND claimed_by = ${owner}`).count === 1;
  }

  async noteClaim({ id, owner, undoNote }: ClaimNote, _options?: WriteOptions): Promise<void> {
    await this.store.sql`UPDATE actions SET undo_note = ${text(undoNote)} WHERE id = ${id} AND claimed_by = ${owner}`;
  }

  async noteUndo(id: string, note: string, _options?: WriteOptions): Promise<void> {
    await this.store.sql`UPDATE actions SET undo_note = ${text(note)} WHERE id = ${id}`;
  }

  async settle(
    id: string,
    from: { status: ActionStatus; claimedBy?: string },
    finding: { status: ActionStatus; settled: Settled; by: string; at: string; note?: string; inverse?: Inverse; warnings?: string[] },
  ): Promise<boolean> {
    // A new inverse (one built now that the call is known to have run) replaces the row's.
    const stored = finding.inverse && (await this.store.bodies.rebuilt(id, { inverse: finding.inverse }));
    // One transaction: a connection ended between the two writes must not leave the status settled and the old inverse.
    return this.store.sql.begin(async (tx) => {
      const settled = await tx`
        UPDATE actions SET status = ${finding.status}, settled = ${finding.settled}, settled_by = ${text(finding.by)}, settled_at = ${finding.at},
                           settled_note = ${text(finding.note)},
                           warnings = CASE WHEN ${finding.warnings !== undefined} THEN ${warningsColumn(finding.warnings)}::text ELSE warnings END,
                           undo_note = NULL, inverse_sent_at = NULL
         WHERE id = ${id} AND status = ${from.status} AND (${from.claimedBy ?? null}::text IS NULL OR claimed_by = ${from.claimedBy ?? null})`;
      if (settled.count === 1 && stored) await this.store.bodies.write(id, stored, tx);
      return settled.count === 1;
    });
  }

  async keep(runId: string, seqs: number[], decision: { by: string; at: string; reason?: string }): Promise<string[]> {
    const mark = `UPDATE actions SET kept_by = $1, kept_at = $2, kept_reason = $3, undo_note = NULL
                   WHERE run_id = $4 AND seq = $5 AND ${KEEPABLE} RETURNING id`;
    return this.store.sql.begin(async (tx) => {
      const kept: string[] = [];
      for (const seq of seqs) {
        const [row] = await tx.unsafe(mark, [text(decision.by), decision.at, text(decision.reason), runId, seq]);
        if (row) kept.push(String(row.id));
      }
      return kept;
    });
  }

  async markUnrecoverable(id: string, _options?: WriteOptions): Promise<void> {
    await this.store.sql`UPDATE actions SET status = 'unrecoverable' WHERE id = ${id} AND status = 'applied'`;
  }

  async replan(id: string, inverse: Inverse | undefined, verify: VerifyCall | undefined, warnings: string[]): Promise<void> {
    const stored = await this.store.bodies.rebuilt(id, { inverse: inverse ?? null, verify: verify ?? null });
    await this.store.sql.begin(async (tx) => {
      await tx`UPDATE actions SET warnings = ${warningsColumn(warnings)} WHERE id = ${id}`;
      if (stored) await this.store.bodies.write(id, stored, tx);
    });
  }
}
