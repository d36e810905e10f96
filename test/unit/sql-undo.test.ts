// SQL undo's core against a real SQLite database (bun:sqlite): the statement
// read, judged against a copy of the schema, the rows read before by its own
// WHERE, the statement pinned to them, the rows read after, and the inverse —
// run here directly, each undo leaving the database byte-identical (a full
// dump of quote()d values) with values of every kind.
import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import {
  CHANGES_QUERY,
  inverseStatement,
  isLiteral,
  keysGiven,
  parseRows,
  pinned,
  rowsBefore,
  rowsByKey,
  rowsQuery,
  ident,
  type RowLiterals,
} from "../../src/sql/plan.ts";
import { CATALOGUE_QUERY, SchemaCopy, type CatalogueEntry, type TableInfo } from "../../src/sql/schema.ts";
import { readStatement, type Statement } from "../../src/sql/statement.ts";
import { upsertEffect, upsertHeld } from "../../src/sql/upsert.ts";

const SCHEMA = `
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, big INTEGER, price REAL, photo BLOB, note TEXT);
CREATE TABLE tags (customer INTEGER, tag TEXT, PRIMARY KEY (customer, tag)) WITHOUT ROWID;
CREATE TABLE loose (a TEXT, b TEXT);
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer INTEGER REFERENCES customers(id) ON DELETE CASCADE);
CREATE TABLE audit (what TEXT);
CREATE TABLE watched (id INTEGER PRIMARY KEY, v TEXT);
CREATE TRIGGER watch AFTER UPDATE ON watched BEGIN INSERT INTO audit VALUES ('changed'); END;
`;

function database(): Database {
  const db = new Database(":memory:");
  db.run(SCHEMA);
  const insert = db.prepare("INSERT INTO customers (id, name, big, price, photo, note) VALUES (?, ?, ?, ?, ?, ?)");
  insert.run(1, "Ada 😀 ‮", 9007199254740993n, 0.1 + 0.2, new Uint8Array([0, 255, 10]), null);
  insert.run(2, "O'Brien", -9223372036854775808n, 1e-310, new Uint8Array([]), "x");
  insert.run(3, "Zoë", 0, -0.0, null, "y");
  for (let i = 4; i <= 120; i++) insert.run(i, `c${i}`, i, i / 7, null, i % 2 ? "odd" : "even");
  db.run("INSERT INTO tags VALUES (1, 'vip'), (2, 'new'), (2, 'vip')");
  db.run("INSERT INTO loose VALUES ('p', 'q'), ('r', NULL)");
  return db;
}

/** Every table's rows as quote()d literals, and the schema: what "byte-identical" compares. */
function dump(db: Database): string {
  const tables = (db.query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as Array<{ name: string }>).map((t) => t.name);
  const lines = [JSON.stringify(db.query("SELECT type, name, sql FROM sqlite_master ORDER BY name").all())];
  for (const table of tables) {
    const columns = (db.query(`SELECT name FROM pragma_table_info('${table}')`).all() as Array<{ name: string }>).map((c) => `quote(${ident(c.name)})`);
    const rowid = table === "tags" ? "" : "rowid, ";
    const order = [...columns, ...(rowid ? [""] : [])].map((_, i) => i + 1).join(", ");
    lines.push(JSON.stringify(db.query(`SELECT ${rowid}${columns.join(", ")} FROM ${ident(table)} ORDER BY ${order}`).values()));
  }
  return lines.join("\n");
}

function schemaOf(db: Database): SchemaCopy {
  const read = db.query(CATALOGUE_QUERY).get() as { synartesis_catalogue: string; synartesis_schema_version: string };
  const entries = (JSON.parse(read.synartesis_catalogue) as string[][]).map(([type, name, table, sql]) => ({ type, name, table, sql }) as CatalogueEntry);
  return SchemaCopy.of(entries, read.synartesis_schema_version);
}

function rowsOf(db: Database, sql: string, table: TableInfo): RowLiterals[] {
  const value = (db.query(sql).get() as { synartesis_rows: string }).synartesis_rows;
  const rows = parseRows(value, table);
  if ("wrong" in rows) throw new Error(rows.wrong);
  return rows;
}

function read(text: string): Statement {
  const reading = readStatement(text);
  if ("held" in reading) throw new Error(reading.held);
  return reading.statement;
}

/** Record `text` as the proxy does, run it, then run its inverse: the database must be as it was. */
function recordAndUndo(db: Database, text: string): { before: RowLiterals[]; after: RowLiterals[]; sent: string; inverse: string | undefined } {
  const schema = schemaOf(db);
  const statement = read(text);
  expect(schema.compileError(text)).toBeUndefined();
  const table = schema.table(statement.table.name) as TableInfo;
  const original = dump(db);
  let before: RowLiterals[] = [];
  let sent = text;
  let verify: string | undefined;
  if (statement.kind !== "insert") {
    before = rowsOf(db, rowsBefore(statement, text, table, 10_000), table);
    sent = pinned(
      statement,
      text,
      table,
      before.map((row) => row.key),
    );
    verify = rowsByKey(
      table,
      before.map((row) => row.key),
    );
  } else {
    const given = keysGiven(statement, text, table);
    if (given) verify = rowsByKey(table, given);
  }
  db.query(sent).all();
  const [changed, last] = JSON.parse((db.query(CHANGES_QUERY).get() as { synartesis_changes: string }).synartesis_changes) as [number, number];
  verify ??= rowsQuery(table, ident(table.name), `${table.rowid} BETWEEN ${last - changed + 1} AND ${last}`);
  const after = rowsOf(db, verify, table);
  expect(changed).toBe(statement.kind === "insert" ? after.length : before.length);
  const inverse = inverseStatement(statement.kind, table, before, after);
  if (inverse) db.query(inverse).all();
  expect(dump(db)).toBe(original);
  return { before, after, sent, inverse };
}

describe("reading a statement", () => {
  test("DELETE, UPDATE and INSERT: the table, its alias, and where the WHERE is", () => {
    const text = `DELETE FROM "customers" AS c WHERE c.name = 'WHERE x' AND c.id IN (SELECT 1 WHERE 1) -- RETURNING`;
    const del = read(text);
    expect(del).toMatchObject({ kind: "delete", table: { name: "customers", alias: "c" } });
    expect(text.slice(...(del as Extract<Statement, { kind: "delete" }>).where!)).toBe("c.name = 'WHERE x' AND c.id IN (SELECT 1 WHERE 1)");
    expect(read("UPDATE customers SET (name, note) = ('a', 'b'), price = price * 2 WHERE id > 3 RETURNING id")).toMatchObject({
      kind: "update",
      columns: ["name", "note", "price"],
    });
    expect(read("INSERT INTO tags (customer, tag) VALUES (1, 'a'), (2, 'b')")).toMatchObject({
      kind: "insert",
      source: "values",
      columns: ["customer", "tag"],
    });
    expect(read("INSERT INTO loose SELECT a, b FROM loose WHERE true")).toMatchObject({ kind: "insert", source: "select" });
  });

  test("upserts: the ON CONFLICT target, what it does, and the columns its DO UPDATE sets; INSERT OR IGNORE is DO NOTHING", () => {
    expect(
      read("INSERT INTO tags (customer, tag) VALUES (1, 'a') ON CONFLICT (customer, tag) DO UPDATE SET tag = excluded.tag WHERE tag <> 'x' RETURNING 1"),
    ).toMatchObject({
      kind: "insert",
      rows: [expect.any(Array)],
      onConflict: { target: ["customer", "tag"], action: "update", columns: ["tag"] },
      returning: expect.any(Array),
    });
    expect(read("INSERT INTO tags VALUES (1, 'a') ON CONFLICT DO NOTHING")).toMatchObject({ onConflict: { action: "nothing", columns: [] } });
    expect(read("INSERT OR IGNORE INTO tags VALUES (1, 'a')")).toMatchObject({ onConflict: { action: "nothing", columns: [] } });
    expect(read("INSERT INTO tags VALUES (1, 'a')")).not.toHaveProperty("onConflict");
    const postgres = readStatement("INSERT INTO t (id) VALUES (1) ON CONFLICT ON CONSTRAINT t_pkey DO UPDATE SET (a, b) = (1, 2)", "postgres");
    expect(postgres).toMatchObject({ statement: { onConflict: { constraint: "t_pkey", action: "update", columns: ["a", "b"] } } });
  });

  test("an upsert is recorded when the rows it can touch are the rows of the keys it gives", () => {
    const upsert = (text: string, key = ["id"]) =>
      upsertHeld(read(text) as Extract<Statement, { kind: "insert" }>, key, (a, b) => a.toLowerCase() === b.toLowerCase());
    expect(upsert("INSERT INTO t (id, a) VALUES (1, 2) ON CONFLICT (ID) DO UPDATE SET a = excluded.a")).toBeUndefined();
    expect(upsert("INSERT INTO t (id, a) VALUES (1, 2) ON CONFLICT (a) DO NOTHING")).toBeUndefined();
    expect(upsert("INSERT INTO t (a, b) VALUES (1, 2) ON CONFLICT (b, a) DO UPDATE SET c = 1", ["a", "b"])).toBeUndefined();
    expect(upsert("INSERT INTO t (id, a) VALUES (1, 2) ON CONFLICT (a) DO UPDATE SET a = 3")).toBe(
      "its conflict target (a) is not the table's primary key (id): a row it updates may be another than the one it gives",
    );
    expect(upsert("INSERT INTO t (id, a) VALUES (1, 2) ON CONFLICT DO UPDATE SET a = 3")).toMatch(/names no conflict target/);
    expect(upsert("INSERT INTO t (id, a) VALUES (1, 2) ON CONFLICT (id) DO UPDATE SET id = 3")).toMatch(/changes the rows' key \("id"\)/);
    expect(upsert("INSERT INTO t (id) SELECT 1 WHERE true ON CONFLICT DO NOTHING")).toMatch(/rows come from a SELECT/);
  });

  test("what an upsert did: rows inserted, rows changed (as they were), rows gone (someone else's doing)", () => {
    const row = (key: string, value: string) => ({ key: [key], values: [key, value] });
    expect(upsertEffect([row("1", "a"), row("2", "b"), row("3", "c")], [row("1", "a"), row("2", "B"), row("4", "d")])).toEqual({
      inserted: [row("4", "d")],
      changed: [row("2", "b")],
      gone: [row("3", "c")],
    });
  });

  test("held, with the reason: several statements, transactions, schema changes, upserts, joins, other databases, text that cannot be read", () => {
    const held = (text: string) => {
      const reading = readStatement(text);
      return "held" in reading ? reading.held : "not held";
    };
    expect(held("DELETE FROM customers; DROP TABLE customers")).toBe("it runs several statements in one call");
    expect(held("BEGIN")).toMatch(/controls a transaction/);
    expect(held("DROP TABLE customers")).toMatch(/changes the schema \(DROP\)/);
    expect(held("ALTER TABLE customers ADD x")).toMatch(/changes the schema \(ALTER\)/);
    expect(held("INSERT INTO tags VALUES (1, 'x') ON CONFLICT (tag) WHERE tag > 'a' DO NOTHING")).toMatch(/partial index/);
    expect(held("INSERT INTO tags VALUES (1, 'x') ON CONFLICT (lower(tag)) DO NOTHING")).toMatch(/conflict target other than plain columns/);
    expect(held("INSERT INTO tags VALUES (1, 'x') ON CONFLICT (tag) DO NOTHING ON CONFLICT DO NOTHING")).toMatch(/several ON CONFLICT/);
    expect(held("INSERT OR IGNORE INTO tags VALUES (1, 'x') ON CONFLICT DO NOTHING")).toMatch(/OR IGNORE with an ON CONFLICT/);
    expect(held("INSERT OR REPLACE INTO tags VALUES (1, 'x')")).toMatch(/OR REPLACE/);
    expect(held("REPLACE INTO tags VALUES (1, 'x')")).toMatch(/REPLACE/);
    expect(held("UPDATE customers SET name = o.x FROM orders o WHERE o.id = customers.id")).toMatch(/UPDATE … FROM/);
    expect(held("DELETE FROM other.customers")).toMatch(/attached database "other"/);
    expect(held("DELETE FROM customers WHERE (id = 1")).toMatch(/parentheses/);
    expect(held("DELETE FROM customers WHERE name = 'unterminated")).toMatch(/cannot be read/);
    expect(held("WITH x AS (SELECT 1) DELETE FROM customers")).toMatch(/WITH clause/);
    expect(held("VACUUM")).toMatch(/not one Synartesis can undo/);
    expect(held("DELETE FROM t WHERE load_extension('x') IS NULL")).toBe("it calls load_extension(), which has side effects outside the rows Synartesis reads");
  });
});

describe("judged against SQLite's own reading of the schema", () => {
  const db = database();
  const schema = schemaOf(db);
  test("each table's key: its primary key, or the rowid", () => {
    expect((schema.table("customers") as TableInfo).key).toEqual({ kind: "columns", columns: ["id"] });
    expect((schema.table("tags") as TableInfo).key).toEqual({ kind: "columns", columns: ["customer", "tag"] });
    expect((schema.table("tags") as TableInfo).rowid).toBeUndefined();
    expect((schema.table("loose") as TableInfo).key).toEqual({ kind: "rowid", name: "rowid" });
    expect(schema.table("nowhere")).toEqual({ unknown: 'there is no table "nowhere"' });
  });

  test("a cascading foreign key and a trigger show as tables beyond the statement's", () => {
    expect(schema.tablesWritten("DELETE FROM customers WHERE id = 1").tables).toContain("orders");
    expect(schema.tablesWritten("UPDATE watched SET v = 'x'").subprograms).toBe(true);
    expect([...schema.tablesWritten("DELETE FROM loose").tables]).toEqual(["loose"]);
    expect(schema.compileError("DELETE FROM customers WHERE nosuch = 1")).toMatch(/no such column/);
  });
});

describe("recorded and undone on a real database, byte for byte", () => {
  test("DELETE with a WHERE, through an alias: values of every kind come back exactly", () => {
    const db = database();
    const { before, sent } = recordAndUndo(db, "DELETE FROM customers AS c WHERE c.id < 4 OR c.note = 'odd'");
    expect(before).toHaveLength(3 + 58);
    expect(before[0]).toEqual({ key: ["1"], values: ["1", "'Ada 😀 ‮'", "9007199254740993", "0.30000000000000004", "X'00FF0A'", "NULL"] });
    expect(sent).toStartWith(`DELETE FROM customers AS c WHERE (c.id < 4 OR c.note = 'odd') AND "id" IN (1, 2, 3, 5, 7`);
  });

  test("DELETE without a WHERE (every row), of a table keyed by its rowid and of one WITHOUT ROWID", () => {
    const db = database();
    expect(recordAndUndo(db, "DELETE FROM loose").sent).toBe("DELETE FROM loose WHERE rowid IN (1, 2)");
    expect(recordAndUndo(db, "DELETE FROM tags").sent).toBe(`DELETE FROM tags WHERE ("customer", "tag") IN (VALUES (1, 'vip'), (2, 'new'), (2, 'vip'))`);
  });

  test("UPDATE of every row, and of some: each row's values restored", () => {
    const db = database();
    recordAndUndo(db, "UPDATE customers SET price = price * 1.1, note = 'raised', photo = X'01'");
    recordAndUndo(db, "UPDATE customers SET name = upper(name) WHERE big > 100 RETURNING id");
    recordAndUndo(db, "UPDATE loose SET b = 'z'");
  });

  test("INSERT: keys the database chose (found by rowid range), keys given, and INSERT … SELECT", () => {
    const db = database();
    const chosen = recordAndUndo(db, "INSERT INTO customers (name, big) VALUES ('new', 18446744073709551615), ('newer', NULL)");
    expect(chosen.after.map((row) => row.key)).toEqual([["121"], ["122"]]);
    expect(chosen.inverse).toBe(`DELETE FROM "customers" WHERE "id" IN (121, 122)`);
    const given = recordAndUndo(db, "INSERT INTO tags (tag, customer) VALUES ('a''b', 3), ('x', 1)");
    expect(given.inverse).toBe(`DELETE FROM "tags" WHERE ("customer", "tag") IN (VALUES (1, 'x'), (3, 'a''b'))`);
    recordAndUndo(db, "INSERT INTO loose (a, b) SELECT name, note FROM customers WHERE id < 10");
  });

  test("the statement pinned to no rows touches none", () => {
    const db = database();
    const { sent, inverse } = recordAndUndo(db, "DELETE FROM customers WHERE id > 1000");
    expect(sent).toBe("DELETE FROM customers WHERE (id > 1000) AND 0");
    expect(inverse).toBeUndefined();
  });

  test("a row changed by someone else between the read and the write is not touched: the pinned statement skips it", () => {
    const db = database();
    const text = "UPDATE customers SET note = 'agent' WHERE note = 'odd'";
    const schema = schemaOf(db);
    const statement = read(text) as Extract<Statement, { kind: "update" }>;
    const table = schema.table("customers") as TableInfo;
    const before = rowsOf(db, rowsBefore(statement, text, table, 10_000), table);
    db.run("UPDATE customers SET note = 'someone else' WHERE id = 5");
    db.run("INSERT INTO customers (id, note) VALUES (500, 'odd')");
    db.query(
      pinned(
        statement,
        text,
        table,
        before.map((row) => row.key),
      ),
    ).all();
    const [changed] = JSON.parse((db.query(CHANGES_QUERY).get() as { synartesis_changes: string }).synartesis_changes) as number[];
    // Pinned to the 58 rows read: the one changed since no longer matches, the one added was not read.
    expect(changed).toBe(before.length - 1);
    expect(db.query("SELECT note FROM customers WHERE id IN (5, 500) ORDER BY id").values()).toEqual([["someone else"], ["odd"]]);
  });

  test("only literals quote() writes are accepted into a statement", () => {
    for (const literal of ["NULL", "1", "-9223372036854775808", "0.30000000000000004", "1.0e+999", "'a''b'", "X'00ff'", "''"])
      expect(isLiteral(literal)).toBe(true);
    for (const text of ["1; DROP TABLE x", "'a'b'", "x", "X'0g'", "(1)", "NULL)", ""]) expect(isLiteral(text)).toBe(false);
  });
});
