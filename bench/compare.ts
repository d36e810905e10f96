// Per-call latency of this build against another binary (the previous
// release's), in one interleaved run: the toy CRM directly, through this
// build's proxy and through the other's (both in front of this build's toy,
// the one measured directly), SDK clients over stdio, a read-only
// call (get_customer) and a reversible one (update_customer); each round
// measures every target in turn, and the order flips every round, so a slow
// minute of the machine falls on both. Prints the proxies' p50 overheads and
// their ratio; on Linux also each process's CPU per call (all its threads),
// which moves far less with the machine's minute than time does. Per-call
// latency must not regress: run this whenever a change touches the call path.
//
//   bun bench/compare.ts --ref 0eed521        build that commit (git worktree in .tmp/) and compare
//   BASELINE=/path/to/synartesis BASELINE_REF=0eed521 bun bench/compare.ts
// Each proxy runs the toy CRM's policy as its own commit shipped it (an older
// binary refuses keys added since): BASELINE_REF (or --ref) names that commit.
//   ROUNDS=4 CALLS=500 WARMUP=100 by default
//   BENCH_POSTGRES=postgres://… both proxies record into PostgreSQL: a fresh
//                               database of that server each, each round (dropped after)
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SQL } from "bun";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { at, BINARY, ms, open, read, ROOT, SEED_STATE, childCpuMs, timed, write } from "./calls.ts";

await import("../test/preload.ts"); // rebuilds dist/synartesis when the sources are newer

const ROUNDS = Number(process.env.ROUNDS ?? 4);
const CALLS = Number(process.env.CALLS ?? 500);
const WARMUP = Number(process.env.WARMUP ?? 100);

/** The binary to compare with and the toy's policy it shipped: $BASELINE, or `--ref REF` built once into .tmp/baseline-REF. */
function baseline(): { binary: string; name: string; manifest: string } {
  const ref = process.argv.includes("--ref") ? process.argv[process.argv.indexOf("--ref") + 1] : process.env.BASELINE_REF;
  if (!ref) throw new Error("give the binary to compare with: --ref COMMIT, or BASELINE=/path/to/synartesis with BASELINE_REF=COMMIT (its commit)");
  const shipped = Bun.spawnSync(["git", "show", `${ref}:manifests/toy-crm.yaml`], { cwd: ROOT });
  if (shipped.exitCode !== 0) throw new Error(`git show ${ref}:manifests/toy-crm.yaml failed: ${shipped.stderr.toString()}`);
  const manifest = shipped.stdout.toString();
  if (process.env.BASELINE) return { binary: process.env.BASELINE, name: ref, manifest };
  const binary = join(ROOT, ".tmp", `baseline-${ref}`, "synartesis");
  if (!existsSync(binary)) {
    const tree = join(ROOT, ".tmp", `baseline-${ref}`, "tree");
    mkdirSync(join(ROOT, ".tmp", `baseline-${ref}`), { recursive: true });
    const steps = [
      ["git", "worktree", "add", "--force", "--detach", tree, ref],
      ["bun", "install", "--frozen-lockfile"],
      ["bun", "-e", `import { build } from "./scripts/build.ts"; await build(${JSON.stringify(binary)})`],
      ["git", "worktree", "remove", "--force", tree],
    ];
    for (const [index, argv] of steps.entries()) {
      const done = Bun.spawnSync(argv, { cwd: index === 0 || index === 3 ? ROOT : tree, stdout: "inherit", stderr: "inherit" });
      if (done.exitCode !== 0) throw new Error(`${argv.join(" ")} failed`);
    }
  }
  return { binary, name: ref, manifest };
}

const POSTGRES = process.env.BENCH_POSTGRES;
const admin = POSTGRES ? new SQL(POSTGRES, { max: 1 }) : undefined;
const databases: string[] = [];

/** With BENCH_POSTGRES, a fresh database of that server for one proxy's journal. */
async function journalEnv(): Promise<Record<string, string>> {
  if (!POSTGRES || !admin) return {};
  const database = `syn_compare_${process.pid}_${databases.length}`;
  await admin.unsafe(`CREATE DATABASE ${database}`);
  databases.push(database);
  const url = new URL(POSTGRES);
  url.pathname = `/${database}`;
  return { SYNARTESIS_JOURNAL: url.toString() };
}

/** A folder with the toy's seed state and `manifest`; a client of `args` started there with `binary`. */
async function target(binary: string, args: string[], manifest: string, env: Record<string, string> = {}): Promise<{ client: Client; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), "syn-compare-"));
  writeFileSync(join(dir, "crm.json"), JSON.stringify(SEED_STATE, null, 2) + "\n");
  writeFileSync(join(dir, "synartesis.yaml"), manifest);
  return { client: await open(args, dir, binary, env), dir };
}

/** The policy with its server started from this build: every proxy talks to the same toy CRM, the one measured directly. */
const sameToy = (manifest: string) => manifest.replace(/^(\s+)command: synartesis$/m, `$1command: ${JSON.stringify(BINARY)}`);
const other = baseline();
const mine = sameToy(readFileSync(join(ROOT, "manifests", "toy-crm.yaml"), "utf8"));
other.manifest = sameToy(other.manifest);
const names = ["direct", "this build", other.name] as const;
const samples = new Map<string, number[]>();
/** Per target and call, the CPU its process used over the timed calls (ms), where it can be read. */
const cpu = new Map<string, number>();
for (let round = 0; round < ROUNDS; round++) {
  const targets = [
    await target(BINARY, ["toy-crm", "--state", "crm.json"], mine),
    await target(BINARY, ["proxy", "--manifest", "synartesis.yaml"], mine, await journalEnv()),
    await target(other.binary, ["proxy", "--manifest", "synartesis.yaml"], other.manifest, await journalEnv()),
  ];
  const order = round % 2 === 0 ? [0, 1, 2] : [0, 2, 1];
  for (const [kind, call] of [
    ["read-only", read],
    ["reversible", write],
  ] as const) {
    for (const index of order) {
      await timed(targets[index]!.client, call, WARMUP);
      const key = `${kind} ${names[index]}`;
      const { client } = targets[index]!;
      const before = childCpuMs(client);
      samples.set(key, [...(samples.get(key) ?? []), ...(await timed(client, call, CALLS))]);
      const after = childCpuMs(client);
      if (before !== undefined && after !== undefined) cpu.set(key, (cpu.get(key) ?? 0) + after - before);
    }
  }
  for (const { client, dir } of targets) {
    await client.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const p50 = (key: string) =>
  at(
    [...samples.get(key)!].sort((a, b) => a - b),
    0.5,
  );
if (admin) {
  for (const database of databases) await admin.unsafe(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  await admin.close();
}
console.log(
  `${ROUNDS} rounds, order flipped each round, ${CALLS} sequential calls per target and call (after ${WARMUP} warm-up), SDK client over stdio${POSTGRES ? ", journals in PostgreSQL" : ""}`,
);
console.log(`${"call".padEnd(10)}  ${"direct p50".padStart(10)}  ${"this build".padStart(12)}  ${other.name.slice(0, 20).padStart(20)}  ratio`);
for (const kind of ["read-only", "reversible"]) {
  const direct = p50(`${kind} direct`);
  const ours = p50(`${kind} this build`) - direct;
  const theirs = p50(`${kind} ${other.name}`) - direct;
  console.log(
    `${kind.padEnd(10)}  ${ms(direct).padStart(10)}  ${`+${ms(ours)}`.padStart(12)}  ${`+${ms(theirs)}`.padStart(20)}  ${(ours / theirs).toFixed(2)}`,
  );
}
if (cpu.size) {
  console.log("CPU per call, ms, of the process each client talks to (the toy directly, or a proxy), all its threads");
  for (const kind of ["read-only", "reversible"]) {
    const [direct, ours, theirs] = names.map((name) => cpu.get(`${kind} ${name}`)! / (ROUNDS * CALLS)) as [number, number, number];
    console.log(`${kind.padEnd(10)}  ${ms(direct).padStart(10)}  ${ms(ours).padStart(12)}  ${ms(theirs).padStart(20)}  ${(ours / theirs).toFixed(2)}`);
  }
}
