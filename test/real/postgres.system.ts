// manifests/postgres.yaml against the real @henkey/postgres-mcp-server (1.0.7,
// pure JavaScript; .ci/run installs it into .tmp/sql-servers) on a real
// PostgreSQL, through the built proxy and `synartesis undo` (SPEC §14):
// DELETE with and without WHERE, an UPDATE of many rows, INSERTs with chosen
// and given keys — each undone, every table identical to before, values of
// every kind; what cannot be undone held, nothing forwarded; a row someone
// changed since stops its statement's undo.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import type { SQL } from "bun";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseDocument } from "yaml";
import { ROOT, run, tempDir } from "../helpers.ts";
import { journalRows } from "../fixtures/proxy-kit.ts";
import { freshDatabase, POSTGRES_URL, urlFor } from "../fixtures/postgres.ts";
import { pgDump, pgShop } from "../fixtures/sql-kit.ts";
import { agent as startAgent, endSession, text } from "./agent-kit.ts";

setDefaultTimeout(60_000);

const SERVER = process.env.POSTGRES_MCP_SERVER ?? join(ROOT, ".tmp", "sql-servers", "node_modules", "@henkey", "postgres-mcp-server", "build", "index.js");

interface Shop {
  dir: string;
  db: SQL;
}

/** The shipped policy in a temp folder, its server pointed at the installed server and a fresh shop database. */
async function shop(maxRows?: number): Promise<Shop> {
  if (!existsSync(SERVER)) {
    throw new Error(
      `@henkey/postgres-mcp-server is not installed at ${SERVER}: npm install --prefix .tmp/sql-servers @henkey/postgres-mcp-server@1.0.7 (as .ci/run does)`,
    );
  }
  if (!POSTGRES_URL) throw new Error("SYNARTESIS_TEST_POSTGRES is not set (scripts/pg-cluster.sh start DIR prints a URL for it)");
  const url = urlFor(await freshDatabase());
  const dir = tempDir("syn-real-pg-");
  const doc = parseDocument(readFileSync(join(ROOT, "manifests", "postgres.yaml"), "utf8"));
  doc.setIn(["servers", "postgres", "command"], "node");
  doc.setIn(["servers", "postgres", "args"], [SERVER]);
  doc.setIn(["servers", "postgres", "env", "POSTGRES_CONNECTION_STRING"], url);
  if (maxRows !== undefined) {
    const rules = doc.toJS().tools as Array<{ match: string }>;
    doc.setIn(["tools", rules.findIndex((rule) => rule.match === "postgres.pg_execute_sql"), "sql", "max_rows"], maxRows);
  }
  writeFileSync(join(dir, "synartesis.yaml"), doc.toString());
  return { dir, db: await pgShop(url) };
}

async function agent(shop: Shop, statements: string[]): Promise<string[]> {
  const client = await startAgent(shop.dir, "pg-agent");
  const answers: string[] = [];
  for (const sql of statements) answers.push(text(await client.callTool({ name: "pg_execute_sql", arguments: { sql } })));
  await endSession(client);
  return answers;
}

describe.concurrent("@henkey/postgres-mcp-server behind Synartesis", () => {
  test("DELETE with and without WHERE, UPDATE of many rows, INSERT with chosen and given keys: undone, every table identical", async () => {
    const db = await shop();
    const before = await pgDump(db.db);
    const answers = await agent(db, [
      "DELETE FROM items WHERE note = 'vip' AND id > 1",
      "UPDATE items SET price = price * 2, meta = meta || '{\"raised\": true}', tags = array_append(tags, 'x'), seen = now() WHERE id <= 20",
      "INSERT INTO items (name, ratio) VALUES ('new', 1e-5), ('newer', NULL)",
      "INSERT INTO pairs (a, b, v) VALUES (9, 'q''r', 1)",
      "DELETE FROM pairs",
    ]);
    expect(answers.filter((answer) => !answer.startsWith("SQL executed successfully."))).toEqual([]);
    expect((await db.db`SELECT count(*)::int AS n FROM pairs`)[0].n).toBe(0);
    expect(journalRows(join(db.dir, "synartesis.db")).map((row) => row.status)).toEqual(Array(5).fill("applied"));
    const undo = await run(["undo"], { cwd: db.dir });
    expect(undo.stderr).toBe("");
    expect(undo.code).toBe(0);
    expect(undo.stdout).toContain("5 calls reverted");
    expect(await pgDump(db.db)).toBe(before);
    await db.db.close();
  });

  test("held with the reason, nothing forwarded: a schema change, several statements, a cascade, more than max_rows, an upsert, SQL PostgreSQL would not run", async () => {
    const db = await shop(25);
    const before = await pgDump(db.db);
    const answers = await agent(db, [
      "DROP TABLE pairs",
      "DELETE FROM pairs; DROP TABLE items",
      "DELETE FROM parents WHERE id = 1",
      "UPDATE items SET note = 'x'",
      "INSERT INTO pairs VALUES (1, 'x', 5) ON CONFLICT (a, b) DO UPDATE SET v = excluded.v",
      "DELETE FROM items WHERE (id = 1",
    ]);
    for (const answer of answers) expect(answer).toStartWith("HELD FOR APPROVAL — Synartesis did not run this call.");
    expect(answers[2]).toContain('foreign keys of kids cascade from table "public"."parents"');
    expect(answers[3]).toContain('it would touch more than 25 rows of "public"."items" (max_rows)');
    expect(await pgDump(db.db)).toBe(before);
    await db.db.close();
  });

  test("a row someone changed after the agent's statement stops that statement's undo, and is kept", async () => {
    const db = await shop();
    await agent(db, ["UPDATE items SET note = 'agent' WHERE id <= 3"]);
    await db.db`UPDATE items SET name = 'someone else' WHERE id = 2`;
    const undo = await run(["undo"], { cwd: db.dir });
    expect(undo.code).toBe(1);
    expect(undo.stdout).toContain("row id = '2': name: 'Zoë' → 'someone else'");
    expect((await db.db`SELECT name, note FROM items WHERE id = 2`)[0]).toEqual({ name: "someone else", note: "agent" });
    await db.db.close();
  });
});
