// The SQLite journal's chain as the Journal offers it: read for verify and export, and a person's override recorded.
import type { ActionState, ChainEntry } from "../chain.ts";
import type { Row } from "../rows.ts";
import type { ChainRole } from "../journal.ts";
import { OF_RUN, type SqliteStore } from "./store.ts";

export class SqliteChainRole implements ChainRole {
  constructor(private readonly store: SqliteStore) {}

  async chainOf(runId: string): Promise<ChainEntry[]> {
    this.store.commits.flush(); // its own queued writes, and their entries, first
    this.store.chain.flush();
    return this.store.chain.entries(runId);
  }

  async actionStatesOf(runId: string): Promise<ActionState[]> {
    return (this.store.reader.query(`SELECT * FROM actions WHERE ${OF_RUN} ORDER BY seq`).all(runId) as Row[]).map((row) => this.store.bodies.state(row));
  }

  async chainedRuns(): Promise<string[]> {
    this.store.commits.flush(); // its own queued writes, and their entries, first
    this.store.chain.flush();
    return this.store.chain.runIds();
  }

  async chainOrigin(): Promise<{ migratedAt?: string }> {
    const row = this.store.reader.query("SELECT migrated_at FROM chain_origin").get() as { migrated_at: string } | null;
    return row ? { migratedAt: row.migrated_at } : {};
  }

  async noteOverride(runId: string, note: { by: string; breaks: string[] }): Promise<void> {
    const at = new Date().toISOString();
    this.store.commits.flush();
    this.store.chain.keep(this.store.write(() => this.store.chain.append(runId, { kind: "override", state: { by: note.by, breaks: note.breaks }, at })));
  }
}
