// A PostgreSQL journal keeps no chain yet (R-VERIFY is SQLite's, so far): verify says so rather than pass it.
import type { ChainEntry } from "../chain.ts";
import type { ChainRole } from "../journal.ts";

export class PostgresChainRole implements ChainRole {
  async chainOf(_runId: string): Promise<ChainEntry[] | undefined> {
    return undefined;
  }

  async chainedRuns(): Promise<string[]> {
    return [];
  }

  async chainOrigin(): Promise<{ migratedAt?: string } | undefined> {
    return undefined;
  }

  async noteOverride(_runId: string, _note: { by: string; breaks: string[] }): Promise<void> {}
}
