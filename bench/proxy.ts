// Per-call latency of the proxy: the toy CRM directly vs through `synartesis
// proxy`, for a read-only call (get_customer) and a reversible one
// (update_customer: pre-read, write, post-read, journal), with SDK clients
// against the built binary: over stdio (the toy vs `proxy`), and over
// Streamable HTTP (the toy served by the SDK's own HTTP transport vs `proxy
// --http` in front of the toy over stdio). Prints p50/p95/p99 and the
// proxy's overhead for each.
//
//   bun bench/proxy.ts            CALLS=1000 WARMUP=100 by default
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { at, ms, open, openHttp, read, ROOT as root, SEED_STATE, timed, write, type Call } from "./calls.ts";
import { serve } from "./conformance.ts";

await import("../test/preload.ts"); // rebuilds dist/synartesis when the sources are newer

const CALLS = Number(process.env.CALLS ?? 1000);
const WARMUP = Number(process.env.WARMUP ?? 100);
const TOKEN = "bench-token-0123456789abcdef";

async function measure(client: Client, call: Call): Promise<number[]> {
  await timed(client, call, WARMUP);
  return (await timed(client, call, CALLS)).sort((a, b) => a - b);
}

/** Both calls, direct then proxied. */
async function measureBoth(direct: Client, proxied: Client): Promise<Record<string, number[]>> {
  const results = {
    "get_customer direct": await measure(direct, read),
    "get_customer proxied": await measure(proxied, read),
    "update_customer direct": await measure(direct, write),
    "update_customer proxied": await measure(proxied, write),
  };
  await direct.close();
  await proxied.close();
  return results;
}

function printTable(title: string, results: Record<string, number[]>): void {
  const rows = Object.entries(results).map(([name, t]) => [name, ms(at(t, 0.5)), ms(at(t, 0.95)), ms(at(t, 0.99))]);
  const header = ["call (ms)", "p50", "p95", "p99"];
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c]!.length)));
  const line = (cells: string[]) => cells.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join("  ");
  console.log(title);
  console.log(line(header));
  for (const row of rows) console.log(line(row));
}

const dir = mkdtempSync(join(tmpdir(), "syn-bench-"));
try {
  for (const file of ["direct.json", "crm.json", "direct-http.json"]) writeFileSync(join(dir, file), JSON.stringify(SEED_STATE, null, 2) + "\n");
  copyFileSync(join(root, "manifests", "toy-crm.yaml"), join(dir, "synartesis.yaml"));

  const stdio = await measureBoth(await open(["toy-crm", "--state", "direct.json"], dir), await open(["proxy", "--manifest", "synartesis.yaml"], dir));

  const workspace = { dir, journal: join(dir, "synartesis.db") };
  const directServer = await serve(workspace, "toy-crm-http", [process.execPath, join(root, "bench", "toy-crm-http.ts"), join(dir, "direct-http.json")]);
  const proxyServer = await serve(
    workspace,
    "proxy-http",
    [join(root, "dist", "synartesis"), "proxy", "--http", "0", "--manifest", join(dir, "synartesis.yaml")],
    {
      SYNARTESIS_TOKEN: TOKEN,
    },
  );
  let http: Record<string, number[]>;
  try {
    http = await measureBoth(await openHttp(directServer.url), await openHttp(proxyServer.url, { Authorization: `Bearer ${TOKEN}` }));
  } finally {
    await directServer.stop();
    await proxyServer.stop();
  }

  printTable(`synartesis proxy vs the toy CRM directly: ${CALLS} sequential calls each (after ${WARMUP} warm-up), SDK client over stdio`, stdio);
  console.log("");
  printTable(`synartesis proxy --http vs the toy CRM served over HTTP by the SDK: the same, SDK client over Streamable HTTP`, http);

  const p50 = (results: Record<string, number[]>, name: string) => at(results[name]!, 0.5);
  const p99 = (results: Record<string, number[]>, name: string) => at(results[name]!, 0.99);
  const readOverhead = p50(stdio, "get_customer proxied") - p50(stdio, "get_customer direct");
  // The reversible call's own cost beyond the direct write: its pre-read and post-read, the journal, the hop.
  const reversibleExtra = p50(stdio, "update_customer proxied") - p50(stdio, "update_customer direct");
  const twoReads = 2 * p50(stdio, "get_customer direct");
  console.log("");
  console.log(`read-only overhead at p50: ${ms(readOverhead)} ms (target <= 0.300)`);
  console.log(
    `reversible extra at p50: ${ms(reversibleExtra)} ms = two reads (~${ms(twoReads)} ms, measured direct) + ${ms(reversibleExtra - twoReads)} ms (target <= 0.500)`,
  );
  const httpExtra = (call: string, pick: typeof p50) => pick(http, `${call} proxied`) - pick(http, `${call} direct`);
  console.log(`HTTP read-only overhead: p50 ${ms(httpExtra("get_customer", p50))} ms (target <= 0.500), p99 ${ms(httpExtra("get_customer", p99))} ms`);
  console.log(
    `HTTP reversible extra: p50 ${ms(httpExtra("update_customer", p50))} ms (its two reads included), p99 ${ms(httpExtra("update_customer", p99))} ms`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
