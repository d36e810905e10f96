// The SQLite journal's chain (journal/chain.ts). Triggers of this connection
// alone (TEMP: no other connection has them, so a row another one writes is
// never chained) copy each run and action row it writes, as written, into
// chain_runs and chain_actions, inside the writing transaction; a moment
// later, off the path of the call (as a read's body is packed), what changed
// in each copy since the row's previous entry is appended to its run's chain,
// many rows in one transaction. The copies are part of the file: those a
// process killed meanwhile left are chained by the next Synartesis that opens
// the journal (or verify), as it would have.
import type { Database } from "bun:sqlite";
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
import { RUN_STATE_COLUMNS, RUNS_WITH_ENTRIES } from "../migrations.ts";
import type { Row } from "../rows.ts";
import { keepHeads, type Head } from "../anchors.ts";
import type { SqliteBodies } from "./bodies.ts";

const NOW = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";

export class SqliteChain {
  private readonly moment = new ChainMoment(() => this.flush());
  private readonly known = new KnownChains();

  /** `commit` runs work in a write transaction of the journal's (store.write); `journal` is the file, whose heads are also kept elsewhere (anchors.ts). */
  constructor(
    private readonly db: Database,
    private readonly bodies: SqliteBodies,
    private readonly commit: <T>(work: () => T) => T,
    private readonly journal: string,
  ) {}

  /** Chain the copies, then keep the heads of the runs it added to (after the commit: a head kept is one that exists). */
  private chainAndAnchor(): void {
    keepHeads(
      this.journal,
      this.commit(() => this.chainCopies()),
    );
  }

  /**
   * The copies have every column of their table: one a later migration added
   * is added to them (in the migrations' transaction, which one process at a
   * time runs).
   */
  static matchColumns(db: Database): void {
    for (const table of ["runs", "actions"]) {
      const have = new Set((db.query(`SELECT name FROM pragma_table_info('chain_${table}')`).all() as Row[]).map((c) => String(c.name)));
      if (have.size === 0) continue;
      for (const column of db.query(`SELECT name FROM pragma_table_info('${table}')`).all() as Row[]) {
        if (!have.has(String(column.name))) db.run(`ALTER TABLE chain_${table} ADD COLUMN ${column.name}`);
      }
    }
  }

  /** This connection's triggers (made again on each open: TEMP objects last as long as the connection). */
  install(): void {
    this.db.run(`
      CREATE TEMP TABLE IF NOT EXISTS chain_unchanged (flag INTEGER);
      CREATE TEMP TRIGGER IF NOT EXISTS chain_action_inserted AFTER INSERT ON main.actions
        BEGIN INSERT INTO main.chain_actions SELECT ${NOW}, * FROM main.actions WHERE rowid = NEW.rowid; END;
      CREATE TEMP TRIGGER IF NOT EXISTS chain_action_updated AFTER UPDATE ON main.actions
        WHEN NOT EXISTS (SELECT 1 FROM temp.chain_unchanged)
        BEGIN INSERT INTO main.chain_actions SELECT ${NOW}, * FROM main.actions WHERE rowid = NEW.rowid; END;
      CREATE TEMP TRIGGER IF NOT EXISTS chain_run_inserted AFTER INSERT ON main.runs
        BEGIN INSERT INTO main.chain_runs SELECT ${NOW}, * FROM main.runs WHERE rowid = NEW.rowid; END;
      CREATE TEMP TRIGGER IF NOT EXISTS chain_run_updated AFTER UPDATE OF ${RUN_STATE_COLUMNS} ON main.runs
        BEGIN INSERT INTO main.chain_runs SELECT ${NOW}, * FROM main.runs WHERE rowid = NEW.rowid; END;
    `);
  }

  /**
   * Run `work`, inside a write transaction, without copying the action rows it
   * changes: it changes how rows are stored, not what they say (bodies
   * packed), so their copies would make no entry and only cost the pass an
   * unpacking each. Should it change what one says, verify names that row.
   */
  unchanged<T>(work: () => T): T {
    this.db.run("INSERT INTO temp.chain_unchanged VALUES (1)");
    try {
      return work();
    } finally {
      this.db.run("DELETE FROM temp.chain_unchanged");
    }
  }

  /**
   * After each transaction of the journal's: chain its copies a moment later.
   * Nothing is asked of the file here (this is on the path of every call);
   * the moment finds out whether there is anything to chain.
   */
  written(): void {
    this.moment.ask();
  }

  /**
   * Chain every copy now (close, and before the chain is read: a connection
   * reads its own entries). A journal this process cannot write now keeps
   * them for the next Synartesis that can.
   */
  flush(): void {
    this.moment.cancel();
    try {
      if (this.db.query("SELECT 1 FROM main.chain_actions UNION ALL SELECT 1 FROM main.chain_runs LIMIT 1").get()) this.chainAndAnchor();
    } catch {
      // Read-only here, or busy beyond the wait: the copies stay, for the next moment or the close.
    }
  }

  /** The journal closes: chain what is left, and set no moment after. */
  close(): void {
    this.flush();
    this.moment.close();
  }

  /** Inside a write transaction: an entry for each copy whose state moved; the heads of the chains it added to. */
  private chainCopies(): Map<string, Head> {
    const copies = {
      runs: this.db.query("SELECT * FROM main.chain_runs ORDER BY rowid").all() as Row[],
      actions: this.db.query("SELECT * FROM main.chain_actions ORDER BY rowid").all() as Row[],
    };
    this.db.run("DELETE FROM main.chain_runs; DELETE FROM main.chain_actions");
    const chains = new Map(runsOfCopies(copies).map((runId) => [runId, this.chainOfRun(runId)]));
    const { entries, heads } = entriesForCopies(
      chains,
      copies,
      copies.actions.map((row) => this.bodies.state(row)),
    );
    for (const entry of entries) this.insert(entry);
    return heads;
  }

  /** What a run's chain says now (inside a write transaction: nobody else can add to it meanwhile). */
  private chainOfRun(runId: string): RunChain {
    const row = this.db.query("SELECT seq, hash FROM entries WHERE run_id = ? ORDER BY seq DESC LIMIT 1").get(runId) as Row | null;
    const head = row ? { seq: Number(row.seq), hash: Buffer.from(row.hash as Uint8Array).toString("hex") } : undefined;
    const known = this.known.current(runId, head);
    if (known) return known;
    const entries = this.db.query("SELECT kind, action_id, state FROM entries WHERE run_id = ? ORDER BY seq").all(runId) as Array<{
      kind: string;
      action_id: unknown;
      state: unknown;
    }>;
    return this.known.remember(chainFromEntries(runId, entries, head));
  }

  private insert(entry: NewEntry): void {
    this.db
      .query("INSERT INTO entries (run_id, seq, kind, action_id, state, at, hash) VALUES (?, ?, ?, ?, ?, ?, ?)")
      .run(entry.run_id, entry.seq, entry.kind, entry.action_id, entry.state, entry.at, Buffer.from(entry.hash, "hex"));
  }

  /** Add an entry of its own to a run's chain (a person's override), after every copy: in a write transaction; `keep` the heads once it is committed. */
  append(runId: string, entry: { kind: EntryKind; state: Record<string, unknown>; at: string }): Map<string, Head> {
    const heads = this.chainCopies();
    const chain = this.chainOfRun(runId);
    this.insert(appendEntry(chain, entry));
    return new Map([...heads, ...headsOf([chain])]);
  }

  keep(heads: Map<string, Head>): void {
    keepHeads(this.journal, heads);
  }

  /** A journal from before the chain: every row as it stands is its first entry (its chain starts at this migration). */
  startFromRows(): void {
    this.db.run(`INSERT INTO chain_origin SELECT ${NOW} WHERE EXISTS (SELECT 1 FROM main.runs);
                 INSERT INTO main.chain_runs SELECT ${NOW}, * FROM main.runs ORDER BY rowid;
                 INSERT INTO main.chain_actions SELECT ${NOW}, * FROM main.actions ORDER BY rowid`);
    this.flush();
  }

  entries(runId: string): ChainEntry[] {
    return (this.db.query("SELECT * FROM entries WHERE run_id = ? ORDER BY seq").all(runId) as Row[]).map(entryOfRow);
  }

  runIds(): string[] {
    return (this.db.query(RUNS_WITH_ENTRIES).all() as Row[]).map((row) => String(row.run_id));
  }
}
