// Undo for SQL on PostgreSQL through the built binary (SPEC §14, dialect
// postgres): an agent's DELETE, UPDATE and INSERT through a PostgreSQL MCP
// server's pg_execute_sql (a fixture that answers as @henkey/postgres-mcp-server
// does; the real one runs in the system tests) are recorded row by row and
// undone, every table's dump identical to before with values of every kind;
// what cannot be undone is held with its reason, nothing forwarded; a row
// someone changed since stops its statement's undo.
import { expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { SQL } from "bun";
import { BIN, connect, manifestText, run } from "../helpers.ts";
import { fixtureServer, journalRows, workspace, type Workspace } from "../fixtures/proxy-kit.ts";
import { describePostgres, freshDatabase, urlFor } from "../fixtures/postgres.ts";
import { pgDump, pgShop } from "../fixtures/sql-kit.ts";

setDefaultTimeout(60_000);

async function shop(): Promise<Workspace & { db: SQL }> {
  const url = urlFor(await freshDatabase());
  const db = await pgShop(url);
  const ws = workspace(
    manifestText({
      servers: { db: fixtureServer("postgres-server.ts", [], { env: { POSTGRES_CONNECTION_STRING: url, QUERY_LOG: "./queries.jsonl" } }) },
      tools: [
        { match: "db.pg_execute_query", class: "readonly" },
        {
          match: "db.pg_execute_sql",
          class: "reversible",
          sql: { dialect: "postgres", statement: "$.sql", read: { tool: "db.pg_execute_query", arg: "query", args: { operation: "select" } }, max_rows: 25 },
        },
      ],
    } as never),
    "syn-sql-pg-",
  );
  return { ...ws, db };
}

const text = (result: any) => result.content[0].text as string;

async function agent(ws: Workspace, statements: string[]): Promise<string[]> {
  await using connection = await connect(BIN, ["proxy", "--manifest", ws.manifest], { cwd: ws.dir });
  const answers: string[] = [];
  for (const sql of statements) answers.push(text(await connection.client.callTool({ name: "pg_execute_sql", arguments: { sql } })));
  return answers;
}

describePostgres("SQL undo on PostgreSQL through the binary", () => {
  test("DELETE with and without WHERE, UPDATE of many rows, INSERT with chosen and given keys, INSERT … SELECT: undone, the tables identical", async () => {
    const ws = await shop();
    const before = await pgDump(ws.db);
    const answers = await agent(ws, [
      "DELETE FROM items WHERE note = 'vip' AND id > 1",
      "UPDATE items SET price = price * 2, meta = meta || '{\"raised\": true}', tags = array_append(tags, 'x') WHERE id <= 20",
      "INSERT INTO items (name, ratio) VALUES ('new', 1e-5), ('newer', NULL)",
      "INSERT INTO pairs (a, b, v) VALUES (9, 'q''r', 1)",
      "DELETE FROM pairs",
      "INSERT INTO items (name, price, meta) SELECT name || ' copy', price, meta FROM items WHERE id <= 5",
    ]);
    expect(answers.filter((answer) => !answer.startsWith("SQL executed successfully."))).toEqual([]);
    expect((await ws.db`SELECT count(*)::int AS n FROM pairs`)[0].n).toBe(0);
    const rows = journalRows(ws.journal);
    expect(rows.map((row) => row.status)).toEqual(Array(6).fill("applied"));
    // This server does not say how many rows a statement changed: the transaction that wrote them is what makes them its.
    expect(rows.every((row) => String(row.warnings).includes("the server did not say how many rows it changed"))).toBe(true);
    expect(JSON.parse(String(rows[0]!.snapshot)).pinned).toBe(
      `DELETE FROM items WHERE (note = 'vip' AND id > 1) AND "id" IN ('2'::bigint, '3'::bigint, ${[1002, 1005, 1008, 1011, 1014, 1017, 1020, 1023, 1026].map((id) => `'${id}'::bigint`).join(", ")})`,
    );
    const undo = await run(["undo"], { cwd: ws.dir });
    expect(undo.stderr).toBe("");
    if (undo.code !== 0) console.log(undo.stdout);
    expect(undo.code).toBe(0);
    expect(undo.stdout).toContain("6 calls reverted");
    expect(await pgDump(ws.db)).toBe(before);
    await ws.db.close();
  });

  test("held with the reason, nothing forwarded: a schema change, several statements, a cascade, more than max_rows, a join, an upsert on a constraint by name, SQL PostgreSQL would not run", async () => {
    const ws = await shop();
    const before = await pgDump(ws.db);
    const answers = await agent(ws, [
      "DROP TABLE pairs",
      "DELETE FROM pairs; DROP TABLE items",
      "DELETE FROM parents WHERE id = 1",
      "UPDATE items SET note = 'x'",
      "DELETE FROM items USING pairs WHERE items.id = pairs.a",
      "INSERT INTO pairs VALUES (1, 'x', 5) ON CONFLICT ON CONSTRAINT pairs_pkey DO UPDATE SET v = excluded.v",
      "DELETE FROM items WHERE (id = 1",
      "TRUNCATE items",
      "INSERT INTO items (name) SELECT name FROM items",
    ]);
    for (const answer of answers) expect(answer).toStartWith("HELD FOR APPROVAL — Synartesis did not run this call.");
    expect(answers[0]).toContain("it changes the schema (Drop)");
    expect(answers[1]).toContain("it runs several statements in one call");
    expect(answers[2]).toContain('foreign keys of kids cascade from table "public"."parents"');
    expect(answers[3]).toContain('it would touch more than 25 rows of "public"."items" (max_rows)');
    expect(answers[4]).toContain("a DELETE … USING (a join) is not yet undone");
    expect(answers[5]).toContain('its conflict target is the constraint "pairs_pkey", not the primary key\'s columns (a, b)');
    expect(answers[6]).toContain("PostgreSQL would not run it: syntax error at end of input");
    expect(answers[7]).toContain("TRUNCATE empties tables");
    expect(answers[8]).toContain('it would insert 30 rows into "public"."items", more than 25 (max_rows)');
    expect(await pgDump(ws.db)).toBe(before);
    await ws.db.close();
  });

  test("upserts: DO UPDATE of rows that existed and rows that did not, DO NOTHING, values of every kind: undone, the tables identical", async () => {
    const ws = await shop();
    const before = await pgDump(ws.db);
    const answers = await agent(ws, [
      "INSERT INTO pairs (a, b, v) VALUES (1, 'x', 10), (1, 'y', 2), (7, 'new', 7) ON CONFLICT (b, a) DO UPDATE SET v = excluded.v",
      `INSERT INTO items (id, name, meta, tags, seen) VALUES (1, 'not Ada', '{"b": 1}', '{z}', now()), (500, 'fresh', NULL, NULL, NULL)
         ON CONFLICT (id) DO UPDATE SET name = excluded.name, meta = items.meta || excluded.meta, tags = excluded.tags, seen = excluded.seen`,
      "INSERT INTO items (id, name) VALUES (2, 'skipped'), (501, 'also fresh') ON CONFLICT DO NOTHING",
    ]);
    expect(answers.filter((answer) => !answer.startsWith("SQL executed successfully."))).toEqual([]);
    expect(await ws.db`SELECT a, b, v FROM pairs ORDER BY a, b`).toEqual([
      { a: 1, b: "x", v: 10 },
      { a: 1, b: "y", v: 2 },
      { a: 2, b: "x", v: 3 },
      { a: 7, b: "new", v: 7 },
    ]);
    expect((await ws.db`SELECT name FROM items WHERE id IN (1, 2, 500, 501) ORDER BY id`).map((row: any) => row.name)).toEqual([
      "not Ada",
      "Zoë",
      "fresh",
      "also fresh",
    ]);
    const shown = JSON.parse((await run(["show", "--json"], { cwd: ws.dir })).stdout);
    expect(shown.actions.map((action: any) => action.status)).toEqual(["applied", "applied", "applied"]);
    // (1, 'y') was written with the value it had: a new writer all the same, so it is put back too (to the same values).
    expect(shown.actions[0].inverse.args.sql).toBe(`DELETE FROM "public"."pairs" WHERE ("a", "b") IN (('7'::integer, 'new'::text))`);
    expect(shown.actions[0].inverse.then[0].args.sql).toStartWith(
      `UPDATE "public"."pairs" SET "v" = synartesis_before.column3 FROM (VALUES ('1'::integer, 'x'::text, '1'::integer), ('1'::integer, 'y'::text, '2'::integer))`,
    );
    expect(shown.actions[2].inverse.args.sql).toBe(`DELETE FROM "public"."items" WHERE "id" IN ('501'::bigint)`);
    expect(shown.actions[2].inverse.then).toBeUndefined();
    const undo = await run(["undo"], { cwd: ws.dir });
    expect(undo.stderr).toBe("");
    if (undo.code !== 0) console.log(undo.stdout);
    expect(undo.code).toBe(0);
    expect(undo.stdout).toContain("3 calls reverted");
    expect(await pgDump(ws.db)).toBe(before);
    await ws.db.close();
  });

  test("three reads per UPDATE once its table is described; a table changed meanwhile is described afresh, the call refused once, then recorded", async () => {
    const ws = await shop();
    await using connection = await connect(BIN, ["proxy", "--manifest", ws.manifest], { cwd: ws.dir });
    const call = async (sql: string) => text(await connection.client.callTool({ name: "pg_execute_sql", arguments: { sql } }));
    expect(await call("UPDATE items SET note = 'one' WHERE id = 1")).toStartWith("SQL executed successfully.");
    expect(await call("UPDATE items SET note = 'two' WHERE id = 2")).toStartWith("SQL executed successfully.");
    const sent = readFileSync(join(ws.dir, "queries.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { tool: string; query: string });
    const writes = sent.flatMap((entry, i) => (entry.tool === "pg_execute_sql" ? [i] : []));
    // The first: the table's description, the rows before; between the two: the first's rows after (twice) and the second's rows before.
    expect(writes).toEqual([2, 6]);
    expect(sent[0]!.query).toStartWith("SELECT described AS synartesis_table");
    await ws.db.unsafe("ALTER TABLE items ADD COLUMN tier text DEFAULT 'gold'");
    await ws.db`UPDATE items SET tier = 'platinum' WHERE id = 3`;
    const before = await pgDump(ws.db);
    expect(await call("DELETE FROM items WHERE id = 3")).toBe(
      "Synartesis did not run pg_execute_sql, because it could not record the rows it would change: its table changed since Synartesis last described it; the call can be sent again as it is",
    );
    expect(await pgDump(ws.db)).toBe(before);
    expect(await call("DELETE FROM items WHERE id = 3")).toStartWith("SQL executed successfully.");
    await connection.client.close();
    const undo = await run(["undo"], { cwd: ws.dir });
    expect(undo.code).toBe(0);
    expect((await ws.db`SELECT note, tier FROM items WHERE id <= 3 ORDER BY id`).map((row: { note: string; tier: string }) => [row.note, row.tier])).toEqual([
      [null, "gold"],
      ["vip", "gold"],
      ["vip", "platinum"],
    ]);
    await ws.db.close();
  });

  test("a row someone changed after the agent's statement stops that statement's undo, row by row, and is kept", async () => {
    const ws = await shop();
    await agent(ws, ["UPDATE items SET note = 'agent' WHERE id <= 3"]);
    await ws.db`UPDATE items SET name = 'someone else' WHERE id = 2`;
    const undo = await run(["undo"], { cwd: ws.dir });
    expect(undo.code).toBe(1);
    expect(undo.stdout).toContain("DRIFT");
    expect(undo.stdout).toContain("row id = '2': name: 'Zoë' → 'someone else'");
    expect((await ws.db`SELECT name, note FROM items WHERE id = 2`)[0]).toEqual({ name: "someone else", note: "agent" });
    await ws.db.close();
  });
});
