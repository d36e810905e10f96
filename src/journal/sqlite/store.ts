// The SQLite journal's store: the file (file.ts opens it), its schema
// brought up to date, the writes (one IMMEDIATE transaction each, or queued
// to be grouped: commits.ts) and reads its roles share.
import type { Database } from "bun:sqlite";
import { MIGRATIONS, runIdPrefix } from "../migrations.ts";
import type { JournalStore, WriteOptions } from "../journal.ts";
import type { Body } from "../packing.ts";
import { toRun, type Row } from "../rows.ts";
import { SqliteBodies } from "./bodies.ts";
import { SqliteChain } from "./chain.ts";
import { CommitQueue } from "./commits.ts";
import type { JournalFiles } from "../file-identity.ts";
import { openJournalFile, watchDataVersion } from "./file.ts";
import { journalFailure } from "./failures.ts";
import type { Action, Run } from "../types.ts";

/**
 * How long after a read its row is packed, and how many rows one pass packs:
 * a pass holds the event loop (about 40 µs a row), and when more wait the
 * next pass follows at once, after what arrived meanwhile. Packing keeps up
 * with any rate of reads, so little is left for the close (a proxy exits
 * promptly, R-PROXY-9) and the bodies waiting stay few.
 */
const PACK_DELAY_MS = 100;
const PACKED_AT_ONCE = 200;

/** The actions of the run whose id is parameter ?1 (found through the actions_of_run index, or in an older journal its (run_id, seq) index). */
export const OF_RUN = `${runIdPrefix("run_id")} = ${runIdPrefix("?1")} AND run_id = ?1`;

/** The Sqlite journal's connection and what its roles share: opening, closing, writing, reading rows. */
export class SqliteStore implements JournalStore {
  readonly secretsFromEnvironment: string[] = [];
  readonly bodies: SqliteBodies;
  readonly commits: CommitQueue;
  readonly chain: SqliteChain;
  /** Reads' rows written as text, to be packed (packLater). */
  private readonly unpacked: Array<{ id: string; server: string; tool: string; body: Body }> = [];
  private packTimer: ReturnType<typeof setTimeout> | undefined;

  private constructor(
    readonly path: string,
    readonly db: Database,
    readonly files: JournalFiles,
    /** Things about the file a person should know (e.g. other users can read it). */
    readonly warnings: string[],
  ) {
    this.bodies = new SqliteBodies(db, path);
    this.chain = new SqliteChain(db, this.bodies, (work) => this.write(work), path);
    this.commits = new CommitQueue(db, () => this.chain.written());
  }

  /** Open a journal file (file.ts says how) and bring its schema up to date. */
  static open(path: string, options: { create: boolean }): SqliteStore {
    const { db, files, warnings } = openJournalFile(path, options);
    const journal = new SqliteStore(path, db, files, warnings);
    try {
      const applied = journal.migrate();
      journal.chain.install();
      if (applied.includes("0010-chain")) journal.chain.startFromRows();
      // Copies a process killed before it chained them: chained now, as it would have.
      else journal.chain.written();
    } catch (error) {
      throw journalFailure(path, error);
    }
    return journal;
  }

  async proveWritable(): Promise<void> {
    this.write(() => this.db.run("UPDATE migrations SET applied_at = applied_at WHERE rowid = (SELECT MIN(rowid) FROM migrations)"));
  }

  /** Why the files at `path` are no longer the journal this connection writes into (deleted or replaced), if they are not. */
  async identityLost(): Promise<string | undefined> {
    return this.files.lost();
  }

  async close(): Promise<void> {
    this.packQueued(Number.POSITIVE_INFINITY);
    this.commits.flush();
    this.chain.close();
    this.db.close();
  }

  /**
   * A read's row is written with its body as text, and packed a moment later
   * (packing a body costs a compressor's set-up, on the path of a call that
   * changes nothing). A row not packed yet — the process died first — is a
   * valid row, only larger.
   */
  packLater(row: { id: string; server: string; tool: string; body: Body }): void {
    this.unpacked.push(row);
    this.packTimer ??= setTimeout(() => this.packQueued(PACKED_AT_ONCE), PACK_DELAY_MS);
  }

  /** Pack up to `count` of the rows waiting (the rest in the next turn): one transaction, after the writes queued before it. */
  private packQueued(count: number): void {
    clearTimeout(this.packTimer);
    this.packTimer = undefined;
    const rows = this.unpacked.splice(0, count);
    if (this.unpacked.length) this.packTimer = setTimeout(() => this.packQueued(PACKED_AT_ONCE), 0);
    try {
      const packed = rows.flatMap((row) => {
        const stored = this.bodies.stored(row.server, row.tool, row.body);
        return stored.packed ? [{ id: row.id, stored }] : [];
      });
      if (!packed.length) return;
      this.write(() =>
        this.chain.unchanged(() => {
          for (const { id, stored } of packed) this.bodies.write(id, stored, { onlyIfText: true });
        }),
      );
    } catch {
      // A journal that cannot take it now keeps those rows as text: nothing is lost.
    }
  }

  /** Bring the schema up to date; the names of the migrations applied now. */
  migrate(): string[] {
    const applied: string[] = [];
    const apply = this.db.transaction(() => {
      this.db.run("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL) STRICT");
      const done = new Set((this.db.query("SELECT name FROM migrations").all() as Row[]).map((r) => String(r.name)));
      for (const migration of MIGRATIONS) {
        if (done.has(migration.name)) continue;
        if (migration.onlyIf === undefined || this.db.query(migration.onlyIf).get() !== null) this.db.run(migration.sql);
        this.db.query("INSERT INTO migrations (name, applied_at) VALUES (?, ?)").run(migration.name, new Date().toISOString());
        applied.push(migration.name);
      }
      if (applied.length) SqliteChain.matchColumns(this.db);
    });
    apply.immediate();
    return applied;
  }

  /** A change: one IMMEDIATE transaction, with the queued writes before it. */
  write<T>(work: () => T): T {
    return this.commits.transaction(work);
  }

  /** A change that may wait to be committed with others (`options.group`), or is committed now. */
  writeGrouped<T>(work: () => T, options: WriteOptions | undefined): Promise<T> | T {
    return options?.group ? this.commits.add(work, options.group) : this.write(work);
  }

  /** The database to read: the queued writes are committed first. */
  get reader(): Database {
    this.commits.flush();
    return this.db;
  }

  async appliedMigrations(): Promise<string[]> {
    return (this.reader.query("SELECT name FROM migrations ORDER BY rowid").all() as Row[]).map((r) => String(r.name));
  }

  async watchChanges(onChange: () => void): Promise<() => Promise<void>> {
    return watchDataVersion(this.db, onChange);
  }

  async changeMark(): Promise<string | undefined> {
    const { version, own } = this.reader.query("SELECT (SELECT data_version FROM pragma_data_version) AS version, total_changes() AS own").get() as {
      version: number;
      own: number;
    };
    return `${version}:${own}`;
  }

  runById(id: string): Run | undefined {
    const row = this.reader.query("SELECT * FROM runs WHERE id = ?").get(id) as Row | null;
    return row ? toRun(row) : undefined;
  }

  actionById(id: string): Action | undefined {
    const row = this.reader.query("SELECT * FROM actions WHERE id = ?").get(id) as Row | null;
    return row ? this.bodies.action(row) : undefined;
  }

  actions(rows: Row[]): Action[] {
    return rows.map((row) => this.bodies.action(row));
  }
}
