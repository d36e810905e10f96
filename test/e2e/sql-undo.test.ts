// Undo for SQL through the built binary (SPEC §14): an agent's DELETE, UPDATE
// and INSERT through an SQLite MCP server's write_query are recorded row by
// row and undone, the database byte-identical to before (a full dump of
// quote()d values of every kind); what cannot be undone is held with its
// reason and nothing is forwarded; a row changed since by someone else stops
// its statement's undo.
import { Database } from "bun:sqlite";
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { BIN, connect, manifestText, run } from "../helpers.ts";
import { fixtureServer, journalRows, workspace, type Workspace } from "../fixtures/proxy-kit.ts";

setDefaultTimeout(60_000);

const SQL_RULE = {
  match: "db.write_query",
  class: "reversible",
  sql: { dialect: "sqlite", statement: "$.query", read: { tool: "db.read_query", arg: "query" }, max_rows: 25 },
};

function shop(): Workspace & { db: string } {
  const ws = workspace(
    manifestText({
      servers: { db: fixtureServer("sqlite-server.ts", ["./shop.db"]) },
      tools: [{ match: "db.read_query", class: "readonly" }, { match: "db.list_tables", class: "readonly" }, SQL_RULE],
    } as never),
    "syn-sql-",
  );
  const path = join(ws.dir, "shop.db");
  const db = new Database(path);
  db.run(`CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, big INTEGER, balance REAL, photo BLOB, note TEXT);
          CREATE TABLE products (sku TEXT PRIMARY KEY, price NUMERIC, stock INTEGER) WITHOUT ROWID;
          CREATE TABLE accounts (id INTEGER PRIMARY KEY);
          CREATE TABLE sessions (id INTEGER PRIMARY KEY, account INTEGER REFERENCES accounts(id) ON DELETE CASCADE);
          INSERT INTO accounts VALUES (1);`);
  const insert = db.prepare("INSERT INTO customers VALUES (?, ?, ?, ?, ?, ?)");
  insert.run(1, "Ada 😀", 9007199254740993n, 0.1 + 0.2, new Uint8Array([0, 255]), null);
  insert.run(2, "O'Brien", -42, 1e-300, null, "vip");
  insert.run(3, "Zoë \u202e", 0, -1.5, new Uint8Array([]), "vip");
  for (let i = 4; i <= 30; i++) insert.run(i, `c${i}`, i * 1000, i / 3, null, i % 3 ? null : "vip");
  const product = db.prepare("INSERT INTO products VALUES (?, ?, ?)");
  for (let i = 1; i <= 20; i++) product.run(`p${i}`, i * 1.25, i);
  db.close();
  return { ...ws, db: path };
}

/** The whole database: schema and every row, each value as SQLite quotes it. */
function dump(path: string): string {
  const db = new Database(path, { readonly: true });
  try {
    const lines = [JSON.stringify(db.query("SELECT type, name, sql FROM sqlite_master ORDER BY name").all())];
    for (const { name } of db.query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as Array<{ name: string }>) {
      const columns = (db.query(`SELECT name FROM pragma_table_info('${name}')`).all() as Array<{ name: string }>).map((c) => `quote("${c.name}")`);
      lines.push(JSON.stringify(db.query(`SELECT ${columns.join(", ")} FROM "${name}" ORDER BY 1`).values()));
    }
    return lines.join("\n");
  } finally {
    db.close();
  }
}

const text = (result: any) => result.content[0].text as string;

async function agent(ws: Workspace, statements: string[]): Promise<string[]> {
  await using connection = await connect(BIN, ["proxy", "--manifest", ws.manifest], { cwd: ws.dir });
  const answers: string[] = [];
  for (const query of statements) answers.push(text(await connection.client.callTool({ name: "write_query", arguments: { query } })));
  return answers;
}

describe.concurrent("SQL undo through the binary", () => {
  test("DELETE with and without WHERE, UPDATE of many rows, INSERT with chosen and given keys: undone, the database byte-identical", async () => {
    const ws = shop();
    const before = dump(ws.db);
    const answers = await agent(ws, [
      "DELETE FROM customers WHERE note = 'vip' AND id > 1",
      "UPDATE products SET price = price * 2, stock = stock - 1",
      "INSERT INTO customers (name, big) VALUES ('new', 18446744073709551615), ('newer', NULL)",
      "INSERT INTO products (sku, price, stock) VALUES ('p99', 0.1, 1)",
      "DELETE FROM products",
    ]);
    expect(answers).toEqual(["[]", "[]", "[]", "[]", "[]"]);
    const changed = new Database(ws.db, { readonly: true });
    expect(changed.query("SELECT count(*) AS n FROM customers").get()).toEqual({ n: 30 - 11 + 2 });
    expect(changed.query("SELECT count(*) AS n FROM products").get()).toEqual({ n: 0 });
    changed.close();
    const rows = journalRows(ws.journal);
    expect(rows.map((row) => [row.tool, row.status, row.warnings])).toEqual(Array(5).fill(["write_query", "applied", null]));
    expect(JSON.parse(String(rows[0]!.snapshot)).pinned).toBe(
      `DELETE FROM customers WHERE (note = 'vip' AND id > 1) AND "id" IN (2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30)`,
    );

    const undo = await run(["undo"], { cwd: ws.dir });
    expect(undo.stderr).toBe("");
    expect(undo.code).toBe(0);
    expect(undo.stdout.match(/#\d {2}reverted/g)).toHaveLength(5);
    expect(undo.stdout).toContain("5 calls reverted");
    expect(dump(ws.db)).toBe(before);
  });

  test("held with the reason, nothing forwarded: a schema change, several statements, a cascading foreign key, more than max_rows, SQL that cannot be read", async () => {
    const ws = shop();
    const before = dump(ws.db);
    const answers = await agent(ws, [
      "DROP TABLE products",
      "DELETE FROM products; DROP TABLE customers",
      "DELETE FROM accounts WHERE id = 1",
      "UPDATE customers SET note = 'x' WHERE id > 0",
      "DELETE FROM nowhere",
      "DELETE FROM customers WHERE (id = 1",
    ]);
    expect(answers.every((answer) => answer.startsWith("HELD FOR APPROVAL — Synartesis did not run this call."))).toBe(true);
    expect(answers[0]).toContain("it changes the schema (DROP)");
    expect(answers[1]).toContain("it runs several statements in one call");
    expect(answers[2]).toContain('it reaches beyond table "accounts" (sessions)');
    expect(answers[3]).toContain('it would touch more than 25 rows of "customers" (max_rows)');
    expect(answers[4]).toContain("no such table: nowhere");
    expect(answers[5]).toContain("its parentheses do not balance");
    expect(dump(ws.db)).toBe(before);
    expect(journalRows(ws.journal).map((row) => row.status)).toEqual(Array(6).fill("gated"));
  });

  test("a row someone else changed after the agent's statement stops that statement's undo (drift), and is kept", async () => {
    const ws = shop();
    await agent(ws, ["UPDATE customers SET note = 'agent' WHERE id <= 3"]);
    const other = new Database(ws.db);
    other.run("UPDATE customers SET name = 'someone else' WHERE id = 2");
    other.close();
    const undo = await run(["undo"], { cwd: ws.dir });
    expect(undo.code).toBe(1);
    expect(undo.stdout).toContain("DRIFT");
    const after = new Database(ws.db, { readonly: true });
    expect(after.query("SELECT id, name, note FROM customers WHERE id <= 3 ORDER BY id").all()).toEqual([
      { id: 1, name: "Ada 😀", note: "agent" },
      { id: 2, name: "someone else", note: "agent" },
      { id: 3, name: "Zoë \u202e", note: "agent" },
    ]);
    after.close();
  });
});
