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
import { actionState, entryHash, genesis, runState, stateDelta, withDelta, type ChainEntry, type EntryKind } from "../chain.ts";
import { canonicalJson } from "../../canonical.ts";
import { toRun, type Row } from "../rows.ts";
import { keepHeads, type Head } from "../anchors.ts";
import type { SqliteBodies } from "./bodies.ts";

/** The columns of runs a run's state holds (last_seq, a counter, is not part of it). */
const RUN_COLUMNS = "label, started_at, ended_at, status, host, pid, manifest, undone_by, undone_at";
/** How long after a write its entry is appended (writes meanwhile share the transaction). */
const CHAIN_DELAY_MS = 200;
const NOW = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";

/** How many runs' chains a process keeps in mind between passes (the one it records, those an undo touches). */
const RUNS_KEPT = 16;

/** A run's chain as far as this process knows it: its head, and the states its entries build. */
interface RunChain {
  id: string;
  seq: number;
  hash: string;
  run: Record<string, unknown>;
  actions: Map<string, Record<string, unknown>>;
}

const headsOf = (chains: Map<string, RunChain>) => new Map([...chains].map(([id, chain]) => [id, { seq: chain.seq, hash: chain.hash }]));

export class SqliteChain {
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** The journal is closing or closed: no moment is set any more. */
  private closed = false;
  private readonly runs = new Map<string, RunChain>();

  /** `commit` runs work in a write transaction of the journal's (store.write); `journal` is the file, whose heads are also kept elsewhere (anchors.ts). */
  constructor(
    private readonly db: Database,
    private readonly bodies: SqliteBodies,
    private readonly commit: (work: () => void) => void,
    private readonly journal: string,
  ) {}

  /** Chain the copies, then keep the heads of the runs it added to (after the commit: a head kept is one that exists). */
  private chainAndAnchor(): void {
    const touched = new Map<string, RunChain>();
    this.commit(() => this.chainCopies(touched));
    keepHeads(this.journal, headsOf(touched));
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
      CREATE TEMP TRIGGER IF NOT EXISTS chain_action_inserted AFTER INSERT ON main.actions
        BEGIN INSERT INTO main.chain_actions SELECT ${NOW}, * FROM main.actions WHERE rowid = NEW.rowid; END;
      CREATE TEMP TRIGGER IF NOT EXISTS chain_action_updated AFTER UPDATE ON main.actions
        BEGIN INSERT INTO main.chain_actions SELECT ${NOW}, * FROM main.actions WHERE rowid = NEW.rowid; END;
      CREATE TEMP TRIGGER IF NOT EXISTS chain_run_inserted AFTER INSERT ON main.runs
        BEGIN INSERT INTO main.chain_runs SELECT ${NOW}, * FROM main.runs WHERE rowid = NEW.rowid; END;
      CREATE TEMP TRIGGER IF NOT EXISTS chain_run_updated AFTER UPDATE OF ${RUN_COLUMNS} ON main.runs
        BEGIN INSERT INTO main.chain_runs SELECT ${NOW}, * FROM main.runs WHERE rowid = NEW.rowid; END;
    `);
  }

  /**
   * After each transaction of the journal's: chain its copies a moment later.
   * Nothing is asked of the file here (this is on the path of every call);
   * the moment finds out whether there is anything to chain.
   */
  written(): void {
    if (this.timer || this.closed) return;
    this.timer = setTimeout(() => this.flush(), CHAIN_DELAY_MS);
    this.timer.unref?.();
  }

  /**
   * Chain every copy now (close, and before the chain is read: a connection
   * reads its own entries). A journal this process cannot write now keeps
   * them for the next Synartesis that can.
   */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    try {
      if (this.db.query("SELECT 1 FROM main.chain_actions UNION ALL SELECT 1 FROM main.chain_runs LIMIT 1").get()) this.chainAndAnchor();
    } catch {
      // Read-only here, or busy beyond the wait: the copies stay, for the next moment or the close.
    }
  }

  /** The journal closes: chain what is left, and set no moment after. */
  close(): void {
    this.flush();
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Inside a write transaction: an entry for each copy whose state moved (runs first: a run's entry comes before its actions'). */
  private chainCopies(touched: Map<string, RunChain>): void {
    const runs = this.db.query("SELECT * FROM main.chain_runs ORDER BY rowid").all() as Row[];
    const actions = this.db.query("SELECT * FROM main.chain_actions ORDER BY rowid").all() as Row[];
    this.db.run("DELETE FROM main.chain_runs; DELETE FROM main.chain_actions");
    const checked = new Set<string>();
    for (const row of runs) {
      const chain = this.chainOfRun(String(row.id), checked);
      const state = runState(toRun(row));
      const delta = stateDelta(chain.run, state);
      if (Object.keys(delta).length) this.appendTo(chain, { kind: "run", state: delta, at: String(row.captured_at) }, touched);
      chain.run = state;
    }
    for (const row of actions) {
      const id = String(row.id);
      const chain = this.chainOfRun(String(row.run_id), checked);
      const state = actionState(this.bodies.action(row));
      const delta = stateDelta(chain.actions.get(id) ?? {}, state);
      if (Object.keys(delta).length) this.appendTo(chain, { kind: "action", action: id, state: delta, at: String(row.captured_at) }, touched);
      chain.actions.set(id, state);
    }
  }

  /**
   * What a run's chain says now: its head, and the state of the run and of
   * each action its entries build. Kept between passes, read again when
   * another process added to the chain since (its head moved); inside a
   * write transaction nobody else can, so once per pass is enough.
   */
  private chainOfRun(runId: string, checked: Set<string>): RunChain {
    const known = this.runs.get(runId);
    if (known && checked.has(runId)) return known;
    checked.add(runId);
    const head = this.db.query("SELECT seq, hash FROM entries WHERE run_id = ? ORDER BY seq DESC LIMIT 1").get(runId) as {
      seq: number;
      hash: Uint8Array;
    } | null;
    const headSeq = head?.seq ?? 0;
    if (known && known.seq === headSeq) return known;
    const chain: RunChain = { id: runId, seq: 0, hash: genesis(runId), run: {}, actions: new Map() };
    for (const entry of this.db.query("SELECT kind, action_id, state FROM entries WHERE run_id = ? ORDER BY seq").all(runId) as Row[]) {
      const state = JSON.parse(String(entry.state)) as Record<string, unknown>;
      if (entry.kind === "run") withDelta(chain.run, state);
      else if (entry.kind === "action") chain.actions.set(String(entry.action_id), withDelta(chain.actions.get(String(entry.action_id)) ?? {}, state));
    }
    if (head) Object.assign(chain, { seq: head.seq, hash: Buffer.from(head.hash).toString("hex") });
    this.runs.delete(runId);
    this.runs.set(runId, chain);
    if (this.runs.size > RUNS_KEPT) this.runs.delete(this.runs.keys().next().value!);
    return chain;
  }

  private appendTo(
    chain: RunChain,
    entry: { kind: EntryKind; action?: string; state: Record<string, unknown>; at: string },
    touched?: Map<string, RunChain>,
  ): void {
    const content = { run: chain.id, seq: chain.seq + 1, ...entry };
    const stateText = canonicalJson(entry.state);
    const hash = entryHash(chain.hash, content, stateText);
    this.db
      .query("INSERT INTO entries (run_id, seq, kind, action_id, state, at, hash) VALUES (?, ?, ?, ?, ?, ?, ?)")
      .run(chain.id, content.seq, entry.kind, entry.action ?? null, stateText, entry.at, Buffer.from(hash, "hex"));
    chain.seq = content.seq;
    chain.hash = hash;
    touched?.set(chain.id, chain);
  }

  /** Add an entry of its own to a run's chain (a person's override), after every copy: in a write transaction; `keep` the heads once it is committed. */
  append(runId: string, entry: { kind: EntryKind; state: Record<string, unknown>; at: string }): Map<string, Head> {
    const touched = new Map<string, RunChain>();
    this.chainCopies(touched);
    this.appendTo(this.chainOfRun(runId, new Set()), entry, touched);
    return headsOf(touched);
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
    const rows = this.db.query("SELECT * FROM entries WHERE run_id = ? ORDER BY seq").all(runId) as Row[];
    return rows.map((row) => ({
      run: String(row.run_id),
      seq: Number(row.seq),
      kind: String(row.kind) as EntryKind,
      ...(row.action_id === null ? {} : { action: String(row.action_id) }),
      state: JSON.parse(String(row.state)) as Record<string, unknown>,
      at: String(row.at),
      hash: Buffer.from(row.hash as Uint8Array).toString("hex"),
      stateText: String(row.state),
    }));
  }

  runIds(): string[] {
    return (this.db.query("SELECT DISTINCT run_id FROM entries").all() as Row[]).map((row) => String(row.run_id));
  }
}
