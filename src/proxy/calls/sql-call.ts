import { readFailed, type Observation, type VerifyCall } from "../../journal/types.ts";
import type { SqlSpec } from "../../manifest/types.ts";
import { readState } from "../../servers/observe.ts";
import type { Upstream } from "../../servers/upstream.ts";
import {
  CHANGES_COLUMN,
  CHANGES_QUERY,
  COUNT_COLUMN,
  insertedCount,
  inverseStatement,
  keysGiven,
  namesKey,
  parseRows,
  pinned,
  ROWS_COLUMN,
  rowsBefore,
  rowsByKey,
  rowsQuery,
  ident,
  type RowLiterals,
  valueNamed,
} from "../../sql/plan.ts";
import { CATALOGUE_QUERY, SCHEMA_VERSION_COLUMN, SchemaCopy, type CatalogueEntry, type TableInfo } from "../../sql/schema.ts";
import { readStatement, type Statement } from "../../sql/statement.ts";
import { classifySql } from "../policy/readonly-sql.ts";
import { judgePostgres } from "./sql-postgres.ts";
import { upsertEffect, upsertHeld } from "../../sql/upsert.ts";
import {
  readValue,
  statementsInverse,
  statementLine,
  verifyCall,
  type SqlAfter,
  type SqlDecision,
  type StatementAnswer,
  type StatementRecording,
} from "./sql-reads.ts";
import type { CallContext, ToolCall } from "./call-types.ts";

/** Each server's schema, read once and again after it changed (a statement that no longer compiles against it). */
const schemas = new WeakMap<Upstream, SchemaCopy>();

export async function judgeSql(ctx: CallContext, call: ToolCall, spec: SqlSpec): Promise<SqlDecision> {
  const text = call.args[spec.statementArg];
  if (typeof text !== "string") return { held: `its argument "${spec.statementArg}" carries no SQL text` };
  if (classifySql(text).readOnly) return { readOnly: true };
  return spec.dialect === "postgres" ? judgePostgres(ctx, call, spec, text) : judgeSqlite(ctx, call, spec, text);
}

/** A statement for an SQLite database, judged against a copy of its schema. */
async function judgeSqlite(ctx: CallContext, call: ToolCall, spec: SqlSpec, text: string): Promise<SqlDecision> {
  const reading = readStatement(text);
  if ("held" in reading) return reading;
  for (const fresh of [false, true]) {
    const schema = await schemaOf(ctx, call, spec, fresh);
    if ("error" in schema) return { held: `Synartesis could not read the database's schema to record it (${schema.error})` };
    const judged = judgeOn(schema, reading.statement, reading.text);
    if ("stale" in judged) {
      if (fresh) return { held: `SQLite would not run it against the database's schema: ${judged.stale}` };
      continue;
    }
    if ("held" in judged) return judged;
    return { sql: new SqliteStatement(ctx, call, spec, schema, reading.statement, reading.text, judged.table, judged.insertKeys) };
  }
  throw new Error("unreachable");
}

type Judged = { held: string } | { stale: string } | { table: TableInfo; insertKeys?: "range" | string[][] };

/** The statement against the schema: whether SQLite compiles it, what it reaches, how its rows are known. */
function judgeOn(schema: SchemaCopy, statement: Statement, text: string): Judged {
  const error = schema.compileError(text);
  if (error) return /no such (table|column)/i.test(error) ? { stale: error } : { held: `SQLite would not run it: ${error}` };
  const table = schema.table(statement.table.name);
  if ("unknown" in table) return { held: `its table cannot be read (${table.unknown})` };
  if (!table.key) return { held: `table "${table.name}" has no key (no primary key, and no rowid): its rows cannot be identified` };
  const { tables, subprograms } = schema.tablesWritten(text);
  tables.delete(table.name.toLowerCase());
  if (subprograms || tables.size) {
    const others = tables.size ? ` (${[...tables].join(", ")})` : "";
    return { held: `it reaches beyond table "${table.name}"${others}: a trigger or a cascading foreign key would change rows Synartesis does not read` };
  }
  if (statement.kind === "update") {
    const keys = new Set([...(table.key.kind === "columns" ? table.key.columns : []), "rowid", "_rowid_", "oid"].map((name) => name.toLowerCase()));
    const changed = statement.columns.find((column) => keys.has(column.toLowerCase()));
    if (changed) return { held: `it changes the rows' key ("${changed}"): not yet undone` };
  }
  if (statement.kind !== "insert") return { table };
  if (statement.onConflict) {
    const keyColumns = table.key.kind === "columns" ? table.key.columns : [table.key.name];
    const held = upsertHeld(statement, keyColumns, (a, b) => a.toLowerCase() === b.toLowerCase());
    if (held) return { held };
    const given = keysGiven(statement, text, table);
    return given
      ? { table, insertKeys: given }
      : { held: "an upsert must give every key of the rows it writes as a plain value: which rows it touches cannot be known otherwise" };
  }
  if (!namesKey(statement, table)) {
    if (!table.rowid) return { held: `the keys of the rows it inserts are chosen by the database and table "${table.name}" has no rowid to find them by` };
    return { table, insertKeys: "range" };
  }
  const given = keysGiven(statement, text, table);
  if (!given) return { held: "the keys of the rows it inserts are not all plain values: they cannot be identified with certainty" };
  return { table, insertKeys: given };
}

/** The server's schema, as a copy SQLite can judge statements against. */
async function schemaOf(ctx: CallContext, call: ToolCall, spec: SqlSpec, fresh: boolean): Promise<SchemaCopy | { error: string }> {
  const upstream = ctx.upstream(spec.read.server);
  const known = schemas.get(upstream);
  if (known && !fresh) return known;
  const value = await readValue(ctx, call, spec, CATALOGUE_QUERY, "synartesis_catalogue");
  if ("error" in value) return value;
  const version = valueNamed(value.payload, SCHEMA_VERSION_COLUMN);
  if (version === undefined) return { error: "its schema version did not come back with the catalogue" };
  let entries: CatalogueEntry[];
  try {
    const parsed = JSON.parse(value.value) as unknown[];
    entries = parsed.map((entry) => {
      const [type, name, table, sql] = entry as string[];
      return { type: String(type), name: String(name), table: String(table), sql: String(sql) };
    });
  } catch {
    return { error: "its catalogue did not come back as the JSON it was asked for" };
  }
  const schema = SchemaCopy.of(entries, version);
  schemas.set(upstream, schema);
  return schema;
}

/** One SQLite statement being recorded: read before, pinned, forwarded, changes() and the rows after read. */
class SqliteStatement implements StatementRecording {
  private before: RowLiterals[] = [];
  private sent: string;

  constructor(
    private readonly ctx: CallContext,
    private readonly call: ToolCall,
    private readonly spec: SqlSpec,
    private readonly schema: SchemaCopy,
    private readonly statement: Statement,
    private readonly text: string,
    private readonly table: TableInfo,
    private readonly insertKeys: "range" | string[][] | undefined,
  ) {
    this.sent = text;
  }

  /** Read the rows the statement will touch and pin it to them; or why it must be held (too many rows, a reading that fails). */
  async preRead(): Promise<{ snapshot: Observation; verify?: VerifyCall } | { held: string } | { failed: string }> {
    const { statement, table } = this;
    const payload = (rows: RowLiterals[]) => ({
      statement: this.text,
      ...(this.sent !== this.text && { pinned: this.sent }),
      table: table.name,
      key: table.key!.kind === "rowid" ? [table.key!.name] : table.key!.columns,
      columns: table.columns,
      rows: rows.map((row) => [...row.key, ...row.values]),
    });
    if (statement.kind === "insert") {
      const count = await this.rowsToInsert(statement);
      if (typeof count === "object") return count;
      if (count > this.spec.maxRows) return { held: `it would insert ${count} rows into "${table.name}", more than ${this.spec.maxRows} (max_rows)` };
      if (!Array.isArray(this.insertKeys)) return { snapshot: { absent: false, payload: payload([]) } };
      const byKey = rowsByKey(table, this.insertKeys);
      const verify = this.verifyCall(byKey);
      if (!statement.onConflict) return { snapshot: { absent: false, payload: payload([]) }, verify };
      // An upsert may change rows of the keys it gives: they are read first.
      const read = await readValue(this.ctx, this.call, this.spec, byKey, ROWS_COLUMN);
      if ("error" in read) return { failed: `the rows it may change could not be read: ${read.error}` };
      const rows = parseRows(read.value, table);
      if ("wrong" in rows) return { failed: rows.wrong };
      this.before = rows;
      return { snapshot: { absent: false, payload: payload(rows) }, verify };
    }
    const read = await readValue(this.ctx, this.call, this.spec, rowsBefore(statement, this.text, table, this.spec.maxRows), ROWS_COLUMN);
    if ("error" in read) return { failed: `the rows it would touch could not be read: ${read.error}` };
    if (valueNamed(read.payload, SCHEMA_VERSION_COLUMN) !== this.schema.version) {
      // Its copy of the schema may lack a column the rows have: read afresh by the next call.
      schemas.delete(this.ctx.upstream(this.spec.read.server));
      return { failed: "the database's schema changed since Synartesis last read it; the call can be sent again as it is" };
    }
    const rows = parseRows(read.value, table);
    if ("wrong" in rows) return { failed: rows.wrong };
    if (rows.length > this.spec.maxRows) return { held: `it would touch more than ${this.spec.maxRows} rows of "${table.name}" (max_rows)` };
    this.before = rows;
    const keys = rows.map((row) => row.key);
    this.sent = pinned(statement, this.text, table, keys);
    const verifyText = rowsByKey(table, keys);
    for (const built of [this.sent, verifyText]) {
      const error = this.schema.compileError(built);
      if (error) return { held: `Synartesis could not narrow it to the rows it read (${error})` };
    }
    return { snapshot: { absent: false, payload: payload(rows) }, verify: this.verifyCall(verifyText) };
  }

  /** How many rows an INSERT will insert at most (R-SQL-8): its VALUES rows, or what its SELECT yields now, counted by the database. */
  private async rowsToInsert(statement: Extract<Statement, { kind: "insert" }>): Promise<number | { failed: string }> {
    if (statement.source !== "select" || !statement.select) return statement.rows?.length ?? 1;
    const read = await readValue(this.ctx, this.call, this.spec, insertedCount(this.text.slice(...statement.select)), COUNT_COLUMN);
    if ("error" in read) return { failed: `the rows it would insert could not be counted: ${read.error}` };
    const count = Number(read.value);
    return Number.isInteger(count) ? count : { failed: "the rows it would insert could not be counted: the count is not a number" };
  }

  /** The request line to forward: the statement as pinned, arguments otherwise the agent's. */
  line(): string {
    return statementLine(this.call, this.spec, this.sent);
  }

  /** After the statement ran: how many rows it changed, what it left, the statement that puts it back (none, with why, when its rows are not certain). */
  async afterWrite(verify: VerifyCall | undefined, _answer: StatementAnswer): Promise<SqlAfter> {
    const { table, statement } = this;
    const warnings: string[] = [];
    const changes = await readValue(this.ctx, this.call, this.spec, CHANGES_QUERY, CHANGES_COLUMN);
    let counted: [number, number] | undefined;
    if ("value" in changes) {
      const parsed = JSON.parse(changes.value) as unknown;
      if (Array.isArray(parsed) && parsed.length === 2 && parsed.every((n) => typeof n === "number")) counted = parsed as [number, number];
    }
    if (!counted)
      return {
        warnings: [
          `unverified: how many rows it changed could not be read (${"error" in changes ? changes.error : "an answer of the wrong shape"}); undo will not touch its rows`,
        ],
      };
    const [changed, lastRowid] = counted;
    if (statement.kind === "insert" && this.insertKeys === "range") {
      if (changed === 0) return { warnings };
      verify = this.verifyCall(rowsQuery(table, ident(table.name), `${table.rowid} BETWEEN ${lastRowid - changed + 1} AND ${lastRowid}`));
    }
    if (!verify) return { warnings };
    const { read: after } = await readState(this.ctx.upstream(verify.server), verify, this.call.origin);
    if (readFailed(after) || after.absent) {
      return {
        verify,
        warnings: [`unverified: the rows it left could not be read (${readFailed(after) ? after.error : "the table is gone"}); undo will not touch them`],
      };
    }
    const postState: Observation = after;
    const value = valueNamed(after.payload, ROWS_COLUMN);
    const rows = value === undefined ? { wrong: "the rows it left came back without their column" } : parseRows(value, table);
    if ("wrong" in rows) return { verify, postState, warnings: [`unverified: ${rows.wrong}; undo will not touch its rows`] };
    if (statement.kind === "insert" && statement.onConflict) return this.afterUpsert(changed, rows, verify, postState);
    const expected = statement.kind === "insert" ? rows.length : this.before.length;
    const left = statement.kind === "delete" ? 0 : expected;
    if (changed !== expected || (statement.kind === "delete" && rows.length !== left) || (statement.kind === "update" && rows.length !== this.before.length)) {
      warnings.push(
        `unverified: SQLite says it changed ${changed} row(s), and ${statement.kind === "insert" ? `${rows.length} were found` : `it was pinned to ${this.before.length}`}; which rows are this statement's is not certain, so undo will not touch them`,
      );
      return { verify, postState, warnings };
    }
    return this.withInverse([inverseStatement(statement.kind, table, this.before, rows)], { verify, postState, warnings });
  }

  /**
   * An upsert's rows after it, against the same keys' rows before: the rows
   * it inserted are deleted by undo, the rows it changed put back. SQLite
   * counts a row DO UPDATE wrote with the values it had, so the count it
   * gives lies between the rows that visibly changed and the rows it gives.
   */
  private afterUpsert(changed: number, rows: RowLiterals[], verify: VerifyCall, postState: Observation): SqlAfter {
    const effect = upsertEffect(this.before, rows);
    const least = effect.inserted.length + effect.changed.length;
    // Each row of its VALUES writes at most once (a key given twice: inserted, then updated).
    const given = Array.isArray(this.insertKeys) ? this.insertKeys.length : 0;
    const doubt = effect.gone.length
      ? `${effect.gone.length} row(s) of the keys it gives existed before and are gone`
      : changed < least || changed > given
        ? `SQLite says it changed ${changed} row(s), and ${effect.inserted.length} were inserted and ${effect.changed.length} changed, of ${given} given`
        : undefined;
    if (doubt) return { verify, postState, warnings: [`unverified: ${doubt}; which rows are this statement's is not certain, so undo will not touch them`] };
    const texts = [inverseStatement("insert", this.table, [], effect.inserted), inverseStatement("update", this.table, effect.changed, [])];
    return this.withInverse(texts, { verify, postState, warnings: [] });
  }

  /** The recording with the statements that put the rows back (those that are needed), each compiled against the schema first. */
  private withInverse(texts: Array<string | undefined>, after: SqlAfter): SqlAfter {
    const needed = texts.filter((text): text is string => text !== undefined);
    for (const text of needed) {
      const error = this.schema.compileError(text);
      if (error)
        return {
          ...after,
          warnings: [...after.warnings, `the statement that would put the rows back does not compile (${error}); undo has no inverse for it`],
        };
    }
    const inverse = statementsInverse(this.call, this.spec, needed);
    return inverse ? { ...after, inverse } : after;
  }

  private verifyCall(sql: string): VerifyCall {
    return verifyCall(this.spec, sql, "no such table");
  }
}
