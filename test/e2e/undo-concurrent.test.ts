// Undo against itself (R-UNDO-8), counted at the server: the CRM is the
// counting fixture, which logs every tools/call it receives and answers. Two
// undos started at once send each inverse once; an undo killed mid-way is
// resumed by the next one, and each inverse lands once.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BIN, until } from "../helpers.ts";
import { agent, cli, countingFolder, countingLog, json, journalRows, keyCounts, SEED, state, type Call } from "../fixtures/counting-support.ts";

// The preload's default timeout reaches only the first file bun runs; tests sharing the machine need the room.
setDefaultTimeout(60_000);

const DAMAGE: Call[] = [
  ["update_customer", { id: "c_001", plan: "free", notes: "wrong notes" }],
  ["update_customer", { id: "c_002", plan: "free" }],
  ["delete_customer", { id: "c_003" }],
  ["create_customer", { name: "Bogus Customer", email: "bogus@example.com" }],
  ["update_customer", { id: "c_001", name: "A. Lovelace" }],
  ["update_customer", { id: "c_002", notes: "" }],
];

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe.concurrent("undo against itself", () => {
  test("two undos started at the same moment: each inverse is sent once, both exit, the state is the original", async () => {
    const { dir, log } = countingFolder();
    await agent(dir, DAMAGE);
    expect(countingLog(log).filter((e) => e.key !== undefined)).toEqual([]);
    const actionIds: string[] = (await json(dir, ["show"])).actions.map((a: any) => a.id);
    expect(actionIds).toHaveLength(6);

    // Slow inverses keep both undos busy on the same run at the same time.
    const env = { COUNTING_SLOW_MS: "300" };
    const [a, b] = await Promise.all([cli(dir, ["undo"], env), cli(dir, ["undo"], env)]);
    for (const result of [a, b]) {
      expect([0, 1]).toContain(result.code);
      if (result.code === 1) expect(result.stdout + result.stderr).toMatch(/Stopped at #\d|no longer|already/);
      expect(result.stderr).not.toContain("internal error");
    }
    // Between them, every call was reverted exactly once.
    const reverted = (a.stdout + b.stdout).match(/^ +#\d+ +reverted/gm) ?? [];
    expect(reverted).toHaveLength(6);

    const entries = countingLog(log);
    const sent = keyCounts(entries, "recv");
    expect(Object.keys(sent).sort()).toEqual([...actionIds].sort());
    expect(Object.values(sent).every((n) => n === 1)).toBe(true);
    const landed = keyCounts(entries, "done");
    expect(landed).toEqual(sent);
    expect(entries.filter((e) => e.event === "done" && e.key !== undefined && e.isError)).toEqual([]);

    expect(state(dir).customers).toEqual(SEED);
    expect((await json(dir, ["list"]))[0].status).toBe("rolled_back");
    expect((await json(dir, ["show"])).actions.every((x: any) => x.status === "rolled_back")).toBe(true);
  });

  test("an undo killed mid-way: the next undo resumes, and each inverse lands exactly once", async () => {
    const { dir, log } = countingFolder();
    await agent(dir, [
      ["update_customer", { id: "c_001", plan: "free" }],
      ["update_customer", { id: "c_002", plan: "free" }],
      ["update_customer", { id: "c_003", plan: "pro" }],
    ]);
    const [first, second, third] = (await json(dir, ["show"])).actions.map((a: any) => a.id as string);

    // The server never answers the second inverse: kill the undo while it is in flight.
    const undo = Bun.spawn([BIN, "undo"], {
      cwd: dir,
      env: { ...process.env, NO_COLOR: "1", COUNTING_HANG_KEYED: "2" },
      stdout: "pipe",
      stderr: "pipe",
    });
    let serverPid = 0;
    try {
      await until(() => {
        const entries = countingLog(log);
        return keyCounts(entries, "done")[third!] === 1 && keyCounts(entries, "recv")[second!] === 1;
      }, "the first inverse to land and the second to be sent");
      serverPid = countingLog(log).find((e) => e.key === second)!.pid;
    } finally {
      undo.kill(9);
      await undo.exited;
    }
    // The server it started goes with it, without applying the inverse it was holding.
    await until(() => !alive(serverPid), "the killed undo's server to exit");
    expect(keyCounts(countingLog(log), "done")).toEqual({ [third!]: 1 });

    // Undo claims the actions it is about to revert a batch at a time: #1 was claimed too, but its inverse never sent.
    const rows = journalRows(dir, "SELECT seq, status, claimed_by, inverse_sent_at FROM actions ORDER BY seq");
    expect(rows.map((r) => `${r.seq} ${r.status} ${r.inverse_sent_at ? "sent" : "not sent"}`)).toEqual([
      "1 rolling_back not sent",
      "2 rolling_back sent",
      "3 rolled_back not sent",
    ]);
    expect(rows[0].claimed_by).toMatch(new RegExp(`:${undo.pid}:`));
    expect(rows[1].claimed_by).toMatch(new RegExp(`:${undo.pid}:`));
    expect(state(dir).customers).toEqual({ ...SEED, c_001: { ...SEED.c_001, plan: "free" }, c_002: { ...SEED.c_002, plan: "free" } });
    const shown = await cli(dir, ["show"]);
    expect(shown.stdout).toContain("rolling_back");
    // The run does not look untouched: it is part undone until an undo finishes it.
    expect((await json(dir, ["list"]))[0].status).toBe("partial");

    const resumed = await cli(dir, ["undo"]);
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toContain("#3  skip");
    expect(resumed.stdout).toContain("already undone");
    expect(resumed.stdout).toMatch(/#2 +reverted/);
    // The toy policy says its server honours idempotency keys: the interrupted inverse is sent again, and undo says so.
    expect(resumed.stdout).toContain("sent again with the same idempotency key (the rule is idempotent) and reverted");
    expect(resumed.stdout).toMatch(/#1 +reverted/);
    expect(state(dir).customers).toEqual(SEED);
    expect((await json(dir, ["list"]))[0].status).toBe("rolled_back");

    const entries = countingLog(log);
    expect(keyCounts(entries, "done")).toEqual({ [first!]: 1, [second!]: 1, [third!]: 1 });
    // The interrupted inverse was sent again with the same idempotency key.
    expect(keyCounts(entries, "recv")).toEqual({ [first!]: 1, [second!]: 2, [third!]: 1 });
  });

  test("an undo killed after its inverse landed but before the answer came back: the next undo sees it is done and does not resend", async () => {
    const { dir, log } = countingFolder();
    await agent(dir, [
      ["update_customer", { id: "c_001", plan: "free" }],
      ["delete_customer", { id: "c_002" }],
    ]);
    const [first, second] = (await json(dir, ["show"])).actions.map((a: any) => a.id as string);

    // The server applies the first inverse (restoring Grace) but its answer is lost.
    const undo = Bun.spawn([BIN, "undo"], {
      cwd: dir,
      env: { ...process.env, NO_COLOR: "1", COUNTING_MUTE_KEYED: "1" },
      stdout: "pipe",
      stderr: "pipe",
    });
    try {
      await until(() => keyCounts(countingLog(log), "done")[second!] === 1, "the first inverse to land");
    } finally {
      undo.kill(9);
      await undo.exited;
    }
    expect(state(dir).customers.c_002).toEqual(SEED.c_002);
    // #1 was claimed with #2 (a batch), its inverse never sent; #2's was sent and landed.
    expect(journalRows(dir, "SELECT seq, status, inverse_sent_at IS NOT NULL AS sent FROM actions ORDER BY seq")).toEqual([
      { seq: 1, status: "rolling_back", sent: 0 },
      { seq: 2, status: "rolling_back", sent: 1 },
    ]);

    const resumed = await cli(dir, ["undo"]);
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toContain("#2  already reverted");
    expect(resumed.stdout).toMatch(/#1 +reverted/);
    expect(state(dir).customers).toEqual(SEED);
    expect((await json(dir, ["list"]))[0].status).toBe("rolled_back");
    const entries = countingLog(log);
    expect(keyCounts(entries, "recv")).toEqual({ [first!]: 1, [second!]: 1 });
    expect(keyCounts(entries, "done")).toEqual({ [first!]: 1, [second!]: 1 });
  });

  // The server's timeout also bounds its start: two seconds is room enough beside the tests around it.
  test("an inverse that gets no answer halts undo with its outcome unknown; the next undo checks before resending", async () => {
    const { dir, log } = countingFolder();
    // Give up on the server after two seconds.
    const manifestPath = join(dir, "synartesis.yaml");
    writeFileSync(manifestPath, readFileSync(manifestPath, "utf8").replace("    env: { COUNTING_LOG:", "    timeout: 2\n    env: { COUNTING_LOG:"));
    await agent(dir, [
      ["update_customer", { id: "c_001", plan: "free" }],
      ["update_customer", { id: "c_002", plan: "free" }],
    ]);
    const [first, second] = (await json(dir, ["show"])).actions.map((a: any) => a.id as string);

    const halted = await cli(dir, ["undo"], { COUNTING_HANG_KEYED: "1" });
    expect(halted.code).toBe(1);
    expect(halted.stdout).toContain("#2  STOP");
    expect(halted.stdout).toContain("whether it landed is unknown");
    expect(halted.stdout).toContain(
      "Run undo again: it reads the record first, and sends the inverse again only with the same idempotency key, which the rule says its server honours (idempotent: true).",
    );
    expect(halted.stdout).toContain("Stopped at #2");
    expect(state(dir).customers.c_001.plan).toBe("free");
    // #1 was claimed with #2 (a batch): an undo that stops gives back the claims it did not use.
    expect(journalRows(dir, "SELECT seq, status, claimed_by IS NOT NULL AS claimed, inverse_sent_at IS NOT NULL AS sent FROM actions ORDER BY seq")).toEqual([
      { seq: 1, status: "applied", claimed: 1, sent: 0 },
      { seq: 2, status: "rolling_back", claimed: 1, sent: 1 },
    ]);

    const resumed = await cli(dir, ["undo"]);
    expect(resumed.code).toBe(0);
    expect(state(dir).customers).toEqual(SEED);
    const entries = countingLog(log);
    expect(keyCounts(entries, "recv")).toEqual({ [first!]: 1, [second!]: 2 });
    expect(keyCounts(entries, "done")).toEqual({ [first!]: 1, [second!]: 1 });
  });
});
