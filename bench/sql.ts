// What recording a statement of SQL costs (SPEC §14): an UPDATE of 1, 100 and
// 10,000 rows sent to an SQLite MCP server directly and through the proxy
// (which reads the rows before, pins the statement, reads changes() and the
// rows after: three reads of the server's read tool), and the undo of one
// such UPDATE (`synartesis undo`, a process of its own that starts the server).
// Interleaved: each round times direct and proxied calls in turn. The server
// is the test fixture that behaves as mcp-server-sqlite-npx.
//
//   bun bench/sql.ts            ROUNDS=5 by default
import { Database } from "bun:sqlite";
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
const SERVER = join(ROOT, "test", "fixtures", "sqlite-server.ts");

/** A folder with a 10,000-row table and a manifest whose write_query is recorded row by row. */
function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), "syn-bench-sql-"));
  const db = new Database(join(dir, "bench.db"));
  db.run("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL, stock INTEGER)");
  const insert = db.prepare("INSERT INTO items VALUES (?, ?, ?, ?)");
  db.transaction(() => {
    for (let i = 1; i <= 10_000; i++) insert.run(i, `item ${i}`, i * 0.25, i % 50);
  })();
  db.close();
  writeFileSync(
    join(dir, "synartesis.yaml"),
    [
      "version: 1",
      "servers:",
      `  db: { command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(SERVER)}, ./bench.db] }`,
      "tools:",
      '  - { match: "db.read_query", class: readonly }',
      '  - match: "db.write_query"',
      "    class: reversible",
      '    sql: { dialect: sqlite, statement: "$.query", read: { tool: "db.read_query", arg: query }, max_rows: 20000 }',
      "",
    ].join("\n"),
  );
  return dir;
}

async function direct(dir: string): Promise<Client> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [SERVER, join(dir, "bench.db")], stderr: "inherit" });
  const client = new Client({ name: "bench", version: "1.0.0" }, { capabilities: {} });
  await client.connect(transport);
  return client;
}

async function update(client: Client, rows: number, round: number): Promise<number> {
  const start = Bun.nanoseconds();
  const result = await client.callTool({
    name: "write_query",
    arguments: { query: `UPDATE items SET price = price + ${round + 1}, stock = stock + 1 WHERE id <= ${rows}` },
  });
  if (result.isError) throw new Error(JSON.stringify(result.content));
  return (Bun.nanoseconds() - start) / 1e6;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const timings = new Map<string, number[]>();
const note = (key: string, value: number) => timings.set(key, [...(timings.get(key) ?? []), value]);

for (let round = 0; round < ROUNDS; round++) {
  for (const rows of SIZES) {
    const dir = folder();
    const plain = await direct(dir);
    for (let i = 0; i < WARMUP; i++) await update(plain, 1, i);
    note(`direct ${rows}`, await update(plain, rows, round));
    await plain.close();
    const proxied = await open(["proxy"], dir, BINARY);
    for (let i = 0; i < WARMUP; i++) await update(proxied, 1, i); // the catalogue is read by the first
    note(`proxy ${rows}`, await update(proxied, rows, round));
    await proxied.close();
    // Undo the run: the timed statement and the warm-up ones.
    const start = Bun.nanoseconds();
    const undo = Bun.spawnSync([BINARY, "undo"], { cwd: dir, stdout: "pipe", stderr: "pipe" });
    if (undo.exitCode !== 0) throw new Error(`undo failed: ${undo.stdout.toString()}${undo.stderr.toString()}`);
    note(`undo ${rows}`, (Bun.nanoseconds() - start) / 1e6);
  }
}

console.log(`${ROUNDS} rounds, median ms; UPDATE of N rows of a 10,000-row SQLite table through write_query`);
console.log("rows     statement alone   through the proxy   added   undo (a process, server started)");
for (const rows of SIZES) {
  const [alone, proxied, undone] = ["direct", "proxy", "undo"].map((kind) => median(timings.get(`${kind} ${rows}`)!));
  console.log(
    `${String(rows).padEnd(8)} ${ms(alone!).padStart(15)}   ${ms(proxied!).padStart(17)}   ${ms(proxied! - alone!).padStart(5)}   ${ms(undone!).padStart(8)}`,
  );
}
