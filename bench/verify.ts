// What the chain costs to check (R-VERIFY, issue 34): a journal of RUNS runs ×
// ACTIONS calls written through the journal's own API (test/fixtures/
// review-journal.ts: packed bodies, entries chained as the proxy chains them),
// then `synartesis verify` from the built binary over all of it, timed; and
// the same journal opened for the first time by this build when it was
// written without a chain (the migration that starts one). Medians of ROUNDS.
//
//   bun bench/verify.ts [--runs 1000] [--actions 100] [--rounds 3]
//   BASELINE=/path/to/synartesis bun bench/verify.ts   also time that binary's verify, in
//                                       turn with this build's (on a copy of the journal)
import { copyFileSync, existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import { buildReviewJournal } from "../test/fixtures/review-journal.ts";

const root = join(import.meta.dir, "..");
const bin = join(root, "dist", "synartesis");
const flag = (name: string, fallback: number) => {
  const at = process.argv.indexOf(`--${name}`);
  const value = at >= 0 ? Number(process.argv[at + 1]) : fallback;
  if (!Number.isInteger(value) || value < 1) {
    console.error(`bench/verify: --${name} needs a whole number ≥ 1\nusage: bun bench/verify.ts [--runs N] [--actions N] [--rounds N]`);
    process.exit(2);
  }
  return value;
};
const [runs, actions, rounds] = [flag("runs", 1000), flag("actions", 100), flag("rounds", 3)];
if (!existsSync(bin)) {
  console.error("bench/verify: no dist/synartesis: bun run build");
  process.exit(1);
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const work = mkdtempSync(join(tmpdir(), "syn-bench-verify-"));
try {
  const journal = join(work, "synartesis.db");
  let began = performance.now();
  await buildReviewJournal(journal, runs, actions);
  console.log(
    `journal: ${runs} runs × ${actions} calls written in ${((performance.now() - began) / 1000).toFixed(1)} s, ${(statSync(journal).size / 1e6).toFixed(0)} MB`,
  );

  const baseline = process.env.BASELINE;
  const theirs = join(work, "baseline.db");
  if (baseline) copyFileSync(journal, theirs);
  const timed = (binary: string, file: string) => {
    const start = performance.now();
    const verify = Bun.spawnSync([binary, "verify", "--journal", file], { stdout: "pipe", stderr: "pipe" });
    if (verify.exitCode !== 0) throw new Error(`verify exited ${verify.exitCode}: ${verify.stderr.toString()}${verify.stdout.toString().slice(-500)}`);
    return performance.now() - start;
  };
  const times: number[] = [];
  const baselineTimes: number[] = [];
  for (let round = 0; round < rounds; round++) {
    times.push(timed(bin, journal));
    if (baseline) baselineTimes.push(timed(baseline, theirs));
  }
  console.log(`verify, every run (${runs * actions} calls): ${(median(times) / 1000).toFixed(2)} s`);
  if (baseline) console.log(`  the same, ${baseline} in turn with it: ${(median(baselineTimes) / 1000).toFixed(2)} s`);

  // The same journal as an older build left it: no chain; the first open starts one.
  const old = join(work, "old.db");
  copyFileSync(journal, old);
  const db = new Database(old);
  db.run("DROP TABLE entries; DROP TABLE chain_origin; DROP TABLE chain_runs; DROP TABLE chain_actions; DELETE FROM migrations WHERE name = '0010-chain'");
  db.close();
  began = performance.now();
  const first = Bun.spawnSync([bin, "list", "--journal", old, "--json"], { stdout: "pipe", stderr: "pipe" });
  if (first.exitCode !== 0) throw new Error(`list exited ${first.exitCode}: ${first.stderr.toString()}`);
  console.log(`first open of that journal without a chain (the migration chains every row): ${((performance.now() - began) / 1000).toFixed(2)} s`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
