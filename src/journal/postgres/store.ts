// The PostgreSQL journal's store: the pooled connection (connection.ts says
// where to), its schema brought up to date under an advisory lock
// (migrations.ts), failures told as JournalErrors, the rows its roles share.
import { SQL } from "bun";
import { SynartesisError } from "../../errors.ts";
import { JournalError, type JournalStore } from "../journal.ts";
import { CHAIN_SETTING, migrate, SCHEMA } from "./migrations.ts";
import { postgresTarget, redact, type PostgresTarget } from "./connection.ts";
import { PostgresBodies } from "./bodies.ts";
import { PostgresChain } from "./chain.ts";
import type { Row } from "../rows.ts";

export const CHANNEL = "synartesis_journal";
/** Connections per process: a proxy writes one call at a time per server; reads are short. */
export const POOL_SIZE = 4;

/** SQLSTATE classes and codes, and what they mean for a journal. */
export const FULL = ["53100"]; // disk_full
export const BUSY = ["53300", "55P03", "40001", "40P01", "57014"]; // too many connections, lock not available, serialization, deadlock, cancelled

/** The Postgres journal's connection and what its roles share: opening, closing, writing, reading rows. */
export class PostgresStore implements JournalStore {
  readonly path: string;
  readonly warnings: string[];
  readonly secretsFromEnvironment: string[];
  readonly bodies: PostgresBodies;
  readonly chain: PostgresChain;
  /** Calls in flight (close waits for them). */
  readonly inflight = new Set<Promise<unknown>>();

  private constructor(
    readonly sql: SQL,
    readonly target: PostgresTarget,
  ) {
    this.path = target.display;
    this.warnings = target.warnings;
    this.secretsFromEnvironment = target.passwordFrom === "PGPASSWORD" ? ["PGPASSWORD"] : [];
    this.bodies = new PostgresBodies(sql, this.path);
    this.chain = new PostgresChain(sql, this.bodies, this.path);
  }

  /**
   * Connect and bring the schema up to date (under an advisory lock, so two
   * processes starting at once on an empty database do not collide). Without
   * `create`, a database that holds no journal is refused, not given one.
   */
  static async open(location: string, options: { create: boolean }): Promise<PostgresStore> {
    const target = postgresTarget(location);
    const sql = new SQL({
      adapter: "postgres",
      hostname: target.hostname,
      port: target.port,
      username: target.username,
      database: target.database,
      ...(target.password === undefined ? {} : { password: target.password }),
      tls: target.tls,
      connectionTimeout: target.connectionTimeout,
      // The promise of the SQLite journal (synchronous = NORMAL): nothing committed is lost when a
      // proxy, a CLI or their machine dies; a crash of the database server itself may lose its last
      // fraction of a second. Commits then need not wait for the server's disk, whose latency on a
      // busy machine is several times everything else a call costs. The URL's options may ask for on.
      // CHAIN_SETTING: this connection's writes are chained (R-VERIFY; migration 0012).
      connection: { synchronous_commit: "off", ...target.connection, search_path: SCHEMA, [CHAIN_SETTING]: "on" },
      max: POOL_SIZE,
    });
    const journal = new PostgresStore(sql, target);
    try {
      await migrate(sql, journal.path, options.create);
    } catch (error) {
      await sql.close({ timeout: 0 }).catch(() => {});
      throw error instanceof SynartesisError ? error : journal.failure(error);
    }
    // Copies a process killed before they were chained: chained now, as it would have.
    journal.chain.written();
    return journal;
  }

  /** A failure of the database as a JournalError naming the journal, with no password in it; anything else unchanged. */
  failure(error: unknown): unknown {
    if (!(error instanceof SQL.SQLError)) return error;
    const { errno, code } = error as SQL.PostgresError;
    // The server's own errors say what they are; the client's (no connection) say where it tried.
    const reason = redact(
      errno ? error.message : `no connection to ${this.target.hostname}:${this.target.port}: ${error.message} (${code})`,
      this.target.password,
    );
    if (errno && FULL.includes(errno)) return new JournalError(this.path, "full", reason);
    if (errno && BUSY.includes(errno)) return new JournalError(this.path, "busy", reason);
    if (errno === "28P01" || errno === "28000") {
      const source = this.target.passwordFrom
        ? `The password came from ${this.target.passwordFrom}.`
        : "No password was given: set PGPASSWORD, add a line for this database to ~/.pgpass, or put it in the URL.";
      return new JournalError(this.path, "broken", reason, [source, ...this.warnings.map((w) => `Note: ${w}.`)].join(" "));
    }
    return new JournalError(this.path, "broken", reason);
  }

  async proveWritable(): Promise<void> {
    await this.sql`UPDATE migrations SET applied_at = applied_at WHERE position = (SELECT MIN(position) FROM migrations)`;
  }

  /**
   * A database is not a file that can be deleted or swapped under an open
   * connection: dropping it ends every connection, so the next write fails
   * loudly instead of landing where no one reads.
   */
  async identityLost(): Promise<string | undefined> {
    return undefined;
  }

  async close(): Promise<void> {
    // A write its caller did not wait for (an undo's records) still lands.
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
    await this.chain.close();
    await this.sql.close({ timeout: 5 });
  }

  async appliedMigrations(): Promise<string[]> {
    return (await this.sql`SELECT name FROM migrations ORDER BY position`).map((row: Row) => String(row.name));
  }

  /** No cheap mark: every reader asks again. */
  async changeMark(): Promise<string | undefined> {
    return undefined;
  }

  /** Wakes on NOTIFY; after a reconnect (when notifications may have been missed) it reports a change too. */
  async watchChanges(onChange: () => void): Promise<() => Promise<void>> {
    let listening = false;
    const subscription = await this.sql.listen(
      CHANNEL,
      () => onChange(),
      () => {
        if (listening) onChange();
        listening = true;
      },
    );
    return () => subscription.unlisten();
  }
}
