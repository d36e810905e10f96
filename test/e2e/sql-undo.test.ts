// Undo for SQL through the built binary (SPEC §14): an agent's DELETE, UPDATE
// and INSERT through an SQLite MCP server's write_query are recorded row by
// row and undone, the database byte-identical to before (a full dump of
// quote()d values of every kind); what cannot be undone is held with its
// reason and nothing is forwarded; a row changed since by someone else stops
// its statement's undo.
import { Database } from "bun:sqlite";
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { BIN, connect, manifestText, run, tempDir } from "../helpers.ts";
import { BUN, fixtureScript, fixtureServer, journalRows, workspace, type Workspace } from "../fixtures/proxy-kit.ts";
import { dump, SQL_RULE, shopDatabase } from "../fixtures/sql-kit.ts";

setDefaultTimeout(60_000);

/** A workspace whose server "db" is the SQLite fixture server over ./shop.db (shopDatabase). */
function shop(): Workspace & { db: string } {
  const ws = workspace(
    manifestText({
      servers: { db: fixtureServer("sqlite-server.ts", ["./shop.db"], { env: { QUERY_LOG: "./queries.jsonl" } }) },
      tools: [{ match: "db.read_query", class: "readonly" }, { match: "db.list_tables", class: "readonly" }, SQL_RULE],
    } as never),
    "syn-sql-",
  );
  return { ...ws, db: shopDatabase(join(ws.dir, "shop.db")) };
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

    // What reached the server: the catalogue once, then per UPDATE or DELETE three reads (the rows before, changes(), the rows after).
    const sent = readFileSync(join(ws.dir, "queries.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { tool: string; query: string });
    const writes = sent.flatMap((entry, i) => (entry.tool === "write_query" ? [i] : []));
    expect(writes).toHaveLength(5);
    expect(sent.slice(0, writes[0]).map((entry) => /json_array\((type|k0)/.exec(entry.query)?.[1])).toEqual(["type", "k0"]);
    // Between the DELETE and the UPDATE: the DELETE's changes() and rows after, the UPDATE's rows before.
    expect(sent.slice(writes[0]! + 1, writes[1]).map((entry) => entry.tool)).toEqual(["read_query", "read_query", "read_query"]);
    expect(sent[writes[0]! + 1]!.query).toBe("SELECT json_array(changes(), last_insert_rowid()) AS synartesis_changes");
    expect(sent[writes[1]! - 1]!.query).toStartWith("SELECT (SELECT json_group_array(json_array(k0, c0, c1, c2)) AS synartesis_rows FROM (SELECT quote");
    const show = await run(["show"], { cwd: ws.dir });
    expect(show.stdout).toContain(`pinned   DELETE FROM customers WHERE (note = 'vip' AND id > 1) AND "id" IN (2, 3, 6,`);
    expect(show.stdout).toContain("rows     table customers: 11 row(s) changed\n                row id = 2: deleted\n");
    expect(show.stdout).toContain("rows     table products: 20 row(s) changed\n                row sku = 'p1': price: 1.25 → 2.5; stock: 1 → 0\n");
    expect(show.stdout).toContain("row id = 30: inserted: id 30, name 'new', big 1.8446744073709552e+19, balance NULL, photo NULL, note NULL");
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
      "INSERT INTO customers (name, note) SELECT name, 'copy' FROM customers",
    ]);
    expect(answers.every((answer) => answer.startsWith("HELD FOR APPROVAL — Synartesis did not run this call."))).toBe(true);
    expect(answers[0]).toContain("it changes the schema (DROP)");
    expect(answers[1]).toContain("it runs several statements in one call");
    expect(answers[2]).toContain('it reaches beyond table "accounts" (sessions)');
    expect(answers[3]).toContain('it would touch more than 25 rows of "customers" (max_rows)');
    expect(answers[4]).toContain("no such table: nowhere");
    expect(answers[5]).toContain("its parentheses do not balance");
    expect(answers[6]).toContain('it would insert 30 rows into "customers", more than 25 (max_rows)');
    expect(dump(ws.db)).toBe(before);
    expect(journalRows(ws.journal).map((row) => row.status)).toEqual(Array(7).fill("gated"));
  });

  test("a schema changed by someone else meanwhile is read afresh: the call is refused once, then recorded with the new column, and undone", async () => {
    const ws = shop();
    await using connection = await connect(BIN, ["proxy", "--manifest", ws.manifest], { cwd: ws.dir });
    const call = async (query: string) => text(await connection.client.callTool({ name: "write_query", arguments: { query } }));
    expect(await call("UPDATE customers SET note = 'seen' WHERE id = 1")).toBe("[]");
    const other = new Database(ws.db);
    other.run("ALTER TABLE customers ADD COLUMN tier TEXT DEFAULT 'gold'");
    other.run("UPDATE customers SET tier = 'platinum' WHERE id = 2");
    other.close();
    const before = dump(ws.db);
    const refused = await call("DELETE FROM customers WHERE id <= 3");
    expect(refused).toBe(
      "Synartesis did not run write_query, because it could not record the rows it would change: the database's schema changed since Synartesis last read it; the call can be sent again as it is",
    );
    expect(dump(ws.db)).toBe(before);
    expect(await call("DELETE FROM customers WHERE id <= 3")).toBe("[]");
    await connection.client.close();
    const undo = await run(["undo"], { cwd: ws.dir });
    expect(undo.code).toBe(0);
    const after = new Database(ws.db, { readonly: true });
    expect(after.query("SELECT id, note, tier FROM customers WHERE id <= 3 ORDER BY id").all()).toEqual([
      { id: 1, note: null, tier: "gold" },
      { id: 2, note: "vip", tier: "platinum" },
      { id: 3, note: "vip", tier: "gold" },
    ]);
    after.close();
  });

  test("upserts: DO UPDATE, DO NOTHING and INSERT OR IGNORE, of rows that existed and rows that did not: undone, the database byte-identical", async () => {
    const ws = shop();
    const before = dump(ws.db);
    const answers = await agent(ws, [
      "INSERT INTO products (sku, price, stock) VALUES ('p1', 99, 0), ('p2', 2.5, 2), ('new', 1, 1) ON CONFLICT (sku) DO UPDATE SET price = excluded.price, stock = excluded.stock",
      "INSERT INTO customers (id, name) VALUES (1, 'not Ada'), (31, 'fresh') ON CONFLICT DO NOTHING",
      "INSERT OR IGNORE INTO customers (id, name, note) VALUES (2, 'ignored', 'x'), (32, 'also fresh', 'y')",
      "INSERT INTO customers (id, note) VALUES (4, 'first'), (4, 'second') ON CONFLICT (id) DO UPDATE SET note = coalesce(note, '') || '+' || excluded.note WHERE note IS NULL OR note <> 'vip'",
    ]);
    expect(answers).toEqual(["[]", "[]", "[]", "[]"]);
    const changed = new Database(ws.db, { readonly: true });
    expect(changed.query("SELECT sku, price, stock FROM products WHERE sku IN ('p1', 'p2', 'new') ORDER BY sku").all()).toEqual([
      { sku: "new", price: 1, stock: 1 },
      { sku: "p1", price: 99, stock: 0 },
      { sku: "p2", price: 2.5, stock: 2 },
    ]);
    expect(changed.query("SELECT id, name, note FROM customers WHERE id IN (1, 2, 4, 31, 32) ORDER BY id").all()).toEqual([
      { id: 1, name: "Ada 😀", note: null },
      { id: 2, name: "O'Brien", note: "vip" },
      { id: 4, name: "c4", note: "+first+second" },
      { id: 31, name: "fresh", note: null },
      { id: 32, name: "also fresh", note: "y" },
    ]);
    changed.close();
    const rows = journalRows(ws.journal);
    expect(rows.map((row) => [row.status, row.warnings])).toEqual(Array(4).fill(["applied", null]));
    const shown = JSON.parse((await run(["show", "--json"], { cwd: ws.dir })).stdout);
    // Put back: what it changed (p1; p2's values were its own), and what it inserted deleted.
    expect(shown.actions[0].inverse.args.query).toBe(`DELETE FROM "products" WHERE "sku" IN ('new')`);
    expect(shown.actions[0].inverse.then).toHaveLength(1);
    expect(shown.actions[0].inverse.then[0].args.query).toStartWith(`UPDATE "products" SET "price" = synartesis_before.column2`);
    expect(shown.actions[1].inverse).toMatchObject({ args: { query: `DELETE FROM "customers" WHERE "id" IN (31)` } });
    expect(shown.actions[1].inverse.then).toBeUndefined();
    const show = await run(["show"], { cwd: ws.dir });
    expect(show.stdout).toContain("row sku = 'p1': price: 1.25 → 99; stock: 1 → 0");
    expect(show.stdout).toContain("row sku = 'new': inserted");
    const undo = await run(["undo"], { cwd: ws.dir });
    expect(undo.stderr).toBe("");
    expect(undo.stdout).toContain("4 calls reverted");
    expect(undo.code).toBe(0);
    expect(dump(ws.db)).toBe(before);
  });

  test("upserts that could touch rows other than those they give are held, nothing forwarded", async () => {
    const ws = shop();
    const unique = new Database(ws.db);
    unique.run("CREATE UNIQUE INDEX customers_name ON customers (name)");
    unique.close();
    const before = dump(ws.db);
    const answers = await agent(ws, [
      "INSERT INTO customers (id, name) VALUES (1, 'x') ON CONFLICT DO UPDATE SET name = excluded.name",
      "INSERT INTO customers (id, name) VALUES (1, 'x') ON CONFLICT (name) DO UPDATE SET name = excluded.name",
      "INSERT INTO customers (id, name) VALUES (1, 'x') ON CONFLICT (id) DO UPDATE SET id = 99",
      "INSERT INTO customers (name) VALUES ('x') ON CONFLICT DO NOTHING",
      "INSERT INTO customers (id, name) SELECT id + 100, name FROM customers WHERE true ON CONFLICT DO NOTHING",
      "INSERT OR REPLACE INTO customers (id, name) VALUES (1, 'x')",
    ]);
    expect(answers.every((answer) => answer.startsWith("HELD FOR APPROVAL — Synartesis did not run this call."))).toBe(true);
    expect(answers[0]).toContain("its DO UPDATE names no conflict target: a row it updates may be another than the one it gives");
    expect(answers[1]).toContain("its conflict target (name) is not the table's primary key (id)");
    expect(answers[2]).toContain(`its DO UPDATE changes the rows' key ("id")`);
    expect(answers[3]).toContain("an upsert must give every key of the rows it writes as a plain value");
    expect(answers[4]).toContain("an upsert whose rows come from a SELECT is not yet undone");
    expect(answers[5]).toContain("INSERT OR REPLACE may delete rows other than those it names");
    expect(dump(ws.db)).toBe(before);
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
    // Row by row, column by column: only what someone else changed.
    expect(undo.stdout).toContain("table customers, as the agent's statement left it → now:\n        row id = 2: name: 'O''Brien' → 'someone else'\n");
    const after = new Database(ws.db, { readonly: true });
    expect(after.query("SELECT id, name, note FROM customers WHERE id <= 3 ORDER BY id").all()).toEqual([
      { id: 1, name: "Ada 😀", note: "agent" },
      { id: 2, name: "someone else", note: "agent" },
      { id: 3, name: "Zoë \u202e", note: "agent" },
    ]);
    after.close();
  });
});

describe.concurrent("the sql: block", () => {
  test("init adopts the shipped policy for an SQLite server: write_query recorded row by row, create_table held; check agrees", async () => {
    const dir = tempDir("syn-sql-init-");
    const result = await run(["init", "shop", "--", BUN, fixtureScript("sqlite-server.ts"), "./shop.db"], { cwd: dir });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("rules adopted from the shipped policy for mcp-server-sqlite-npx (manifests/sqlite.yaml)");
    const doc = parse(readFileSync(join(dir, "synartesis.yaml"), "utf8"));
    const write = doc.tools.find((rule: any) => rule.match === "shop.write_query");
    expect(write).toEqual({
      match: "shop.write_query",
      class: "reversible",
      sql: { dialect: "sqlite", statement: "$.query", read: { tool: "shop.read_query", arg: "query" }, max_rows: 10000 },
    });
    expect(doc.tools.find((rule: any) => rule.match === "shop.create_table")).toMatchObject({ class: "irreversible", gate: "always" });
    expect((await run(["check"], { cwd: dir })).code).toBe(0);
  });

  test("init --draft proposes a sql: block for a tool that takes SQL, in its TODO, for a person to confirm; confirmed, check agrees", async () => {
    const dir = tempDir("syn-sql-draft-");
    const result = await run(["init", "shop", "--draft", "--", BUN, fixtureScript("sqlite-server.ts"), "./shop.db"], { cwd: dir });
    expect(result.code).toBe(0);
    const text = readFileSync(join(dir, "synartesis.yaml"), "utf8");
    expect(text).toContain(
      [
        `  # TODO shop.write_query: gated until you decide. Execute an INSERT, UPDATE, or DELETE query on the SQLite database`,
        `  #   Server hints: none given`,
        `  #   It takes SQL in "query": to record each statement row by row and undo it (SQLite only, so far: docs/sql.md),`,
        `  #   confirm the database is SQLite and replace this rule's class and gate with:`,
        `  #     class: reversible`,
        `  #     sql: { dialect: sqlite, statement: "$.query", read: { tool: "shop.read_query", arg: query } }`,
      ].join("\n"),
    );
    // Nothing proposed runs unattended: the rule stays gated until a person edits it.
    const doc = parse(text);
    expect(doc.tools.find((rule: any) => rule.match === "shop.write_query")).toEqual({ match: "shop.write_query", class: "irreversible", gate: "always" });
    const confirmed = text.replace(
      /- match: shop\.write_query\n(\s+)class: irreversible\n\s+gate: always/,
      '- match: shop.write_query\n$1class: reversible\n$1sql: { dialect: sqlite, statement: "$.query", read: { tool: "shop.read_query", arg: query } }',
    );
    expect(confirmed).not.toBe(text);
    writeFileSync(join(dir, "synartesis.yaml"), confirmed);
    expect((await run(["check"], { cwd: dir })).code).toBe(0);
  });

  test("check names each mistake of a sql: block at its line", async () => {
    const ws = workspace(
      manifestText({
        servers: { db: { command: "true" } },
        tools: [
          {
            match: "db.write_query",
            class: "compensable",
            inverse: { tool: "db.write_query" },
            sql: { dialect: "mysql", statement: "query", read: { tool: "other.read_query", arg: "query" }, max_rows: 0 },
          },
        ],
      } as never),
      "syn-sql-check-",
    );
    const check = await run(["check", "--manifest", ws.manifest], { cwd: ws.dir });
    expect(check.code).toBe(2);
    const lines = check.stderr.split("\n").filter((line) => line.includes("synartesis.yaml:"));
    expect(lines.map((line) => line.slice(line.indexOf("synartesis.yaml:")))).toEqual([
      "synartesis.yaml: 2 problems",
      expect.stringMatching(/^synartesis\.yaml:\d+:\d+: "dialect" must be one of sqlite, postgres \(found "mysql"\)$/),
      expect.stringMatching(/^synartesis\.yaml:\d+:\d+: "max_rows" must be >= 1$/),
    ]);
    writeFileSync(ws.manifest, readFileSync(ws.manifest, "utf8").replace("max_rows: 0", "max_rows: 5").replace("dialect: mysql", "dialect: postgres"));
    const again = await run(["check", "--manifest", ws.manifest], { cwd: ws.dir });
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('a rule with "sql" takes no "inverse": it comes from each statement');
    expect(again.stderr).toContain('a rule with "sql" is reversible');
    expect(again.stderr).toContain('statement "query" must name the argument that carries the SQL, as "$.name"');
    expect(again.stderr).toContain('read tool "other.read_query" names an undeclared server "other"');
  });
});

describe.concurrent("gate: on_write, read twice", () => {
  test("a read passes (PostgreSQL's grammar agreeing, or unable to read SQLite's GLOB); a WITH that deletes is held, nothing forwarded", async () => {
    const ws = workspace(
      manifestText({
        servers: { db: fixtureServer("sqlite-server.ts", ["./shop.db"]) },
        tools: [{ match: "db.read_query", class: "irreversible", gate: "on_write" }],
      } as never),
      "syn-sql-onwrite-",
    );
    shopDatabase(join(ws.dir, "shop.db"));
    const before = dump(join(ws.dir, "shop.db"));
    await using connection = await connect(BIN, ["proxy", "--manifest", ws.manifest], { cwd: ws.dir });
    const call = async (query: string) => text(await connection.client.callTool({ name: "read_query", arguments: { query } }));
    expect(JSON.parse(await call("SELECT name FROM customers WHERE id = 2"))).toEqual([{ name: "O'Brien" }]);
    expect(JSON.parse(await call("SELECT id FROM customers WHERE name GLOB 'Ad*'"))).toEqual([{ id: 1 }]);
    const held = await call("WITH gone AS (DELETE FROM customers RETURNING id) SELECT * FROM gone");
    expect(held).toStartWith("HELD FOR APPROVAL — Synartesis did not run this call. Reason: db.read_query is gated on writes: WITH … DELETE modifies data");
    await connection.client.close();
    expect(dump(join(ws.dir, "shop.db"))).toBe(before);
    expect(journalRows(ws.journal).map((row) => [row.class, row.status])).toEqual([
      ["readonly", "applied"],
      ["readonly", "applied"],
      ["irreversible", "gated"],
    ]);
  });
});
