// The SQL texts that record and undo one PostgreSQL statement (R-SQL-1…5),
// as plan.ts does for SQLite: the table read from the catalogue, the rows it
// will touch read by its own WHERE, the statement pinned to their keys, the
// rows it left read by key, and the statement that puts them back. Every
// value is the literal PostgreSQL writes for it (format('%L'): its text form,
// which reads back exactly through its type — numeric, float8 to the last
// bit, timestamptz, jsonb, arrays, bytea), cast back to the column's type;
// each row carries its xmin, the transaction that last wrote it. Pure.
import { rowList } from "../plan.ts";
import type { Statement, TableRef } from "../statement.ts";

export const TABLE_COLUMN = "synartesis_table";
export const VERSION_COLUMN = "synartesis_table_version";
export const ROWS_COLUMN = "synartesis_rows";

/** A table as the catalogue describes it, for recording and restoring its rows. */
export interface PgTable {
  schema: string;
  name: string;
  columns: string[];
  /** Each column's type as format_type writes it (the cast a literal takes back). */
  types: string[];
  /** Columns written back: not generated. */
  writable: string[];
  key: string[];
  /** A column GENERATED ALWAYS AS IDENTITY: rows come back with OVERRIDING SYSTEM VALUE. */
  identityAlways: boolean;
  /** The key when it is one integer column (an INSERT's new rows are found above its largest value). */
  integerKey: boolean;
}

/** A row as read: its key's literals, every column's, and (when asked for) the xmin that last wrote it. */
export interface PgRow {
  key: string[];
  values: string[];
  xmin?: string;
}

/** An identifier as SQL: double-quoted, quotes doubled. */
export function ident(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** A string as an SQL literal. */
function text(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

export function qualified(table: Pick<PgTable, "schema" | "name">): string {
  return `${ident(table.schema)}.${ident(table.name)}`;
}

// format('%L') writes NULL, '…' or, for text with a backslash, E'…' (backslashes doubled).
const LITERAL = /^(?:NULL|'(?:[^']|'')*'|E'(?:[^'\\]|''|\\\\)*')$/;

export function isLiteral(value: string): boolean {
  return LITERAL.test(value);
}

/**
 * What the catalogue says of the table a statement names (resolved as
 * PostgreSQL resolves the name, search_path included): its columns and types,
 * its primary key, and what would reach beyond it (triggers, rules, foreign
 * keys that cascade into it, tables that inherit from it).
 */
export function tableQuery(table: TableRef): string {
  return `SELECT described AS ${TABLE_COLUMN}, md5(described) AS ${VERSION_COLUMN} FROM (${described(table)}) AS synartesis_table`;
}

/** The table's description (one row, column `described`): what tableQuery reads, and what its version is the md5 of. */
function described(table: TableRef): string {
  const name = text(`${table.schema === undefined ? "" : `${ident(table.schema)}.`}${ident(table.name)}`);
  return `SELECT json_build_object(
  'schema', n.nspname, 'name', c.relname, 'kind', c.relkind,
  'columns', (SELECT json_agg(json_build_array(a.attname, format_type(a.atttypid, a.atttypmod), a.attgenerated <> '', a.attidentity = 'a') ORDER BY a.attnum)
              FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped),
  'key', (SELECT json_agg(json_build_array(a.attname, format_type(a.atttypid, a.atttypmod)) ORDER BY array_position(i.indkey::int2[], a.attnum))
          FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) WHERE i.indrelid = c.oid AND i.indisprimary),
  'triggers', (SELECT count(*) FROM pg_trigger t WHERE t.tgrelid = c.oid AND NOT t.tgisinternal),
  'rules', (SELECT count(*) FROM pg_rewrite r WHERE r.ev_class = c.oid AND r.rulename <> '_RETURN'),
  'cascades', (SELECT coalesce(json_agg(f.conrelid::regclass::text), '[]') FROM pg_constraint f
               WHERE f.confrelid = c.oid AND f.contype = 'f' AND (f.confdeltype IN ('c', 'n', 'd') OR f.confupdtype IN ('c', 'n', 'd'))),
  'children', (SELECT count(*) FROM pg_inherits h WHERE h.inhparent = c.oid)
)::text AS described
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass(${name})`;
}

/** The table from its catalogue read, or why a statement on it is held. */
export function parseTable(json: string): PgTable | { held: string } {
  let read: Record<string, unknown>;
  try {
    read = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return { held: "its table's description did not come back as JSON" };
  }
  const name = `"${String(read.schema)}"."${String(read.name)}"`;
  if (read.kind !== "r") return { held: `${name} is not a plain table (a view, a partitioned or a foreign table)` };
  if (Number(read.triggers) > 0) return { held: `table ${name} has triggers: they would change rows Synartesis does not read` };
  if (Number(read.rules) > 0) return { held: `table ${name} has rules that rewrite statements on it` };
  if (Number(read.children) > 0) return { held: `table ${name} has tables that inherit from it` };
  const cascades = Array.isArray(read.cascades) ? read.cascades.map(String) : [];
  if (cascades.length) return { held: `foreign keys of ${cascades.join(", ")} cascade from table ${name}: they would change rows Synartesis does not read` };
  const columns = (Array.isArray(read.columns) ? read.columns : []) as Array<[string, string, boolean, boolean]>;
  const key = (Array.isArray(read.key) ? read.key : []) as Array<[string, string]>;
  if (!key.length) return { held: `table ${name} has no primary key: its rows cannot be identified` };
  return {
    schema: String(read.schema),
    name: String(read.name),
    columns: columns.map(([column]) => column),
    types: columns.map(([, type]) => type),
    writable: columns.filter(([, , generated]) => !generated).map(([column]) => column),
    key: key.map(([column]) => column),
    identityAlways: columns.some(([, , , always]) => always),
    integerKey: key.length === 1 && ["integer", "bigint", "smallint"].includes(key[0]![1]),
  };
}

/** The literal read back with the column's type. */
function cast(literal: string, type: string): string {
  return literal === "NULL" ? `NULL::${type}` : `${literal}::${type}`;
}

function typeOf(table: PgTable, column: string): string {
  return table.types[table.columns.indexOf(column)]!;
}

/**
 * One SELECT whose single value is the JSON array of the rows (each: key
 * literals, column literals, and with `writers` the xmin), ordered by key.
 * Undo's check for drift reads them without the xmin: an undo of a later
 * statement rewrites a row with the values it had, not the transaction.
 */
export function rowsQuery(table: PgTable, from: string, where: string | undefined, options: { limit?: number; writers?: boolean } = {}): string {
  const { limit, writers = true } = options;
  const keys = table.key.map(ident);
  const selected = [
    ...keys.map((key, i) => `format('%L', ${key}) AS k${i}`),
    ...table.columns.map((column, i) => `format('%L', ${ident(column)}) AS c${i}`),
    ...(writers ? ["xmin::text AS x"] : []),
    ...keys.map((key, i) => `${key} AS o${i}`),
  ];
  const names = [...keys.map((_, i) => `k${i}`), ...table.columns.map((_, i) => `c${i}`), ...(writers ? ["x"] : [])];
  const order = keys.map((_, i) => `o${i}`).join(", ");
  const inner = `SELECT ${selected.join(", ")} FROM ${from}${where === undefined ? "" : ` WHERE ${where}`} ORDER BY ${keys.join(", ")}${limit === undefined ? "" : ` LIMIT ${limit}`}`;
  return `SELECT coalesce(json_agg(json_build_array(${names.join(", ")}) ORDER BY ${order}), '[]')::text AS ${ROWS_COLUMN} FROM (${inner}) AS synartesis_read`;
}

/** The condition that a row's key is one of `keys`. */
export function keyCondition(table: PgTable, keys: string[][]): string {
  if (keys.length === 0) return "false";
  const types = table.key.map((column) => typeOf(table, column));
  const tuple = (key: string[]) => key.map((literal, i) => cast(literal, types[i]!));
  if (table.key.length === 1) return `${ident(table.key[0]!)} IN (${keys.map((key) => tuple(key)[0]).join(", ")})`;
  return `(${table.key.map(ident).join(", ")}) IN (${keys.map((key) => `(${tuple(key).join(", ")})`).join(", ")})`;
}

/** The rows of `table` whose keys are `keys`: with the xmin that wrote each (`writers`), or as undo reads them for drift. */
export function rowsByKey(table: PgTable, keys: string[][], writers: boolean): string {
  return rowsQuery(table, qualified(table), keyCondition(table, keys), { writers });
}

/**
 * The rows an UPDATE or DELETE will touch: its own table, alias and WHERE
 * (one more than `maxRows` shows it would touch too many), and the version of
 * the table's description now (a description read before may be out of date).
 */
export function rowsBefore(statement: Extract<Statement, { kind: "update" | "delete" }>, sql: string, table: PgTable, maxRows: number): string {
  const rows = rowsQuery(table, sql.slice(...statement.table.span), statement.where && sql.slice(...statement.where), { limit: maxRows + 1 });
  return `SELECT (${rows}) AS ${ROWS_COLUMN}, (SELECT md5(described) FROM (${described(statement.table)}) AS synartesis_table) AS ${VERSION_COLUMN}`;
}

/** The statement narrowed to the rows read: it touches those, and no other. */
export function pinned(statement: Extract<Statement, { kind: "update" | "delete" }>, sql: string, table: PgTable, keys: string[][]): string {
  const condition = keyCondition(table, keys);
  if (statement.where) {
    const [start, end] = statement.where;
    return `${sql.slice(0, start)}(${sql.slice(start, end)}) AND ${condition}${sql.slice(end)}`;
  }
  const at = statement.kind === "update" ? statement.setEnd : statement.table.span[1];
  return `${sql.slice(0, at)} WHERE ${condition}${sql.slice(at)}`;
}

/** The largest key before an INSERT whose integer key the database chooses: its new rows are above it. */
export function largestKey(table: PgTable): string {
  return `SELECT coalesce(max(${ident(table.key[0]!)}), ${Number.MIN_SAFE_INTEGER})::text AS ${ROWS_COLUMN} FROM ${qualified(table)}`;
}

/** The rows of `table` above `largest` (an INSERT's rows, when the database chose their integer keys). */
export function rowsAbove(table: PgTable, largest: string): string {
  return rowsQuery(table, qualified(table), `${ident(table.key[0]!)} > ${largest}::bigint`);
}

/** What puts the rows back: one statement, through the same tool. */
export function inverseStatement(kind: Statement["kind"], table: PgTable, before: PgRow[], after: PgRow[]): string | undefined {
  const name = qualified(table);
  switch (kind) {
    case "insert":
      return after.length
        ? `DELETE FROM ${name} WHERE ${keyCondition(
            table,
            after.map((row) => row.key),
          )}`
        : undefined;
    case "delete": {
      if (!before.length) return undefined;
      const indexes = table.writable.map((column) => table.columns.indexOf(column));
      const values = before.map((row) => `(${indexes.map((i) => cast(row.values[i]!, table.types[i]!)).join(", ")})`);
      const overriding = table.identityAlways ? " OVERRIDING SYSTEM VALUE" : "";
      return `INSERT INTO ${name} (${table.writable.map(ident).join(", ")})${overriding} VALUES ${values.join(", ")}`;
    }
    case "update": {
      const restored = table.writable.filter((column) => !table.key.includes(column)).map((column) => table.columns.indexOf(column));
      if (!before.length || !restored.length) return undefined;
      const keyTypes = table.key.map((column) => typeOf(table, column));
      const rows = before.map(
        (row) => `(${[...row.key.map((literal, i) => cast(literal, keyTypes[i]!)), ...restored.map((i) => cast(row.values[i]!, table.types[i]!))].join(", ")})`,
      );
      const width = table.key.length;
      const set = restored.map((i, n) => `${ident(table.columns[i]!)} = synartesis_before.column${width + n + 1}`).join(", ");
      const match = table.key.map((column, n) => `${name}.${ident(column)} = synartesis_before.column${n + 1}`).join(" AND ");
      return `UPDATE ${name} SET ${set} FROM (VALUES ${rows.join(", ")}) AS synartesis_before WHERE ${match}`;
    }
  }
}

/** The rows in a read's value (with their xmin, when read with `writers`), or why it is not that. */
export function parseRows(json: string, table: PgTable, writers = true): PgRow[] | { wrong: string } {
  const parsed = rowList(json);
  if ("wrong" in parsed) return parsed;
  const width = table.key.length;
  const rows: PgRow[] = [];
  for (const row of parsed) {
    const columns = width + table.columns.length;
    const ok =
      Array.isArray(row) &&
      row.length === columns + (writers ? 1 : 0) &&
      row.every((value) => typeof value === "string") &&
      row.slice(0, columns).every((value: string) => isLiteral(value)) &&
      (!writers || /^\d+$/.test(row.at(-1) as string));
    if (!ok) return { wrong: "a row read is not a list of SQL literals of the table's columns (and its xmin)" };
    rows.push({ key: row.slice(0, width), values: row.slice(width, columns), ...(writers && { xmin: String(row.at(-1)) }) });
  }
  return rows;
}

/** How many rows the server says the statement changed, when its answer says it in a way this knows. */
export function reportedCount(answer: unknown, resultText: string): number | undefined {
  const keys = ["rowCount", "rowsAffected", "affectedRows", "rows_affected", "changes"];
  const find = (value: unknown, depth: number): number | undefined => {
    if (depth > 4 || value === null || typeof value !== "object") return undefined;
    for (const key of keys) {
      const count = (value as Record<string, unknown>)[key];
      if (typeof count === "number" && Number.isInteger(count)) return count;
    }
    for (const child of Object.values(value)) {
      const found = find(child, depth + 1);
      if (found !== undefined) return found;
    }
    return undefined;
  };
  const structured = find(answer, 0);
  if (structured !== undefined) return structured;
  const said = /\b(?:rows? affected|affected rows?|rowCount)\W{0,3}(\d+)\b|\b(\d+) rows? affected\b|^(?:UPDATE|DELETE|INSERT \d+) (\d+)$/im.exec(resultText);
  return said ? Number(said[1] ?? said[2] ?? said[3]) : undefined;
}
