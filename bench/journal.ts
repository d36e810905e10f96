// What the journal costs per call, SQLite file vs PostgreSQL on loopback, in
// the same run: two `synartesis proxy` processes over the same toy CRM
// manifest, one recording into a file and one into a database, driven by SDK
// clients in alternating rounds (so load on the machine hits both alike).
// A reversible write (update_customer: pre-read, write, post-read, two journal
// commits) and a read (get_customer: one journal insert). PostgreSQL is
// measured as the journal uses it by default (synchronous_commit=off, the
// promise of the SQLite journal's synchronous=NORMAL) and with
// synchronous_commit=on (every commit waits for the server's disk). Prints
// p50/p95/p99 and what PostgreSQL adds (issue 18's target: at most 1 ms at
// p50 for a write).
//
//   bun bench/journal.ts                CALLS=1000 WARMUP=100 ROUNDS=10 by default
//   BENCH_POSTGRES=postgres://… bun bench/journal.ts   use that server (a fresh
//                                       database is made in it and dropped after);
//                                       otherwise a throwaway cluster is started
//                                       with scripts/pg-cluster.sh (fsync on, as a
//                                       server a team runs would have it)
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SQL } from "bun";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { at, ms, open, read, ROOT as root, SEED_STATE, write, type Call } from "./calls.ts";

await import("../test/preload.ts"); // rebuilds dist/synartesis when the sources are newer

const CALLS = Number(process.env.CALLS ?? 1000);
const WARMUP = Number(process.env.WARMUP ?? 100);
const ROUNDS = Number(process.env.ROUNDS ?? 10);

function fail(message: string): never {
  console.error(`bench/journal: ${message}`);
  process.exit(1);
}

/** A PostgreSQL server to measure against: BENCH_POSTGRES, or a throwaway cluster; `stop` undoes what was made. */
async function postgres(): Promise<{ url: string; stop: () => Promise<void> }> {
  const given = process.env.BENCH_POSTGRES;
  if (given) {
    const admin = new SQL(given, { max: 1 });
    const database = `syn_bench_${process.pid}`;
    await admin.unsafe(`CREATE DATABASE ${database}`);
    const url = new URL(given);
    url.pathname = `/${database}`;
    return {
      url: url.toString(),
      stop: async () => {
        await admin.unsafe(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
        await admin.close();
      },
    };
  }
  // A folder of its own: the postgres user that runs it must be able to reach it.
  const cluster = mkdtempSync(join(tmpdir(), "syn-bench-pg-"));
  const script = join(root, "scripts", "pg-cluster.sh");
  const started = Bun.spawnSync(["bash", script, "start", cluster], { stderr: "pipe" });
  if (started.exitCode !== 0) fail(`could not start a PostgreSQL cluster (set BENCH_POSTGRES to use a running one):\n${started.stderr.toString()}`);
  return {
    url: started.stdout.toString().trim(),
    stop: async () => {
      Bun.spawnSync(["bash", script, "stop", cluster]);
      rmSync(cluster, { recursive: true, force: true });
    },
  };
}

async function calls(client: Client, call: Call, from: number, count: number, into?: number[]): Promise<void> {
  for (let i = from; i < from + count; i++) {
    const start = Bun.nanoseconds();
    const result = await client.callTool(call(i));
    into?.push((Bun.nanoseconds() - start) / 1e6);
    if (result.isError) fail(`${call(i).name} failed: ${JSON.stringify(result.content)}`);
  }
}

const work = mkdtempSync(join(tmpdir(), "syn-bench-journal-"));
const server = await postgres();
try {
  const folders = { sqlite: join(work, "file"), postgres: join(work, "db"), synchronous: join(work, "db-synchronous") };
  for (const dir of Object.values(folders)) {
    Bun.spawnSync(["mkdir", "-p", dir]);
    writeFileSync(join(dir, "crm.json"), JSON.stringify(SEED_STATE, null, 2) + "\n");
    copyFileSync(join(root, "manifests", "toy-crm.yaml"), join(dir, "synartesis.yaml"));
  }
  const synchronous = `${server.url}${server.url.includes("?") ? "&" : "?"}options=${encodeURIComponent("-c synchronous_commit=on")}`;
  const journals = [
    { name: "sqlite", dir: folders.sqlite, journal: "synartesis.db" },
    { name: "postgres", dir: folders.postgres, journal: server.url },
    { name: "postgres, synchronous_commit=on", dir: folders.synchronous, journal: synchronous },
  ];
  const clients = await Promise.all(journals.map((j) => open(["proxy", "--log-level", "warn", "--journal", j.journal], j.dir)));
  const times: Record<string, number[]> = {};
  for (const [kind, call] of [
    ["update_customer", write],
    ["get_customer", read],
  ] as const) {
    for (const [i, journal] of journals.entries()) {
      await calls(clients[i]!, call, 0, WARMUP);
      times[`${kind}, ${journal.name}`] = [];
    }
    const perRound = Math.ceil(CALLS / ROUNDS);
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, journal] of journals.entries()) await calls(clients[i]!, call, round * perRound, perRound, times[`${kind}, ${journal.name}`]);
    }
  }
  await Promise.all(clients.map((client) => client.close()));

  const sorted = Object.fromEntries(Object.entries(times).map(([name, t]) => [name, [...t].sort((a, b) => a - b)]));
  const rows = Object.entries(sorted).map(([name, t]) => [name, ms(at(t, 0.5)), ms(at(t, 0.95)), ms(at(t, 0.99))]);
  const header = ["call through the proxy, journal (ms)", "p50", "p95", "p99"];
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c]!.length)));
  const line = (cells: string[]) => cells.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join("  ");
  console.log(
    `synartesis proxy recording into a SQLite file vs PostgreSQL on loopback: ${CALLS} sequential calls each, in ${ROUNDS} alternating rounds (after ${WARMUP} warm-up), SDK client over stdio`,
  );
  console.log(line(header));
  for (const row of rows) console.log(line(row));
  console.log("");
  for (const kind of ["update_customer", "get_customer"]) {
    for (const journal of ["postgres", "postgres, synchronous_commit=on"]) {
      const added = (q: number) => at(sorted[`${kind}, ${journal}`]!, q) - at(sorted[`${kind}, sqlite`]!, q);
      const target = kind === "update_customer" && journal === "postgres" ? " (target at p50: <= 1.000)" : "";
      console.log(`${journal} adds to ${kind}: p50 ${ms(added(0.5))} ms, p99 ${ms(added(0.99))} ms${target}`);
    }
  }
} finally {
  await server.stop();
  rmSync(work, { recursive: true, force: true });
}
