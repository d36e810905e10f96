// Speed at scale (issue 20): the toy CRM holding 1000 customers in a state
// file, a run of 1000 reversible writes recorded through the proxy, its dry run
// and its undo, 1000 mixed calls piped at once, the journal of 1000 runs × 100
// actions and the proxy's peak memory (also without the JIT, SYNARTESIS_JIT=0);
// each beside the same toy driven direct.
//
//   bun bench/scale.ts [--customers 1000] [--calls 1000] [--runs 1000] [--actions 100]
//                      [--workers 2] [--skip-journal] [--bin dist/synartesis] [--keep]
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const root = join(import.meta.dir, "..");
const USAGE = "usage: bun bench/scale.ts [--customers N] [--calls N] [--runs N] [--actions N] [--workers N] [--skip-journal] [--bin PATH] [--keep]";

function parseFlags(argv: string[]) {
  const numbers: Record<string, number> = { customers: 1000, calls: 1000, runs: 1000, actions: 100, workers: 2 };
  const flags = { bin: undefined as string | undefined, keep: false, skipJournal: false };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const name = flag.replace(/^--/, "");
    if (flag === "--keep") flags.keep = true;
    else if (flag === "--skip-journal") flags.skipJournal = true;
    // Each process starts in a folder of its own: a relative path is taken from where the bench was started.
    else if (flag === "--bin" && argv[i + 1] !== undefined) flags.bin = resolve(argv[++i]!);
    else if (flag.startsWith("--") && name in numbers) {
      const value = argv[++i];
      if (value === undefined || !/^\d+$/.test(value) || Number(value) < 1) fail(`${flag} needs a whole number ≥ 1 (got ${value ?? "nothing"})\n${USAGE}`);
      numbers[name] = Number(value);
    } else fail(`unknown argument "${flag}"\n${USAGE}`);
  }
  if (numbers.calls! > numbers.customers!)
    fail(`--calls (${numbers.calls}) must not exceed --customers (${numbers.customers}): each call touches its own customer`);
  if (numbers.actions! > numbers.customers!) fail(`--actions (${numbers.actions}) must not exceed --customers (${numbers.customers})`);
  return { ...flags, customers: numbers.customers!, calls: numbers.calls!, runs: numbers.runs!, actions: numbers.actions!, workers: numbers.workers! };
}

/** The bench's folder once it exists: kept when the bench fails, for a look. */
let workDir: string | undefined;

function fail(message: string, detail = ""): never {
  const kept = workDir ? `\n(its folders are kept: ${workDir})` : "";
  console.error(`bench/scale: ${message}${detail ? `\n${detail.slice(-3000)}` : ""}${kept}`);
  process.exit(1);
}

const options = parseFlags(process.argv.slice(2));
const bin = options.bin ?? join(root, "dist", "synartesis");
if (options.bin === undefined) await import("../test/preload.ts"); // rebuilds dist/synartesis when the sources are newer
if (!existsSync(bin)) fail(`no binary at ${bin}: run \`bun run build\` first`);

// ---- the scenario's data ----

const PLANS = ["free", "pro", "enterprise"] as const;
const customerId = (n: number) => `c_${String(n).padStart(3, "0")}`;

/** The state file as a person would write it: the documented form, customers sorted by id, two-space indentation. */
function seedText(count: number): string {
  const customers: Record<string, unknown> = {};
  for (let n = 1; n <= count; n++) {
    const id = customerId(n);
    customers[id] = {
      id,
      name: `Customer ${n}`,
      email: `customer${n}@example.com`,
      plan: PLANS[n % 3],
      notes: n % 4 === 0 ? "" : `account opened, batch ${n % 17}`,
    };
  }
  return JSON.stringify({ customers, outbox: [] }, null, 2) + "\n";
}

type Frame = Record<string, unknown>;
const call = (id: number, name: string, args: Record<string, string>): Frame => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name, arguments: args },
});

function session(calls: Frame[]): string {
  const initialize = {
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench-scale", version: "1" } },
  };
  return [initialize, { jsonrpc: "2.0", method: "notifications/initialized" }, ...calls].map((f) => JSON.stringify(f)).join("\n") + "\n";
}

/** update_customer over `count` records from `first` on (wrapping at `customers`), call ids 1…count. */
function writes(count: number, customers: number, first = 1, tag = "run"): Frame[] {
  return Array.from({ length: count }, (_, i) => {
    const n = ((first - 1 + i) % customers) + 1;
    return call(i + 1, "update_customer", { id: customerId(n), plan: PLANS[(n + 1) % 3]!, notes: `${tag}: edit ${i + 1} by the agent` });
  });
}

/** Half reads, the rest updates, creates and deletes; each call touches its own customer, so every one succeeds. */
function mixed(count: number): Frame[] {
  return Array.from({ length: count }, (_, i) => {
    const n = i + 1;
    const kind = n % 10;
    if (kind < 5) return call(n, "get_customer", { id: customerId(n) });
    if (kind < 8) return call(n, "update_customer", { id: customerId(n), notes: `mixed edit ${n}` });
    if (kind === 8) return call(n, "create_customer", { name: `New ${n}`, email: `new${n}@example.com`, plan: "pro" });
    return call(n, "delete_customer", { id: customerId(n) });
  });
}

// ---- driving the binary ----

interface Piped {
  /** From spawning the process to the last answer. */
  ms: number;
  replies: Map<number, any>;
  /** VmHWM of the process once every answer arrived, in bytes. */
  peakRss: number;
}

function peakRss(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = /^VmHWM:\s+(\d+) kB$/m.exec(status);
  return kb ? Number(kb[1]) * 1024 : NaN;
}

/** Each JSON-RPC line of `stdout`, parsed, until it ends. */
async function readMessages(stdout: ReadableStream<Uint8Array>, onMessage: (message: any) => void): Promise<void> {
  let buffered = "";
  const decoder = new TextDecoder();
  for await (const chunk of stdout) {
    buffered += decoder.decode(chunk, { stream: true });
    const lines = buffered.split("\n");
    buffered = lines.pop()!;
    for (const line of lines) onMessage(JSON.parse(line));
  }
}

/** Start `args`, write every frame at once, wait for an answer to each request id 1…expected, then close stdin. */
async function pipeAll(args: string[], cwd: string, input: string, expected: number, env: Record<string, string> = {}): Promise<Piped> {
  const started = performance.now();
  const proc = Bun.spawn([bin, ...args], { cwd, env: { ...process.env, NO_COLOR: "1", ...env }, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
  const stderr = new Response(proc.stderr).text();
  proc.stdin.write(input);
  await proc.stdin.flush();

  const replies = new Map<number, any>();
  let lastAnswer = NaN;
  let rss = NaN;
  await readMessages(proc.stdout, (message) => {
    if (typeof message.id === "number" && message.id > 0 && !("method" in message)) replies.set(message.id, message);
    if (replies.size === expected && Number.isNaN(lastAnswer)) {
      lastAnswer = performance.now() - started;
      rss = peakRss(proc.pid);
      proc.stdin.end();
    }
  });
  const code = await proc.exited;
  if (code !== 0) fail(`${args.join(" ")} exited ${code}`, await stderr);
  if (replies.size !== expected) fail(`${args[0]}: ${replies.size} of ${expected} requests answered`, await stderr);
  // At its default level the proxy logs only what went wrong (a failed post-read, an unknown outcome, …).
  if ((await stderr) !== "") fail(`${args[0]} reported problems`, await stderr);
  return { ms: lastAnswer, replies, peakRss: rss };
}

/**
 * The upstream's share of a recorded mix: the toy alone, sent what the proxy
 * sends it for `calls`, in the order R-PROXY-6 allows — the reads at once; the
 * writes one at a time, and since the toy answers in order (`in_order: true`
 * in its manifest), each write together with its post-read and the next
 * write's pre-read. The time to the last answer.
 */
async function driveLikeTheProxy(cwd: string, calls: Frame[]): Promise<number> {
  const proc = Bun.spawn([bin, "toy-crm", "--state", "crm.json"], {
    cwd,
    env: { ...process.env, NO_COLOR: "1" },
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
  });
  const stderr = new Response(proc.stderr).text();
  const waiting = new Map<number, (reply: any) => void>();
  const reading = readMessages(proc.stdout, (reply) => waiting.get(reply.id)?.(reply));
  const name = (frame: Frame) => (frame.params as { name: string }).name;
  let nextId = 0;
  const send = async (frames: Frame[]): Promise<any[]> => {
    const replies = frames.map((frame) => new Promise<any>((resolve) => waiting.set((frame.id = ++nextId), resolve)));
    proc.stdin.write(frames.map((frame) => JSON.stringify(frame) + "\n").join(""));
    await proc.stdin.flush();
    const answered = await Promise.all(replies);
    const failed = answered.find((reply) => reply.error || (reply.result?.isError && name(frames.find((f) => f.id === reply.id)!) !== "get_customer"));
    if (failed) fail(`the toy driven as the proxy would refused a call: ${JSON.stringify(failed)}`, await stderr);
    return answered;
  };
  const initialize = session([]).split("\n")[0]!;
  await send([JSON.parse(initialize)]);
  proc.stdin.write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n");

  const started = performance.now();
  const readOf = (frame: Frame): Frame | undefined => {
    const id = (frame.params as { arguments: { id?: string } }).arguments.id;
    return name(frame) === "create_customer" || id === undefined ? undefined : call(0, "get_customer", { id });
  };
  const reads = send(calls.filter((frame) => name(frame) === "get_customer").map((frame) => ({ ...frame })));
  const writes = calls.filter((frame) => name(frame) !== "get_customer");
  const first = writes[0] && readOf(writes[0]);
  if (first) await send([first]);
  for (const [i, write] of writes.entries()) {
    // Each call touches its own customer: the next pre-read is never this post-read.
    const together = [{ ...write }, readOf(write), writes[i + 1] && readOf(writes[i + 1]!)].filter((frame): frame is Frame => frame !== undefined);
    await send(together);
  }
  await reads;
  const ms = performance.now() - started;
  proc.stdin.end();
  await Promise.all([proc.exited, reading]);
  return ms;
}

function assertAllSucceeded(what: string, piped: Piped): void {
  const failed = [...piped.replies.values()].filter((r) => r.error || r.result?.isError);
  if (failed.length > 0) fail(`${what}: ${failed.length} calls failed, e.g. ${JSON.stringify(failed[0])}`);
}

async function cli(args: string[], cwd: string): Promise<{ ms: number; stdout: string }> {
  const started = performance.now();
  const proc = Bun.spawn([bin, ...args], { cwd, env: { ...process.env, NO_COLOR: "1" }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  const ms = performance.now() - started;
  if (code !== 0) fail(`synartesis ${args.join(" ")} exited ${code}`, stdout + stderr);
  return { ms, stdout };
}

/** A folder holding the toy CRM's manifest and a seeded state file (crm.json, as manifests/toy-crm.yaml names it). */
function project(dir: string, seed: string): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "synartesis.yaml"), readFileSync(join(root, "manifests", "toy-crm.yaml")));
  writeFileSync(join(dir, "crm.json"), seed);
  return dir;
}

function fileSize(path: string): number {
  return existsSync(path) ? statSync(path).size : 0;
}

// ---- the figures ----

const ms = (n: number) => `${n.toFixed(0)} ms`;
const perCall = (n: number, count: number) => `${((n / count) * 1000).toFixed(0)} µs/call`;
const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;
function report(what: string, figure: string, detail = ""): void {
  console.log(`  ${what.padEnd(44)} ${figure.padStart(9)}  ${detail}`);
}

const { customers, calls } = options;
const seed = seedText(customers);
const base = realpathSync(mkdtempSync(join(tmpdir(), "syn-bench-scale-")));
workDir = base;
console.log(
  `scale bench: toy CRM with ${customers} customers in its --state file, ${calls} calls (${process.platform}-${process.arch}, ${navigator.hardwareConcurrency} cores)`,
);
try {
  const direct = project(join(base, "direct"), seed);
  const directWrites = await pipeAll(["toy-crm", "--state", "crm.json"], direct, session(writes(calls, customers)), calls);
  assertAllSucceeded("direct writes", directWrites);
  report(`${calls} update_customer, direct → last answer`, ms(directWrites.ms), perCall(directWrites.ms, calls));

  const run = project(join(base, "run"), seed);
  const recorded = await pipeAll(["proxy", "--log-level", "warn"], run, session(writes(calls, customers)), calls);
  assertAllSucceeded("recorded writes", recorded);
  report(
    `  the same through the proxy (recorded)`,
    ms(recorded.ms),
    `${perCall(recorded.ms, calls)}, +${perCall(recorded.ms - directWrites.ms, calls)} over direct`,
  );
  report("proxy peak RSS during those writes", mb(recorded.peakRss), "VmHWM");
  const lean = await pipeAll(["proxy", "--log-level", "warn"], project(join(base, "lean"), seed), session(writes(calls, customers)), calls, {
    SYNARTESIS_JIT: "0",
  });
  assertAllSucceeded("writes recorded without the JIT", lean);
  report(`  the same with SYNARTESIS_JIT=0`, ms(lean.ms), `peak RSS ${mb(lean.peakRss)}: the proxy without JavaScriptCore's JIT`);

  const changed = readFileSync(join(run, "crm.json"), "utf8");
  const dry = await cli(["undo", "--dry-run"], run);
  if (readFileSync(join(run, "crm.json"), "utf8") !== changed) fail("undo --dry-run changed the state file");
  const planned = (dry.stdout.match(/would revert/g) ?? []).length;
  if (planned !== calls) {
    const step = /^#\d+\s+would revert|^\s+would call:/;
    const lines = dry.stdout.split("\n").filter((line) => line.trim() !== "");
    // A dry run ends with its summary; ending on a step, its output was cut (the process left before its pipe drained).
    const cut = step.test(lines.at(-1) ?? "") ? `\n(the output, ${dry.stdout.length} characters, ends on a step, before any summary: it was cut short)` : "";
    fail(`undo --dry-run planned ${planned} of ${calls} calls`, lines.filter((line) => !step.test(line)).join("\n") + cut);
  }
  report("undo --dry-run of that run", ms(dry.ms), perCall(dry.ms, calls));

  const undo = await cli(["undo"], run);
  // The toy adds "lastId" when it rewrites the file; everything else must be the seed, byte for byte.
  const expected = seed.replace(/\n}\n$/, `,\n  "lastId": ${customers}\n}\n`);
  if (readFileSync(join(run, "crm.json"), "utf8") !== expected) fail("after undo the state file is not the seed");
  report("undo of that run", ms(undo.ms), `${perCall(undo.ms, calls)}; state file equals the seed`);

  const mixedDirect = await pipeAll(["toy-crm", "--state", "crm.json"], project(join(base, "mixed-direct"), seed), session(mixed(calls)), calls);
  assertAllSucceeded("direct mixed calls", mixedDirect);
  report(`${calls} mixed calls piped at once, direct`, ms(mixedDirect.ms), "50% reads, 30% updates, 10% creates, 10% deletes");
  const serialised = await driveLikeTheProxy(project(join(base, "mixed-serialised"), seed), mixed(calls));
  report(`  the same, direct, sent as the proxy must`, ms(serialised), "writes one at a time, with their pre- and post-reads");
  const mixedProxied = await pipeAll(["proxy", "--log-level", "warn"], project(join(base, "mixed"), seed), session(mixed(calls)), calls);
  assertAllSucceeded("mixed calls through the proxy", mixedProxied);
  // The same calls in the same order leave the same state file (none of them writes a time into it); otherwise the figures compare different work.
  const stateAfter = (folder: string) => readFileSync(join(base, folder, "crm.json"), "utf8");
  if (stateAfter("mixed-serialised") !== stateAfter("mixed-direct") || stateAfter("mixed") !== stateAfter("mixed-direct")) {
    fail("the mixed calls left different state files direct, sent as the proxy must, and through the proxy");
  }
  report(`  the same through the proxy → last answer`, ms(mixedProxied.ms), `every request answered; the three state files agree`);

  if (!options.skipJournal) {
    const { runs, actions, workers } = options;
    const journal = join(base, "journal", "synartesis.db");
    const started = performance.now();
    let next = 0;
    // Each worker has its own server and state file; all write one journal, one proxy process per run.
    await Promise.all(
      Array.from({ length: Math.min(workers, runs) }, async (_, w) => {
        const dir = project(join(base, "journal", `worker-${w}`), seed);
        while (next < runs) {
          const r = next++;
          const piped = await pipeAll(
            ["proxy", "--log-level", "warn", "--journal", journal],
            dir,
            session(writes(actions, customers, ((r * actions) % customers) + 1, `run ${r + 1}`)),
            actions,
          );
          assertAllSucceeded(`journal run ${r + 1}`, piped);
        }
      }),
    );
    const total = fileSize(journal) + fileSize(`${journal}-wal`);
    const seconds = (performance.now() - started) / 1000;
    report(`journal, ${runs} runs × ${actions} actions`, mb(total), `${Math.round(total / (runs * actions))} bytes/action; built in ${seconds.toFixed(0)} s`);
  }
  if (options.keep) console.log(`  kept: ${base}`);
} finally {
  if (!options.keep) rmSync(base, { recursive: true, force: true });
}
