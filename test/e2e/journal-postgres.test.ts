// The built binary on a PostgreSQL journal (R-TEAM-1, R-TEAM-5): the proxy in
// one folder and the CLI in another share one database; the same commands
// give the same --json shapes as on a file; the approve command the agent is
// shown works when pasted elsewhere; PGPASSWORD, ~/.pgpass and a password in
// the URL all work; and no password ever reaches a log line, an agent's
// text, --json, the review page or an error message. Needs
// SYNARTESIS_TEST_POSTGRES (skipped, saying so, without it).
import { afterEach, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BIN, ROOT, run, tempDir, type RunResult } from "../helpers.ts";
import { agent, outbox, resultText, SEED, state, type Call } from "../fixtures/counting-support.ts";
import { describePostgres, freshDatabase, testPassword, urlFor } from "../fixtures/postgres.ts";
import { UiProcess } from "../fixtures/ui-kit.ts";
import { httpClient, startHttpProxy } from "../fixtures/http-kit.ts";
import { shellQuote } from "../../src/self.ts";

// Each file sets its own: the preload's default reaches only the first file bun runs.
setDefaultTimeout(60_000);

const EMAIL = { to: "ada@example.com", subject: "Your plan changed", body: "You are now on the free plan." };
const DAMAGE: Call[] = [
  ["update_customer", { id: "c_001", plan: "free" }],
  ["delete_customer", { id: "c_003" }],
  ["send_email", EMAIL],
];

/** A folder holding the toy CRM's manifest, standing for one machine. */
function machine(): string {
  const dir = tempDir("syn-pg-");
  copyFileSync(join(ROOT, "manifests", "toy-crm.yaml"), join(dir, "synartesis.yaml"));
  return dir;
}

/** Every object's keys, recursively (values left out): what "the same shape" means. */
function shape(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(shape);
  if (value && typeof value === "object")
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, shape((value as Record<string, unknown>)[key])]),
    );
  return typeof value;
}

/** Everything a person, a log or an agent could see, checked for the password at the end of each test. */
const seen: string[] = [];
afterEach(() => {
  const password = testPassword();
  for (const text of seen.splice(0)) expect(text.includes(password)).toBe(false);
});

async function cli(args: string[], cwd: string, env: Record<string, string | undefined> = {}): Promise<RunResult> {
  const result = await run(args, { cwd, env });
  seen.push(result.stdout, result.stderr);
  return result;
}

async function jsonOf(args: string[], cwd: string, env: Record<string, string | undefined>): Promise<any> {
  const result = await cli([...args, "--json"], cwd, env);
  if (result.code !== 0) throw new Error(`${args.join(" ")} exited ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout);
}

/** The agent's calls through `synartesis proxy` in `dir`, recording into `journal` (its password in SYNARTESIS_JOURNAL); the replies' texts are kept for the check. */
async function drive(dir: string, calls: Call[], env: Record<string, string | undefined>): Promise<Map<number, any>> {
  const replies = await agent(dir, calls, { env: { ...env, SYNARTESIS_LOG_LEVEL: undefined } });
  for (const reply of replies.values()) seen.push(JSON.stringify(reply));
  return replies;
}

describePostgres("a PostgreSQL journal through the binary", () => {
  test("two folders, one database: the same commands and --json shapes as a file; the approve command works pasted elsewhere; undo restores the seed", async () => {
    const url = urlFor(await freshDatabase());
    const shown = url.replace(`:${encodeURIComponent(testPassword())}@`, "@");
    const [here, there, onFile] = [machine(), machine(), machine()];
    const agentEnv = { SYNARTESIS_JOURNAL: url };
    const personEnv = { PGPASSWORD: testPassword() };

    const replies = await drive(here, DAMAGE, agentEnv);
    await drive(onFile, DAMAGE, {});
    const heldText = resultText(replies.get(3));
    const command = /^ {2}(.+ approve [0-9a-f]{8} --journal .+)$/m.exec(heldText)?.[1];
    expect(command).toEndWith(` --journal ${shellQuote(shown)}`);

    // The same shapes as on a file, read from another folder with the password from PGPASSWORD.
    const flags = ["--journal", shown];
    const [list, show, gates] = [
      await jsonOf(["list", ...flags], there, personEnv),
      await jsonOf(["show", ...flags], there, personEnv),
      await jsonOf(["gates", ...flags], there, personEnv),
    ];
    const [fileList, fileShow, fileGates] = [await jsonOf(["list"], onFile, {}), await jsonOf(["show"], onFile, {}), await jsonOf(["gates"], onFile, {})];
    // The calls arrive at once, so the gated one may take its seq before or after the others.
    const byTool = (shown: any) => ({ ...shown, actions: [...shown.actions].sort((a: any, b: any) => a.tool.localeCompare(b.tool)) });
    expect(shape(list)).toEqual(shape(fileList));
    expect(shape(byTool(show))).toEqual(shape(byTool(fileShow)));
    expect(shape(gates)).toEqual(shape(fileGates));
    expect(byTool(show).actions.map((a: any) => [a.tool, a.status])).toEqual([
      ["delete_customer", "applied"],
      ["send_email", "gated"],
      ["update_customer", "applied"],
    ]);
    expect(show.actions.map((a: any) => a.seq)).toEqual([1, 2, 3]);
    expect(gates[0].error).toBe(fileGates[0].error);
    const showText = await cli(["show", ...flags], there, personEnv);
    expect(showText.stdout).toContain(`approve  `);
    expect(showText.stdout).toContain(`--journal ${shellQuote(shown)}`);
    const watchOnce = await cli(["watch", "--once", ...flags], there, personEnv);
    expect(watchOnce.code).toBe(0);
    expect(watchOnce.stdout).toContain("send_email");

    // The person pastes the command into a shell on the other machine.
    const pasted = Bun.spawnSync(["sh", "-c", command!], { cwd: there, env: { ...process.env, ...personEnv, NO_COLOR: "1" } });
    seen.push(pasted.stdout.toString(), pasted.stderr.toString());
    expect(pasted.exitCode).toBe(0);
    const retry = await drive(here, [["send_email", EMAIL]], agentEnv);
    expect(retry.get(1).result.isError).toBeFalsy();
    expect(outbox(here)).toHaveLength(1);
    expect(await jsonOf(["gates", ...flags], there, personEnv)).toEqual([]);

    const runs = await jsonOf(["list", ...flags], there, personEnv);
    const undone = await cli(["undo", runs[1].id.slice(0, 8), ...flags], there, personEnv);
    expect(undone.code).toBe(0);
    expect(state(here).customers).toEqual(SEED);
    expect((await jsonOf(["list", ...flags], there, personEnv))[1].status).toBe("rolled_back");
  });

  test("proxy --http on a PostgreSQL journal: each HTTP session is its own run there; a held call approved from another folder; undo of one run from there", async () => {
    const url = urlFor(await freshDatabase());
    const shown = url.replace(`:${encodeURIComponent(testPassword())}@`, "@");
    const [here, there] = [machine(), machine()];
    const personEnv = { PGPASSWORD: testPassword() };
    const proxy = await startHttpProxy({ dir: here, manifest: join(here, "synartesis.yaml"), journal: shown, state: join(here, "crm.json") }, [], {
      SYNARTESIS_JOURNAL: url,
    });
    try {
      const [one, two] = [await httpClient(proxy.url, "agent-one"), await httpClient(proxy.url, "agent-two")];
      const updated = await one.client.callTool({ name: "update_customer", arguments: { id: "c_001", plan: "free" } });
      expect(updated.isError).toBeFalsy();
      const held = await two.client.callTool({ name: "send_email", arguments: EMAIL });
      const heldText = (held.content as Array<{ text: string }>)[0]!.text;
      seen.push(heldText);
      expect(held.isError).toBe(true);
      const command = /^ {2}(.+ approve [0-9a-f]{8} --journal .+)$/m.exec(heldText)?.[1];
      expect(command).toEndWith(` --journal ${shellQuote(shown)}`);
      const pasted = Bun.spawnSync(["sh", "-c", command!], { cwd: there, env: { ...process.env, ...personEnv, NO_COLOR: "1" } });
      seen.push(pasted.stdout.toString(), pasted.stderr.toString());
      expect(pasted.exitCode).toBe(0);
      expect((await two.client.callTool({ name: "send_email", arguments: EMAIL })).isError).toBeFalsy();
      expect(outbox(here)).toHaveLength(1);
      await Promise.all([one.client.close(), two.client.close()]);
    } finally {
      proxy.proc.kill("SIGTERM");
      expect(await proxy.proc.exited).toBe(0);
      seen.push(await proxy.allStderr);
    }

    const runs = await jsonOf(["list", "--journal", shown], there, personEnv);
    expect(runs.map((r: any) => [r.label, r.status, r.actions]).sort()).toEqual([
      ["agent-one", "complete", 1],
      ["agent-two", "complete", 2], // the held request, and the approved call that ran
    ]);
    const undone = await cli(["undo", runs.find((r: any) => r.label === "agent-one").id.slice(0, 8), "--journal", shown], there, personEnv);
    expect(undone.code).toBe(0);
    expect(state(here).customers).toEqual(SEED);
    expect(outbox(here)).toHaveLength(1);
  });

  test("denied from another folder: the agent's next identical call is told who denied it and why", async () => {
    const url = urlFor(await freshDatabase());
    const [here, there] = [machine(), machine()];
    const held = await drive(here, [["send_email", EMAIL]], { SYNARTESIS_JOURNAL: url });
    const id = /Action id: ([0-9a-f]{8})\./.exec(resultText(held.get(1)))![1]!;
    const denied = await cli(["deny", id, "--reason", "not this week", "--journal", urlFor(new URL(url).pathname.slice(1), { password: false })], there, {
      PGPASSWORD: testPassword(),
    });
    expect(denied.code).toBe(0);
    const told = await drive(here, [["send_email", EMAIL]], { SYNARTESIS_JOURNAL: url });
    // A team journal's decider is the PostgreSQL role the deciding command connects as.
    expect(resultText(told.get(1))).toStartWith(`DENIED — Synartesis did not run this call: ${new URL(url).username} denied it at `);
    expect(resultText(told.get(1))).toContain("with the reason: not this week.");
    expect(outbox(here)).toEqual([]);
  });

  test("the password from the URL, PGPASSWORD or a private ~/.pgpass all work; a wrong or missing one is refused saying where it came from", async () => {
    const database = await freshDatabase();
    const url = urlFor(database);
    const bare = urlFor(database, { password: false });
    const dir = machine();
    await drive(dir, [["get_customer", { id: "c_001" }]], { SYNARTESIS_JOURNAL: url });
    const home = tempDir("syn-pg-home-");
    const target = new URL(url);
    writeFileSync(join(home, ".pgpass"), `# a comment\notherhost:*:*:*:nope\n${target.hostname}:${target.port}:*:${target.username}:${testPassword()}\n`);
    chmodSync(join(home, ".pgpass"), 0o600);

    for (const [what, args, env] of [
      ["the URL", ["--journal", url], {}],
      ["PGPASSWORD", ["--journal", bare], { PGPASSWORD: testPassword() }],
      ["~/.pgpass", ["--journal", bare], { HOME: home }],
      ["SYNARTESIS_JOURNAL", [], { SYNARTESIS_JOURNAL: url }],
    ] as const) {
      const result = await cli(["list", ...args], dir, { PGPASSWORD: undefined, ...env });
      expect([what, result.code, result.stderr]).toEqual([what, 0, ""]);
      expect(result.stdout).toContain("test-agent");
    }

    chmodSync(join(home, ".pgpass"), 0o644);
    const open = await cli(["list", "--journal", bare], dir, { HOME: home, PGPASSWORD: undefined });
    expect(open.code).toBe(2);
    expect(open.stderr).toBe(
      `synartesis: the journal ${bare} cannot be used: password authentication failed for user "${target.username}"\n` +
        `No password was given: set PGPASSWORD, add a line for this database to ~/.pgpass, or put it in the URL. Note: the password file ${join(home, ".pgpass")} is ignored: others can read it (chmod 600 it, as libpq asks).\n`,
    );
    const wrong = new URL(url);
    wrong.password = "not-the-password-42";
    for (const [args, env] of [
      [["--journal", wrong.toString()], {}],
      [["--journal", bare], { PGPASSWORD: "not-the-password-42" }],
    ] as const) {
      const result = await cli(["show", ...args], dir, env);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain("password authentication failed");
      expect(result.stderr).not.toContain("not-the-password-42");
    }
    const noDatabase = await cli(["list", "--journal", urlFor("no_such_database")], dir);
    expect(noDatabase.code).toBe(2);
    expect(noDatabase.stderr).toStartWith(
      `synartesis: the journal ${urlFor("no_such_database", { password: false })} cannot be used: database "no_such_database" does not exist`,
    );
    const empty = await cli(["list", "--journal", urlFor(await freshDatabase())], dir);
    expect(empty.code).toBe(1);
    expect(empty.stderr).toStartWith(
      `synartesis: there is no journal at ${urlFor((empty.stderr.match(/\/(syn_[0-9a-f]+)/) ?? [])[1]!, { password: false })}\n`,
    );
  });

  test("the manifest's journal: key with ${VAR}: the proxy and the CLI in its folder agree; the proxy's log never has the password", async () => {
    const url = urlFor(await freshDatabase());
    const dir = machine();
    writeFileSync(join(dir, "synartesis.yaml"), (await Bun.file(join(dir, "synartesis.yaml")).text()) + '\njournal: "${TEAM_JOURNAL}"\n');
    const result = await run(["proxy", "--log-level", "debug"], {
      cwd: dir,
      env: { TEAM_JOURNAL: url },
      stdin:
        [
          JSON.stringify({
            jsonrpc: "2.0",
            id: 0,
            method: "initialize",
            params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "keyed", version: "1" } },
          }),
          JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
          JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "send_email", arguments: EMAIL } }),
        ].join("\n") + "\n",
    });
    seen.push(result.stdout, result.stderr);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('"msg":"call held for approval"');
    expect(result.stderr).toContain(url.replace(`:${encodeURIComponent(testPassword())}@`, "@"));
    const list = await cli(["list"], dir, { TEAM_JOURNAL: url });
    expect(list.code).toBe(0);
    expect(list.stdout).toContain("keyed");
    expect(list.stdout).toMatch(/keyed .* 1 +0 +1\n/);
    const unset = await cli(["list"], dir, { TEAM_JOURNAL: undefined });
    expect(unset.code).toBe(2);
    expect(unset.stderr).toContain(`"journal" uses \${TEAM_JOURNAL}, which is not set in the environment`);
  });

  test("bench/journal.ts, scaled down, measures every call on both journals and says what PostgreSQL adds", async () => {
    const bench = await run(["bench/journal.ts"], {
      bin: process.execPath,
      cwd: ROOT,
      env: { BENCH_POSTGRES: urlFor("postgres"), CALLS: "20", WARMUP: "5", ROUNDS: "2" },
    });
    seen.push(bench.stdout, bench.stderr);
    expect([bench.code, bench.stderr]).toEqual([0, ""]);
    for (const row of ["update_customer, sqlite", "update_customer, postgres", "update_customer, postgres, synchronous_commit=on", "get_customer, postgres"]) {
      expect(bench.stdout).toMatch(new RegExp(`^${row.replace(/[,=]/g, "\\$&")} +\\d+\\.\\d{3} +\\d+\\.\\d{3} +\\d+\\.\\d{3}$`, "m"));
    }
    expect(bench.stdout).toMatch(/^postgres adds to update_customer: p50 -?\d+\.\d{3} ms, p99 -?\d+\.\d{3} ms \(target at p50: <= 1\.000\)$/m);
  });

  test("the review page on a PostgreSQL journal: told of changes by NOTIFY, and shows where the journal is without its password", async () => {
    const url = urlFor(await freshDatabase());
    const dir = machine();
    await drive(dir, [["get_customer", { id: "c_001" }]], { SYNARTESIS_JOURNAL: url });
    const server = await UiProcess.start(dir, [], { SYNARTESIS_JOURNAL: url });
    try {
      seen.push(server.stdout);
      const shown = url.replace(`:${encodeURIComponent(testPassword())}@`, "@");
      expect(server.stdout).toStartWith(`Review page for the journal ${shown}:\n`);
      const auth = await server.signIn();
      const runs = await (await server.request("/api/runs", { auth })).text();
      seen.push(runs);
      expect(JSON.parse(runs).journal).toBe(shown);
      const events = await server.request("/api/events", { auth });
      const reader = events.body!.pipeThrough(new TextDecoderStream()).getReader();
      let stream = "";
      await drive(dir, [["send_email", EMAIL]], { SYNARTESIS_JOURNAL: url });
      while (!stream.includes("event: change\n")) stream += (await reader.read()).value ?? "";
      const gates = await (await server.request("/api/gates", { auth })).text();
      seen.push(gates);
      expect(JSON.parse(gates).view.gates[0].approveCommand).toContain(`--journal ${shellQuote(shown)}`);
      await reader.cancel();
    } finally {
      await server.stop();
    }
  });
});

describePostgres("the journal's password and the servers", () => {
  test("a password the journal took from PGPASSWORD is not passed to the proxy's servers, nor to undo's", async () => {
    const url = urlFor(await freshDatabase(), { password: false });
    const dir = machine();
    const report = join(dir, "server-env.txt");
    // The toy CRM, started by a shell that first notes whether it was given PGPASSWORD.
    const manifest = readFileSync(join(dir, "synartesis.yaml"), "utf8").replace(
      /command: synartesis\n(\s+)args: \[[^\]]*\]/,
      (_all, indent) =>
        `command: sh\n${indent}args: ["-c", ${JSON.stringify(`if [ -n "$PGPASSWORD" ]; then echo given >> ${report}; else echo withheld >> ${report}; fi; exec "${BIN}" toy-crm --state ./crm.json`)}]`,
    );
    writeFileSync(join(dir, "synartesis.yaml"), manifest);
    const env = { SYNARTESIS_JOURNAL: url, PGPASSWORD: testPassword() };
    await drive(dir, [["update_customer", { id: "c_001", plan: "free" }]], env);
    expect(state(dir).customers.c_001.plan).toBe("free");
    const undone = await run(["undo"], { cwd: dir, env });
    seen.push(undone.stdout, undone.stderr);
    expect(undone.code).toBe(0);
    expect(state(dir).customers).toEqual(SEED);
    expect(readFileSync(report, "utf8")).toBe("withheld\nwithheld\n");
  });
});
