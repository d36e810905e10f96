// The rows of a statement of SQL that Synartesis recorded (R-SQL-5/6): what
// `show` prints for it (the statement, as pinned, and each row it touched,
// column by column before and after) and how undo shows drift (each row that
// differs from what the statement left, column by column). Pure; every value
// is the database's own literal, made printable.
import type { Action, Observation } from "../journal/types.ts";
import { ROWS_COLUMN, valueNamed } from "../sql/plan.ts";
import { printable } from "./style.ts";

/** What the snapshot of an SQL action holds (proxy/calls/sql-call.ts). */
export interface SqlRecord {
  statement: string;
  pinned?: string;
  table: string;
  key: string[];
  columns: string[];
  before: string[][];
}

/** How many rows a listing shows before it says how many more there are. */
const SHOWN_ROWS = 20;

export function sqlRecordOf(action: Action): SqlRecord | undefined {
  const payload = action.snapshot && !action.snapshot.absent ? action.snapshot.payload : undefined;
  if (typeof payload !== "object" || payload === null) return undefined;
  const { statement, pinned, table, key, columns, rows } = payload as Record<string, unknown>;
  const strings = (value: unknown): value is string[] => Array.isArray(value) && value.every((item) => typeof item === "string");
  if (typeof statement !== "string" || typeof table !== "string" || !strings(key) || !strings(columns) || !Array.isArray(rows)) return undefined;
  return { statement, ...(typeof pinned === "string" && { pinned }), table, key, columns, before: rows.filter(strings) };
}

/** The rows in a read Synartesis made of them (each an array of literals: key first), or undefined. */
export function rowsRead(observation: Observation | undefined): string[][] | undefined {
  if (!observation || observation.absent) return undefined;
  const value = valueNamed(observation.payload, ROWS_COLUMN);
  if (value === undefined) return undefined;
  try {
    const rows = JSON.parse(value) as unknown;
    return Array.isArray(rows) ? rows.filter((row): row is string[] => Array.isArray(row)) : undefined;
  } catch {
    return undefined;
  }
}

/** Each row that differs between two sets, keyed as the table keys them, column by column (the first SHOWN_ROWS, then how many more). */
export function rowDifferences(
  record: SqlRecord,
  left: string[][],
  right: string[][],
  words: { gone: string; added: string },
): { lines: string[]; rows: number } {
  const width = record.key.length;
  const keyOf = (row: string[]) => row.slice(0, width).join(", ");
  // A PostgreSQL row read carries its xmin after the columns: not a value of the row.
  const byKey = (rows: string[][]) => new Map(rows.map((row) => [keyOf(row), row.slice(width, width + record.columns.length)]));
  const [was, is] = [byKey(left), byKey(right)];
  const keyName = width === 1 ? record.key[0]! : `(${record.key.join(", ")})`;
  const lines: string[] = [];
  for (const key of [...new Set([...was.keys(), ...is.keys()])]) {
    const [before, after] = [was.get(key), is.get(key)];
    const row = `row ${keyName} = ${key}`;
    if (!after) lines.push(`${row}: ${words.gone}`);
    else if (!before) lines.push(`${row}: ${words.added}: ${record.columns.map((c, i) => `${c} ${after[i]}`).join(", ")}`);
    else {
      const changed = record.columns.flatMap((column, i) => (before[i] === after[i] ? [] : [`${column}: ${before[i]} → ${after[i]}`]));
      if (changed.length) lines.push(`${row}: ${changed.join("; ")}`);
    }
  }
  const shown = lines.slice(0, SHOWN_ROWS).map(printable);
  if (lines.length > SHOWN_ROWS) shown.push(`… and ${lines.length - SHOWN_ROWS} more row(s)`);
  return { lines: shown, rows: lines.length };
}

/** What `show` says of an SQL action: its statement (as pinned), its table, and its rows before → after. */
export function sqlNotes(action: Action): Array<{ label: string; text: string }> {
  const record = sqlRecordOf(action);
  if (!record) return [];
  const notes = [{ label: "sql", text: printable(record.statement) }];
  if (record.pinned) notes.push({ label: "pinned", text: printable(record.pinned) });
  const after = rowsRead(action.postState);
  if (after === undefined) {
    notes.push({ label: "rows", text: `${record.before.length} row(s) of ${printable(record.table)} read before it ran` });
    return notes;
  }
  const changes = rowDifferences(record, record.before, after, { gone: "deleted", added: "inserted" });
  notes.push({ label: "rows", text: `table ${printable(record.table)}: ${changes.rows ? `${changes.rows} row(s) changed` : "no row changed"}` });
  for (const line of changes.lines) notes.push({ label: "", text: line });
  return notes;
}

/** Undo's drift for an SQL action, row by row: what the statement left against what is there now (undefined: not an SQL action's rows). */
export function sqlDrift(action: Action, expected: Observation | undefined, actual: Observation | undefined): string[] | undefined {
  const record = sqlRecordOf(action);
  const [left, right] = [rowsRead(expected), rowsRead(actual)];
  if (!record || !left || !right) return undefined;
  const { lines } = rowDifferences(record, left, right, { gone: "gone since", added: "there now, and not left by the statement" });
  return [`table ${printable(record.table)}, as the agent's statement left it → now:`, ...lines];
}
