// Named, forward-only schema migrations (R-JOURNAL-1). Append new entries;
// never edit or reorder old ones: an older journal is upgraded in place.

export interface Migration {
  name: string;
  sql: string;
}

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
        id              TEXT PRIMARY KEY,
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
        UNIQUE (run_id, seq)
      ) STRICT;

      CREATE INDEX actions_waiting ON actions (status) WHERE status IN ('gated', 'approved', 'denied');
      CREATE INDEX actions_gate_key ON actions (server, tool, args_key) WHERE args_key IS NOT NULL;
    `,
  },
  {
    // Which manifest recorded a run (undo must start the same servers), and what
    // the last undo attempt on an action ran into (overwritten, not accumulated).
    name: "0002-run-manifest-and-undo-note",
    sql: `
      ALTER TABLE runs ADD COLUMN manifest TEXT;
      ALTER TABLE actions ADD COLUMN undo_note TEXT;
    `,
  },
];
