// Per-call latency of the proxy: the toy CRM directly vs through
// `synartesis proxy`, for a read-only call (get_customer) and a reversible one
// (update_customer: pre-read, write, post-read, journal), with SDK clients over
// stdio against the built binary. Prints p50/p95/p99 and the proxy's overhead.
//
//   bun bench/proxy.ts            CALLS=1000 WARMUP=100 by default
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { at, ms, open, read, ROOT as root, SEED_STATE, write, type Call } from "./calls.ts";

await import("../test/preload.ts"); // rebuilds dist/synartesis when the sources are newer

const CALLS = Number(process.env.CALLS ?? 1000);
const WARMUP = Number(process.env.WARMUP ?? 100);

async function measure(client: Client, call: Call): Promise<number[]> {
  for (let i = 0; i < WARMUP; i++) await client.callTool(call(i));
  const times: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const start = Bun.nanoseconds();
    const result = await client.callTool(call(i));
    times.push((Bun.nanoseconds() - start) / 1e6);
    if (result.isError) throw new Error(`${call(i).name} failed: ${JSON.stringify(result.content)}`);
  }
  return times.sort((a, b) => a - b);
}

const dir = mkdtempSync(join(tmpdir(), "syn-bench-"));
try {
  writeFileSync(join(dir, "direct.json"), JSON.stringify(SEED_STATE, null, 2) + "\n");
  writeFileSync(join(dir, "crm.json"), JSON.stringify(SEED_STATE, null, 2) + "\n");
  copyFileSync(join(root, "manifests", "toy-crm.yaml"), join(dir, "synartesis.yaml"));

  const direct = await open(["toy-crm", "--state", "direct.json"], dir);
  const proxied = await open(["proxy", "--manifest", "synartesis.yaml"], dir);

  const results = {
    "get_customer direct": await measure(direct, read),
    "get_customer proxied": await measure(proxied, read),
    "update_customer direct": await measure(direct, write),
    "update_customer proxied": await measure(proxied, write),
  };
  await direct.close();
  await proxied.close();

  const rows = Object.entries(results).map(([name, t]) => [name, ms(at(t, 0.5)), ms(at(t, 0.95)), ms(at(t, 0.99))]);
  const header = ["call (ms)", "p50", "p95", "p99"];
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c]!.length)));
  const line = (cells: string[]) => cells.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join("  ");
  console.log(`synartesis proxy vs the toy CRM directly: ${CALLS} sequential calls each (after ${WARMUP} warm-up), SDK client over stdio`);
  console.log(line(header));
  for (const row of rows) console.log(line(row));

  const p50 = (name: keyof typeof results) => at(results[name], 0.5);
  const readOverhead = p50("get_customer proxied") - p50("get_customer direct");
  // The reversible call's own cost beyond the direct write: its pre-read and post-read, the journal, the hop.
  const reversibleExtra = p50("update_customer proxied") - p50("update_customer direct");
  const twoReads = 2 * p50("get_customer direct");
  console.log("");
  console.log(`read-only overhead at p50: ${ms(readOverhead)} ms (target <= 0.300)`);
  console.log(
    `reversible extra at p50: ${ms(reversibleExtra)} ms = two reads (~${ms(twoReads)} ms, measured direct) + ${ms(reversibleExtra - twoReads)} ms (target <= 0.500)`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
