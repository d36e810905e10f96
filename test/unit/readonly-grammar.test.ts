// The second reading of `gate: on_write`: PostgreSQL's own grammar. A text
// passes as a read only when both readings say so; text the grammar cannot
// read (another dialect's) is left to the first reading and its cross-checks.
import { expect, test } from "bun:test";
import { classifySql } from "../../src/proxy/policy/readonly-sql.ts";
import { grammarReadsOnly } from "../../src/sql/postgres/readonly.ts";

test("reads: one SELECT (WITH and UNION of SELECTs too), TABLE, VALUES, plain EXPLAIN, SHOW", async () => {
  for (const sql of [
    "SELECT name FROM customers",
    "WITH x AS (SELECT 1) SELECT * FROM x",
    "SELECT 1 UNION SELECT 2",
    "TABLE t",
    "VALUES (1)",
    "EXPLAIN DELETE FROM t",
    "SHOW search_path",
  ]) {
    expect(await grammarReadsOnly(sql)).toEqual({ readOnly: true });
  }
});

test("not reads, with the reason: a WITH that writes, INTO, FOR UPDATE in any arm, EXPLAIN ANALYZE, side effects however written, several statements, DML and DDL", async () => {
  const reasons = async (sql: string) => {
    const verdict = await grammarReadsOnly(sql);
    return "reason" in verdict ? verdict.reason : JSON.stringify(verdict);
  };
  expect(await reasons("WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x")).toBe("its WITH clause runs a Delete");
  expect(await reasons("SELECT * INTO x FROM t")).toBe("SELECT … INTO creates a table");
  expect(await reasons("SELECT 1 UNION (SELECT 2 FROM t FOR SHARE)")).toBe("SELECT … FOR UPDATE/SHARE locks rows");
  expect(await reasons("EXPLAIN (ANALYZE) DELETE FROM t")).toBe("EXPLAIN ANALYZE runs the statement");
  expect(await reasons(`SELECT "pg_catalog"."pg_terminate_backend"(1)`)).toBe("it calls pg_terminate_backend(), which has side effects");
  expect(await reasons("SELECT coalesce(1, nextval/* */('s'))")).toBe("it calls nextval(), which has side effects");
  expect(await reasons("SELECT 1; SELECT 2")).toBe("it holds 2 statements");
  expect(await reasons("DELETE FROM t")).toBe("Delete is not a read");
  expect(await reasons("CREATE TABLE t (a int)")).toBe("Create is not a read");
});

test("text PostgreSQL cannot read is left to the first reading", async () => {
  expect(await grammarReadsOnly("SELECT * FROM t WHERE a GLOB 'x*'")).toEqual({ unreadable: 'syntax error at or near "GLOB"' });
  expect(classifySql("SELECT * FROM t WHERE a GLOB 'x*'").readOnly).toBe(true);
});
