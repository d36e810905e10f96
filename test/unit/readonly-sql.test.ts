// The `gate: on_write` SQL heuristic (R-GATE-5): which SQL texts pass as read-only, and why.
// Each row is [sql, expectedReadOnly, note]; the note records the decision.
import { describe, expect, test } from "bun:test";
import { classifySql, extractSql } from "../../src/proxy/policy/readonly-sql.ts";

type Row = [sql: string, readOnly: boolean, note: string];

const rows: Row[] = [
  // Plain reads, case and whitespace
  ["SELECT 1", true, "plain SELECT"],
  ["select * from users where id = 7", true, "lower case"],
  ["SeLeCt name FrOm users", true, "mixed case"],
  ["\n\n   \tSELECT 1", true, "leading newlines and whitespace"],
  [
    "SELECT count(*) FROM orders WHERE status IN ('new', 'paid') GROUP BY customer_id HAVING count(*) > 1 ORDER BY 1 LIMIT 10",
    true,
    "an ordinary reporting query",
  ],
  ["SELECT a FROM t1 JOIN t2 USING (id) WHERE EXISTS (SELECT 1 FROM t3)", true, "joins and subqueries"],
  ["(SELECT 1) UNION (SELECT 2)", true, "parenthesised set operation"],
  ["SELECT substring(name FROM 1 FOR 3) FROM users", true, "FOR inside substring() is not a locking clause"],
  ["SELECT $1", true, "a positional parameter, not a dollar quote"],

  // Semicolons and statement count: no second statement, however harmless
  ["SELECT 1;", true, "a trailing semicolon is allowed"],
  ["SELECT 1;  \n\t ", true, "trailing semicolon followed by whitespace"],
  ["SELECT 1; -- done", true, "line comment after the trailing semicolon"],
  ["SELECT 1 /* ok */ ;  -- trailing\n  /* more */ ;", true, "comments and empty statements after the semicolon"],
  ["SELECT 1; SELECT 2", false, "two statements: the rule is no second statement, even a read-only one"],
  ["SELECT 1; DELETE FROM t", false, "second statement writes"],
  ["", false, "empty string: nothing to read"],
  ["   \n ", false, "whitespace only"],
  [";", false, "only a semicolon: an empty statement"],

  // Comments
  ["-- just a comment", false, "only a line comment"],
  ["/* nothing here */", false, "only a block comment"],
  ["-- list users\nSELECT * FROM users", true, "leading line comment"],
  ["SELECT 1 -- ; DELETE FROM t", true, "semicolon and DELETE inside a trailing line comment"],
  ["select 1 -- ; drop table t", true, "lowercase select with ; inside a comment after it"],
  ["/* DELETE FROM t; */ SELECT 1", true, "keyword and semicolon inside a leading block comment"],
  ["SELECT 1 /* hide */; DELETE FROM t /* */", false, "comments next to a real second statement"],
  ["SELECT 1 /* a /* nested */ still comment */", true, "nested comment; where it ends matters to no reading"],
  ["SELECT 1 /* a /* b */ ; DELETE FROM t; */", false, "nested-looking comment: PostgreSQL nests, MySQL/SQLite end it at the first */ and run the DELETE"],
  ["SELECT 1 /* outer /* inner */", false, "PostgreSQL nests comments, so this one never closes"],
  ["/* unterminated SELECT 1", false, "unterminated block comment: cannot be read"],
  ["SELECT 1 /*!50000 ; DELETE FROM t */", false, "MySQL executes the text inside /*! */ comments"],
  ["SELECT 1 --x\n", true, "--x: a comment in PostgreSQL, minus minus x in MySQL; harmless both ways"],
  ["SELECT 1 --1; DELETE FROM t", false, "MySQL needs a space after --: there this is SELECT 1 - -1; DELETE FROM t"],
  ["SELECT 1 # ; DELETE FROM t", false, "# is an operator in PostgreSQL, so the ; starts a second statement"],
  ["SELECT data #>> '{a,b}' FROM docs", true, "#>> is a PostgreSQL JSON operator; MySQL would read a comment: harmless"],
  ["SELECT 1 # '\n; DELETE FROM t; -- '", false, "in MySQL # comments out the quote, exposing the DELETE"],

  // String literals and quoted identifiers
  ["SELECT 'a;DELETE FROM t'", true, "semicolon and keyword inside a string literal"],
  ["SELECT 'it''s'", true, "doubled quote inside a string"],
  ["SELECT 'it''s; DROP TABLE t'", true, "doubled quote, then ; and DROP still inside the string"],
  ["SELECT E'it\\'s; DELETE FROM t'", true, "E'' string: the backslash escapes the quote"],
  ["SELECT 'a\\'; DELETE FROM t; --'", false, "plain strings take no backslash escape in PostgreSQL: two statements"],
  ["SELECT 'unterminated", false, "unterminated string: cannot be read"],
  ['SELECT "delete" FROM t', true, "double-quoted identifier named like a keyword"],
  ['SELECT "a;b" FROM t', true, "semicolon inside a quoted identifier"],
  ['SELECT "unterminated FROM t', false, "unterminated quoted identifier"],
  ["SELECT `a;b` FROM t", false, "backtick names are punctuation in PostgreSQL, so it sees two statements"],
  ["SELECT data['] FROM t DELETE FROM t --']", false, "SQL Server/SQLite read [...] as a name, run `SELECT … DELETE FROM t` as two statements"],

  // Dollar quoting
  ["SELECT $$DELETE FROM t$$", true, "keyword inside a dollar-quoted string"],
  ["SELECT $fn$ it's a DELETE $fn$", true, "tagged dollar quote containing a quote and a keyword"],
  ["SELECT $a$ x $b$ y $a$", true, "a different tag inside does not close the quote"],
  ["SELECT $$a;DELETE FROM t$$", false, "one string in PostgreSQL, but MySQL/SQLite have no dollar quotes and would run DELETE FROM t$$"],
  ["SELECT $$unterminated", false, "unterminated dollar quote"],

  // WITH
  ["WITH a AS (SELECT 1) SELECT * FROM a", true, "WITH … SELECT"],
  ["WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM r WHERE n < 5) SELECT * FROM r", true, "recursive CTE"],
  ["WITH a AS MATERIALIZED (SELECT 1), b AS NOT MATERIALIZED (SELECT 2) SELECT * FROM a, b", true, "CTE options"],
  ['WITH "update" AS (SELECT 1) SELECT * FROM "update"', true, "CTE named like a keyword"],
  [
    "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM t) CYCLE n SET is_cycle USING path SELECT * FROM t",
    true,
    "the SET of a CYCLE clause is not a SET statement",
  ],
  ["WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x", false, "data-modifying CTE body"],
  ["with x as (update t set a = 1 returning a) select * from x", false, "data-modifying CTE body, lower case"],
  ["WITH a AS (SELECT 1), b AS (INSERT INTO t VALUES (1) RETURNING *) SELECT * FROM b", false, "second CTE writes"],
  ["WITH x AS (SELECT 1) DELETE FROM t", false, "WITH … DELETE main statement"],
  ["WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x", false, "WITH … INSERT main statement"],
  ["WITH x AS (SELECT 1) UPDATE t SET a = 1", false, "WITH … UPDATE main statement"],
  ["WITH a AS (WITH b AS (DELETE FROM t RETURNING *) SELECT * FROM b) SELECT * FROM a", false, "nested WITH writes"],
  ["WITH x AS (SELECT * FROM t FOR UPDATE) SELECT * FROM x", false, "locking inside a CTE"],
  ["WITH x AS (SELECT 1)", false, "WITH without a main statement"],

  // SELECT that is not just a read
  ["SELECT * INTO backup FROM users", false, "SELECT … INTO creates a table in PostgreSQL"],
  ["SELECT id INTO OUTFILE '/tmp/ids' FROM users", false, "SELECT … INTO OUTFILE writes a file in MySQL"],
  ["SELECT * FROM users FOR UPDATE", false, "FOR UPDATE takes row locks that block writers: gated"],
  ["SELECT * FROM users FOR NO KEY UPDATE", false, "row locks"],
  ["SELECT * FROM users FOR SHARE SKIP LOCKED", false, "row locks"],
  ["SELECT * FROM users FOR KEY SHARE", false, "row locks"],
  ["SELECT * FROM users LOCK IN SHARE MODE", false, "MySQL row locks"],
  ["SELECT * FROM (DELETE FROM t RETURNING *) x", false, "DELETE inside a subquery"],
  ["SELECT 1 DELETE FROM t", false, "SQL Server runs this as two statements without a semicolon"],
  ["SELECT (1", false, "unbalanced parentheses: cannot be read"],
  ["SELECT 1)", false, "unbalanced parentheses"],
  ["* FROM t", false, "does not start with a statement keyword"],

  // Functions with side effects: a short list of well-known ones is gated; user functions cannot be known
  ["SELECT nextval('s')", false, "nextval advances a sequence"],
  ["SELECT NEXTVAL ('s')", false, "any case, space before the parenthesis"],
  ["SELECT \"nextval\"('s')", false, "quoted function name"],
  ["SELECT setval('s', 42)", false, "setval changes a sequence"],
  ["SELECT pg_terminate_backend(1234)", false, "ends another session"],
  ["SELECT pg_cancel_backend(1234)", false, "cancels another session's query"],
  ["SELECT pg_catalog.set_config('search_path', 'x', false)", false, "schema-qualified set_config"],
  ["SELECT pg_advisory_xact_lock(1)", false, "advisory lock family (prefix match)"],
  ["SELECT lo_unlink(16403)", false, "deletes a large object"],
  ["SELECT dblink_exec('conn', 'DELETE FROM t')", false, "runs SQL on another database"],
  ["SELECT pg_reload_conf()", false, "reloads the server configuration"],
  ["SELECT nextval FROM counters", true, "a column named nextval is not a call"],
  ["SELECT my_func(1)", true, "user-defined functions cannot be known from the text: documented limitation"],
  ["SELECT replace(name, 'a', 'b'), insert('abc', 1, 1, 'x') FROM t", true, "replace() and MySQL insert() are plain functions"],

  // EXPLAIN
  ["EXPLAIN SELECT * FROM t", true, "EXPLAIN of a SELECT"],
  ["EXPLAIN ANALYZE SELECT * FROM t", true, "ANALYZE runs the query, which only reads"],
  ["EXPLAIN ANALYZE DELETE FROM t", false, "ANALYZE executes the DELETE it explains"],
  ["EXPLAIN ANALYSE UPDATE t SET a = 1", false, "British spelling of ANALYZE"],
  ["explain analyze verbose insert into t values (1)", false, "ANALYZE VERBOSE, lower case"],
  ["EXPLAIN (ANALYZE) DELETE FROM t", false, "ANALYZE in the option list"],
  ["EXPLAIN (ANALYZE, BUFFERS) INSERT INTO t VALUES (1)", false, "ANALYZE among other options"],
  ["EXPLAIN (FORMAT JSON, ANALYZE true) MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE", false, "ANALYZE true with MERGE"],
  ["EXPLAIN (ANALYZE false) DELETE FROM t", true, "ANALYZE switched off: only plans"],
  ["EXPLAIN DELETE FROM t", true, "without ANALYZE EXPLAIN only plans the DELETE and runs nothing: read-only"],
  ["EXPLAIN (COSTS OFF, VERBOSE) UPDATE t SET a = 1", true, "options without ANALYZE: only plans"],
  ["EXPLAIN ANALYZE SELECT nextval('s')", false, "ANALYZE runs a side-effecting function"],
  ["EXPLAIN ANALYZE WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x", false, "ANALYZE runs a writing CTE"],
  ["EXPLAIN FORMAT=JSON SELECT 1", true, "MySQL EXPLAIN option"],
  ["EXPLAIN", false, "nothing to explain"],

  // SHOW, DESCRIBE, VALUES, TABLE
  ["SHOW search_path", true, "SHOW only reads"],
  ["show tables", true, "MySQL SHOW, lower case"],
  ["DESCRIBE users", true, "DESCRIBE reads a table definition"],
  ["DESC users", true, "DESC is DESCRIBE"],
  ["DESC shop.users email", true, "DESCRIBE a column"],
  ["VALUES (1, 'a'), (2, 'b')", true, "VALUES list"],
  ["TABLE users", true, "TABLE t is SELECT * FROM t"],
  ["VALUES (nextval('s'))", false, "VALUES calling a side-effecting function"],

  // Statements that are not read-only
  ["INSERT INTO t VALUES (1)", false, "INSERT"],
  ["UPDATE t SET a = 1", false, "UPDATE"],
  ["DELETE FROM t", false, "DELETE"],
  ["MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE", false, "MERGE"],
  ["REPLACE INTO t VALUES (1)", false, "MySQL REPLACE"],
  ["CREATE TABLE x AS SELECT 1", false, "CREATE"],
  ["DROP TABLE t", false, "DROP"],
  ["ALTER TABLE t ADD COLUMN c int", false, "ALTER"],
  ["TRUNCATE t", false, "TRUNCATE"],
  ["GRANT SELECT ON t TO bob", false, "GRANT"],
  ["REVOKE SELECT ON t FROM bob", false, "REVOKE"],
  ["COPY (SELECT 1) TO STDOUT", false, "COPY can also write tables and server files: always gated"],
  ["CALL do_things()", false, "CALL"],
  ["DO $$BEGIN DELETE FROM t; END$$", false, "DO runs an anonymous code block"],
  ["EXECUTE prepared_stmt", false, "EXECUTE runs a prepared statement of unknown kind"],
  ["VACUUM", false, "VACUUM"],
  ["ANALYZE t", false, "ANALYZE alone rewrites statistics"],
  ["REFRESH MATERIALIZED VIEW v", false, "REFRESH"],
  ["SET search_path TO x", false, "SET changes settings"],
  ["BEGIN", false, "transaction control"],
  ["COMMIT", false, "transaction control"],
  ["LOCK TABLE t IN ACCESS EXCLUSIVE MODE", false, "LOCK"],
  ["PRAGMA table_info(t)", false, "unknown statement kinds are gated"],
];

describe("classifySql", () => {
  test("has the full table", () => {
    expect(rows.length).toBeGreaterThanOrEqual(40);
  });

  test.each(rows)("%p → read-only %p (%s)", (sql, readOnly) => {
    const result = classifySql(sql);
    expect(result.readOnly).toBe(readOnly);
    expect(result.reason.length).toBeGreaterThan(0);
  });

  test.each([
    ["SELECT 1", "a single SELECT statement"],
    ["SELECT 1; SELECT 2", "two statements"],
    ["SELECT 1; SELECT 2; SELECT 3", "3 statements"],
    ["WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x", "WITH … DELETE modifies data"],
    ["SELECT * INTO b FROM a", "SELECT … INTO creates a table"],
    ["SELECT id INTO OUTFILE '/tmp/ids' FROM users", "SELECT … INTO writes a file"],
    ["SELECT * FROM t FOR NO KEY UPDATE", "SELECT … FOR NO KEY UPDATE takes row locks"],
    ["EXPLAIN ANALYZE DELETE FROM t", "EXPLAIN ANALYZE executes the DELETE it explains"],
    ["EXPLAIN DELETE FROM t", "EXPLAIN without ANALYZE only plans the DELETE"],
    ["SELECT nextval('s')", "calls nextval(), which has side effects"],
    ["DROP TABLE t", "DROP changes the schema"],
    ["", "empty statement"],
    ["-- hi", "only comments, no statement"],
    ["SELECT 'x", "unterminated string literal"],
    ["SELECT $$a;DELETE FROM t$$", "MySQL would read it differently: DELETE modifies data"],
  ])("reason for %p is %p", (sql, reason) => {
    expect(classifySql(sql).reason).toBe(reason);
  });
});

describe("extractSql", () => {
  test.each([
    [{ sql: "SELECT 1" }, ["SELECT 1"], "sql key"],
    [{ query: "SELECT 1", limit: 5 }, ["SELECT 1"], "query key beside a scalar"],
    [{ statement: "SELECT 1", params: ["x"] }, ["SELECT 1"], "statement key beside parameters"],
    [{ statement: "c", query: "b", sql: "a" }, ["a", "b", "c"], "every SQL key is checked, not just the first"],
    [{ query: "DELETE FROM customers", sql: "SELECT 1" }, ["SELECT 1", "DELETE FROM customers"], "a harmless sql cannot vouch for a harmful query"],
    [{ query: null, statement: "SELECT 1" }, ["SELECT 1"], "a null key counts as absent"],
    [{ sql: ["DELETE FROM t"], query: "SELECT 1" }, undefined, "sql present but not a string: gate"],
    [{ text: "SELECT 1" }, ["SELECT 1"], "the only string value"],
    [{ text: "SELECT 1", limit: 10, dry: false }, ["SELECT 1"], "the only string among scalars"],
    [{ a: "SELECT 1", b: "SELECT 2" }, undefined, "two strings: which one runs is unknown"],
    [{ statements: ["DELETE FROM t"], label: "SELECT 1" }, undefined, "an array could carry more SQL"],
    [{}, undefined, "no arguments"],
    [null, undefined, "null"],
    ["SELECT 1", undefined, "not an arguments object"],
    [["SELECT 1"], undefined, "an array"],
  ] as [unknown, string[] | undefined, string][])("%p → %p (%s)", (args, expected) => {
    expect(extractSql(args)).toEqual(expected);
  });
});
