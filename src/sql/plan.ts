// The SQL texts that record and undo one SQLite statement (R-SQL-1…5): the
// read of the rows it will touch (its own WHERE, verbatim), the statement
// pinned to the keys read, the read of what it left, and the statements that
// put the rows back. Every value is one the database encoded itself
// (quote(): an SQL literal that reads back exactly — integers of any size,
// reals to the last bit, text, blobs, NULL), checked to be a literal before
// it is written into any statement. Pure: no I/O.
import { isRecord } from "../jsonrpc/frames.ts";
import { SCHEMA_VERSION, SCHEMA_VERSION_COLUMN, type RowKey, type TableInfo } from "./schema.ts";
import type { Statement } from "./statement.ts";

/** A row as read: its key's literals, then every column's (in the table's column order). */
export interface RowLiterals {
  key: string[];
  values: string[];
}

export const ROWS_COLUMN = "synartesis_rows";
export const CHANGES_COLUMN = "synartesis_changes";

/** What SQLite reports of the connection's last write: rows changed, the rowid it last inserted. */
export const CHANGES_QUERY = `SELECT json_array(changes(), last_insert_rowid()) AS ${CHANGES_COLUMN}`;

export const COUNT_COLUMN = "synartesis_count";

/** How many rows the SELECT of an INSERT … SELECT yields now (as text: the read's one value). */
export function insertedCount(select: string): string {
  return `SELECT CAST(count(*) AS TEXT) AS ${COUNT_COLUMN} FROM (${select})`;
}

/** An identifier as SQL: double-quoted, quotes doubled. */
export function ident(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

const LITERAL = /^(?:NULL|[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|'(?:[^']|'')*'|[xX]'[0-9A-Fa-f]*')$/;

/** Whether `text` is one SQL literal as quote() writes it (nothing else may be written into a statement). */
export function isLiteral(text: string): boolean {
  return LITERAL.test(text);
}

/** The expressions that name a row's key. */
export function keyExpressions(key: RowKey): string[] {
  return key.kind === "rowid" ? [key.name] : key.columns.map(ident);
}

/**
 * One SELECT whose single value is the JSON array of the rows (each an
 * array of literals: key first, then every column), ordered by key, at most
 * `limit` of them.
 */
export function rowsQuery(table: TableInfo, from: string, where: string | undefined, limit?: number): string {
  const keys = keyExpressions(table.key!);
  const selected = [...keys.map((expr, i) => `quote(${expr}) AS k${i}`), ...table.columns.map((column, i) => `quote(${ident(column)}) AS c${i}`)];
  const names = [...keys.map((_, i) => `k${i}`), ...table.columns.map((_, i) => `c${i}`)];
  const inner = `SELECT ${selected.join(", ")} FROM ${from}${where === undefined ? "" : ` WHERE ${where}`} ORDER BY ${keys.join(", ")}${limit === undefined ? "" : ` LIMIT ${limit}`}`;
  return `SELECT json_group_array(json_array(${names.join(", ")})) AS ${ROWS_COLUMN} FROM (${inner})`;
}

/** The condition that a row's key is one of `keys` (a row-value list for a key of several columns). */
export function keyCondition(key: RowKey, keys: string[][]): string {
  if (keys.length === 0) return "0";
  const exprs = keyExpressions(key);
  if (exprs.length === 1) return `${exprs[0]} IN (${keys.map((k) => k[0]).join(", ")})`;
  return `(${exprs.join(", ")}) IN (VALUES ${keys.map((k) => `(${k.join(", ")})`).join(", ")})`;
}

/** The rows of `table` whose keys are `keys`, read by key (the post-read, and undo's check for drift). */
export function rowsByKey(table: TableInfo, keys: string[][]): string {
  return rowsQuery(table, ident(table.name), keyCondition(table.key!, keys));
}

/**
 * The read of the rows an UPDATE or DELETE will touch: its own table, alias
 * and WHERE (one row more than `maxRows` shows it would touch too many), and
 * the schema's version then.
 */
export function rowsBefore(statement: Extract<Statement, { kind: "update" | "delete" }>, text: string, table: TableInfo, maxRows: number): string {
  const from = text.slice(...statement.table.span);
  const where = statement.where && text.slice(...statement.where);
  // With the schema's version: rows read by a copy of the schema that is out of date would miss a column.
  return `SELECT (${rowsQuery(table, from, where, maxRows + 1)}) AS ${ROWS_COLUMN}, ${SCHEMA_VERSION} AS ${SCHEMA_VERSION_COLUMN}`;
}

/** The statement narrowed to the rows read (R-SQL-8 "pinned"): it touches those rows, and no other. */
export function pinned(statement: Extract<Statement, { kind: "update" | "delete" }>, text: string, table: TableInfo, keys: string[][]): string {
  const condition = keyCondition(table.key!, keys);
  if (statement.where) {
    const [start, end] = statement.where;
    return `${text.slice(0, start)}(${text.slice(start, end)}) AND ${condition}${text.slice(end)}`;
  }
  const at = statement.kind === "update" ? statement.setEnd : statement.table.span[1];
  return `${text.slice(0, at)} WHERE ${condition}${text.slice(at)}`;
}

/** The rows an INSERT gave as literal keys, when its key columns are all written as plain literals; else undefined. */
export function keysGiven(statement: Extract<Statement, { kind: "insert" }>, text: string, table: TableInfo): string[][] | undefined {
  const key = table.key;
  if (key?.kind !== "columns" || !statement.columns || !statement.rows) return undefined;
  const lower = statement.columns.map((column) => column.toLowerCase());
  const positions = key.columns.map((column) => lower.indexOf(column.toLowerCase()));
  if (positions.some((position) => position < 0)) return undefined;
  const keys: string[][] = [];
  for (const row of statement.rows) {
    const literals = positions.map((position) => (row[position] ? text.slice(...row[position]!).trim() : ""));
    if (!literals.every((literal) => isLiteral(literal) && literal !== "NULL")) return undefined;
    keys.push(literals);
  }
  return keys;
}

/** Whether an INSERT names any column of the row key (or the rowid): then the database did not choose those keys. */
export function namesKey(statement: Extract<Statement, { kind: "insert" }>, table: TableInfo): boolean {
  if (!statement.columns) return table.key?.kind === "columns";
  const named = new Set(statement.columns.map((column) => column.toLowerCase()));
  const keyNames = table.key?.kind === "columns" ? table.key.columns : [];
  return [...keyNames, "rowid", "_rowid_", "oid"].some((name) => named.has(name.toLowerCase()));
}

/** What puts rows back (R-SQL-5): one statement, sent through the same tool. */
export function inverseStatement(kind: Statement["kind"], table: TableInfo, before: RowLiterals[], after: RowLiterals[]): string | undefined {
  const key = table.key!;
  switch (kind) {
    case "insert":
      return after.length
        ? `DELETE FROM ${ident(table.name)} WHERE ${keyCondition(
            key,
            after.map((row) => row.key),
          )}`
        : undefined;
    case "delete":
      return before.length ? reinsert(table, before) : undefined;
    case "update":
      return before.length ? restore(table, before) : undefined;
  }
}

/** INSERT the rows as they were (the rowid too, when it is the key: the rows come back under their own). */
function reinsert(table: TableInfo, rows: RowLiterals[]): string {
  const writable = writableIndexes(table);
  const rowid = table.key!.kind === "rowid";
  const columns = [...(rowid ? [table.key!.kind === "rowid" ? table.key!.name : ""] : []), ...writable.map((i) => ident(table.columns[i]!))];
  const values = rows.map((row) => `(${[...(rowid ? row.key : []), ...writable.map((i) => row.values[i]!)].join(", ")})`);
  return `INSERT INTO ${ident(table.name)} (${columns.join(", ")}) VALUES ${values.join(", ")}`;
}

/** UPDATE each row back to its values, in one statement (UPDATE … FROM a VALUES list keyed like the table). */
function restore(table: TableInfo, rows: RowLiterals[]): string | undefined {
  const key = table.key!;
  const keyNames = new Set((key.kind === "columns" ? key.columns : []).map((column) => column.toLowerCase()));
  const restored = writableIndexes(table).filter((i) => !keyNames.has(table.columns[i]!.toLowerCase()));
  if (restored.length === 0) return undefined;
  const keys = keyExpressions(key);
  const width = keys.length;
  const source = `(VALUES ${rows.map((row) => `(${[...row.key, ...restored.map((i) => row.values[i]!)].join(", ")})`).join(", ")}) AS synartesis_before`;
  const set = restored.map((i, n) => `${ident(table.columns[i]!)} = synartesis_before.column${width + n + 1}`).join(", ");
  const match = keys.map((expr, n) => `${ident(table.name)}.${expr} = synartesis_before.column${n + 1}`).join(" AND ");
  return `UPDATE ${ident(table.name)} SET ${set} FROM ${source} WHERE ${match}`;
}

function writableIndexes(table: TableInfo): number[] {
  const writable = new Set(table.writable);
  return table.columns.flatMap((column, i) => (writable.has(column) ? [i] : []));
}

/** The list a read's value holds (the rows, as the database encoded them), or why it is not one. Both dialects read rows so. */
export function rowList(json: string): unknown[] | { wrong: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return { wrong: "the rows read are not JSON" };
  }
  return Array.isArray(parsed) ? parsed : { wrong: "the rows read are not a list" };
}

/** The rows in a read's value (a JSON array of arrays of literals), or why it is not that. */
export function parseRows(json: string, table: TableInfo): RowLiterals[] | { wrong: string } {
  const parsed = rowList(json);
  if ("wrong" in parsed) return parsed;
  const width = keyExpressions(table.key!).length;
  const rows: RowLiterals[] = [];
  for (const row of parsed) {
    if (!Array.isArray(row) || row.length !== width + table.columns.length || !row.every((v) => typeof v === "string" && isLiteral(v))) {
      return { wrong: "a row read is not a list of SQL literals of the table's columns" };
    }
    rows.push({ key: row.slice(0, width), values: row.slice(width) });
  }
  return rows;
}

/** The string under `name` anywhere in a read's answer (rows as JSON objects, perhaps inside JSON text). */
export function valueNamed(payload: unknown, name: string, depth = 0): string | undefined {
  if (depth > 8) return undefined;
  if (typeof payload === "string") {
    // JSON text, or JSON after a server's words about it ("Retrieved 1 rows.\n\nResults:\n[…]").
    const start = payload.search(/[[{]/);
    if (start < 0) return undefined;
    try {
      return valueNamed(JSON.parse(payload.slice(start)), name, depth + 1);
    } catch {
      return undefined;
    }
  }
  const children = Array.isArray(payload) ? payload : isRecord(payload) ? Object.values(payload) : [];
  if (isRecord(payload) && typeof payload[name] === "string") return payload[name];
  for (const child of children) {
    const found = valueNamed(child, name, depth + 1);
    if (found !== undefined) return found;
  }
  return undefined;
}
