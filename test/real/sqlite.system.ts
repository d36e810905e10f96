// manifests/sqlite.yaml against the real mcp-server-sqlite-npx (0.8.0, its
// native sqlite3 module built from npm; .ci/run installs it into
// .tmp/sql-servers) over a real SQLite file, through the built proxy and
// `synartesis undo` (SPEC §14): DELETE with and without WHERE, an UPDATE of
// many rows, INSERTs with chosen and given keys — each undone, the file's
// full dump byte-identical to before; what cannot be undone held, nothing
// forwarded; a row someone changed since stops its statement's undo.
import { Database } from "bun:sqlite";
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseDocument } from "yaml";
import { ROOT, run, tempDir } from "../helpers.ts";
import { journalRows } from "../fixtures/proxy-kit.ts";
import { dump, shopDatabase } from "../fixtures/sql-kit.ts";
import { agent as startAgent, endSession, text } from "./agent-kit.ts";

setDefaultTimeout(60_000);

const SERVER = process.env.SQLITE_MCP_SERVER ?? join(ROOT, ".tmp", "sql-servers", "node_modules", "mcp-server-sqlite-npx", "dist", "index.js");

interface Shop {
  dir: string;
  db: string;
}

/** The shipped policy in a temp folder, its server pointed at the installed server and a fresh shop database. */
function shop(maxRows?: number): Shop {
  if (!existsSync(SERVER)) {
    throw new Error(`mcp-server-sqlite-npx is not installed at ${SERVER}: npm install --prefix .tmp/sql-servers mcp-server-sqlite-npx@0.8.0 (as .ci/run does)`);
  }
  const dir = tempDir("syn-real-sqlite-");
  const doc = parseDocument(readFileSync(join(ROOT, "manifests", "sqlite.yaml"), "utf8"));
  doc.setIn(["servers", "sqlite", "command"], "node");
  doc.setIn(["servers", "sqlite", "args"], [SERVER, "./shop.db"]);
  if (maxRows !== undefined) {
    const rules = doc.toJS().tools as Array<{ match: string }>;
    doc.setIn(["tools", rules.findIndex((rule) => rule.match === "sqlite.write_query"), "sql", "max_rows"], maxRows);
  }
  writeFileSync(join(dir, "synartesis.yaml"), doc.toString());
  return { dir, db: shopDatabase(join(dir, "shop.db")) };
}

async function agent(shop: Shop, statements: string[]): Promise<string[]> {
  const client = await startAgent(shop.dir, "sql-agent");
  const answers: string[] = [];
  for (const query of statements) answers.push(text(await client.callTool({ name: "write_query", arguments: { query } })));
  await endSession(client);
  return answers;
}

describe.concurrent("mcp-server-sqlite-npx behind Synartesis", () => {
  test("DELETE with and without WHERE, UPDATE of many rows, INSERT with chosen and given keys, upserts: undone, byte-identical", async () => {
    const db = shop();
    const before = dump(db.db);
    const answers = await agent(db, [
      "DELETE FROM customers WHERE note = 'vip' AND id > 1",
      "UPDATE products SET price = price * 2, stock = stock - 1",
      "UPDATE customers SET big = big + 1, balance = balance / 3, photo = X'0102', name = name || ' ✓'",
      "INSERT INTO customers (name, big) VALUES ('new', 18446744073709551615), ('newer', NULL)",
      "INSERT INTO products (sku, price, stock) VALUES ('p99', 0.1, 1)",
      "DELETE FROM products",
      "INSERT INTO customers (id, name, photo) VALUES (1, 'not Ada', X'00'), (40, 'fresh', NULL) ON CONFLICT (id) DO UPDATE SET name = excluded.name, photo = excluded.photo",
      "INSERT OR IGNORE INTO customers (id, name) VALUES (2, 'ignored'), (41, 'also fresh')",
    ]);
    expect(answers).toEqual(Array(8).fill("[]"));
    expect(new Database(db.db, { readonly: true }).query("SELECT count(*) AS n FROM products").get()).toEqual({ n: 0 });
    expect(journalRows(join(db.dir, "synartesis.db")).map((row) => [row.status, row.warnings])).toEqual(Array(8).fill(["applied", null]));
    const undo = await run(["undo"], { cwd: db.dir });
    expect(undo.stderr).toBe("");
    expect(undo.code).toBe(0);
    expect(undo.stdout).toContain("8 calls reverted");
    expect(dump(db.db)).toBe(before);
  });

  test("held with the reason, nothing forwarded: a schema change, several statements, a cascade, more than max_rows, SQL that cannot be read", async () => {
    const db = shop(25);
    const before = dump(db.db);
    const answers = await agent(db, [
      "DROP TABLE products",
      "DELETE FROM products; DROP TABLE customers",
      "DELETE FROM accounts WHERE id = 1",
      "UPDATE customers SET note = 'x'",
      "DELETE FROM customers WHERE (id = 1",
      "INSERT INTO customers (name, note) SELECT name, 'copy' FROM customers",
    ]);
    for (const answer of answers) expect(answer).toStartWith("HELD FOR APPROVAL — Synartesis did not run this call.");
    expect(answers[0]).toContain("it changes the schema (DROP)");
    expect(answers[1]).toContain("it runs several statements in one call");
    expect(answers[2]).toContain('it reaches beyond table "accounts" (sessions)');
    expect(answers[3]).toContain('it would touch more than 25 rows of "customers" (max_rows)');
    expect(answers[4]).toContain("its parentheses do not balance");
    expect(answers[5]).toContain('it would insert 30 rows into "customers", more than 25 (max_rows)');
    expect(dump(db.db)).toBe(before);
  });

  test("a row someone changed after the agent's statement stops that statement's undo, and is kept", async () => {
    const db = shop();
    await agent(db, ["UPDATE customers SET note = 'agent' WHERE id <= 3"]);
    const other = new Database(db.db);
    other.run("UPDATE customers SET name = 'someone else' WHERE id = 2");
    other.close();
    const undo = await run(["undo"], { cwd: db.dir });
    expect(undo.code).toBe(1);
    expect(undo.stdout).toContain("DRIFT");
    expect(new Database(db.db, { readonly: true }).query("SELECT name, note FROM customers WHERE id = 2").get()).toEqual({
      name: "someone else",
      note: "agent",
    });
  });
});
