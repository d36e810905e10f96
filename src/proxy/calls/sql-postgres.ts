// A statement for a PostgreSQL database (SPEC §14, dialect postgres): read by
// PostgreSQL's own grammar and over its tokens, its table described by the
// catalogue, then recorded row by row — the rows it will touch read by its
// own WHERE, the statement pinned to their keys (the pinned text read again
// by the grammar, its WHERE unchanged), the rows it left read by key. Certain
// when one transaction wrote every row it left (xmin) and, where the server
// reports it, as many as it counted; otherwise recorded without an inverse,
// saying why (R-SQL-3).
import type { Observation, VerifyCall } from "../../journal/types.ts";
import type { SqlSpec } from "../../manifest/types.ts";
import { parsePostgres } from "../../sql/postgres/parser.ts";
import {
  inverseStatement,
  isLiteral,
  largestKey,
  parseRows,
  parseTable,
  pinned,
  qualified,
  reportedCount,
  ROWS_COLUMN,
  rowsAbove,
  rowsBefore,
  rowsByKey,
  TABLE_COLUMN,
  tableQuery,
  VERSION_COLUMN,
  type PgRow,
  type PgTable,
} from "../../sql/postgres/plan.ts";
import { readPostgresStatement, type PostgresReading } from "../../sql/postgres/statement.ts";
import type { Span, Statement } from "../../sql/statement.ts";
import { COUNT_COLUMN, valueNamed } from "../../sql/plan.ts";
import type { Upstream } from "../../servers/upstream.ts";
import type { CallContext, ToolCall } from "./call-types.ts";
import { upsertEffect, upsertHeld, type UpsertEffect } from "../../sql/upsert.ts";
import {
  readAfter,
  readValue,
  statementsInverse,
  statementLine,
  verifyCall,
  type SqlAfter,
  type SqlDecision,
  type StatementAnswer,
  type StatementRecording,
} from "./sql-reads.ts";

/** What PostgreSQL says when a read's table is gone (undo's check for drift). */
const GONE = "does not exist";

/** Each server's tables as last described, by the name a statement gave (an UPDATE's or DELETE's rows-before read checks the version). */
const described = new WeakMap<Upstream, Map<string, { table: PgTable; version: string }>>();

export async function judgePostgres(ctx: CallContext, call: ToolCall, spec: SqlSpec, text: string): Promise<SqlDecision> {
  const reading = await readPostgresStatement(text);
  if ("held" in reading) return reading;
  const { statement } = reading;
  const upstream = ctx.upstream(spec.read.server);
  const known = described.get(upstream) ?? new Map<string, { table: PgTable; version: string }>();
  described.set(upstream, known);
  const name = JSON.stringify([statement.table.schema, statement.table.name]);
  // An INSERT reads no rows before it, where a description out of date would show: it is described afresh.
  let entry = statement.kind === "insert" ? undefined : known.get(name);
  if (!entry) {
    const read = await readValue(ctx, call, spec, tableQuery(statement.table), TABLE_COLUMN);
    if ("error" in read) return { held: `Synartesis could not read its table's description to record it (${read.error})` };
    const table = parseTable(read.value);
    if ("held" in table) return table;
    entry = { table, version: valueNamed(read.payload, VERSION_COLUMN) ?? "" };
    known.set(name, entry);
  }
  const { table } = entry;
  if (statement.kind === "update") {
    const changed = statement.columns.find((column) => table.key.includes(column));
    if (changed) return { held: `it changes the rows' key ("${changed}"): not yet undone` };
  }
  let keys: "above" | string[][] | undefined;
  if (statement.kind === "insert" && statement.onConflict) {
    const held = upsertHeld(statement, table.key, (a, b) => a === b);
    if (held) return { held };
    keys = keysGiven(statement, reading.text, table);
    if (!keys) return { held: "an upsert must give every key of the rows it writes as a plain value: which rows it touches cannot be known otherwise" };
  } else if (statement.kind === "insert") {
    const given = keysGiven(statement, reading.text, table);
    if (given) keys = given;
    else if (!statement.columns?.some((column) => table.key.includes(column)) && table.integerKey) keys = "above";
    else return { held: "the keys of the rows it inserts are neither given as plain values nor an integer the database counts up: they cannot be identified" };
  }
  return { sql: new PostgresStatement(ctx, call, spec, reading, entry, keys, () => known.delete(name)) };
}

/** The key values an INSERT gives, one list per VALUES row, when every key column is given as a plain constant. */
function keysGiven(statement: Extract<Statement, { kind: "insert" }>, text: string, table: PgTable): string[][] | undefined {
  if (!statement.columns || !statement.rows) return undefined;
  const positions = table.key.map((column) => statement.columns!.indexOf(column));
  if (positions.some((position) => position < 0)) return undefined;
  const keys: string[][] = [];
  for (const row of statement.rows) {
    const literals = positions.map((position) => literalOf(row[position], text));
    if (literals.some((literal) => literal === undefined)) return undefined;
    keys.push(literals as string[]);
  }
  return keys;
}

/** A constant as a literal: a number is quoted (its column's type reads it back), a string kept. */
function literalOf(span: Span | undefined, text: string): string | undefined {
  const written = span && text.slice(...span).trim();
  if (!written || written === "NULL") return undefined;
  if (/^-?\d+(\.\d+)?$/.test(written)) return `'${written}'`;
  return isLiteral(written) ? written : undefined;
}

class PostgresStatement implements StatementRecording {
  private before: PgRow[] = [];
  private sent: string;
  private largest: string | undefined;

  constructor(
    private readonly ctx: CallContext,
    private readonly call: ToolCall,
    private readonly spec: SqlSpec,
    private readonly reading: PostgresReading,
    private readonly described: { table: PgTable; version: string },
    private readonly keys: "above" | string[][] | undefined,
    /** Forget the table's description (it changed): the next statement reads it afresh. */
    private readonly forget: () => void,
  ) {
    this.sent = reading.text;
  }

  private get statement(): Statement {
    return this.reading.statement;
  }

  private get text(): string {
    return this.reading.text;
  }

  private get table(): PgTable {
    return this.described.table;
  }

  async preRead(): Promise<{ snapshot: Observation; verify?: VerifyCall } | { held: string } | { failed: string }> {
    const { statement, table } = this;
    if (statement.kind === "insert") {
      const count = await this.rowsToInsert(statement);
      if (typeof count === "object") return count;
      if (count > this.spec.maxRows) return { held: `it would insert ${count} rows into ${qualified(table)}, more than ${this.spec.maxRows} (max_rows)` };
      if (Array.isArray(this.keys)) {
        const verify = this.verify(rowsByKey(table, this.keys, false));
        if (!statement.onConflict) return { snapshot: this.snapshot([]), verify };
        // An upsert may change rows of the keys it gives: they are read first, with the transaction that last wrote each.
        const read = await readValue(this.ctx, this.call, this.spec, rowsByKey(table, this.keys, true), ROWS_COLUMN);
        const rows = "error" in read ? { wrong: `the rows it may change could not be read: ${read.error}` } : parseRows(read.value, table);
        if ("wrong" in rows) return { failed: rows.wrong };
        this.before = rows;
        return { snapshot: this.snapshot(rows), verify };
      }
      const largest = await readValue(this.ctx, this.call, this.spec, largestKey(table), ROWS_COLUMN);
      if ("error" in largest) return { failed: `the largest key of ${qualified(table)} could not be read: ${largest.error}` };
      if (!/^-?\d+$/.test(largest.value)) return { failed: "the largest key came back as something other than an integer" };
      this.largest = largest.value;
      return { snapshot: this.snapshot([]) };
    }
    const read = await readValue(this.ctx, this.call, this.spec, rowsBefore(statement, this.text, table, this.spec.maxRows), ROWS_COLUMN);
    if ("error" in read) return { failed: `the rows it would touch could not be read: ${read.error}` };
    if (valueNamed(read.payload, VERSION_COLUMN) !== this.described.version) {
      this.forget();
      return { failed: "its table changed since Synartesis last described it; the call can be sent again as it is" };
    }
    const rows = parseRows(read.value, table);
    if ("wrong" in rows) return { failed: rows.wrong };
    if (rows.length > this.spec.maxRows) return { held: `it would touch more than ${this.spec.maxRows} rows of ${qualified(table)} (max_rows)` };
    this.before = rows;
    const keys = rows.map((row) => row.key);
    this.sent = pinned(statement, this.text, table, keys);
    if (!(await this.samePinned())) return { held: "Synartesis could not narrow it to the rows it read: PostgreSQL reads the narrowed statement differently" };
    return { snapshot: this.snapshot(rows), verify: this.verify(rowsByKey(table, keys, false)) };
  }

  line(): string {
    return statementLine(this.call, this.spec, this.sent);
  }

  /** How many rows an INSERT will insert: its VALUES rows, or what its SELECT yields now, counted by the database. */
  private async rowsToInsert(statement: Extract<Statement, { kind: "insert" }>): Promise<number | { failed: string }> {
    if (statement.source !== "select" || !statement.select) return statement.rows?.length ?? 1;
    const sql = `SELECT count(*)::text AS ${COUNT_COLUMN} FROM (${this.text.slice(...statement.select)}) AS synartesis_inserted`;
    const read = await readValue(this.ctx, this.call, this.spec, sql, COUNT_COLUMN);
    if ("error" in read) return { failed: `the rows it would insert could not be counted: ${read.error}` };
    return /^\d+$/.test(read.value) ? Number(read.value) : { failed: "the rows it would insert could not be counted: the count is not a number" };
  }

  async afterWrite(verify: VerifyCall | undefined, answer: StatementAnswer): Promise<SqlAfter> {
    const { table, statement } = this;
    let keys = statement.kind === "insert" ? (Array.isArray(this.keys) ? this.keys : undefined) : this.before.map((row) => row.key);
    if (this.largest !== undefined) {
      // The rows above the largest key before: this statement's, if one transaction wrote them all.
      const above = await readValue(this.ctx, this.call, this.spec, rowsAbove(table, this.largest), ROWS_COLUMN);
      const rows = "error" in above ? above : parseRows(above.value, table);
      if ("error" in rows || "wrong" in rows)
        return { warnings: [`unverified: the rows it inserted could not be read (${"error" in rows ? rows.error : rows.wrong}); undo will not touch them`] };
      if (rows.length === 0) return { warnings: [] };
      keys = rows.map((row) => row.key);
      verify = this.verify(rowsByKey(table, keys, false));
    }
    if (!verify || !keys) return { warnings: [] };
    // The rows it left with the transaction that wrote each (what makes them its), then as undo reads them for drift.
    const written = await readValue(this.ctx, this.call, this.spec, rowsByKey(table, keys, true), ROWS_COLUMN);
    const rows = "error" in written ? { wrong: `the rows it left could not be read (${written.error})` } : parseRows(written.value, table);
    const after = await readAfter(this.ctx, this.call, verify);
    if ("error" in after) return { verify, warnings: [`unverified: the rows it left could not be read (${after.error}); undo will not touch them`] };
    if ("wrong" in rows) return { verify, postState: after, warnings: [`unverified: ${rows.wrong}; undo will not touch its rows`] };
    const count = reportedCount(answer.payload, answer.text);
    const upsert = statement.kind === "insert" && statement.onConflict ? upsertEffect(this.before, rows, (was, now) => was.xmin !== now.xmin) : undefined;
    const doubt = upsert ? this.upsertDoubt(upsert, rows, count) : this.doubt(rows, count);
    if (doubt)
      return { verify, postState: after, warnings: [`unverified: ${doubt}; which rows are this statement's is not certain, so undo will not touch them`] };
    const texts = upsert
      ? [inverseStatement("insert", table, [], upsert.inserted), inverseStatement("update", table, upsert.changed, [])]
      : [inverseStatement(statement.kind, table, this.before, rows)];
    const needed = texts.filter((text): text is string => text !== undefined);
    for (const text of needed) {
      const parsed = await parsePostgres(text);
      if ("error" in parsed)
        return {
          verify,
          postState: after,
          warnings: [`the statement that would put the rows back does not parse (${parsed.error}); undo has no inverse for it`],
        };
    }
    const warnings =
      count === undefined && needed.length
        ? ["the server did not say how many rows it changed: that one transaction wrote every row the statement left is what makes them its"]
        : [];
    const inverse = statementsInverse(this.call, this.spec, needed);
    return { verify, postState: after, ...(inverse && { inverse }), warnings };
  }

  /**
   * Why an upsert's rows are not certainly its own: a row of its keys gone,
   * the rows it wrote (new, or with another writer than before) written by
   * more than one transaction, or a count that differs from them.
   */
  private upsertDoubt(effect: UpsertEffect<PgRow>, after: PgRow[], count: number | undefined): string | undefined {
    if (effect.gone.length) return `${effect.gone.length} row(s) of the keys it gives existed before and are gone`;
    const written = [...effect.inserted, ...after.filter((row) => effect.changed.some((was) => JSON.stringify(was.key) === JSON.stringify(row.key)))];
    if (count !== undefined && count !== written.length) return `the server says it changed ${count} row(s), and ${written.length} were written`;
    const writers = new Set(written.map((row) => row.xmin));
    return writers.size > 1 ? `its rows were last written by ${writers.size} different transactions` : undefined;
  }

  /** Why the rows left are not certainly the statement's, if they are not: the count it reports, one transaction, every row pinned. */
  private doubt(after: PgRow[], count: number | undefined): string | undefined {
    const kind = this.statement.kind;
    const expected = kind === "insert" ? after.length : this.before.length;
    if (count !== undefined && count !== expected)
      return `the server says it changed ${count} row(s), and ${expected} were ${kind === "insert" ? "found" : "pinned"}`;
    if (kind === "delete") return after.length ? `${after.length} of the rows it was pinned to are still there` : undefined;
    if (kind === "update" && after.length !== this.before.length) return `${this.before.length - after.length} of the rows it was pinned to are gone`;
    const writers = new Set(after.map((row) => row.xmin));
    if (writers.size > 1) return `its rows were last written by ${writers.size} different transactions`;
    if (kind === "update") {
      const untouched = after.filter((row, i) => row.xmin === this.before[i]!.xmin).length;
      if (untouched) return `${untouched} of the rows it was pinned to were not written by it`;
    }
    if (Array.isArray(this.keys) && after.length !== this.keys.length) return `${after.length} of the ${this.keys.length} rows it gives were found`;
    return undefined;
  }

  /** The pinned statement, read by PostgreSQL's grammar: the same kind, its WHERE the original's (AND the keys). */
  private async samePinned(): Promise<boolean> {
    const narrowed = await parsePostgres(this.sent);
    if ("error" in narrowed || narrowed.statements.length !== 1) return false;
    type Where = { BoolExpr?: { boolop: string; args: unknown[] } } | undefined;
    const before = this.reading.whereTree as Where;
    const after = (Object.values(narrowed.statements[0]!.stmt)[0] as { whereClause?: Where }).whereClause;
    if (before === undefined) return after !== undefined;
    // PostgreSQL flattens (a AND b) AND keys into one AND of three.
    const conjuncts = before.BoolExpr?.boolop === "AND_EXPR" ? before.BoolExpr.args : [before];
    const pinnedTo = after?.BoolExpr?.boolop === "AND_EXPR" ? after.BoolExpr.args : [];
    return pinnedTo.length === conjuncts.length + 1 && located(pinnedTo.slice(0, -1)) === located(conjuncts);
  }

  private snapshot(rows: PgRow[]): Observation {
    const { table } = this;
    return {
      absent: false,
      payload: {
        statement: this.text,
        ...(this.sent !== this.text && { pinned: this.sent }),
        table: `${table.schema}.${table.name}`,
        key: table.key,
        columns: table.columns,
        rows: rows.map((row) => [...row.key, ...row.values]),
      },
    };
  }

  private verify(sql: string): VerifyCall {
    return verifyCall(this.spec, sql, GONE);
  }
}

/** A parse tree without its locations (the same expression written at another place is the same). */
function located(node: unknown): string {
  return JSON.stringify(node, (key, value) => (key === "location" ? undefined : value));
}
