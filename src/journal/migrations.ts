// Named, forward-only schema migrations (R-JOURNAL-1). Append new entries;
// never edit or reorder old ones: an older journal is upgraded in place.

export interface Migration {
  name: string;
  sql: string;
  /** A query: the SQL runs only when it returns a row (SQLite). Either way the migration is recorded as done. */
  onlyIf?: string;
}

/** One `ALTER TABLE … ADD COLUMN` per column, in the order given. */
function addColumns(table: string, columns: Record<string, string>): string {
  return Object.entries(columns)
    .map(([column, type]) => `ALTER TABLE ${table} ADD COLUMN ${column} ${type};`)
    .join("\n");
}

/**
 * The part of a run's id that the actions_of_run index holds (0008), fixed for
 * good as journals hold the index: a query names a run by it and by the whole id.
 */
export const runIdPrefix = (column: string) => `substr(${column}, 1, 8)`;

/** The columns 0001 gave the actions table, part of its text and as frozen (0008 makes the table again with them, then those added since). */
const ACTION_COLUMNS_0001 = `        id              TEXT PRIMARY KEY,
        run_id          TEXT NOT NULL REFERENCES runs(id),
        seq             INTEGER NOT NULL,
        server          TEXT NOT NULL,
        tool            TEXT NOT NULL,
        args            TEXT NOT NULL,
        args_key        TEXT,
        class           TEXT NOT NULL CHECK (class IN ('readonly', 'reversible', 'compensable', 'irreversible')),
        status          TEXT NOT NULL CHECK (status IN ('pending', 'gated', 'approved', 'denied', 'applied', 'failed',
                                                        'rolling_back', 'rolled_back', 'unrecoverable')),
        snapshot        TEXT,
        snapshot_absent INTEGER NOT NULL DEFAULT 0,
        post_state      TEXT,
        post_absent     INTEGER NOT NULL DEFAULT 0,
        result          TEXT,
        inverse         TEXT,
        verify          TEXT,
        error           TEXT,
        warnings        TEXT,
        approved_by     TEXT,
        approved_at     TEXT,
        reason          TEXT,
        spent_by        TEXT,
        spent_at        TEXT,
        claimed_by      TEXT,
        claimed_at      TEXT,
        ts              TEXT NOT NULL,
`;

/**
 * The runs that have entries: one index seek a run (a loose index scan), not
 * a read of every entry as DISTINCT would be, in either journal's SQL.
 */
export const RUNS_WITH_ENTRIES = `
  WITH RECURSIVE chained(run_id) AS (
    SELECT MIN(run_id) FROM entries
    UNION ALL
    SELECT (SELECT entries.run_id FROM entries WHERE entries.run_id > chained.run_id ORDER BY entries.run_id LIMIT 1) FROM chained WHERE chained.run_id IS NOT NULL
  )
  SELECT run_id FROM chained WHERE run_id IS NOT NULL`;

/** The columns of runs a run's chained state holds (last_seq, a counter, is not part of it). */
export const RUN_STATE_COLUMNS = "label, started_at, ended_at, status, host, pid, manifest, undone_by, undone_at";

/** The chain's table (0010), in a dialect's types: its hash as bytes, and how the table ends (SQLite's STRICT, WITHOUT ROWID). */
export const entriesTable = (bytes: string, ending: string) => `
      CREATE TABLE entries (
        run_id    TEXT NOT NULL,
        seq       INTEGER NOT NULL,
        kind      TEXT NOT NULL CHECK (kind IN ('run', 'action', 'override')),
        action_id TEXT,
        state     TEXT NOT NULL,
        at        TEXT NOT NULL,
        hash      ${bytes} NOT NULL,
        PRIMARY KEY (run_id, seq)
      )${ending};`;

/** The indexes 0001 gave the actions table, part of its text and as frozen; 0008 makes them again. */
const ACTION_INDEXES_0001 = `      CREATE INDEX actions_waiting ON actions (status) WHERE status IN ('gated', 'approved', 'denied');
      CREATE INDEX actions_gate_key ON actions (server, tool, args_key) WHERE args_key IS NOT NULL;
`;

export const MIGRATIONS: Migration[] = [
  {
    name: "0001-runs-and-actions",
    sql: `
      CREATE TABLE runs (
        id          TEXT PRIMARY KEY,
        label       TEXT NOT NULL,
        started_at  TEXT NOT NULL,
        ended_at    TEXT,
        status      TEXT NOT NULL CHECK (status IN ('active', 'complete', 'rolled_back', 'partial')),
        last_seq    INTEGER NOT NULL DEFAULT 0,
        host        TEXT,
        pid         INTEGER
      ) STRICT;

      CREATE TABLE actions (
${ACTION_COLUMNS_0001}        UNIQUE (run_id, seq)
      ) STRICT;

${ACTION_INDEXES_0001}    `,
  },
  {
    // Which manifest recorded a run (undo must start the same servers), and what
    // the last undo attempt on an action ran into (overwritten, not accumulated).
    name: "0002-run-manifest-and-undo-note",
    sql: [addColumns("runs", { manifest: "TEXT" }), addColumns("actions", { undo_note: "TEXT" })].join("\n"),
  },
  {
    // When undo sent an inverse whose outcome it has not recorded yet (written
    // before it leaves, like a call's intent), and what a person then found
    // about an unknown outcome (synartesis settle): the agent's call ran or
    // not, or the inverse an interrupted undo sent ran or not.
    name: "0003-sent-inverses-and-settled-outcomes",
    sql: addColumns("actions", {
      inverse_sent_at: "TEXT",
      settled: "TEXT CHECK (settled IN ('applied', 'not_applied', 'inverse_applied', 'inverse_not_applied'))",
      settled_by: "TEXT",
      settled_at: "TEXT",
      settled_note: "TEXT",
    }),
  },
  {
    // A request for approval that an undo of its run withdrew (its status is
    // then denied, and no agent is told of it as a denial), and who last undid a run.
    name: "0004-withdrawn-requests-and-undone-runs",
    sql: [addColumns("actions", { withdrawn_by: "TEXT", withdrawn_at: "TEXT" }), addColumns("runs", { undone_by: "TEXT", undone_at: "TEXT" })].join("\n"),
  },
  {
    // One meaning per column (issue 14 item 7): why a call was held moves out
    // of `error` into `held_reason`; `spent_by` keeps only an approval's
    // spender action, and a denial's told run moves to `told_run`.
    name: "0005-one-meaning-per-column",
    sql: `
      ALTER TABLE actions ADD COLUMN held_reason TEXT;
      ALTER TABLE actions ADD COLUMN told_run TEXT;
      ALTER TABLE actions ADD COLUMN told_at TEXT;
      UPDATE actions SET held_reason = error, error = NULL WHERE status IN ('gated', 'approved', 'denied');
      UPDATE actions SET told_run = spent_by, told_at = spent_at, spent_by = NULL, spent_at = NULL WHERE status = 'denied';
    `,
  },
  {
    // The task a 2026-era server runs a call as (R-ERA-4): the call stays
    // pending until the task completes, and says which task it waits for.
    name: "0006-tasks",
    sql: addColumns("actions", { task: "TEXT" }),
  },
  {
    // Bodies stored compactly (issue 20): an action's args, snapshot, post-state,
    // result, inverse and verification read may be packed into `packed` (one zstd
    // frame; packing.ts), compressed against a sample body of the same tool kept
    // in `dictionaries`. A packed row keeps '' in args and NULL in the other five.
    name: "0007-packed-bodies",
    sql: `
      ALTER TABLE actions ADD COLUMN packed BLOB;
      CREATE TABLE dictionaries (
        id          INTEGER PRIMARY KEY,
        server      TEXT NOT NULL,
        tool        TEXT NOT NULL,
        content     BLOB NOT NULL,
        created_at  TEXT NOT NULL,
        UNIQUE (server, tool)
      ) STRICT;
    `,
  },
  {
    // A smaller index of actions by run (issue 20: the journal's size). The
    // index the UNIQUE (run_id, seq) constraint makes holds each action's
    // whole 36-character run id; one on its first 8 characters finds the same
    // rows (queries also compare the whole id) at under half the size. SQLite
    // drops a constraint only by building the table again, so this is done to
    // a journal whose actions table is still empty (a new one): one that holds
    // actions keeps its index (building a large table again would hold every
    // other process off for seconds and leave the file twice its size), and
    // the same queries find its rows through it. A trigger keeps seq unique
    // per run, as the constraint did (seq is allocated from runs.last_seq in
    // the inserting transaction; the trigger is the backstop).
    name: "0008-smaller-run-index",
    onlyIf: "SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM actions)",
    sql: `
      DROP TABLE actions;
      CREATE TABLE actions (
${ACTION_COLUMNS_0001}        undo_note       TEXT,
        inverse_sent_at TEXT,
        settled         TEXT CHECK (settled IN ('applied', 'not_applied', 'inverse_applied', 'inverse_not_applied')),
        settled_by      TEXT,
        settled_at      TEXT,
        settled_note    TEXT,
        withdrawn_by    TEXT,
        withdrawn_at    TEXT,
        held_reason     TEXT,
        told_run        TEXT,
        told_at         TEXT,
        task            TEXT,
        packed          BLOB
      ) STRICT;
${ACTION_INDEXES_0001}      CREATE INDEX actions_of_run ON actions (${runIdPrefix("run_id")}, seq);
      CREATE TRIGGER actions_seq_unique BEFORE INSERT ON actions
        WHEN EXISTS (SELECT 1 FROM actions WHERE ${runIdPrefix("run_id")} = ${runIdPrefix("NEW.run_id")} AND run_id = NEW.run_id AND seq = NEW.seq)
        BEGIN SELECT RAISE(ABORT, 'UNIQUE constraint failed: actions.run_id, actions.seq'); END;
    `,
  },
  {
    // A call whose effect a person decided to keep (R-PEOPLE-1: undo --keep): who, when and why.
    name: "0009-kept-effects",
    sql: addColumns("actions", { kept_by: "TEXT", kept_at: "TEXT", kept_reason: "TEXT" }),
  },
  {
    // Every state of a run and of its actions, chained by SHA-256 (R-VERIFY, journal/chain.ts). A journal
    // migrated here gets a first entry for each row as it stands: its chain starts at this migration.
    name: "0010-chain",
    sql: `${entriesTable("BLOB", " STRICT, WITHOUT ROWID")}
      CREATE TABLE chain_origin (migrated_at TEXT NOT NULL) STRICT;
      CREATE TABLE chain_runs AS SELECT '' AS captured_at, * FROM runs WHERE 0;
      CREATE TABLE chain_actions AS SELECT '' AS captured_at, * FROM actions WHERE 0;
    `,
  },
  {
    // The rule a decision was made under (R-VERIFY-1): a hash of it, so an approval no longer lets a call
    // through once its policy changed (and the chain holds which rule each decision was given under).
    name: "0011-decided-rule",
    sql: addColumns("actions", { decided_rule: "TEXT" }),
  },
  {
    // A PostgreSQL journal's chain: its copies, and the triggers that take them (postgres/migrations.ts). A
    // SQLite file's were made by 0010. Recorded so both journals name the same migrations.
    name: "0012-postgres-chain",
    sql: "SELECT 1",
  },
];
