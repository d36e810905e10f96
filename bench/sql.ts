// What recording a statement of SQL costs (SPEC §14): an UPDATE of 1, 100 and
// 10,000 rows sent to a database's MCP server directly and through the proxy
// (which reads the rows before, pins the statement, and reads what it left:
// three reads of the server's read tool), and the undo of the run
// (`synartesis undo`, a process of its own that starts the server).
// Interleaved: each round times direct and proxied calls in turn. The servers
// are the test fixtures that answer as mcp-server-sqlite-npx and
// @henkey/postgres-mcp-server do.
//
//   bun bench/sql.ts                                              SQLite; ROUNDS=5 by default
//   DIALECT=postgres SYNARTESIS_TEST_POSTGRES=postgres://… bun bench/sql.ts
import { Database } from "bun:sqlite";
import { SQL } from "bun";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { BINARY, ms, open, ROOT } from "./calls.ts";

await import("../test/preload.ts"); // rebuilds dist/synartesis when the sources are newer

const ROUNDS = Number(process.env.ROUNDS ?? 5);
/** Statements each client sends first (untimed), so that neither side is timed while its code is still cold. */
const WARMUP = Number(process.env.WARMUP ?? 30);
const SIZES = [1, 100, 10_000];
const POSTGRES = process.env.DIALECT === "postgres";

/** One database of 10,000 items and the server that serves it, with the tool that writes and how it is called. */
interface Target {
  server: { args: string[]; env: Record<string, string> };
  tool: string;
  call(sql: string): Record<string, unknown>;
  rules: string[];
}

async function target(dir: string): Promise<Target> {
  if (!POSTGRES) {
    const db = new Database(join(dir, "bench.db"));
    db.run("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL, stock INTEGER)");
    const insert = db.prepare("INSERT INTO items VALUES (?, ?, ?, ?)");
    db.transaction(() => {
      for (let i = 1; i <= 10_000; i++) insert.run(i, `item ${i}`, i * 0.25, i % 50);
    })();
    db.close();
    return {
      server: { args: [join(ROOT, "test", "fixtures", "sqlite-server.ts"), join(dir, "bench.db")], env: {} },
      tool: "write_query",
      call: (query) => ({ query }),
      rules: [
        '  - { match: "db.read_query", class: readonly }',
        '  - match: "db.write_query"',
        "    class: reversible",
        '    sql: { dialect: sqlite, statement: "$.query", read: { tool: "db.read_query", arg: query }, max_rows: 20000 }',
      ],
    };
  }
  const admin = process.env.SYNARTESIS_TEST_POSTGRES;
  if (!admin) throw new Error("DIALECT=postgres needs SYNARTESIS_TEST_POSTGRES (scripts/pg-cluster.sh start DIR prints one)");
  const name = `syn_bench_${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`;
  const server = new SQL(admin, { max: 1 });
  await server.unsafe(`CREATE DATABASE ${name}`);
  await server.close();
  const url = new URL(admin);
  url.pathname = `/${name}`;
  const db = new SQL(url.toString(), { max: 1 });
  await db.unsafe(`CREATE TABLE items (id int PRIMARY KEY, name text, price numeric, stock int);
                   INSERT INTO items SELECT i, 'item ' || i, i * 0.25, i % 50 FROM generate_series(1, 10000) AS i`);
  await db.close();
  return {
    server: { args: [join(ROOT, "test", "fixtures", "postgres-server.ts")], env: { POSTGRES_CONNECTION_STRING: url.toString() } },
    tool: "pg_execute_sql",
    call: (sql) => ({ sql }),
    rules: [
      '  - { match: "db.pg_execute_query", class: readonly }',
      '  - match: "db.pg_execute_sql"',
      "    class: reversible",
      '    sql: { dialect: postgres, statement: "$.sql", read: { tool: "db.pg_execute_query", arg: query, args: { operation: select } }, max_rows: 20000 }',
    ],
  };
}

/** A folder with the database and a manifest whose writing tool is recorded row by row. */
async function folder(): Promise<{ dir: string; target: Target }> {
  const dir = mkdtempSync(join(tmpdir(), "syn-bench-sql-"));
  const db = await target(dir);
  const server = `{ command: ${JSON.stringify(process.execPath)}, args: ${JSON.stringify(db.server.args)}, env: ${JSON.stringify(db.server.env)} }`;
  writeFileSync(join(dir, "synartesis.yaml"), ["version: 1", "servers:", `  db: ${server}`, "tools:", ...db.rules, ""].join("\n"));
  return { dir, target: db };
}

async function direct(db: Target): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: db.server.args,
    env: { ...(process.env as Record<string, string>), ...db.server.env },
    stderr: "inherit",
  });
  const client = new Client({ name: "bench", version: "1.0.0" }, { capabilities: {} });
  await client.connect(transport);
  return client;
}

async function update(client: Client, db: Target, rows: number, round: number): Promise<number> {
  const start = Bun.nanoseconds();
  const result = await client.callTool({
    name: db.tool,
    arguments: db.call(`UPDATE items SET price = price + ${round + 1}, stock = stock + 1 WHERE id <= ${rows}`),
  });
  if (result.isError) throw new Error(JSON.stringify(result.content));
  return (Bun.nanoseconds() - start) / 1e6;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const timings = new Map<string, number[]>();
const note = (key: string, value: number) => timings.set(key, [...(timings.get(key) ?? []), value]);

for (let round = 0; round < ROUNDS; round++) {
  for (const rows of SIZES) {
    const { dir, target: db } = await folder();
    const plain = await direct(db);
    for (let i = 0; i < WARMUP; i++) await update(plain, db, 1, i);
    note(`direct ${rows}`, await update(plain, db, rows, round));
    await plain.close();
    const proxied = await open(["proxy"], dir, BINARY);
    for (let i = 0; i < WARMUP; i++) await update(proxied, db, 1, i); // the schema is read by the first
    note(`proxy ${rows}`, await update(proxied, db, rows, round));
    await proxied.close();
    // Undo the run: the timed statement and the warm-up ones.
    const start = Bun.nanoseconds();
    const undo = Bun.spawnSync([BINARY, "undo"], { cwd: dir, stdout: "pipe", stderr: "pipe" });
    if (undo.exitCode !== 0) throw new Error(`undo failed: ${undo.stdout.toString()}${undo.stderr.toString()}`);
    note(`undo ${rows}`, (Bun.nanoseconds() - start) / 1e6);
  }
}

console.log(`${ROUNDS} rounds, median ms; UPDATE of N rows of a 10,000-row ${POSTGRES ? "PostgreSQL" : "SQLite"} table through its server's SQL tool`);
console.log("rows     statement alone   through the proxy   added   undo (a process, server started)");
for (const rows of SIZES) {
  const [alone, proxied, undone] = ["direct", "proxy", "undo"].map((kind) => median(timings.get(`${kind} ${rows}`)!));
  console.log(
    `${String(rows).padEnd(8)} ${ms(alone!).padStart(15)}   ${ms(proxied!).padStart(17)}   ${ms(proxied! - alone!).padStart(5)}   ${ms(undone!).padStart(8)}`,
  );
}
