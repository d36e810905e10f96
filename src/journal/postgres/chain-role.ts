// The PostgreSQL journal's chain as the Journal offers it: read for verify and export, and a person's override recorded.
import type { ActionState, ChainEntry } from "../chain.ts";
import type { ChainRole } from "../journal.ts";
import type { PostgresStore } from "./store.ts";

export class PostgresChainRole implements ChainRole {
  constructor(private readonly store: PostgresStore) {}

  async chainOf(runId: string): Promise<ChainEntry[]> {
    await this.store.chain.flush(); // every copy committed so far, anyone's, first
    return this.store.chain.entries(runId);
  }

  async actionStatesOf(runId: string): Promise<ActionState[]> {
    return this.store.bodies.states(await this.store.sql`SELECT * FROM actions WHERE run_id = ${runId} ORDER BY seq`);
  }

  async chainedRuns(): Promise<string[]> {
    await this.store.chain.flush();
    return this.store.chain.runIds();
  }

  async chainOrigin(): Promise<{ migratedAt?: string }> {
    return this.store.chain.origin();
  }

  async noteOverride(runId: string, note: { by: string; breaks: string[] }): Promise<void> {
    await this.store.chain.append(runId, { kind: "override", state: { by: note.by, breaks: note.breaks }, at: new Date().toISOString() });
  }
}
