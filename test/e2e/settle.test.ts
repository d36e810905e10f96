// Unknown outcomes a person settles (issue 13 items 4 and 5), through the
// built binary against the counting CRM: a call left pending stops undo with
// the state from before and the state now side by side; `synartesis settle`
// records what the person found (journal, show, show --json) and undo then
// goes on accordingly. An inverse whose outcome an undo never learnt (killed
// with kill -9 while the server held its answer) is itself an unknown
// outcome: the next undo stops there unless the rule says idempotent: true.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { BIN, LineSession, tempDir, until } from "../helpers.ts";
import {
  ADA,
  ageCalls,
  agent,
  cli,
  countingLog,
  countingManifest,
  json,
  journalRows,
  keyCounts,
  SEED,
  state,
  TOY_MANIFEST,
  type Call,
} from "../fixtures/counting-support.ts";
import { crmStateText } from "../fixtures/proxy-kit.ts";

// The preload's default timeout reaches only the first file bun runs; tests sharing the machine need the room.
setDefaultTimeout(60_000);

/** The counting CRM with the toy policy, with or without `idempotent: true`. */
function folder(options: { idempotent: boolean }): { dir: string; log: string } {
  const dir = tempDir("syn-settle-");
  const log = join(dir, "calls.log");
  const policy = options.idempotent ? TOY_MANIFEST : TOY_MANIFEST.replaceAll("    idempotent: true\n", "");
  writeFileSync(join(dir, "synartesis.yaml"), countingManifest(log, policy));
  return { dir, log };
}

/**
 * A session whose call of `tool` never gets an answer (the server holds it):
 * the proxy is killed while it waits, leaving that call pending, and the calls
 * are aged past the server's timeout, as if its answer could no longer come.
 */
async function leftPending(dir: string, log: string, tool: string, calls: Call[]): Promise<void> {
  const session = new LineSession([BIN, "proxy"], { cwd: dir, env: { COUNTING_HANG_TOOL: tool } });
  try {
    await session.initialize();
    for (const [i, [name, args]] of calls.entries()) {
      if (name !== tool) {
        expect((await session.request(i + 1, "tools/call", { name, arguments: args })).result.isError).toBeUndefined();
        continue;
      }
      session.send({ jsonrpc: "2.0", id: i + 1, method: "tools/call", params: { name, arguments: args } });
      await until(() => countingLog(log).some((e) => e.event === "recv" && e.tool === tool), `${tool} to reach the server`);
    }
  } finally {
    session.proc.kill(9);
    await session.proc.exited;
  }
  await ageCalls(dir, 61_000);
}

const row = (dir: string, seq: number) => journalRows(dir, "SELECT * FROM actions WHERE seq = ?", seq)[0];

describe.concurrent("settle: a call whose outcome is unknown", () => {
  test("undo stops showing before and now; settled as applied, a reversible call is reverted without a drift check, saying so", async () => {
    const { dir, log } = folder({ idempotent: true });
    await leftPending(dir, log, "update_customer", [["update_customer", { id: "c_001", plan: "free" }]]);
    expect(row(dir, 1).status).toBe("pending");
    const id = row(dir, 1).id as string;
    // What a person finds in the CRM: the change did land after all.
    writeFileSync(join(dir, "crm.json"), crmStateText({ ...SEED, c_001: { ...ADA, plan: "free" } }));

    const stopped = await cli(dir, ["undo"]);
    expect(stopped.code).toBe(1);
    expect(stopped.stdout).toContain("#1  STOP");
    expect(stopped.stdout).toContain(
      "the outcome of crm.update_customer is unknown (the proxy never learnt whether it ran), and the state is not what it was before it",
    );
    expect(stopped.stdout).toMatch(/before the agent's call\s+│ now/);
    expect(stopped.stdout).toMatch(/≠\s+"plan": "pro",\s+│\s+"plan": "free",/);
    expect(stopped.stdout).toContain(
      `Once you know whether #1 ran, record it:\n  synartesis settle ${id.replace(/-/g, "").slice(0, 8)} --applied       (it ran)\n`,
    );
    expect(state(dir).customers.c_001.plan).toBe("free");
    // show says how to settle it, pasteable from any folder.
    expect((await cli(dir, ["show"])).stdout).toContain(` settle ${id.slice(0, 8)} --journal ${join(dir, "synartesis.db")} --applied | --not-applied\n`);

    const settled = await cli(dir, ["settle", id.slice(0, 8), "--applied", "--by", "jo", "--note", "the CRM shows plan free"]);
    expect(settled.stderr).toBe("");
    expect(settled.code).toBe(0);
    expect(settled.stdout).toStartWith(`Settled #1 crm.update_customer {"id":"c_001","plan":"free"} (action ${id.slice(0, 8)}, run `);
    expect(settled.stdout).toContain(": it ran (jo).\n");
    expect(settled.stdout).toContain(`Undo calls crm.update_customer ${JSON.stringify(ADA)} (jo (`);
    expect(settled.stdout).toContain("found that it ran; no state after it was recorded, so it is reverted without a drift check).");
    expect(row(dir, 1)).toMatchObject({ status: "applied", settled: "applied", settled_by: "jo", settled_note: "the CRM shows plan free" });

    const shown = await cli(dir, ["show"]);
    expect(shown.stdout).toMatch(/settled  it ran: found by jo at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(the CRM shows plan free\)/);
    const action = (await json(dir, ["show"])).actions[0];
    expect(action).toMatchObject({
      status: "applied",
      settled: "applied",
      settledBy: "jo",
      settledNote: "the CRM shows plan free",
      inverse: { tool: "update_customer", args: ADA },
    });
    expect(action.settledAt).toMatch(/^\d{4}-\d\d-\d\dT/);

    const undone = await cli(dir, ["undo"]);
    expect(undone.code).toBe(0);
    expect(undone.stdout).toContain('#1  reverted [unverified]  crm.update_customer {"id":"c_001","plan":"free"}');
    expect(undone.stdout).toContain("found that it ran; no state after it was recorded, so it is reverted without a drift check");
    expect(state(dir).customers).toEqual(SEED);

    // Its outcome is known now: there is nothing left to settle.
    const again = await cli(dir, ["settle", id.slice(0, 8), "--not-applied"]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`synartesis: ${id.slice(0, 8)} is rolled_back: its outcome is known, so there is nothing to settle`);
  });

  test("settled as not applied, undo steps over it; usage is checked", async () => {
    const { dir, log } = folder({ idempotent: true });
    await leftPending(dir, log, "create_customer", [
      ["update_customer", { id: "c_002", plan: "free" }],
      ["create_customer", { name: "Bogus", email: "bogus@example.com" }],
    ]);
    const id = row(dir, 2).id as string;
    const stopped = await cli(dir, ["undo"]);
    expect(stopped.code).toBe(1);
    expect(stopped.stdout).toContain("#2  STOP");
    expect(stopped.stdout).toContain("the outcome of crm.create_customer is unknown");
    expect(stopped.stdout).toContain(`synartesis settle ${id.slice(0, 8)} --not-applied   (it did not run)`);
    expect(state(dir).customers.c_002.plan).toBe("free");

    expect((await cli(dir, ["settle", id.slice(0, 8)])).code).toBe(2);
    const both = await cli(dir, ["settle", id.slice(0, 8), "--applied", "--not-applied"]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("say what you found: --applied (it ran) or --not-applied (it did not)");

    const settled = await cli(dir, ["settle", id.slice(0, 8), "--not-applied", "--by", "jo"]);
    expect(settled.code).toBe(0);
    expect(settled.stdout).toContain(": it did not run (jo).\nUndo steps over it: jo (");
    expect(row(dir, 2)).toMatchObject({ status: "failed", settled: "not_applied", settled_by: "jo" });
    const undone = await cli(dir, ["undo"]);
    expect(undone.code).toBe(0);
    expect(undone.stdout).toContain("#2  skip");
    expect(undone.stdout).toMatch(/#1 +reverted/);
    expect(state(dir).customers).toEqual(SEED);
  });
});

test.concurrent("a compensable call whose inverse is built from its result: settled as applied, the person gives what it returned, and undo compensates it", async () => {
  const { dir, log } = folder({ idempotent: true });
  await leftPending(dir, log, "create_customer", [["create_customer", { name: "Bogus", email: "bogus@example.com" }]]);
  const id = (row(dir, 1).id as string).slice(0, 8);
  // What a person finds in the CRM: the customer was created after all, as c_004.
  writeFileSync(
    join(dir, "crm.json"),
    crmStateText({ ...SEED, c_004: { id: "c_004", name: "Bogus", email: "bogus@example.com", plan: "free", notes: "" } }, 4),
  );

  const withoutResult = await cli(dir, ["settle", id, "--applied"]);
  expect(withoutResult.code).toBe(2);
  expect(withoutResult.stderr).toContain(
    'the inverse of crm.create_customer {"name":"Bogus","email":"bogus@example.com"} is built from what it returned ($result), and its answer never came',
  );
  expect(withoutResult.stderr).toContain(`synartesis settle ${id} --applied --result '{"id":"…"}'; nothing was recorded.`);
  expect(row(dir, 1).status).toBe("pending");
  expect((await cli(dir, ["settle", id, "--applied", "--result", "{id: c_004}"])).stderr).toContain("--result must be JSON");
  expect((await cli(dir, ["settle", id, "--not-applied", "--result", "{}"])).stderr).toContain("--result goes with --applied");

  const settled = await cli(dir, ["settle", id, "--applied", "--result", '{"id":"c_004"}', "--by", "jo"]);
  expect(settled.code).toBe(0);
  expect(row(dir, 1)).toMatchObject({ status: "applied", settled: "applied", settled_note: 'its result, as found: {"id":"c_004"}' });
  expect(JSON.parse(row(dir, 1).inverse as string)).toEqual({ server: "crm", tool: "delete_customer", args: { id: "c_004" } });

  const undone = await cli(dir, ["undo"]);
  expect(undone.code).toBe(0);
  expect(undone.stdout).toContain('called: crm.delete_customer {"id":"c_004"}');
  expect(state(dir).customers).toEqual(SEED);
});

describe.concurrent("an inverse whose outcome an interrupted undo never learnt", () => {
  /** Start undo, wait until the server has received the inverse it holds, then kill -9 the undo. */
  async function killUndoInFlight(dir: string, log: string, heldKey: string, env: Record<string, string>): Promise<void> {
    const undo = Bun.spawn([BIN, "undo"], { cwd: dir, env: { ...process.env, NO_COLOR: "1", ...env }, stdout: "pipe", stderr: "pipe" });
    try {
      await until(() => keyCounts(countingLog(log), "recv")[heldKey] === 1, "the inverse to reach the server");
    } finally {
      undo.kill(9);
      await undo.exited;
    }
  }

  test("not idempotent: the next undo stops there and sends nothing; settled as ran, undo goes on", async () => {
    const { dir, log } = folder({ idempotent: false });
    await agent(dir, [
      ["update_customer", { id: "c_001", plan: "free" }],
      ["create_customer", { name: "Bogus", email: "bogus@example.com" }],
    ]);
    const created = row(dir, 2).id as string;
    // The server applies the compensating delete but its answer never comes back; the undo is killed.
    await killUndoInFlight(dir, log, created, { COUNTING_MUTE_KEYED: "1" });
    await until(() => keyCounts(countingLog(log), "done")[created] === 1, "the inverse to land");
    expect(state(dir).customers.c_004).toBeUndefined();
    expect(row(dir, 2)).toMatchObject({ status: "rolling_back" });
    expect(row(dir, 2).inverse_sent_at).toMatch(/^\d{4}-/);

    const stopped = await cli(dir, ["undo"]);
    expect(stopped.code).toBe(1);
    expect(stopped.stdout).toContain("#2  STOP");
    expect(stopped.stdout).toContain(
      "an earlier undo sent crm.delete_customer without learning whether it landed; sending it again could apply it twice (the rule does not declare idempotent: true)",
    );
    expect(stopped.stdout).toContain(
      `Once you know whether the inverse undo sent for #2 ran, record it:\n  synartesis settle ${created.slice(0, 8)} --applied`,
    );
    expect(keyCounts(countingLog(log), "recv")[created]).toBe(1);
    expect(state(dir).customers.c_001.plan).toBe("free");

    const settled = await cli(dir, ["settle", created.slice(0, 8), "--applied", "--by", "jo"]);
    expect(settled.code).toBe(0);
    expect(settled.stdout).toContain(
      `Settled the inverse of #2 crm.create_customer {"name":"Bogus","email":"bogus@example.com"} (action ${created.slice(0, 8)}`,
    );
    expect(settled.stdout).toContain('crm.delete_customer {"id":"c_004"}: it ran (jo).\nUndo steps over it: already undone.');
    expect((await json(dir, ["show"])).actions[1]).toMatchObject({ status: "rolled_back", settled: "inverse_applied", settledBy: "jo" });

    const undone = await cli(dir, ["undo"]);
    expect(undone.code).toBe(0);
    expect(state(dir).customers).toEqual(SEED);
    expect(keyCounts(countingLog(log), "recv")[created]).toBe(1);
  });

  test("not idempotent, and it never landed: settled as not run, the next undo sends it once more", async () => {
    const { dir, log } = folder({ idempotent: false });
    await agent(dir, [["create_customer", { name: "Bogus", email: "bogus@example.com" }]]);
    const created = row(dir, 1).id as string;
    // The server holds the delete; killing the undo takes the server (and the delete) with it.
    await killUndoInFlight(dir, log, created, { COUNTING_HANG_KEYED: "1" });
    expect(state(dir).customers.c_004).toBeDefined();
    expect((await cli(dir, ["undo"])).code).toBe(1);
    expect(keyCounts(countingLog(log), "recv")[created]).toBe(1);

    const settled = await cli(dir, ["settle", created.slice(0, 8), "--not-applied"]);
    expect(settled.code).toBe(0);
    expect(settled.stdout).toContain("it did not run");
    expect(settled.stdout).toContain('Undo calls crm.delete_customer {"id":"c_004"}');
    const undone = await cli(dir, ["undo"]);
    expect(undone.code).toBe(0);
    expect(state(dir).customers).toEqual(SEED);
    const entries = countingLog(log);
    expect(keyCounts(entries, "recv")[created]).toBe(2);
    expect(keyCounts(entries, "done")[created]).toBe(1);
  });

  test("idempotent: true: the next undo sends it again with the same key, and says so", async () => {
    const { dir, log } = folder({ idempotent: true });
    await agent(dir, [["create_customer", { name: "Bogus", email: "bogus@example.com" }]]);
    const created = row(dir, 1).id as string;
    await killUndoInFlight(dir, log, created, { COUNTING_HANG_KEYED: "1" });

    const undone = await cli(dir, ["undo"]);
    expect(undone.code).toBe(0);
    expect(undone.stdout).toContain("#1  reverted");
    expect(undone.stdout).toContain("sent again with the same idempotency key (the rule is idempotent) and reverted");
    expect(state(dir).customers).toEqual(SEED);
    expect(keyCounts(countingLog(log), "recv")[created]).toBe(2);
  });
});
