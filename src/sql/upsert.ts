// Upserts (INSERT … ON CONFLICT DO NOTHING | DO UPDATE, SQLite's INSERT OR
// IGNORE), for both dialects: which can be recorded with certainty, and what
// one did to the rows it gives. An upsert recorded here gives every key as a
// plain value and conflicts on the primary key, so the rows it can touch are
// exactly the rows of those keys: read before and after by key, each row was
// inserted (absent before), changed, or left as it was. Pure.
import type { OnConflict, Statement } from "./statement.ts";

type Insert = Extract<Statement, { kind: "insert" }>;

/** Why an upsert cannot be recorded with certainty; undefined when it can (or it is not one). */
export function upsertHeld(statement: Insert, key: string[], sameName: (a: string, b: string) => boolean): string | undefined {
  const conflict: OnConflict | undefined = statement.onConflict;
  if (!conflict) return undefined;
  if (statement.source !== "values") return "an upsert whose rows come from a SELECT is not yet undone by Synartesis";
  // DO NOTHING changes no row that exists, whatever it conflicts on: the rows it inserts are those absent before and present after.
  if (conflict.action === "nothing") return undefined;
  const keyText = key.join(", ");
  if (conflict.constraint !== undefined) {
    return `its conflict target is the constraint "${conflict.constraint}", not the primary key's columns (${keyText}): name them, so the rows it updates are the ones it gives`;
  }
  if (!conflict.target) return `its DO UPDATE names no conflict target: a row it updates may be another than the one it gives`;
  const same = conflict.target.length === key.length && key.every((column) => conflict.target!.some((named) => sameName(named, column)));
  if (!same) {
    return `its conflict target (${conflict.target.join(", ")}) is not the table's primary key (${keyText}): a row it updates may be another than the one it gives`;
  }
  const changed = conflict.columns.find((column) => key.some((keyColumn) => sameName(column, keyColumn)));
  return changed ? `its DO UPDATE changes the rows' key ("${changed}"): not yet undone` : undefined;
}

interface Row {
  key: string[];
  values: string[];
}

/** What an upsert did to the rows of the keys it gives, from those rows before and after it. */
export interface UpsertEffect<R extends Row> {
  /** Absent before, present after. */
  inserted: R[];
  /** Present before and after, with other values (each as it was before). */
  changed: R[];
  /** Present before and gone after: no upsert does that, so someone else did. */
  gone: R[];
}

export function upsertEffect<R extends Row>(before: R[], after: R[], written: (before: R, after: R) => boolean = differs): UpsertEffect<R> {
  const id = (row: Row) => JSON.stringify(row.key);
  const was = new Map(before.map((row) => [id(row), row]));
  const now = new Map(after.map((row) => [id(row), row]));
  return {
    inserted: after.filter((row) => !was.has(id(row))),
    changed: before.filter((row) => now.has(id(row)) && written(row, now.get(id(row))!)),
    gone: before.filter((row) => !now.has(id(row))),
  };
}

function differs(before: Row, after: Row): boolean {
  return before.values.some((value, i) => value !== after.values[i]);
}
