// A team on one PostgreSQL journal, through the built binary (issue 18, R-TEAM-1…4):
// two working folders stand for two machines. 16 proxies (8 in each) start at
// once on an empty database and each drive 50 reversible writes at once to a
// counting toy CRM; a call held in one folder is approved from the other and
// runs once; two undos of one run, one from each folder, send each inverse
// once; a proxy killed mid-call leaves a pending row that undo halts on;
// watch redraws from NOTIFY; an older schema is upgraded in place. Run by
// .ci/run with SYNARTESIS_TEST_POSTGRES; without it this check fails, never skips.
import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BIN, LineSession, run, tempDir, until, type RunResult } from "../helpers.ts";
import { countingLog, countingManifest, frames, SEED, type Call } from "../fixtures/counting-support.ts";
import { CHAIN_SETTING, POSTGRES_MIGRATIONS } from "../../src/journal/postgres/migrations.ts";
import { clientFor, firstMigrationOnly, freshDatabase, POSTGRES_URL, readableRows, testPassword, urlFor } from "../fixtures/postgres.ts";
import { shellWord, Tmux } from "../fixtures/tmux.ts";

setDefaultTimeout(240_000);
if (!POSTGRES_URL) throw new Error("SYNARTESIS_TEST_POSTGRES is not set: this check needs a PostgreSQL (scripts/pg-cluster.sh start DIR prints its URL)");

const PROXIES_PER_FOLDER = 8;
const WRITES = 50;
const EMAIL = { to: "ada@example.com", subject: "Your plan changed", body: "You are now on the free plan." };

const tmux = new Tmux();
afterAll(() => tmux.stop());

/** A folder standing for one machine: manifests p1…pN.yaml, each with its own counting CRM (state crm-N.json, log calls-N.log). */
function machine(proxies = PROXIES_PER_FOLDER): string {
  const dir = tempDir("syn-team-");
  for (let n = 1; n <= proxies; n++) {
    writeFileSync(join(dir, `p${n}.yaml`), countingManifest(join(dir, `calls-${n}.log`)).replace('"./crm.json"', `"./crm-${n}.json"`));
  }
  return dir;
}

/**
 * The proxy with manifest pN.yaml in `dir`, sent `calls` at once by an agent
 * that waits for every answer before it disconnects. Returns the answers by id.
 */
async function proxy(dir: string, n: number, calls: Call[], url: string, env: Record<string, string> = {}): Promise<Map<number, any>> {
  const session = new LineSession([BIN, "proxy", "--manifest", `p${n}.yaml`], { cwd: dir, env: { SYNARTESIS_JOURNAL: url, ...env } });
  for (const line of frames(calls, `team-${dir.slice(-6)}-${n}`)
    .trim()
    .split("\n"))
    session.send(line);
  const replies = new Map<number, any>();
  for (let id = 1; id <= calls.length; id++) replies.set(id, await session.response(id, 180_000));
  const code = await session.close();
  if (code !== 0) throw new Error(`proxy p${n} in ${dir} exited ${code}:\n${session.stderr}`);
  expect(session.stderr).not.toContain(testPassword());
  return replies;
}

/** `synartesis ARGS --journal URL` in `dir`, as a person on that machine (password from PGPASSWORD). */
async function cli(dir: string, args: string[], url: string, env: Record<string, string> = {}): Promise<RunResult> {
  const bare = url.replace(`:${encodeURIComponent(testPassword())}@`, "@");
  const result = await run([...args, "--journal", bare], { cwd: dir, env: { PGPASSWORD: testPassword(), ...env } });
  expect(result.stdout + result.stderr).not.toContain(testPassword());
  return result;
}

/** The CRM state of proxy 1 in `dir`. */
function state(dir: string): { customers: Record<string, unknown>; outbox: unknown[] } {
  return JSON.parse(readFileSync(join(dir, "crm-1.json"), "utf8"));
}

const ALL_MIGRATIONS = POSTGRES_MIGRATIONS.map((m) => m.name);

const writes = (tag: string): Call[] =>
  Array.from({ length: WRITES }, (_, i) => ["update_customer", { id: `c_00${(i % 3) + 1}`, notes: `${tag} write ${i + 1}` }]);

test("16 proxies from two folders, 50 writes each at once: every call seen by a server is one row, none twice, seq gapless per run", async () => {
  const database = await freshDatabase();
  const url = urlFor(database);
  const folders = [machine(), machine()];
  const started = folders.flatMap((dir, f) => Array.from({ length: PROXIES_PER_FOLDER }, (_, i) => ({ dir, n: i + 1, tag: `f${f}p${i + 1}` })));
  const replies = await Promise.all(started.map(({ dir, n, tag }) => proxy(dir, n, writes(tag), url)));
  for (const answered of replies) {
    expect(answered.size).toBe(WRITES);
    for (const reply of answered.values()) expect(reply.result?.isError ? JSON.stringify(reply.result) : "ok").toBe("ok");
  }

  const sql = clientFor(database);
  try {
    const runs: Array<{ id: string; label: string }> = await sql`SELECT id, label FROM runs`;
    expect(runs).toHaveLength(started.length);
    const rows: Array<{ id: string; run_id: string; seq: number; tool: string; args: string; status: string }> = await readableRows(
      sql,
      await sql`SELECT id, run_id, seq, tool, args, status, packed FROM actions`,
    );
    expect(rows).toHaveLength(started.length * WRITES);
    expect(new Set(rows.map((r) => r.id)).size).toBe(rows.length);
    for (const { dir, n, tag } of started) {
      const runId = runs.find((r) => r.label === `team-${dir.slice(-6)}-${n}`)!.id;
      const mine = rows.filter((r) => r.run_id === runId);
      expect(mine.map((r) => r.seq).sort((a, b) => a - b)).toEqual(Array.from({ length: WRITES }, (_, i) => i + 1));
      expect(mine.every((r) => r.status === "applied" && r.tool === "update_customer")).toBe(true);
      // What the server saw, write for write: the same calls, each once.
      const seen = countingLog(join(dir, `calls-${n}.log`)).filter((e) => e.event === "recv" && e.tool === "update_customer");
      const notes = (args: unknown) => (args as { notes: string }).notes;
      expect(seen.map((e) => notes(e.args)).sort()).toEqual(mine.map((r) => notes(JSON.parse(r.args))).sort());
      expect(new Set(seen.map((e) => notes(e.args))).size).toBe(WRITES);
      expect(seen.every((e) => notes(e.args).startsWith(`${tag} `))).toBe(true);
    }
    expect((await sql`SELECT name FROM migrations ORDER BY position`).map((r: { name: string }) => r.name)).toEqual(ALL_MIGRATIONS);
  } finally {
    await sql.close();
  }
  // Sixteen processes' rows, chained by whichever pass took them: every run's chain holds (R-VERIFY).
  const verified = await cli(folders[1]!, ["verify"], url);
  expect(verified.stderr).toBe("");
  expect(verified.stdout).toEndWith(`${started.length} runs verified: every record is as Synartesis wrote it.\n`);
  expect(verified.code).toBe(0);
});

test("a call held in one folder is approved from the other; retried in both at once, it runs exactly once; watch follows it live", async () => {
  const url = urlFor(await freshDatabase());
  const [here, there] = [machine(1), machine(1)];
  const first = await proxy(here, 1, [["send_email", EMAIL]], url);
  const text: string = first.get(1).result.content[0].text;
  expect(first.get(1).result.isError).toBe(true);
  const command = /^ {2}(.+ approve [0-9a-f]{8} --journal .+)$/m.exec(text)?.[1];
  expect(command).toBeDefined();
  expect(command).not.toContain(testPassword());

  // Someone on the other machine watches, then pastes the command into a shell.
  const bare = url.replace(`:${encodeURIComponent(testPassword())}@`, "@");
  const watch = await tmux.start(
    `cd ${shellWord(there)} && PGPASSWORD=${shellWord(testPassword())} ${shellWord(BIN)} watch --journal ${shellWord(bare)}; sleep 600`,
  );
  await tmux.until(watch, "the held call", (screen) => screen.includes("Waiting for a decision (1)") && screen.includes("crm.send_email"));
  const pasted = Bun.spawnSync(["sh", "-c", command!], { cwd: there, env: { ...process.env, PGPASSWORD: testPassword(), NO_COLOR: "1" } });
  expect([pasted.exitCode, pasted.stderr.toString()]).toEqual([0, ""]);
  await tmux.until(watch, "the approval", (screen) => screen.includes("Nothing is waiting."));

  const [a, b] = await Promise.all([proxy(here, 1, [["send_email", EMAIL]], url), proxy(there, 1, [["send_email", EMAIL]], url)]);
  const ran = [a.get(1), b.get(1)].filter((reply) => !reply.result.isError);
  expect(ran).toHaveLength(1);
  const sent = [here, there].flatMap((dir) => countingLog(join(dir, "calls-1.log")).filter((e) => e.event === "recv" && e.tool === "send_email"));
  expect(sent).toHaveLength(1);
  const gates = JSON.parse((await cli(there, ["gates", "--json"], url)).stdout);
  // The retry that lost the race asked again: a new request, not a second run.
  expect(gates.length).toBe(1);
});

test("two undos of one run at once, one from each folder: each inverse sent once, counted at the server; the seed is back exactly", async () => {
  const url = urlFor(await freshDatabase());
  const [here, there] = [machine(1), machine(1)];
  const calls: Call[] = [
    ["update_customer", { id: "c_001", plan: "free", notes: "wrong" }],
    ["update_customer", { id: "c_002", plan: "free" }],
    ["delete_customer", { id: "c_003" }],
    ["create_customer", { name: "Bogus", email: "bogus@example.com" }],
    ["update_customer", { id: "c_001", name: "A. Lovelace" }],
    ["update_customer", { id: "c_002", notes: "" }],
  ];
  await proxy(here, 1, calls, url);
  const runs = JSON.parse((await cli(here, ["list", "--json"], url)).stdout);
  const runId: string = runs[0].id;
  const slow = { COUNTING_SLOW_MS: "200" };
  const [a, b] = await Promise.all([cli(here, ["undo", runId.slice(0, 8)], url, slow), cli(there, ["undo", runId.slice(0, 8)], url, slow)]);
  for (const result of [a, b]) {
    expect([0, 1]).toContain(result.code);
    expect(result.stderr).not.toContain("internal error");
  }
  expect(((a.stdout + b.stdout).match(/^ +#\d+ +reverted/gm) ?? []).length).toBe(calls.length);
  const log = countingLog(join(here, "calls-1.log"));
  const keyed = (event: "recv" | "done") => log.filter((e) => e.event === event && e.key !== undefined).map((e) => e.key!);
  expect(keyed("recv")).toHaveLength(calls.length);
  expect(new Set(keyed("recv")).size).toBe(calls.length);
  expect(keyed("done").sort()).toEqual(keyed("recv").sort());
  expect(state(here).customers).toEqual(SEED);
  const show = JSON.parse((await cli(there, ["show", runId, "--json"], url)).stdout);
  expect(show.run.status).toBe("rolled_back");
  expect(show.actions.every((action: { status: string }) => action.status === "rolled_back")).toBe(true);
  expect((await cli(there, ["verify"], url)).code).toBe(0);
});

test("an undo killed mid-way on one machine: its claim expires, and an undo on the other machine takes it over; each inverse lands once", async () => {
  const database = await freshDatabase();
  const url = urlFor(database);
  const [here, there] = [machine(1), machine(1)];
  await proxy(
    here,
    1,
    [
      ["update_customer", { id: "c_001", plan: "free" }],
      ["update_customer", { id: "c_002", plan: "free" }],
      ["update_customer", { id: "c_003", plan: "pro" }],
    ],
    url,
  );
  const [first, second, third] = JSON.parse((await cli(here, ["show", "--json"], url)).stdout).actions.map((a: { id: string }) => a.id);
  const log = join(here, "calls-1.log");
  const keyed = (event: "recv" | "done") =>
    countingLog(log)
      .filter((e) => e.event === event && e.key !== undefined)
      .map((e) => e.key!);

  // The server never answers the second inverse: the undo is killed while it is in flight.
  const undo = Bun.spawn([BIN, "undo", "--journal", url], { cwd: here, env: { ...process.env, COUNTING_HANG_KEYED: "2" }, stdout: "pipe", stderr: "pipe" });
  await until(() => keyed("recv").includes(second) && keyed("done").includes(third), "the second inverse to be sent");
  undo.kill(9);
  await undo.exited;

  // As seen from the other machine: a claim whose undo ran elsewhere and stopped answering ten minutes ago.
  const sql = clientFor(database);
  try {
    const stale = new Date(Date.now() - 10 * 60_000).toISOString();
    // Written as another machine's Synartesis would: on a connection whose writes are chained (R-VERIFY).
    const claimed = await sql.begin(async (tx) => {
      await tx.unsafe(`SET LOCAL ${CHAIN_SETTING} = 'on'`);
      return tx`UPDATE actions SET claimed_by = ${`another-machine:4242:${crypto.randomUUID()}`}, claimed_at = ${stale}
                 WHERE status = 'rolling_back' RETURNING seq, inverse_sent_at IS NOT NULL AS sent`;
    });
    // Undo claims what it is about to revert a batch at a time: #1 was claimed with #2, its inverse never sent.
    expect(claimed.map((r: { seq: number; sent: boolean }) => [r.seq, r.sent]).sort()).toEqual([
      [1, false],
      [2, true],
    ]);
  } finally {
    await sql.close();
  }
  const resumed = await cli(there, ["undo"], url);
  expect(resumed.code).toBe(0);
  expect(resumed.stdout).toContain("sent again with the same idempotency key (the rule is idempotent) and reverted");
  expect(state(here).customers).toEqual(SEED);
  const count = (keys: string[]) => Object.fromEntries([first, second, third].map((id) => [id, keys.filter((k) => k === id).length]));
  expect(count(keyed("done"))).toEqual({ [first]: 1, [second]: 1, [third]: 1 });
  expect(count(keyed("recv"))).toEqual({ [first]: 1, [second]: 2, [third]: 1 });
});

test("kill -9 of a proxy mid-call leaves its call pending; undo from the other folder halts on it and changes nothing", async () => {
  const database = await freshDatabase();
  const url = urlFor(database);
  const [here, there] = [machine(1), machine(1)];
  const session = new LineSession([BIN, "proxy", "--manifest", "p1.yaml"], {
    cwd: here,
    env: { SYNARTESIS_JOURNAL: url, COUNTING_HANG_TOOL: "delete_customer" },
  });
  await session.initialize("doomed");
  const done = await session.request(1, "tools/call", { name: "update_customer", arguments: { id: "c_001", plan: "free" } });
  expect(done.result.isError).toBeFalsy();
  session.send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "delete_customer", arguments: { id: "c_002" } } });
  await until(() => countingLog(join(here, "calls-1.log")).some((e) => e.event === "recv" && e.tool === "delete_customer"), "the call to reach the server");
  session.proc.kill(9);
  await session.proc.exited;

  const before = state(here);
  const shown = JSON.parse((await cli(there, ["show", "--json"], url)).stdout);
  expect(shown.actions.map((a: { tool: string; status: string }) => [a.tool, a.status])).toEqual([
    ["update_customer", "applied"],
    ["delete_customer", "pending"],
  ]);
  // Its proxy is gone without a goodbye: closing its run is a person's call, from either machine.
  expect(shown.run.status).toBe("active");
  expect((await cli(there, ["close"], url)).code).toBe(0);
  expect(JSON.parse((await cli(here, ["list", "--json"], url)).stdout)[0].status).toBe("complete");
  const undo = await cli(there, ["undo"], url);
  expect(undo.code).toBe(1);
  expect(undo.stdout).toContain("Stopped at #2");
  expect(undo.stdout).toContain("the outcome of crm.delete_customer is not known yet");
  expect(state(here)).toEqual(before);
  const after = JSON.parse((await cli(there, ["show", "--json"], url)).stdout);
  expect(after.actions.map((a: { status: string }) => a.status)).toEqual(["applied", "pending"]);
  // What the killed proxy copied and never chained was chained by another machine's pass: the record holds.
  const verified = await cli(there, ["verify"], url);
  expect(verified.stdout).toEndWith("1 runs verified: every record is as Synartesis wrote it.\n");
  expect(verified.code).toBe(0);
});

test("an older schema (the first migration only) is upgraded in place by the first command that opens it, its rows intact", async () => {
  const database = await freshDatabase();
  const at = "2026-11-29T10:00:00.000Z";
  await firstMigrationOnly(database, [
    `INSERT INTO runs (id, label, started_at, status, last_seq) VALUES ('4e77975e-1111-4000-8000-000000000001', 'old-agent', '${at}', 'complete', 2)`,
    `INSERT INTO actions (id, run_id, seq, server, tool, args, class, status, snapshot, post_state, inverse, ts)
       VALUES ('a1', '4e77975e-1111-4000-8000-000000000001', 1, 'crm', 'update_customer', '{"id":"c_001","plan":"free"}', 'reversible', 'applied',
               '{"plan":"pro"}', '{"plan":"free"}', '{"server":"crm","tool":"update_customer","args":{"id":"c_001","plan":"pro"}}', '${at}')`,
    `INSERT INTO actions (id, run_id, seq, server, tool, args, args_key, class, status, error, ts)
       VALUES ('a2', '4e77975e-1111-4000-8000-000000000001', 2, 'crm', 'send_email', '{"to":"x"}', '{"to":"x"}', 'irreversible', 'gated', 'it is irreversible', '${at}')`,
  ]);
  const dir = machine(1);
  const shown = await cli(dir, ["show", "4e77975e", "--json"], urlFor(database));
  expect(shown.code).toBe(0);
  const show = JSON.parse(shown.stdout);
  expect(show.run).toMatchObject({ label: "old-agent", status: "complete" });
  expect(show.actions.map((a: any) => [a.seq, a.tool, a.status, a.error])).toEqual([
    [1, "update_customer", "applied", undefined],
    [2, "send_email", "gated", "it is irreversible"],
  ]);
  expect(show.actions[0].inverse).toEqual({ server: "crm", tool: "update_customer", args: { id: "c_001", plan: "pro" } });
  const sql = clientFor(database);
  try {
    expect((await sql`SELECT name FROM migrations ORDER BY position`).map((r: { name: string }) => r.name)).toEqual(ALL_MIGRATIONS);
    expect(await sql`SELECT held_reason, error FROM actions WHERE id = 'a2'`).toEqual([{ held_reason: "it is irreversible", error: null }]);
  } finally {
    await sql.close();
  }
});
