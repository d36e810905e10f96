// Reading one data-changing statement for undo (R-SQL-1): its kind, its
// table, and where its clauses are in the text, so that Synartesis can read
// the rows it will touch (the same WHERE, verbatim) and pin it to them. The
// reading is structural, over the dialect's tokens; the database's own parser
// then judges the statement and every text built from it (SQLite compiles
// them against a copy of the schema, schema.ts; PostgreSQL's grammar reads
// them, postgres/statement.ts), so a reading that differs from the
// database's is held instead of guessed.
import { lex, POSTGRES, SQLITE, type Token } from "./lexer.ts";
import { hasSideEffects } from "./side-effects.ts";

export type SqlDialect = "sqlite" | "postgres";

/** A stretch of the statement's text: [start, end). */
export type Span = readonly [number, number];

export interface TableRef {
  /** PostgreSQL: the schema it names, if it names one. */
  schema?: string;
  name: string;
  /** The alias the statement gives it (its WHERE may use it). */
  alias?: string;
  /** The table and its alias as written (`customers AS c`). */
  span: Span;
}

export type Statement =
  | { kind: "delete"; table: TableRef; where?: Span; returning?: Span }
  | { kind: "update"; table: TableRef; columns: string[]; where?: Span; returning?: Span; setEnd: number }
  | {
      kind: "insert";
      table: TableRef;
      /** The columns it names, when it names them. */
      columns?: string[];
      source: "values" | "select" | "default";
      /** The SELECT that gives the rows (INSERT … SELECT). */
      select?: Span;
      /** Each VALUES row's expressions, as spans. */
      rows?: Span[][];
      /** What it does with a row whose key or unique value exists (an upsert; SQLite's INSERT OR IGNORE is "nothing"). */
      onConflict?: OnConflict;
      returning?: Span;
    };

/** An upsert's ON CONFLICT: the columns (or, in PostgreSQL, the constraint) it names, and what it does then. */
export interface OnConflict {
  target?: string[];
  constraint?: string;
  action: "nothing" | "update";
  /** The columns its DO UPDATE sets. */
  columns: string[];
}

/** What a text is, for undo: one statement it can record, or why a person must decide (held). */
export type Reading = { statement: Statement; text: string } | { held: string };

const TRANSACTION = new Set(["BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE"]);
const SCHEMA = new Set(["CREATE", "DROP", "ALTER"]);

/** Read `text` as one statement that changes data, in `dialect`. */
export function readStatement(text: string, dialect: SqlDialect = "sqlite"): Reading {
  const lexed = lex(text, dialect === "postgres" ? POSTGRES : SQLITE);
  if (lexed.error) return { held: `the SQL cannot be read (${lexed.error.reason})` };
  const tokens = lexed.tokens;
  const ends = tokens.findIndex((token, index) => token.kind === "punct" && token.text === ";" && depthAt(tokens, index) === 0);
  if (ends >= 0 && tokens.slice(ends + 1).some((token) => !(token.kind === "punct" && token.text === ";"))) {
    return { held: "it runs several statements in one call" };
  }
  const body = ends >= 0 ? tokens.slice(0, ends) : tokens;
  if (body.length === 0) return { held: "there is no statement" };
  const first = body[0]!;
  const word = first.kind === "word" ? first.text : "";
  if (TRANSACTION.has(word)) return { held: "it controls a transaction (BEGIN, COMMIT, ROLLBACK, SAVEPOINT)" };
  if (SCHEMA.has(word)) return { held: `it changes the schema (${word}): a schema change is not undone` };
  if (word === "WITH") return { held: "a statement with a WITH clause is not yet undone by Synartesis" };
  if (word === "REPLACE" && dialect === "sqlite") return { held: "REPLACE may delete rows other than those it names: not undone" };
  // A function that changes something is outside the rows undo puts back (and reading its rows first could run it twice).
  // PostgreSQL's grammar finds these where they are (postgres/statement.ts).
  const writer =
    dialect === "sqlite" &&
    body.find((token, i) => token.kind === "word" && body[i + 1]?.kind === "punct" && body[i + 1]?.text === "(" && hasSideEffects(token.text));
  if (writer) return { held: `it calls ${writer.text.toLowerCase()}(), which has side effects outside the rows Synartesis reads` };
  const reader = new Reader(text, body, dialect);
  try {
    const statement = word === "DELETE" ? reader.delete() : word === "UPDATE" ? reader.update() : word === "INSERT" ? reader.insert() : undefined;
    if (!statement) return { held: `${word || "this statement"} is not one Synartesis can undo (it undoes INSERT, UPDATE and DELETE)` };
    return { statement, text: text.slice(0, body.at(-1)!.end) };
  } catch (error) {
    if (error instanceof Unreadable) return { held: error.message };
    throw error;
  }
}

/** The parenthesis depth just before tokens[index]. */
function depthAt(tokens: Token[], index: number): number {
  let depth = 0;
  for (let i = 0; i < index; i++) {
    const token = tokens[i]!;
    if (token.kind !== "punct") continue;
    if (token.text === "(") depth++;
    else if (token.text === ")") depth--;
  }
  return depth;
}

class Unreadable extends Error {}

/** Walks the tokens of one statement, clause by clause, at parenthesis depth 0. */
class Reader {
  private at = 0;

  constructor(
    private readonly text: string,
    private readonly tokens: Token[],
    private readonly dialect: SqlDialect,
  ) {}

  delete(): Statement {
    this.expect("DELETE");
    this.expect("FROM");
    const table = this.tableRef();
    if (this.isWord("USING")) throw new Unreadable("a DELETE … USING (a join) is not yet undone by Synartesis");
    return { kind: "delete", table, ...this.whereAndReturning() };
  }

  update(): Statement {
    this.expect("UPDATE");
    if (this.isWord("OR")) throw new Unreadable("UPDATE OR … may delete rows other than those it names: not undone");
    const table = this.tableRef();
    const columns = this.setList(["WHERE", "FROM", "RETURNING", "ORDER", "LIMIT"]);
    const setEnd = this.previousEnd();
    if (this.isWord("FROM")) throw new Unreadable("an UPDATE … FROM (a join) is not yet undone by Synartesis");
    return { kind: "update", table, columns, setEnd, ...this.whereAndReturning() };
  }

  insert(): Statement {
    this.expect("INSERT");
    let ignore = false;
    if (this.isWord("OR")) {
      this.next();
      const action = this.word();
      if (action === "REPLACE") throw new Unreadable("INSERT OR REPLACE may delete rows other than those it names: not undone");
      if (action !== "IGNORE" && action !== "ABORT" && action !== "FAIL" && action !== "ROLLBACK") throw new Unreadable(`INSERT OR ${action} cannot be read`);
      ignore = action === "IGNORE";
    }
    this.expect("INTO");
    const table = this.tableRef(true);
    let columns: string[] | undefined;
    if (this.isPunct("(")) {
      this.next();
      columns = this.names();
      this.expectPunct(")");
    }
    if (this.dialect === "postgres" && this.isWord("OVERRIDING")) {
      // OVERRIDING SYSTEM VALUE | OVERRIDING USER VALUE: which values an identity column takes.
      this.next();
      this.word();
      this.expect("VALUE");
    }
    let source: "values" | "select" | "default";
    let rows: Span[][] | undefined;
    let select: Span | undefined;
    if (this.isWord("DEFAULT")) {
      this.next();
      this.expect("VALUES");
      source = "default";
    } else if (this.isWord("VALUES")) {
      this.next();
      source = "values";
      rows = [];
      for (;;) {
        this.expectPunct("(");
        const row: Span[] = [];
        for (;;) {
          const start = this.current().start;
          this.skipExpression([], [",", ")"]);
          row.push([start, this.previousEnd()]);
          if (!this.isPunct(",")) break;
          this.next();
        }
        this.expectPunct(")");
        rows.push(row);
        if (!this.isPunct(",")) break;
        this.next();
      }
    } else if (this.isWord("SELECT") || this.isWord("WITH")) {
      source = "select";
      const start = this.current().start;
      this.skipExpression(["ON", "RETURNING"], []);
      select = [start, this.previousEnd()];
    } else {
      throw new Unreadable("the INSERT gives its rows in a form that cannot be read");
    }
    if (ignore && this.isWord("ON")) throw new Unreadable("INSERT OR IGNORE with an ON CONFLICT clause is not read by Synartesis");
    // INSERT OR IGNORE skips a row that conflicts, as DO NOTHING does.
    const onConflict = this.isWord("ON") ? this.onConflict() : ignore ? { action: "nothing" as const, columns: [] } : undefined;
    const returning = this.returning();
    this.end();
    return {
      kind: "insert",
      table,
      ...(columns && { columns }),
      source,
      ...(rows && { rows }),
      ...(select && { select }),
      ...(onConflict && { onConflict }),
      ...(returning && { returning }),
    };
  }

  /** `ON CONFLICT [(column, …) | ON CONSTRAINT name] DO NOTHING | DO UPDATE SET … [WHERE …]`, once. */
  private onConflict(): OnConflict {
    this.expect("ON");
    this.expect("CONFLICT");
    let target: string[] | undefined;
    let constraint: string | undefined;
    if (this.isPunct("(")) {
      this.next();
      target = this.names();
      if (!this.isPunct(")")) throw new Unreadable("a conflict target other than plain columns is not read by Synartesis");
      this.next();
      if (this.isWord("WHERE")) throw new Unreadable("a conflict target with a WHERE (a partial index) is not read by Synartesis");
    } else if (this.dialect === "postgres" && this.isWord("ON")) {
      this.next();
      this.expect("CONSTRAINT");
      constraint = this.name();
    }
    this.expect("DO");
    let action: OnConflict["action"] = "nothing";
    let columns: string[] = [];
    if (this.isWord("NOTHING")) {
      this.next();
    } else {
      this.expect("UPDATE");
      action = "update";
      columns = this.setList(["WHERE", "RETURNING", "ON"]);
      if (this.isWord("WHERE")) {
        this.next();
        this.skipExpression(["RETURNING", "ON"], []);
      }
    }
    if (this.isWord("ON")) throw new Unreadable("several ON CONFLICT clauses are not read by Synartesis");
    return { ...(target && { target }), ...(constraint !== undefined && { constraint }), action, columns };
  }

  /** `SET column = expr, (a, b) = …`: the columns it sets, up to one of `stopWords`. */
  private setList(stopWords: string[]): string[] {
    this.expect("SET");
    const columns: string[] = [];
    for (;;) {
      if (this.isPunct("(")) {
        this.next();
        columns.push(...this.names());
        this.expectPunct(")");
      } else {
        columns.push(this.name());
      }
      this.expectPunct("=");
      this.skipExpression(stopWords, [","]);
      if (!this.isPunct(",")) break;
      this.next();
    }
    return columns;
  }

  // ---- clauses ----

  /** `[schema.]table [AS alias] [INDEXED BY name | NOT INDEXED]`; PostgreSQL: `[ONLY] [schema.]table [*] [[AS] alias]`. */
  private tableRef(insert = false): TableRef {
    const postgres = this.dialect === "postgres";
    if (postgres && this.isWord("ONLY")) throw new Unreadable("ONLY (a table without its inheritors) is not read by Synartesis");
    const start = this.current().start;
    let name = this.name();
    let schema: string | undefined;
    if (this.isPunct(".")) {
      this.next();
      schema = name;
      name = this.name();
      if (!postgres && schema.toLowerCase() !== "main") throw new Unreadable(`a table of the attached database "${schema}" is not undone by Synartesis`);
      if (!postgres) schema = undefined;
    }
    if (postgres && this.isPunct("*")) throw new Unreadable("table * (a table with its inheritors, said so) is not read by Synartesis");
    let alias: string | undefined;
    const following = this.tokens[this.at];
    if (this.isWord("AS")) {
      this.next();
      alias = this.name();
    } else if (!insert && following?.kind === "quoted") {
      alias = this.name();
    } else if (!insert && following?.kind === "word" && !KEYWORDS_AFTER_TABLE.has(following.text)) {
      alias = this.name();
    }
    const end = this.previousEnd();
    if (this.isWord("INDEXED") || this.isWord("NOT")) throw new Unreadable("INDEXED BY / NOT INDEXED is not read by Synartesis");
    return { ...(schema !== undefined && { schema }), name, ...(alias && { alias }), span: [start, end] };
  }

  private whereAndReturning(): { where?: Span; returning?: Span } {
    let where: Span | undefined;
    if (this.isWord("WHERE")) {
      this.next();
      if (this.isWord("CURRENT")) throw new Unreadable("WHERE CURRENT OF (a cursor's row) is not read by Synartesis");
      const start = this.current().start;
      this.skipExpression(["RETURNING", "ORDER", "LIMIT"], []);
      where = [start, this.previousEnd()];
    }
    const returning = this.returning();
    if (this.isWord("ORDER") || this.isWord("LIMIT")) throw new Unreadable("ORDER BY / LIMIT on a DELETE or UPDATE is not read by Synartesis");
    this.end();
    return { ...(where && { where }), ...(returning && { returning }) };
  }

  private returning(): Span | undefined {
    if (!this.isWord("RETURNING")) return undefined;
    const start = this.current().start;
    this.next();
    this.skipExpression(["ORDER", "LIMIT"], []);
    return [start, this.previousEnd()];
  }

  /** Past an expression: up to one of `stopWords` or `stopPuncts` at depth 0 (or the end). Parentheses must balance. */
  private skipExpression(stopWords: string[], stopPuncts: string[]): void {
    let depth = 0;
    const start = this.at;
    while (this.at < this.tokens.length) {
      const token = this.current();
      if (depth === 0 && token.kind === "word" && stopWords.includes(token.text)) break;
      if (depth === 0 && token.kind === "punct" && stopPuncts.includes(token.text)) break;
      if (token.kind === "punct" && token.text === "(") depth++;
      if (token.kind === "punct" && token.text === ")") {
        if (depth === 0) break;
        depth--;
      }
      this.at++;
    }
    if (depth !== 0) throw new Unreadable("its parentheses do not balance");
    if (this.at === start) throw new Unreadable(`an expression is missing near ${this.near()}`);
  }

  // ---- tokens ----

  private current(): Token {
    const token = this.tokens[this.at];
    if (!token) throw new Unreadable("the statement ends too soon");
    return token;
  }

  private next(): void {
    this.at++;
  }

  private previousEnd(): number {
    return this.tokens[this.at - 1]!.end;
  }

  private isWord(word: string): boolean {
    const token = this.tokens[this.at];
    return token?.kind === "word" && token.text === word;
  }

  private isPunct(punct: string): boolean {
    const token = this.tokens[this.at];
    return token?.kind === "punct" && token.text === punct;
  }

  private expect(word: string): void {
    if (!this.isWord(word)) throw new Unreadable(`${word} was expected near ${this.near()}`);
    this.next();
  }

  private expectPunct(punct: string): void {
    if (!this.isPunct(punct)) throw new Unreadable(`"${punct}" was expected near ${this.near()}`);
    this.next();
  }

  private word(): string {
    const token = this.current();
    if (token.kind !== "word") throw new Unreadable(`a keyword was expected near ${this.near()}`);
    this.next();
    return token.text;
  }

  /** `name, name, …`: one or more names, separated by commas. */
  private names(): string[] {
    const names = [this.name()];
    while (this.isPunct(",")) {
      this.next();
      names.push(this.name());
    }
    return names;
  }

  /** An identifier: a bare word as written, or a quoted name. */
  private name(): string {
    const token = this.current();
    if (token.kind === "quoted") {
      this.next();
      return token.text;
    }
    if (token.kind === "word" && !RESERVED.has(token.text)) {
      this.next();
      const written = this.text.slice(token.start, token.end);
      // PostgreSQL folds a name that is not quoted to lower case.
      return this.dialect === "postgres" ? written.toLowerCase() : written;
    }
    throw new Unreadable(`a name was expected near ${this.near()}`);
  }

  private end(): void {
    if (this.at < this.tokens.length) throw new Unreadable(`the statement goes on where it should end, near ${this.near()}`);
  }

  private near(): string {
    const token = this.tokens[this.at];
    return token ? JSON.stringify(this.text.slice(token.start, Math.min(token.end, token.start + 20))) : "its end";
  }
}

/** Words that follow a table name and are not its alias. */
const KEYWORDS_AFTER_TABLE = new Set(["WHERE", "SET", "RETURNING", "ORDER", "LIMIT", "INDEXED", "NOT", "AS", "FROM", "USING"]);

/** Words that are never a bare name here. */
const RESERVED = new Set(["SELECT", "FROM", "WHERE", "SET", "VALUES", "DEFAULT", "RETURNING", "ORDER", "LIMIT", "AND", "OR", "NOT", "NULL", "ON"]);
