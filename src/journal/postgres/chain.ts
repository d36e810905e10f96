// The PostgreSQL journal's chain (journal/chain.ts). A trigger copies each
// run and action row a Synartesis connection writes (one that set
// CHAIN_SETTING: migration 0012) into chain_runs and chain_actions, in the
// writing transaction; a pass a moment later, off the path of the call,
// appends what changed in each copy since the row's previous entry to its
// run's chain. Any Synartesis process may chain any copy (one pass at a time,
// under an advisory lock): those a process killed meanwhile left are chained
// by the next pass of anyone's, as it would have.
import type { SQL } from "bun";
import type { ChainEntry, EntryKind } from "../chain.ts";
import {
  appendEntry,
  ChainMoment,
  chainFromEntries,
  entriesForCopies,
  entryOfRow,
  headsOf,
  KnownChains,
  runsOfCopies,
  type NewEntry,
  type RunChain,
} from "../chain-writer.ts";
import { keepHeads, type Head } from "../anchors.ts";
import { RUNS_WITH_ENTRIES } from "../migrations.ts";
import type { Row } from "../rows.ts";
import type { PostgresBodies } from "./bodies.ts";

/** How many copies of each table one transaction of a pass chains (a migrated journal's first pass has every row). */
const COPIES_AT_ONCE = 1000;
const LOCK = "SELECT pg_advisory_xact_lock(hashtext('synartesis: chain'))";
const TRY_LOCK = "SELECT pg_try_advisory_xact_lock(hashtext('synartesis: chain')) AS locked";

export class PostgresChain {
  private readonly moment = new ChainMoment(() => {
    this.chainCopies(false).catch(() => {
      // Unreachable or busy now: the copies stay, for the next pass (anyone's).
    });
  });
  private readonly known = new KnownChains();

  /** `journal` names the database as the heads kept elsewhere name it (anchors.ts). */
  constructor(
    private readonly sql: SQL,
    private readonly bodies: PostgresBodies,
    private readonly journal: string,
  ) {}

  /** After a call of the journal's: chain what it copied a moment later (the moment finds out whether there is anything). */
  written(): void {
    this.moment.ask();
  }

  /** Chain every copy committed so far now (after another process's pass, if one is running): before the chain is read. */
  async flush(): Promise<void> {
    this.moment.cancel();
    await this.chainCopies(true);
  }

  /** The journal closes: chain what is left (if it can), and set no moment after. */
  async close(): Promise<void> {
    this.moment.close();
    await this.chainCopies(true).catch(() => {});
  }

  /**
   * Chain the copies, a batch a transaction. `wait`: for a pass another
   * process runs, else leave the copies to it (and look again a moment later:
   * that pass may have begun before they were committed). None to be seen:
   * none committed, or chained already (a pass still running shows them
   * until it commits).
   */
  private async chainCopies(wait: boolean): Promise<void> {
    for (;;) {
      const [{ any }] = await this.sql`SELECT EXISTS (SELECT 1 FROM chain_actions) OR EXISTS (SELECT 1 FROM chain_runs) AS any`;
      if (!any) return;
      const outcome = await this.sql.begin(async (tx) => {
        if (wait) await tx.unsafe(LOCK);
        else if (!(await tx.unsafe(TRY_LOCK))[0].locked) return "busy" as const;
        return this.chainBatch(tx);
      });
      if (outcome === "busy") return this.written();
      keepHeads(this.journal, outcome.heads);
      if (!outcome.more) return;
    }
  }

  /** In a transaction holding the lock: one batch of copies chained; the heads of the chains it added to, and whether copies are left. */
  private async chainBatch(tx: SQL): Promise<{ heads: Map<string, Head>; more: boolean }> {
    // (RETURNING gives no order: the copies are put back in theirs.)
    const taken = async (table: string): Promise<Row[]> =>
      ((await tx.unsafe(`DELETE FROM ${table} WHERE copy IN (SELECT copy FROM ${table} ORDER BY copy LIMIT ${COPIES_AT_ONCE}) RETURNING *`)) as Row[]).sort(
        (a, b) => Number(a.copy) - Number(b.copy),
      );
    const copies = { runs: await taken("chain_runs"), actions: await taken("chain_actions") };
    const chains = await this.chainsOf(tx, runsOfCopies(copies));
    const { entries, heads } = entriesForCopies(chains, copies, await this.bodies.states(copies.actions));
    await this.insert(tx, entries);
    return { heads, more: copies.runs.length === COPIES_AT_ONCE || copies.actions.length === COPIES_AT_ONCE };
  }

  /** What the chains of these runs say now (in a transaction holding the lock: nobody else adds to them meanwhile). */
  private async chainsOf(tx: SQL, runIds: string[]): Promise<Map<string, RunChain>> {
    const chains = new Map<string, RunChain>();
    if (runIds.length === 0) return chains;
    const heads = new Map(
      ((await tx`SELECT DISTINCT ON (run_id) run_id, seq, hash FROM entries WHERE run_id IN ${tx(runIds)} ORDER BY run_id, seq DESC`) as Row[]).map((row) => [
        String(row.run_id),
        { seq: Number(row.seq), hash: Buffer.from(row.hash as Uint8Array).toString("hex") },
      ]),
    );
    const stale: string[] = [];
    for (const id of runIds) {
      const known = this.known.current(id, heads.get(id));
      if (known) chains.set(id, known);
      else stale.push(id);
    }
    if (stale.length === 0) return chains;
    const entries = new Map<string, Row[]>(stale.map((id) => [id, []]));
    for (const row of (await tx`SELECT run_id, kind, action_id, state FROM entries WHERE run_id IN ${tx(stale)} ORDER BY run_id, seq`) as Row[]) {
      entries.get(String(row.run_id))!.push(row);
    }
    for (const id of stale) {
      chains.set(id, this.known.remember(chainFromEntries(id, entries.get(id) as Array<{ kind: string; action_id: unknown; state: unknown }>, heads.get(id))));
    }
    return chains;
  }

  private async insert(tx: SQL, entries: NewEntry[]): Promise<void> {
    if (entries.length === 0) return;
    await tx`INSERT INTO entries ${tx(entries.map((entry) => ({ ...entry, hash: Buffer.from(entry.hash, "hex") })))}`;
  }

  /** Add an entry of its own to a run's chain (a person's override), after every copy committed so far. */
  async append(runId: string, entry: { kind: EntryKind; state: Record<string, unknown>; at: string }): Promise<void> {
    await this.flush();
    const chain = await this.sql.begin(async (tx) => {
      await tx.unsafe(LOCK);
      const chain = (await this.chainsOf(tx, [runId])).get(runId)!;
      await this.insert(tx, [appendEntry(chain, entry)]);
      return chain;
    });
    keepHeads(this.journal, headsOf([chain]));
  }

  async entries(runId: string): Promise<ChainEntry[]> {
    return ((await this.sql`SELECT * FROM entries WHERE run_id = ${runId} ORDER BY seq`) as Row[]).map(entryOfRow);
  }

  async runIds(): Promise<string[]> {
    return ((await this.sql.unsafe(RUNS_WITH_ENTRIES)) as Row[]).map((row) => String(row.run_id));
  }

  async origin(): Promise<{ migratedAt?: string }> {
    const [row] = await this.sql`SELECT migrated_at FROM chain_origin`;
    return row ? { migratedAt: String(row.migrated_at) } : {};
  }
}
