// A copy of a SQLite database's schema, made in memory from its catalogue
// (read through the server's read tool), so that SQLite's own parser and
// planner judge each statement (R-SQL-1): whether it compiles, what it would
// write (EXPLAIN: a trigger or a cascading foreign key shows as more tables),
// and each table's columns and key (R-SQL-2).
import { Database } from "bun:sqlite";

/** One entry of sqlite_master that has SQL: a table, an index, a view or a trigger. */
export interface CatalogueEntry {
  type: string;
  name: string;
  table: string;
  sql: string;
}

/** How a table's rows are identified: its declared primary key, or SQLite's rowid (under a name no column shadows). */
export type RowKey = { kind: "rowid"; name: string } | { kind: "columns"; columns: string[] };

export interface TableInfo {
  name: string;
  /** Every column, in order (generated ones included: they are compared, never written). */
  columns: string[];
  /** Columns that can be written back (not generated). */
  writable: string[];
  key: RowKey | undefined;
  /** A name that reads the rowid (a rowid table whose columns do not shadow all three of its names), else undefined. */
  rowid?: string;
}

/** The schema's version (PRAGMA schema_version, as text): SQLite changes it with every change to the schema. */
export const SCHEMA_VERSION = "(SELECT CAST(schema_version AS TEXT) FROM pragma_schema_version)";
export const SCHEMA_VERSION_COLUMN = "synartesis_schema_version";

/** The catalogue as one JSON text, and the schema's version, read through a tool that takes a SELECT. */
export const CATALOGUE_QUERY =
  "SELECT (SELECT json_group_array(json_array(type, name, tbl_name, sql)) FROM (SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid)) AS synartesis_catalogue, " +
  `${SCHEMA_VERSION} AS ${SCHEMA_VERSION_COLUMN}`;

export class SchemaCopy {
  private constructor(
    /** The schema_version this copy was made at. */
    readonly version: string,
    private readonly db: Database,
    /** Entries that could not be made here (e.g. a virtual table of a module this build lacks), with why. */
    readonly missing: Map<string, string>,
  ) {}

  static of(entries: CatalogueEntry[], version: string): SchemaCopy {
    const db = new Database(":memory:");
    // A cascade counts whether or not the server's connection turns foreign keys on: the reading that holds more.
    db.run("PRAGMA foreign_keys = ON");
    const missing = new Map<string, string>();
    for (const entry of entries) {
      try {
        db.run(entry.sql);
      } catch (error) {
        missing.set(entry.name.toLowerCase(), (error as Error).message);
      }
    }
    return new SchemaCopy(version, db, missing);
  }

  /** Why SQLite would not compile `sql` against this schema, or undefined when it would. */
  compileError(sql: string): string | undefined {
    try {
      this.db.prepare(sql).finalize();
      return undefined;
    } catch (error) {
      return (error as Error).message;
    }
  }

  /**
   * The tables `sql` would write (its own and any a trigger or a cascading
   * foreign key reaches), from SQLite's own plan of it.
   */
  tablesWritten(sql: string): { tables: Set<string>; subprograms: boolean } {
    const steps = this.db.prepare(`EXPLAIN ${sql}`).all() as Array<{ opcode: string; p1: number; p2: number; p4: unknown }>;
    const roots = new Map<number, string>();
    for (const row of this.db.query("SELECT rootpage, coalesce(tbl_name, name) AS owner FROM sqlite_master WHERE rootpage > 0").all() as Array<{
      rootpage: number;
      owner: string;
    }>) {
      roots.set(row.rootpage, row.owner.toLowerCase());
    }
    const tables = new Set<string>();
    let subprograms = false;
    for (const step of steps) {
      if (step.opcode === "OpenWrite" || step.opcode === "Clear") {
        // Clear: a DELETE of every row empties the table at once (its root page is p1).
        const owner = roots.get(step.opcode === "Clear" ? step.p1 : step.p2);
        if (owner) tables.add(owner);
      } else if ((step.opcode === "Insert" || step.opcode === "Delete") && typeof step.p4 === "string" && step.p4) {
        tables.add(step.p4.toLowerCase());
      } else if (step.opcode === "Program") {
        subprograms = true;
      }
    }
    return { tables, subprograms };
  }

  /** The table named `name` (any case), or why it cannot be used. */
  table(name: string): TableInfo | { unknown: string } {
    const found = this.db.query("SELECT name, wr FROM pragma_table_list WHERE type = 'table' AND lower(name) = lower(?) AND schema = 'main'").get(name) as {
      name: string;
      wr: number;
    } | null;
    if (!found) return { unknown: this.missing.get(name.toLowerCase()) ?? `there is no table "${name}"` };
    const columns = this.db.query("SELECT name, pk, hidden FROM pragma_table_xinfo(?) ORDER BY cid").all(found.name) as Array<{
      name: string;
      pk: number;
      hidden: number;
    }>;
    const names = columns.map((column) => column.name);
    const keyColumns = columns
      .filter((column) => column.pk > 0)
      .sort((a, b) => a.pk - b.pk)
      .map((column) => column.name);
    const lower = new Set(names.map((column) => column.toLowerCase()));
    const rowid = found.wr ? undefined : ["rowid", "_rowid_", "oid"].find((candidate) => !lower.has(candidate));
    let key: RowKey | undefined;
    if (keyColumns.length) key = { kind: "columns", columns: keyColumns };
    else if (rowid) key = { kind: "rowid", name: rowid };
    return {
      name: found.name,
      columns: names,
      // hidden: 1 a virtual table's hidden column, 2 and 3 generated columns.
      writable: columns.filter((column) => column.hidden === 0).map((column) => column.name),
      key,
      ...(rowid && { rowid }),
    };
  }

  close(): void {
    this.db.close();
  }
}
