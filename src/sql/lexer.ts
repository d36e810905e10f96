// Splitting SQL text into tokens the way a database would, for the read-only
// heuristic (proxy/policy/readonly-sql.ts) and the reading of a statement SQL
// undo records (statement.ts), which needs where each token is. Each dialect differs in what starts a comment,
// a string or a quoted name: a difference an agent could use to hide a write.

type TokenKind = "word" | "quoted" | "string" | "number" | "param" | "punct";

export interface Token {
  kind: TokenKind;
  /** word: upper-cased; quoted identifier: its name; punct: the character; otherwise unused. */
  text: string;
  /** Where it is in the text: [start, end). */
  start: number;
  end: number;
}

/** How one SQL dialect splits text into tokens. */
export interface Dialect {
  label: string;
  nestedComments: boolean;
  dollarQuotes: boolean;
  eStrings: boolean;
  /** Backslash escapes in plain '…' (and, with doubleQuoteIsString, "…") literals. */
  backslashEscapes: boolean;
  doubleQuoteIsString: boolean;
  hashComments: boolean;
  /** MySQL: `--` starts a comment only when followed by whitespace. */
  dashCommentNeedsSpace: boolean;
  backticks: boolean;
  brackets: boolean;
  /** MySQL runs the text inside `/*! … *\/` comments. */
  executableComments: boolean;
}

// PostgreSQL is the reading that decides. The other two are cross-checks for text that
// another common database would split differently (no dollar quotes, `#` comments,
// backslash escapes, non-nesting comments, [bracket] identifiers) and so could hide a write.
export const POSTGRES: Dialect = {
  label: "PostgreSQL",
  nestedComments: true,
  dollarQuotes: true,
  eStrings: true,
  backslashEscapes: false,
  doubleQuoteIsString: false,
  hashComments: false,
  dashCommentNeedsSpace: false,
  backticks: false,
  brackets: false,
  executableComments: false,
};
const MYSQL: Dialect = {
  label: "MySQL",
  nestedComments: false,
  dollarQuotes: false,
  eStrings: false,
  backslashEscapes: true,
  doubleQuoteIsString: true,
  hashComments: true,
  dashCommentNeedsSpace: true,
  backticks: true,
  brackets: false,
  executableComments: true,
};
const SQLITE_OR_MSSQL: Dialect = {
  label: "SQLite or SQL Server",
  nestedComments: false,
  dollarQuotes: false,
  eStrings: false,
  backslashEscapes: false,
  doubleQuoteIsString: false,
  hashComments: false,
  dashCommentNeedsSpace: false,
  backticks: true,
  brackets: true,
  executableComments: false,
};
export const CROSS_CHECKS: readonly Dialect[] = [MYSQL, SQLITE_OR_MSSQL];
/** SQLite's own reading ('…' strings, "…", […] and `…` names, no backslash escapes). */
export const SQLITE: Dialect = SQLITE_OR_MSSQL;

export interface Lexed {
  tokens: Token[];
  /** Where the lexer gave up; `hazard` when the reason is something that runs, not a syntax error. */
  error?: { reason: string; hazard: boolean };
}

export function lex(sql: string, d: Dialect): Lexed {
  const tokens: Token[] = [];
  let i = 0;
  const push = (token: { kind: TokenKind; text: string }, end: number) => tokens.push({ ...token, start: i, end });
  const fail = (reason: string, hazard = false): Lexed => ({ tokens, error: { reason, hazard } });
  const n = sql.length;
  while (i < n) {
    const c = sql[i]!;
    const next = sql[i + 1];
    if (/\s/.test(c)) {
      i++;
    } else if (c === "-" && next === "-" && (!d.dashCommentNeedsSpace || i + 2 >= n || sql.charCodeAt(i + 2) <= 32)) {
      i = lineEnd(sql, i);
    } else if (c === "#" && d.hashComments) {
      i = lineEnd(sql, i);
    } else if (c === "/" && next === "*") {
      if (d.executableComments && (sql[i + 2] === "!" || sql.startsWith("M!", i + 2))) {
        return fail("it runs the code inside /*! … */ comments", true);
      }
      const end = blockCommentEnd(sql, i, d.nestedComments);
      if (end < 0) return fail("unterminated /* comment");
      i = end;
    } else if (c === "'") {
      const end = quotedEnd(sql, i, "'", d.backslashEscapes);
      if (end < 0) return fail("unterminated string literal");
      push({ kind: "string", text: "" }, end);
      i = end;
    } else if (c === '"') {
      const end = quotedEnd(sql, i, '"', d.doubleQuoteIsString && d.backslashEscapes);
      if (end < 0) return fail(d.doubleQuoteIsString ? "unterminated string literal" : "unterminated quoted identifier");
      push(d.doubleQuoteIsString ? { kind: "string", text: "" } : quotedName(sql, i, end, '"'), end);
      i = end;
    } else if ((c === "`" && d.backticks) || (c === "[" && d.brackets)) {
      const close = c === "[" ? "]" : "`";
      const end = quotedEnd(sql, i, close, false);
      if (end < 0) return fail("unterminated quoted identifier");
      push(quotedName(sql, i, end, close), end);
      i = end;
    } else if (c === "$" && d.dollarQuotes && next !== undefined && isDigit(next)) {
      let j = i + 1;
      while (j < n && isDigit(sql[j]!)) j++;
      push({ kind: "param", text: sql.slice(i, j) }, j);
      i = j;
    } else if (c === "$" && d.dollarQuotes && dollarTag(sql, i)) {
      const tag = dollarTag(sql, i)!;
      const close = sql.indexOf(tag, i + tag.length);
      if (close < 0) return fail("unterminated dollar-quoted string");
      push({ kind: "string", text: "" }, close + tag.length);
      i = close + tag.length;
    } else if (isWordStart(c, d)) {
      let j = i + 1;
      while (j < n && isWordPart(sql[j]!)) j++;
      const word = sql.slice(i, j);
      if (d.eStrings && (word === "e" || word === "E") && sql[j] === "'") {
        const end = quotedEnd(sql, j, "'", true);
        if (end < 0) return fail("unterminated string literal");
        push({ kind: "string", text: "" }, end);
        i = end;
      } else {
        push({ kind: "word", text: word.toUpperCase() }, j);
        i = j;
      }
    } else if (isDigit(c)) {
      // Letters after the digits start a new word, so `1INTO` still shows its INTO.
      let j = i + 1;
      while (j < n && (isDigit(sql[j]!) || sql[j] === ".")) j++;
      push({ kind: "number", text: sql.slice(i, j) }, j);
      i = j;
    } else {
      push({ kind: "punct", text: c }, i + 1);
      i++;
    }
  }
  return { tokens };
}

function lineEnd(sql: string, from: number): number {
  let j = from;
  while (j < sql.length && sql[j] !== "\n" && sql[j] !== "\r") j++;
  return j;
}

/** Index just past the comment that opens at `start`, or -1 when it never closes. */
function blockCommentEnd(sql: string, start: number, nested: boolean): number {
  let depth = 1;
  let j = start + 2;
  while (j < sql.length) {
    if (sql.startsWith("*/", j)) {
      j += 2;
      if (--depth === 0) return j;
    } else if (nested && sql.startsWith("/*", j)) {
      depth++;
      j += 2;
    } else {
      j++;
    }
  }
  return -1;
}

/** Index just past the closing `close` (doubled means literal), or -1 when it never closes. */
function quotedEnd(sql: string, open: number, close: string, backslashEscapes: boolean): number {
  let j = open + 1;
  while (j < sql.length) {
    const c = sql[j];
    if (backslashEscapes && c === "\\") {
      j += 2;
    } else if (c === close) {
      if (sql[j + 1] !== close) return j + 1;
      j += 2;
    } else {
      j++;
    }
  }
  return -1;
}

function quotedName(sql: string, open: number, end: number, close: string): { kind: TokenKind; text: string } {
  return { kind: "quoted", text: sql.slice(open + 1, end - 1).replaceAll(close + close, close) };
}

/** `$tag$` or `$$` starting at `at`, if that is what is there. */
function dollarTag(sql: string, at: number): string | undefined {
  let j = at + 1;
  if (j < sql.length && sql[j] !== "$") {
    if (!isIdentStart(sql[j]!)) return undefined;
    while (j < sql.length && (isIdentStart(sql[j]!) || isDigit(sql[j]!))) j++;
  }
  return sql[j] === "$" ? sql.slice(at, j + 1) : undefined;
}

function isDigit(c: string): boolean {
  return c >= "0" && c <= "9";
}

function isIdentStart(c: string): boolean {
  return (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || c === "_" || c.charCodeAt(0) >= 0x80;
}

// PostgreSQL's `$` can only continue a name (a leading one is a parameter or a dollar
// quote); MySQL, SQLite and SQL Server also accept it at the start.
function isWordStart(c: string, d: Dialect): boolean {
  return isIdentStart(c) || (c === "$" && !d.dollarQuotes);
}

function isWordPart(c: string): boolean {
  return isIdentStart(c) || isDigit(c) || c === "$";
}
