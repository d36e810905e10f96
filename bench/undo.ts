// How long undo takes on a long run: 1000 update_customer calls through the
// proxy on the toy CRM, then `undo --dry-run` and `undo` through the built
// binary (target: under 1 s each). Run: bun bench/undo.ts [--calls N] [--bin PATH] [--keep]
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const root = join(import.meta.dir, "..");
const argv = process.argv.slice(2);
const bin = argv.includes("--bin") ? argv[argv.indexOf("--bin") + 1]! : join(root, "dist", "synartesis");
const calls = argv.includes("--calls") ? Number(argv[argv.indexOf("--calls") + 1]) : 1000;
const keep = argv.includes("--keep");

if (!existsSync(bin)) {
  console.error(`no binary at ${bin}: run \`bun run build\` first`);
  process.exit(2);
}

const SEED = {
  c_001: { id: "c_001", name: "Ada Lovelace", email: "ada@example.com", plan: "pro", notes: "founding customer" },
  c_002: { id: "c_002", name: "Grace Hopper", email: "grace@example.com", plan: "enterprise", notes: "renewal in March" },
  c_003: { id: "c_003", name: "Alan Turing", email: "alan@example.com", plan: "free", notes: "" },
};
const PLANS = ["free", "pro", "enterprise"];

async function timed(args: string[], cwd: string, stdin?: string): Promise<{ ms: number; code: number; stdout: string; stderr: string }> {
  const started = performance.now();
  const proc = Bun.spawn([bin, ...args], {
    cwd,
    env: { ...process.env, NO_COLOR: "1" },
    stdin: stdin === undefined ? "ignore" : new TextEncoder().encode(stdin),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { ms: performance.now() - started, code, stdout, stderr };
}

function check(ok: boolean, what: string, detail = ""): void {
  if (!ok) {
    console.error(`bench/undo: ${what}${detail ? `\n${detail}` : ""}`);
    process.exit(1);
  }
}

const dir = realpathSync(mkdtempSync(join(tmpdir(), "syn-bench-undo-")));
try {
  writeFileSync(join(dir, "synartesis.yaml"), readFileSync(join(root, "manifests", "toy-crm.yaml")));
  const frames = [
    JSON.stringify({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench", version: "1" } },
    }),
    JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
  ];
  for (let i = 1; i <= calls; i++) {
    const id = `c_00${((i - 1) % 3) + 1}`;
    const args = { id, plan: PLANS[i % 3], notes: `edit ${i} by the agent` };
    frames.push(JSON.stringify({ jsonrpc: "2.0", id: i, method: "tools/call", params: { name: "update_customer", arguments: args } }));
  }

  const recorded = await timed(["proxy", "--log-level", "warn"], dir, frames.join("\n") + "\n");
  check(recorded.code === 0, `proxy exited ${recorded.code}`, recorded.stderr);
  const replies = recorded.stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line));
  check(replies.filter((r) => r.id > 0 && r.result && !r.result.isError).length === calls, "not every call succeeded", recorded.stdout.slice(0, 2000));

  const before = readFileSync(join(dir, "crm.json"), "utf8");
  const dry = await timed(["undo", "--dry-run"], dir);
  check(dry.code === 0, `undo --dry-run exited ${dry.code}`, dry.stdout.slice(-2000) + dry.stderr);
  check(readFileSync(join(dir, "crm.json"), "utf8") === before, "the dry run changed the state file");
  check((dry.stdout.match(/would revert/g) ?? []).length === calls, "the dry run did not plan every call");

  const undo = await timed(["undo"], dir);
  check(undo.code === 0, `undo exited ${undo.code}`, undo.stdout.slice(-2000) + undo.stderr);
  const after = JSON.parse(readFileSync(join(dir, "crm.json"), "utf8"));
  check(JSON.stringify(after.customers) === JSON.stringify(SEED), "undo did not restore the original customers");

  const help = await timed(["--help"], dir);
  const fmt = (ms: number) => `${ms.toFixed(0).padStart(6)} ms`;
  const target = (ms: number) => (ms < 1000 ? "ok (< 1 s)" : "SLOWER than the 1 s target");
  console.log(`undo bench: ${calls} update_customer calls on the toy CRM (${process.platform}-${process.arch})`);
  console.log(`  record through the proxy  ${fmt(recorded.ms)}  (${((recorded.ms / calls) * 1000).toFixed(0)} µs per call)`);
  console.log(`  undo --dry-run            ${fmt(dry.ms)}  ${target(dry.ms)}`);
  console.log(`  undo                      ${fmt(undo.ms)}  ${target(undo.ms)}  (${((undo.ms / calls) * 1000).toFixed(0)} µs per call)`);
  console.log(`  (binary start, --help     ${fmt(help.ms)})`);
  if (keep) console.log(`  kept: ${dir}`);
} finally {
  if (!keep) rmSync(dir, { recursive: true, force: true });
}
