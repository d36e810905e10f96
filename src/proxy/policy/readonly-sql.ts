// The `gate: on_write` heuristic (R-GATE-5): SQL text counts as read-only only when it can
// confidently be read as one read-only statement; anything else is gated for a person.
import { CROSS_CHECKS, lex, POSTGRES, type Dialect, type Token } from "../../sql/lexer.ts";
import { hasSideEffects } from "../../sql/side-effects.ts";

export interface SqlClassification {
  readOnly: boolean;
  /** Short sentence for the person deciding whether to approve. */
  reason: string;
}

interface Verdict {
  readOnly: boolean;
  reason: string;
  /** The text could not be parsed at all: a database would reject it with a syntax error. */
  unreadable?: boolean;
  /** Leading keyword of a statement that changes something, for the WITH / EXPLAIN wrappers. */
  keyword?: string;
}

const EFFECTS: ReadonlyMap<string, string> = new Map([
  ...["INSERT", "UPDATE", "DELETE", "MERGE", "UPSERT", "REPLACE", "TRUNCATE"].map((k) => [k, "modifies data"] as const),
  ["COPY", "moves data between tables and files"],
  ["LOAD", "loads data or code"],
  ...["CREATE", "DROP", "ALTER", "RENAME", "COMMENT"].map((k) => [k, "changes the schema"] as const),
  ...["GRANT", "REVOKE", "DENY", "REASSIGN"].map((k) => [k, "changes permissions"] as const),
  ...["CALL", "DO", "EXEC", "EXECUTE"].map((k) => [k, "runs code that may modify data"] as const),
  ...["BEGIN", "START", "COMMIT", "END", "ROLLBACK", "ABORT", "SAVEPOINT", "RELEASE"].map((k) => [k, "controls transactions"] as const),
  ["PREPARE", "defines a statement to run later"],
  ...["SET", "RESET"].map((k) => [k, "changes settings"] as const),
  ["LOCK", "takes locks"],
  ["UNLOCK", "releases locks"],
  ...["VACUUM", "ANALYZE", "ANALYSE", "CLUSTER", "REINDEX", "REFRESH", "CHECKPOINT", "OPTIMIZE"].map((k) => [k, "does maintenance work that writes"] as const),
  ["NOTIFY", "sends a notification"],
  ...["KILL", "SHUTDOWN"].map((k) => [k, "stops sessions or the server"] as const),
]);

// Statement keywords that have no business inside a read-only query. This also catches
// SQL Server batches, which run `SELECT 1 DELETE FROM t` as two statements without a `;`.
const FORBIDDEN_IN_QUERY: ReadonlySet<string> = new Set([
  "INSERT",
  "UPDATE",
  "DELETE",
  "MERGE",
  "UPSERT",
  "TRUNCATE",
  "CREATE",
  "DROP",
  "ALTER",
  "GRANT",
  "REVOKE",
  "EXEC",
  "EXECUTE",
  "KILL",
  "SHUTDOWN",
]);
// MySQL also has INSERT(str, …) and TRUNCATE(x, d) as ordinary functions.
const ALSO_PLAIN_FUNCTIONS: ReadonlySet<string> = new Set(["INSERT", "TRUNCATE"]);

const QUERY_STARTS: ReadonlySet<string> = new Set(["SELECT", "WITH", "VALUES", "TABLE"]);
// What a plain EXPLAIN (no ANALYZE) may plan without running it.
const PLANNABLE: ReadonlySet<string> = new Set(["SELECT", "WITH", "VALUES", "TABLE", "INSERT", "UPDATE", "DELETE", "MERGE", "REPLACE", "EXECUTE"]);
const MAIN_STATEMENT_STARTS: ReadonlySet<string> = new Set(["SELECT", "VALUES", "TABLE", "INSERT", "UPDATE", "DELETE", "MERGE"]);
const LOCK_CLAUSE_WORDS: ReadonlySet<string> = new Set(["UPDATE", "SHARE", "NO", "KEY"]);
const FALSE_WORDS: ReadonlySet<string> = new Set(["FALSE", "OFF", "NO", "0"]);

export function classifySql(sql: string): SqlClassification {
  const lexed = lex(sql, POSTGRES);
  if (lexed.error) return { readOnly: false, reason: lexed.error.reason };
  const statements = splitStatements(lexed.tokens).filter((s) => s.length > 0);
  if (statements.length === 0) {
    const onlyComments = lexed.tokens.length === 0 && sql.trim() !== "";
    return { readOnly: false, reason: onlyComments ? "only comments, no statement" : "empty statement" };
  }
  if (statements.length > 1) {
    return { readOnly: false, reason: statements.length === 2 ? "two statements" : `${statements.length} statements` };
  }
  const verdict = classifyTop(statements[0]!);
  if (!verdict.readOnly) return { readOnly: false, reason: verdict.reason };
  for (const dialect of CROSS_CHECKS) {
    const hazard = crossCheck(sql, dialect);
    if (hazard) return { readOnly: false, reason: `${dialect.label} would read it differently: ${hazard}` };
  }
  return { readOnly: true, reason: verdict.reason };
}

/**
 * The SQL texts in a tool call's arguments: every present one of `sql`, `query`,
 * `statement` (all are checked, so a harmless one cannot vouch for another),
 * else the only string value. Undefined (so the call is gated) when there is
 * none, when one of those keys holds something other than a string, or when
 * other values are arrays/objects that could carry more SQL than we would check.
 */
export function extractSql(args: unknown): string[] | undefined {
  if (typeof args !== "object" || args === null || Array.isArray(args)) return undefined;
  const record = args as Record<string, unknown>;
  const texts: string[] = [];
  for (const key of ["sql", "query", "statement"]) {
    const value = record[key];
    if (value === undefined || value === null) continue;
    if (typeof value !== "string") return undefined;
    texts.push(value);
  }
  if (texts.length) return texts;
  const values = Object.values(record);
  const strings = values.filter((v): v is string => typeof v === "string");
  const onlyScalars = values.every((v) => typeof v !== "object" || v === null);
  return strings.length === 1 && onlyScalars ? strings : undefined;
}

/** Does another dialect's reading of the text run something that is not read-only? */
function crossCheck(sql: string, dialect: Dialect): string | undefined {
  const lexed = lex(sql, dialect);
  if (lexed.error?.hazard) return lexed.error.reason;
  const segments = splitStatements(lexed.tokens);
  // The statement the lexer gave up in is a syntax error there, and nothing after it runs.
  if (lexed.error) segments.pop();
  for (const statement of segments) {
    if (statement.length === 0) continue;
    const verdict = classifyTop(statement);
    if (verdict.readOnly) continue;
    if (verdict.unreadable) return undefined;
    return verdict.reason;
  }
  return undefined;
}

function classifyTop(tokens: Token[]): Verdict {
  let depth = 0;
  for (const token of tokens) {
    if (isPunct(token, "(")) depth++;
    else if (isPunct(token, ")") && --depth < 0) break;
  }
  if (depth !== 0) return unreadable("unbalanced parentheses");
  return classifyStatement(tokens);
}

function classifyStatement(tokens: Token[]): Verdict {
  const first = tokens[0];
  if (!first) return unreadable("empty statement");
  if (isPunct(first, "(")) {
    const keyword = leadingKeyword(tokens);
    if (!keyword || !QUERY_STARTS.has(keyword)) return unreadable("a parenthesis that does not hold a query");
    return scanQuery(tokens) ?? readOnly("a single parenthesised query");
  }
  if (first.kind !== "word") return unreadable("does not start with a statement keyword");
  switch (first.text) {
    case "SELECT":
      return scanQuery(tokens) ?? readOnly("a single SELECT statement");
    case "VALUES":
      return scanQuery(tokens) ?? readOnly("a single VALUES list");
    case "TABLE":
      return scanQuery(tokens) ?? readOnly("TABLE only reads a table");
    case "WITH":
      return classifyWith(tokens);
    case "SHOW":
      return readOnly("SHOW only reads settings or metadata");
    case "EXPLAIN":
    case "DESCRIBE":
    case "DESC":
      return classifyExplain(tokens);
  }
  const effect = EFFECTS.get(first.text);
  if (effect) return { readOnly: false, reason: `${first.text} ${effect}`, keyword: first.text };
  return { readOnly: false, reason: `${first.text} is not a known read-only statement` };
}

/** The first thing in a query that locks, writes or has side effects, if any. */
function scanQuery(tokens: Token[]): Verdict | undefined {
  for (let k = 0; k < tokens.length; k++) {
    const token = tokens[k]!;
    const next = tokens[k + 1];
    const calls = isPunct(next, "(");
    if (token.kind === "word") {
      if (token.text === "FOR" && next?.kind === "word" && LOCK_CLAUSE_WORDS.has(next.text)) {
        const clause: string[] = [];
        for (let m = k; m < tokens.length && m < k + 4; m++) {
          clause.push(tokens[m]!.text);
          if (tokens[m]!.text === "UPDATE" || tokens[m]!.text === "SHARE") break;
        }
        return { readOnly: false, reason: `SELECT … ${clause.join(" ")} takes row locks` };
      }
      if (token.text === "LOCK" && isWord(next, "IN")) {
        return { readOnly: false, reason: "SELECT … LOCK IN SHARE MODE takes row locks" };
      }
      if (token.text === "INTO") {
        const toFile = isWord(next, "OUTFILE") || isWord(next, "DUMPFILE");
        return { readOnly: false, reason: toFile ? "SELECT … INTO writes a file" : "SELECT … INTO creates a table" };
      }
      if (FORBIDDEN_IN_QUERY.has(token.text) && !(calls && ALSO_PLAIN_FUNCTIONS.has(token.text))) {
        return {
          readOnly: false,
          reason: `the query contains ${token.text}, which ${EFFECTS.get(token.text) ?? "is not read-only"}`,
        };
      }
    }
    if ((token.kind === "word" || token.kind === "quoted") && calls) {
      const name = token.text.toLowerCase();
      if (hasSideEffects(name)) {
        return { readOnly: false, reason: `calls ${name}(), which has side effects` };
      }
    }
  }
  return undefined;
}

// WITH [RECURSIVE] name [(cols)] AS [NOT] [MATERIALIZED] (body) [SEARCH …] [CYCLE …], … main
function classifyWith(tokens: Token[]): Verdict {
  const broken = unreadable("could not read the WITH clause");
  let k = isWord(tokens[1], "RECURSIVE") ? 2 : 1;
  for (;;) {
    const name = tokens[k];
    if (!name || (name.kind !== "word" && name.kind !== "quoted")) return broken;
    k++;
    if (isPunct(tokens[k], "(")) {
      const close = matchingParen(tokens, k);
      if (close < 0) return broken;
      k = close + 1;
    }
    if (!isWord(tokens[k], "AS")) return broken;
    k++;
    if (isWord(tokens[k], "NOT")) k++;
    if (isWord(tokens[k], "MATERIALIZED")) k++;
    if (!isPunct(tokens[k], "(")) return broken;
    const close = matchingParen(tokens, k);
    if (close < 0) return broken;
    const body = classifyStatement(tokens.slice(k + 1, close));
    if (!body.readOnly) return insideWith(body);
    k = close + 1;
    while (isWord(tokens[k], "SEARCH") || isWord(tokens[k], "CYCLE")) {
      k++;
      while (k < tokens.length && !isPunct(tokens[k], ",") && !startsMainStatement(tokens[k])) k++;
    }
    if (!isPunct(tokens[k], ",")) break;
    k++;
  }
  const main = tokens.slice(k);
  if (main.length === 0) return unreadable("WITH without a statement after it");
  const verdict = classifyStatement(main);
  if (!verdict.readOnly) return insideWith(verdict);
  return readOnly(`a single WITH … ${leadingKeyword(main) ?? "SELECT"} statement`);
}

function insideWith(verdict: Verdict): Verdict {
  if (verdict.unreadable || !verdict.keyword) return verdict;
  return { readOnly: false, reason: `WITH … ${verdict.reason}` };
}

// EXPLAIN [(option, …)] [ANALYZE] [VERBOSE] statement, with MySQL's FORMAT=… and
// DESCRIBE/DESC synonyms, and MySQL's `EXPLAIN table` / `DESCRIBE table [column]`.
function classifyExplain(tokens: Token[]): Verdict {
  const lead = tokens[0]!.text;
  let analyze = false;
  let k = 1;
  if (isPunct(tokens[k], "(") && !startsQuery(tokens[k + 1])) {
    const close = matchingParen(tokens, k);
    if (close < 0) return unreadable(`could not read the ${lead} options`);
    let start = k + 1;
    for (let m = k + 1; m <= close; m++) {
      if (m !== close && !isPunct(tokens[m], ",")) continue;
      const [name, value] = tokens.slice(start, m);
      const switchedOff = value !== undefined && m - start === 2 && FALSE_WORDS.has(value.text);
      if (name && (isWord(name, "ANALYZE") || isWord(name, "ANALYSE")) && !switchedOff) analyze = true;
      start = m + 1;
    }
    k = close + 1;
  }
  for (;;) {
    const token = tokens[k];
    if (isWord(token, "ANALYZE") || isWord(token, "ANALYSE")) {
      analyze = true;
      k++;
    } else if (isWord(token, "VERBOSE") || isWord(token, "EXTENDED") || isWord(token, "PARTITIONS")) {
      k++;
    } else if (isWord(token, "FORMAT") && isPunct(tokens[k + 1], "=") && tokens[k + 2]?.kind === "word") {
      k += 3;
    } else {
      break;
    }
  }
  const inner = tokens.slice(k);
  if (inner.length === 0) return unreadable(`${lead} without a statement`);
  const keyword = leadingKeyword(inner);
  if (analyze) {
    const verdict = classifyStatement(inner);
    if (verdict.readOnly) return readOnly(`${lead} ANALYZE runs a read-only ${keyword ?? "query"}`);
    if (verdict.unreadable) return verdict;
    if (verdict.keyword) return { readOnly: false, reason: `${lead} ANALYZE executes the ${verdict.keyword} it explains` };
    return { readOnly: false, reason: `${lead} ANALYZE executes the statement it explains: ${verdict.reason}` };
  }
  if (keyword && PLANNABLE.has(keyword)) return readOnly(`${lead} without ANALYZE only plans the ${keyword}`);
  if (isTableReference(inner)) return readOnly(`${lead} only reads a table's definition`);
  return unreadable(`${lead} of something that is not a query`);
}

/** `name[.name…] [column-or-pattern]`, as in MySQL's DESCRIBE. */
function isTableReference(tokens: Token[]): boolean {
  const isName = (t: Token | undefined) => t !== undefined && (t.kind === "quoted" || (t.kind === "word" && !EFFECTS.has(t.text)));
  if (!isName(tokens[0])) return false;
  let k = 1;
  while (isPunct(tokens[k], ".") && isName(tokens[k + 1])) k += 2;
  if (k < tokens.length && (isName(tokens[k]) || tokens[k]!.kind === "string")) k++;
  return k === tokens.length;
}

function splitStatements(tokens: Token[]): Token[][] {
  const statements: Token[][] = [[]];
  for (const token of tokens) {
    if (isPunct(token, ";")) statements.push([]);
    else statements[statements.length - 1]!.push(token);
  }
  return statements;
}

function leadingKeyword(tokens: Token[]): string | undefined {
  const first = tokens.find((t) => !isPunct(t, "("));
  return first?.kind === "word" ? first.text : undefined;
}

function matchingParen(tokens: Token[], open: number): number {
  let depth = 0;
  for (let k = open; k < tokens.length; k++) {
    if (isPunct(tokens[k], "(")) depth++;
    else if (isPunct(tokens[k], ")") && --depth === 0) return k;
  }
  return -1;
}

function startsQuery(token: Token | undefined): boolean {
  return isPunct(token, "(") || (token?.kind === "word" && QUERY_STARTS.has(token.text));
}

function startsMainStatement(token: Token | undefined): boolean {
  return isPunct(token, "(") || (token?.kind === "word" && MAIN_STATEMENT_STARTS.has(token.text));
}

function isWord(token: Token | undefined, word: string): boolean {
  return token?.kind === "word" && token.text === word;
}

function isPunct(token: Token | undefined, char: string): boolean {
  return token?.kind === "punct" && token.text === char;
}

function readOnly(reason: string): Verdict {
  return { readOnly: true, reason };
}

function unreadable(reason: string): Verdict {
  return { readOnly: false, reason, unreadable: true };
}
