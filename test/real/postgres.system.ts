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

const SQL_SERVERS = join(ROOT, ".tmp", "sql-servers", "node_modules");

/** A real PostgreSQL MCP server, its shipped policy, and how its SQL tool is called and answers. */
interface PgServer {
  name: string;
  path: string;
  manifest: string;
  /** The environment variable its database URL goes in. */
  urlVariable: string;
  tool: string;
  /** Its answer to a statement that ran. */
  ran: RegExp;
}

const SERVERS: PgServer[] = [
  {
    name: "@henkey/postgres-mcp-server@1.0.7",
    path: process.env.POSTGRES_MCP_SERVER ?? join(SQL_SERVERS, "@henkey", "postgres-mcp-server", "build", "index.js"),
    manifest: "postgres.yaml",
    urlVariable: "POSTGRES_CONNECTION_STRING",
    tool: "pg_execute_sql",
    ran: /^SQL executed successfully\./,
  },
  {
    name: "mcp-postgres-server@0.3.1",
    path: process.env.MCP_POSTGRES_SERVER ?? join(SQL_SERVERS, "mcp-postgres-server", "build", "index.js"),
    manifest: "mcp-postgres-server.yaml",
    urlVariable: "DATABASE_URL",
    tool: "execute",
    ran: /^\{"rowCount":\d+,"command":"[A-Z]+"\}$/,
  },
];

interface Shop {
  dir: string;
  db: SQL;
}

/** The shipped policy in a temp folder, its server pointed at the installed server and a fresh shop database. */
async function shop(server: PgServer, maxRows?: number): Promise<Shop> {
  if (!existsSync(server.path))
    throw new Error(`${server.name} is not installed at ${server.path}: npm install --prefix .tmp/sql-servers ${server.name} (as .ci/run does)`);
  if (!POSTGRES_URL) throw new Error("SYNARTESIS_TEST_POSTGRES is not set (scripts/pg-cluster.sh start DIR prints a URL for it)");
  const url = urlFor(await freshDatabase());
  const dir = tempDir("syn-real-pg-");
  const doc = parseDocument(readFileSync(join(ROOT, "manifests", server.manifest), "utf8"));
  doc.setIn(["servers", "postgres", "command"], "node");
  doc.setIn(["servers", "postgres", "args"], [server.path]);
  doc.setIn(["servers", "postgres", "env", server.urlVariable], url);
  if (maxRows !== undefined) {
    const rules = doc.toJS().tools as Array<{ match: string }>;
    doc.setIn(["tools", rules.findIndex((rule) => rule.match === `postgres.${server.tool}`), "sql", "max_rows"], maxRows);
  }
  writeFileSync(join(dir, "synartesis.yaml"), doc.toString());
  return { dir, db: await pgShop(url) };
}

async function agent(server: PgServer, shop: Shop, statements: string[]): Promise<string[]> {
  const client = await startAgent(shop.dir, "pg-agent");
  const answers: string[] = [];
  for (const sql of statements) answers.push(text(await client.callTool({ name: server.tool, arguments: { sql } })));
  await endSession(client);
  return answers;
}

for (const server of SERVERS)
  describe.concurrent(`${server.name} behind Synartesis`, () => {
    test("DELETE with and without WHERE, UPDATE of many rows, INSERT with chosen and given keys, upserts: undone, every table identical", async () => {
      const db = await shop(server);
      const before = await pgDump(db.db);
      const answers = await agent(server, db, [
        "DELETE FROM items WHERE note = 'vip' AND id > 1",
        "UPDATE items SET price = price * 2, meta = meta || '{\"raised\": true}', tags = array_append(tags, 'x'), seen = now() WHERE id <= 20",
        "INSERT INTO items (name, ratio) VALUES ('new', 1e-5), ('newer', NULL)",
        "INSERT INTO pairs (a, b, v) VALUES (9, 'q''r', 1)",
        "DELETE FROM pairs",
        "INSERT INTO items (name, price) SELECT name || ' copy', price FROM items WHERE id <= 5",
        `INSERT INTO items (id, name, meta, seen) VALUES (1, 'not Ada', '{"b": 1}', now()), (500, 'fresh', NULL, NULL)
           ON CONFLICT (id) DO UPDATE SET name = excluded.name, meta = items.meta || excluded.meta, seen = excluded.seen`,
        "INSERT INTO items (id, name) VALUES (2, 'skipped'), (501, 'also fresh') ON CONFLICT DO NOTHING",
      ]);
      expect(answers.filter((answer) => !server.ran.test(answer))).toEqual([]);
      expect((await db.db`SELECT count(*)::int AS n FROM pairs`)[0].n).toBe(0);
      expect(journalRows(join(db.dir, "synartesis.db")).map((row) => row.status)).toEqual(Array(8).fill("applied"));
      const undo = await run(["undo"], { cwd: db.dir });
      expect(undo.stderr).toBe("");
      expect(undo.code).toBe(0);
      expect(undo.stdout).toContain("8 calls reverted");
      expect(await pgDump(db.db)).toBe(before);
      await db.db.close();
    });

    test("held with the reason, nothing forwarded: a schema change, several statements, a cascade, more than max_rows, an upsert on a constraint by name, SQL PostgreSQL would not run", async () => {
      const db = await shop(server, 25);
      const before = await pgDump(db.db);
      const answers = await agent(server, db, [
        "DROP TABLE pairs",
        "DELETE FROM pairs; DROP TABLE items",
        "DELETE FROM parents WHERE id = 1",
        "UPDATE items SET note = 'x'",
        "INSERT INTO pairs VALUES (1, 'x', 5) ON CONFLICT ON CONSTRAINT pairs_pkey DO UPDATE SET v = excluded.v",
        "DELETE FROM items WHERE (id = 1",
      ]);
      for (const answer of answers) expect(answer).toStartWith("HELD FOR APPROVAL — Synartesis did not run this call.");
      expect(answers[2]).toContain('foreign keys of kids cascade from table "public"."parents"');
      expect(answers[3]).toContain('it would touch more than 25 rows of "public"."items" (max_rows)');
      expect(await pgDump(db.db)).toBe(before);
      await db.db.close();
    });

    test("a row someone changed after the agent's statement stops that statement's undo, and is kept", async () => {
      const db = await shop(server);
      await agent(server, db, ["UPDATE items SET note = 'agent' WHERE id <= 3"]);
      await db.db`UPDATE items SET name = 'someone else' WHERE id = 2`;
      const undo = await run(["undo"], { cwd: db.dir });
      expect(undo.code).toBe(1);
      expect(undo.stdout).toContain("row id = '2': name: 'Zoë' → 'someone else'");
      expect((await db.db`SELECT name, note FROM items WHERE id = 2`)[0]).toEqual({ name: "someone else", note: "agent" });
      await db.db.close();
    });
  });
