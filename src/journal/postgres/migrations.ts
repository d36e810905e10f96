// Named, forward-only schema migrations of a PostgreSQL journal (R-TEAM-2),
// one for each SQLite migration of the same name, so both hold the same
// columns with the same meanings. Append new entries; never edit or reorder
// old ones: an older journal is upgraded in place. They run in the schema
// `synartesis`, under an advisory lock (migrate, below).
import type { SQL } from "bun";
import { SynartesisError } from "../../errors.ts";
import { entriesTable, MIGRATIONS, RUN_STATE_COLUMNS, type Migration } from "../migrations.ts";

/** The schema the journal's tables live in. */
export const SCHEMA = "synartesis";
/** The setting with which a connection says it is Synartesis's, whose writes are chained (0012). */
export const CHAIN_SETTING = "synartesis.chain";
/** A time as the journal writes them (ISO 8601 in UTC, to the millisecond), now. */
const NOW = `to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

function sameAsSqlite(name: string): Migration {
  const migration = MIGRATIONS.find((m) => m.name === name);
  if (!migration) throw new Error(`no SQLite migration named ${name}`);
  return migration;
}

/**
 * SQLite's first tables and indexes for PostgreSQL: each table gains a
 * `position` first (the order rows were written, which SQLite's rowid gives),
 * and loses STRICT (PostgreSQL's types are strict already).
 */
function withPositions(sqliteSql: string): string {
  return sqliteSql
    .trim()
    .replace(/CREATE TABLE (\w+) \(\n/g, "CREATE TABLE $1 (\n        position BIGINT GENERATED ALWAYS AS IDENTITY,\n")
    .replace(/\) STRICT;/g, ");");
}

export const POSTGRES_MIGRATIONS: Migration[] = [
  {
    // As SQLite's first migration (withPositions), plus a trigger that NOTIFYs
    // every listener (watch, the review page) when a statement changed a run or an action.
    name: "0001-runs-and-actions",
    sql: `
      ${withPositions(sameAsSqlite("0001-runs-and-actions").sql)}
      CREATE INDEX actions_recent ON actions (ts DESC, position DESC);
      CREATE INDEX runs_recent ON runs (started_at DESC, position DESC);

      CREATE FUNCTION notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('synartesis_journal', TG_TABLE_NAME);
        RETURN NULL;
      END
      $$;
      CREATE TRIGGER runs_changed AFTER INSERT OR UPDATE OR DELETE ON runs FOR EACH STATEMENT EXECUTE FUNCTION notify_change();
      CREATE TRIGGER actions_changed AFTER INSERT OR UPDATE OR DELETE ON actions FOR EACH STATEMENT EXECUTE FUNCTION notify_change();
    `,
  },
  // The SQL of these is the same on both backends.
  sameAsSqlite("0002-run-manifest-and-undo-note"),
  sameAsSqlite("0003-sent-inverses-and-settled-outcomes"),
  sameAsSqlite("0004-withdrawn-requests-and-undone-runs"),
  sameAsSqlite("0005-one-meaning-per-column"),
  sameAsSqlite("0006-tasks"),
  {
    // As SQLite's: packed bodies are bytea, and a dictionary's id an identity.
    name: "0007-packed-bodies",
    sql: `
      ALTER TABLE actions ADD COLUMN packed BYTEA;
      CREATE TABLE dictionaries (
        id          INTEGER GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        server      TEXT NOT NULL,
        tool        TEXT NOT NULL,
        content     BYTEA NOT NULL,
        created_at  TEXT NOT NULL,
        UNIQUE (server, tool)
      );
    `,
  },
  {
    // SQLite's shrinks a file's index of actions by run; PostgreSQL's index
    // (run_id, seq) stays: its size is the server's to manage, and rows keep
    // the same columns. Recorded so both journals name the same migrations.
    name: "0008-smaller-run-index",
    sql: "SELECT 1",
  },
  sameAsSqlite("0009-kept-effects"),
  {
    // SQLite's chain table; what fills it came with 0012.
    name: "0010-chain",
    sql: entriesTable("BYTEA", ""),
  },
  sameAsSqlite("0011-decided-rule"),
  {
    // The chain (R-VERIFY, postgres/chain.ts): a trigger copies each run and action row a Synartesis
    // connection writes (one that set CHAIN_SETTING on: a trigger cannot tell a connection apart
    // otherwise) in the writing transaction; a pass chains the copies. A journal migrated here gets a
    // first entry for each row as it stands: its chain starts at this migration.
    name: "0012-postgres-chain",
    sql: `
      CREATE TABLE chain_origin (migrated_at TEXT NOT NULL);
      CREATE SEQUENCE chain_copies;
      CREATE TABLE chain_runs AS SELECT 0::bigint AS copy, ''::text AS captured_at, * FROM runs WITH NO DATA;
      CREATE TABLE chain_actions AS SELECT 0::bigint AS copy, ''::text AS captured_at, * FROM actions WITH NO DATA;
      CREATE FUNCTION chain_copy() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF current_setting('${CHAIN_SETTING}', true) = 'on' THEN
          IF TG_TABLE_NAME = 'runs' THEN
            INSERT INTO chain_runs SELECT nextval('chain_copies'), ${NOW}, NEW.*;
          ELSE
            INSERT INTO chain_actions SELECT nextval('chain_copies'), ${NOW}, NEW.*;
          END IF;
        END IF;
        RETURN NULL;
      END
      $$;
      CREATE TRIGGER chain_run_written AFTER INSERT OR UPDATE OF ${RUN_STATE_COLUMNS} ON runs FOR EACH ROW EXECUTE FUNCTION chain_copy();
      CREATE TRIGGER chain_action_written AFTER INSERT OR UPDATE ON actions FOR EACH ROW EXECUTE FUNCTION chain_copy();
      INSERT INTO chain_origin SELECT ${NOW} WHERE EXISTS (SELECT 1 FROM runs);
      INSERT INTO chain_runs SELECT nextval('chain_copies'), ${NOW}, * FROM (SELECT * FROM runs ORDER BY position) AS rows;
      INSERT INTO chain_actions SELECT nextval('chain_copies'), ${NOW}, * FROM (SELECT * FROM actions ORDER BY position) AS rows;
    `,
  },
];

/**
 * Bring the schema up to date, under an advisory lock (two processes starting
 * at once on an empty database do not collide). Without `create`, a database
 * that holds no journal is refused, not given one.
 */
export async function migrate(sql: SQL, path: string, create: boolean): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(hashtext('synartesis: migrations'))`;
    const [{ present }] = await tx`SELECT to_regclass('synartesis.migrations') IS NOT NULL AS present`;
    if (!present) {
      if (!create) {
        throw new SynartesisError("no_journal", `there is no journal at ${path}`, {
          hint: "A journal is created by `synartesis proxy` when an agent first connects. Check the URL, or pass --journal with the one the proxies use.",
        });
      }
      await tx.unsafe(`CREATE SCHEMA IF NOT EXISTS ${SCHEMA}`);
      await tx`CREATE TABLE migrations (position BIGINT GENERATED ALWAYS AS IDENTITY, name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)`;
    }
    let applied = false;
    const done = new Set((await tx`SELECT name FROM migrations`).map((row: { name: string }) => String(row.name)));
    for (const migration of POSTGRES_MIGRATIONS) {
      if (done.has(migration.name)) continue;
      await tx.unsafe(migration.sql).simple();
      await tx`INSERT INTO migrations (name, applied_at) VALUES (${migration.name}, ${new Date().toISOString()})`;
      applied = true;
    }
    if (applied) await matchChainColumns(tx);
  });
}

/** The copies have every column of their table, in its order: one a later migration added is added to them. */
async function matchChainColumns(tx: SQL): Promise<void> {
  const [{ present }] = await tx`SELECT to_regclass('synartesis.chain_actions') IS NOT NULL AS present`;
  if (!present) return;
  for (const table of ["runs", "actions"]) {
    const missing = await tx`
      SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type FROM pg_attribute a
       WHERE a.attrelid = ${`${SCHEMA}.${table}`}::regclass AND a.attnum > 0 AND NOT a.attisdropped
         AND NOT EXISTS (SELECT 1 FROM pg_attribute c WHERE c.attrelid = ${`${SCHEMA}.chain_${table}`}::regclass
                                                         AND c.attname = a.attname AND NOT c.attisdropped)
       ORDER BY a.attnum`;
    for (const { name, type } of missing) await tx.unsafe(`ALTER TABLE chain_${table} ADD COLUMN "${name}" ${type}`);
  }
}
