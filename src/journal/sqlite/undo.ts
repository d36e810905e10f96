// The SQLite journal's undo: the claims that make each inverse go once, what undo found, what a person settled or kept.
import type { Claim, ClaimMany, ClaimNote, InverseSent, SettleClaim, TakeOverClaim, WriteOptions, UndoRole } from "../journal.ts";
import { KEEPABLE, warningsColumn, type Row } from "../rows.ts";
import type { Action, ActionStatus, Settled, VerifyCall, Inverse } from "../types.ts";
import { type SqliteStore, OF_RUN } from "./store.ts";

export class SqliteUndo implements UndoRole {
  constructor(private readonly store: SqliteStore) {}

  private claimStatement(from: ActionStatus[]) {
    return this.store.db.query(
      `UPDATE actions SET status = 'rolling_back', claimed_by = ?, claimed_at = ? WHERE id = ? AND status IN (${from.map(() => "?").join(", ")}) RETURNING *`,
    );
  }

  async claim({ id, owner, now, from }: Claim): Promise<boolean> {
    return this.store.write(() => this.claimStatement(from).get(owner, now, id, ...from) !== null);
  }

  async claimMany({ ids, owner, now, from }: ClaimMany): Promise<Action[]> {
    const rows = this.store.write(() => ids.map((id) => this.claimStatement(from).get(owner, now, id, ...from) as Row | null));
    return this.store.actions(rows.filter((row): row is Row => row !== null));
  }

  async takeOverClaim({ id, judged, owner, now }: TakeOverClaim): Promise<boolean> {
    const sql = "UPDATE actions SET claimed_by = ?, claimed_at = ? WHERE id = ? AND status = 'rolling_back' AND claimed_by = ? AND claimed_at IS ?";
    return this.store.write(() => this.store.db.query(sql).run(owner, now, id, judged.owner, judged.at ?? null)).changes === 1;
  }

  async settleClaim({ id, owner, status, undoNote }: SettleClaim, options?: WriteOptions): Promise<void> {
    await this.store.writeGrouped(
      () =>
        this.store.db
          .query("UPDATE actions SET status = ?, undo_note = ?, inverse_sent_at = NULL WHERE id = ? AND claimed_by = ?")
          .run(status, undoNote ?? null, id, owner),
      options,
    );
  }

  async markInverseSent({ id, owner, at }: InverseSent): Promise<boolean> {
    return (
      this.store.write(() => this.store.db.query("UPDATE actions SET inverse_sent_at = ? WHERE id = ? AND claimed_by = ?").run(at, id, owner)).changes === 1
    );
  }

  async noteClaim({ id, owner, undoNote }: ClaimNote, options?: WriteOptions): Promise<void> {
    await this.store.writeGrouped(
      () => this.store.db.query("UPDATE actions SET undo_note = ? WHERE id = ? AND claimed_by = ?").run(undoNote, id, owner),
      options,
    );
  }

  async noteUndo(id: string, note: string, options?: WriteOptions): Promise<void> {
    await this.store.writeGrouped(() => this.store.db.query("UPDATE actions SET undo_note = ? WHERE id = ?").run(note, id), options);
  }

  async settle(
    id: string,
    from: { status: ActionStatus; claimedBy?: string },
    finding: { status: ActionStatus; settled: Settled; by: string; at: string; note?: string; inverse?: Inverse; warnings?: string[] },
  ): Promise<boolean> {
    // A new inverse (one built now that the call is known to have run) replaces the row's.
    const stored = finding.inverse && this.store.bodies.rebuilt(id, { inverse: finding.inverse });
    return this.store.write(() => {
      const result = this.store.db
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
      if (result.changes === 1 && stored) this.store.bodies.write(id, stored);
      return result.changes === 1;
    });
  }

  async keep(runId: string, seqs: number[], decision: { by: string; at: string; reason?: string }): Promise<string[]> {
    return this.store.write(() => {
      const kept: string[] = [];
      const mark = this.store.db.query(
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
    await this.store.writeGrouped(
      () => this.store.db.query("UPDATE actions SET status = 'unrecoverable' WHERE id = ? AND status = 'applied'").run(id),
      options,
    );
  }

  async replan(id: string, inverse: Inverse | undefined, verify: VerifyCall | undefined, warnings: string[]): Promise<void> {
    const stored = this.store.bodies.rebuilt(id, { inverse: inverse ?? null, verify: verify ?? null });
    this.store.write(() => {
      this.store.db.query("UPDATE actions SET warnings = ? WHERE id = ?").run(warningsColumn(warnings), id);
      if (stored) this.store.bodies.write(id, stored);
    });
  }
}
