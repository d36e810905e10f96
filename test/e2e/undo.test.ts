// Undo through the built binary (R-UNDO, R-CLI-1): the toy-CRM walkthrough
// (damage → list/show → dry run → undo → drift refusal), a record touched four
// times, --to, --replan, a pending outcome, an irreversible call left in place,
// run-id prefixes, close, and read-only commands on a missing journal.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { openJournal } from "../../src/journal/journal.ts";
import { BIN, LineSession, tempDir, until, ACCOUNT } from "../helpers.ts";
import {
  ADA,
  ageCalls,
  agent,
  ALAN,
  cli,
  countingFolder,
  countingLog,
  crmFolder,
  editState,
  GRACE,
  json,
  journalRows,
  resultText,
  SEED,
  state,
  stateText,
  TOY_MANIFEST,
  type Call,
} from "../fixtures/counting-support.ts";

// The preload's default timeout reaches only the first file bun runs; tests sharing the machine need the room.
setDefaultTimeout(60_000);

const DAMAGE: Call[] = [
  ["update_customer", { id: "c_001", plan: "free", notes: "wrong notes" }],
  ["delete_customer", { id: "c_002" }],
  ["create_customer", { name: "Bogus Customer", email: "bogus@example.com" }],
];

const ACTION_KEYS = [
  "id",
  "runId",
  "seq",
  "server",
  "tool",
  "args",
  "class",
  "status",
  "snapshot",
  "postState",
  "result",
  "inverse",
  "verify",
  "error",
  "approvedBy",
  "approvedAt",
  "ts",
];

async function runs(dir: string): Promise<any[]> {
  return json(dir, ["list"]);
}

describe.concurrent("the walkthrough", () => {
  test("damage → list/show → dry run → undo → a second run refused on drift", async () => {
    const dir = crmFolder();
    const replies = await agent(dir, DAMAGE, { name: "claude-code" });
    expect(replies.get(1).result.structuredContent).toEqual({ ...ADA, plan: "free", notes: "wrong notes" });
    expect(replies.get(3).result.structuredContent).toEqual({ id: "c_004", name: "Bogus Customer", email: "bogus@example.com", plan: "free", notes: "" });
    const damaged = state(dir);
    expect(Object.keys(damaged.customers)).toEqual(["c_001", "c_003", "c_004"]);

    // list: the run, newest first, in text and in the documented JSON shape.
    const listed = await runs(dir);
    expect(listed).toHaveLength(1);
    const run = listed[0];
    expect(Object.keys(run)).toEqual(["id", "label", "startedAt", "endedAt", "status", "actions"]);
    expect(run).toMatchObject({ label: "claude-code", status: "complete", actions: 3 });
    expect(run.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    const short = run.id.replace(/-/g, "").slice(0, 8);
    const list = await cli(dir, ["list"]);
    expect(list.code).toBe(0);
    const [head, row] = list.stdout.trim().split("\n");
    expect(head!.split(/\s{2,}/)).toEqual(["RUN", "AGENT", "STARTED", "STATUS", "ACTIONS", "UNKNOWN", "WAITING"]);
    expect(row!.split(/\s{2,}/)).toEqual([short, "claude-code", expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/), "complete", "3", "0", "0"]);

    // show: every call with its class, status and the literal call that undoes it.
    const show = await cli(dir, ["show"]);
    expect(show.code).toBe(0);
    expect(show.stdout).toContain(`Run ${run.id}  claude-code  started `);
    expect(show.stdout).toContain(`#1  ↺ reversible    applied       crm.update_customer {"id":"c_001","plan":"free","notes":"wrong notes"}`);
    expect(show.stdout).toContain(
      `undo     crm.update_customer {"id":"c_001","name":"Ada Lovelace","email":"ada@example.com","plan":"pro","notes":"founding customer"}`,
    );
    expect(show.stdout).toContain(`#2  ↺ reversible    applied       crm.delete_customer {"id":"c_002"}`);
    expect(show.stdout).toContain(
      `undo     crm.restore_customer {"id":"c_002","name":"Grace Hopper","email":"grace@example.com","plan":"enterprise","notes":"renewal in March"}`,
    );
    expect(show.stdout).toContain(`#3  ↩ compensable   applied       crm.create_customer {"name":"Bogus Customer","email":"bogus@example.com"}`);
    expect(show.stdout).toContain(`undo     crm.delete_customer {"id":"c_004"}`);
    expect(show.stdout).toContain(`verify   crm.get_customer {"id":"c_001"}`);

    const shown = await json(dir, ["show", short]);
    expect(Object.keys(shown)).toEqual(["run", "actions"]);
    expect(shown.run).toEqual({ id: run.id, label: "claude-code", startedAt: run.startedAt, endedAt: run.endedAt, status: "complete" });
    expect(shown.actions).toHaveLength(3);
    for (const action of shown.actions) for (const key of Object.keys(action)) expect(ACTION_KEYS).toContain(key);
    const [update, remove, create] = shown.actions;
    expect(Object.keys(update)).toEqual([
      "id",
      "runId",
      "seq",
      "server",
      "tool",
      "args",
      "class",
      "status",
      "snapshot",
      "postState",
      "result",
      "inverse",
      "verify",
      "ts",
    ]);
    expect(update).toMatchObject({
      runId: run.id,
      seq: 1,
      server: "crm",
      tool: "update_customer",
      args: { id: "c_001", plan: "free", notes: "wrong notes" },
      class: "reversible",
      status: "applied",
      snapshot: ADA,
      postState: { ...ADA, plan: "free", notes: "wrong notes" },
      inverse: { server: "crm", tool: "update_customer", args: ADA },
      verify: { server: "crm", tool: "get_customer", args: { id: "c_001" } },
    });
    expect(update.result.structuredContent).toEqual({ ...ADA, plan: "free", notes: "wrong notes" });
    expect(remove).toMatchObject({
      seq: 2,
      status: "applied",
      snapshot: GRACE,
      postState: null,
      inverse: { server: "crm", tool: "restore_customer", args: GRACE },
    });
    expect(Object.keys(create)).toEqual(["id", "runId", "seq", "server", "tool", "args", "class", "status", "result", "inverse", "ts"]);
    expect(create).toMatchObject({ seq: 3, class: "compensable", inverse: { server: "crm", tool: "delete_customer", args: { id: "c_004" } } });

    // The dry run prints the exact calls and changes nothing: not the state file, not the journal.
    const before = stateText(dir);
    const dry = await cli(dir, ["undo", "--dry-run"]);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toStartWith(`Dry run — nothing will be changed. Run ${run.id}`);
    expect(dry.stdout).toContain(`#3  would revert [unverified]`);
    expect(dry.stdout).toContain(`would call: crm.delete_customer {"id":"c_004"}`);
    expect(dry.stdout).toContain(
      `would call: crm.restore_customer {"id":"c_002","name":"Grace Hopper","email":"grace@example.com","plan":"enterprise","notes":"renewal in March"}`,
    );
    expect(dry.stdout).toContain(
      `would call: crm.update_customer {"id":"c_001","name":"Ada Lovelace","email":"ada@example.com","plan":"pro","notes":"founding customer"}`,
    );
    expect(dry.stdout).toContain("3 calls would be reverted. Run without --dry-run to do it.");
    expect(dry.stdout).not.toContain("DRIFT");
    expect(stateText(dir)).toBe(before);
    expect((await json(dir, ["show"])).actions.map((a: any) => a.status)).toEqual(["applied", "applied", "applied"]);
    expect((await runs(dir))[0].status).toBe("complete");

    // The undo puts everything back.
    const undo = await cli(dir, ["undo"]);
    expect(undo.code).toBe(0);
    expect(undo.stdout).toContain(`#3  reverted [unverified]`);
    expect(undo.stdout).toContain(`called: crm.delete_customer {"id":"c_004"}`);
    expect(undo.stdout).toContain(`Run ${short} is rolled back: 3 calls reverted.`);
    expect(state(dir).customers).toEqual(SEED);
    expect((await runs(dir))[0]).toMatchObject({ id: run.id, status: "rolled_back" });
    expect((await json(dir, ["show"])).actions.map((a: any) => a.status)).toEqual(["rolled_back", "rolled_back", "rolled_back"]);

    // A second damaging run, then a person corrects Ada's notes by hand in the state file.
    await agent(dir, [
      ["update_customer", { id: "c_001", plan: "free", notes: "wrong again" }],
      ["delete_customer", { id: "c_003" }],
    ]);
    const HUMAN = "Ada asked to stay on free";
    editState(dir, (s) => (s.customers.c_001.notes = HUMAN));
    const second = (await runs(dir))[0];
    expect(second.id).not.toBe(run.id);

    const dryDrift = await cli(dir, ["undo", "--dry-run"]);
    expect(dryDrift.code).toBe(1);
    expect(dryDrift.stdout).toContain("DRIFT");
    expect(dryDrift.stdout).toContain("A real undo would stop at #1. 1 step before it would be reverted.");

    const refused = await cli(dir, ["undo"]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain(`#1  DRIFT`);
    expect(refused.stdout).toContain("crm.update_customer: the state changed after the agent's call; undo will not overwrite it");
    // Both values, side by side: what the agent left and what is there now.
    expect(refused.stdout).toContain("expected (as the agent left it)");
    expect(refused.stdout).toContain("actual (now)");
    expect(refused.stdout).toMatch(/≠ +"notes": "wrong again" +│ +"notes": "Ada asked to stay on free"/);
    const secondShort = second.id.replace(/-/g, "").slice(0, 8);
    expect(refused.stdout).toContain(`Stopped at #1; nothing older than it was touched. 1 reverted before stopping. Run ${secondShort} is marked partial.`);
    expect(refused.stdout).toContain(`When the cause is dealt with, continue with: synartesis undo ${secondShort}\n`);
    // The person's text survives; the newer step (Alan's delete) was reverted.
    const after = state(dir);
    expect(after.customers.c_001).toEqual({ ...ADA, plan: "free", notes: HUMAN });
    expect(after.customers.c_003).toEqual(ALAN);
    expect((await runs(dir))[0]).toMatchObject({ id: second.id, status: "partial" });
    expect((await json(dir, ["show"])).actions.map((a: any) => a.status)).toEqual(["applied", "rolled_back"]);

    // Asking again changes nothing and says the same.
    const again = await cli(dir, ["undo"]);
    expect(again.code).toBe(1);
    expect(again.stdout).toContain("#1  DRIFT");
    expect(state(dir).customers.c_001.notes).toBe(HUMAN);
  });

  test("a run that touched one customer four times: the dry run sees no drift, the undo restores the original", async () => {
    const dir = crmFolder();
    await agent(dir, [
      ["update_customer", { id: "c_001", plan: "free" }],
      ["update_customer", { id: "c_001", notes: "downgraded" }],
      ["update_customer", { id: "c_001", name: "A. Lovelace" }],
      ["update_customer", { id: "c_001", email: "ada@wrong.example", plan: "enterprise" }],
    ]);
    expect(state(dir).customers.c_001).toEqual({ id: "c_001", name: "A. Lovelace", email: "ada@wrong.example", plan: "enterprise", notes: "downgraded" });

    const dry = await cli(dir, ["undo", "--dry-run"]);
    expect(dry.code).toBe(0);
    expect(dry.stdout).not.toContain("DRIFT");
    expect(dry.stdout.match(/would revert/g)).toHaveLength(4);
    // Each step writes back the record as it was just before that step.
    expect(dry.stdout).toContain(
      `would call: crm.update_customer {"id":"c_001","name":"A. Lovelace","email":"ada@example.com","plan":"free","notes":"downgraded"}`,
    );
    expect(dry.stdout).toContain(
      `would call: crm.update_customer {"id":"c_001","name":"Ada Lovelace","email":"ada@example.com","plan":"free","notes":"downgraded"}`,
    );
    expect(dry.stdout).toContain(
      `would call: crm.update_customer {"id":"c_001","name":"Ada Lovelace","email":"ada@example.com","plan":"free","notes":"founding customer"}`,
    );
    expect(dry.stdout).toContain(
      `would call: crm.update_customer {"id":"c_001","name":"Ada Lovelace","email":"ada@example.com","plan":"pro","notes":"founding customer"}`,
    );
    expect(dry.stdout).toContain("4 calls would be reverted.");

    const undo = await cli(dir, ["undo"]);
    expect(undo.code).toBe(0);
    expect(undo.stdout).not.toContain("DRIFT");
    expect(state(dir).customers).toEqual(SEED);
    expect((await runs(dir))[0].status).toBe("rolled_back");
  });
});

describe.concurrent("undo options", () => {
  test("--to SEQ undoes only seq ≥ SEQ, exits 0 and marks the run partial; a full undo finishes it", async () => {
    const dir = crmFolder();
    await agent(dir, [
      ["update_customer", { id: "c_001", plan: "free" }],
      ["update_customer", { id: "c_002", plan: "free" }],
      ["update_customer", { id: "c_003", plan: "pro" }],
    ]);
    const partial = await cli(dir, ["undo", "--to", "2"]);
    expect(partial.code).toBe(0);
    expect(partial.stdout).toContain("#3  reverted");
    expect(partial.stdout).toContain("#2  reverted");
    expect(partial.stdout).not.toContain("#1 ");
    expect(partial.stdout).toContain("partially rolled back: 2 reverted; calls before #2 were not in scope.");
    expect(state(dir).customers).toEqual({ ...SEED, c_001: { ...ADA, plan: "free" } });
    expect((await runs(dir))[0].status).toBe("partial");
    expect((await json(dir, ["show"])).actions.map((a: any) => a.status)).toEqual(["applied", "rolled_back", "rolled_back"]);

    const rest = await cli(dir, ["undo"]);
    expect(rest.code).toBe(0);
    expect(rest.stdout).toContain("already undone");
    expect(state(dir).customers).toEqual(SEED);
    expect((await runs(dir))[0].status).toBe("rolled_back");
  });

  test("--to SEQ that stops on drift says how to continue with the same scope", async () => {
    const dir = crmFolder();
    await agent(dir, [
      ["update_customer", { id: "c_001", plan: "free" }],
      ["update_customer", { id: "c_002", plan: "free" }],
      ["update_customer", { id: "c_003", plan: "pro" }],
    ]);
    editState(dir, (s) => (s.customers.c_002.notes = "changed by a person"));
    const short = (await runs(dir))[0].id.replace(/-/g, "").slice(0, 8);
    const halted = await cli(dir, ["undo", "--to", "2"]);
    expect(halted.code).toBe(1);
    expect(halted.stdout).toContain("#2  DRIFT");
    expect(halted.stdout).toContain(`When the cause is dealt with, continue with: synartesis undo ${short} --to 2\n`);
    expect(state(dir).customers).toEqual({
      c_001: { ...ADA, plan: "free" },
      c_002: { ...GRACE, plan: "free", notes: "changed by a person" },
      c_003: ALAN,
    });
  });

  test("--to needs a positive whole number (exit 2)", async () => {
    const dir = crmFolder();
    await agent(dir, [["update_customer", { id: "c_001", plan: "free" }]]);
    for (const bad of ["0", "-1", "two", "1.5"]) {
      const result = await cli(dir, ["undo", `--to=${bad}`]);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`--to needs a positive whole number (got "${bad}")`);
    }
    expect(state(dir).customers.c_001.plan).toBe("free");
  });

  test("a broken inverse is recorded with a warning; undo halts naming --replan; after the fix, undo --replan succeeds", async () => {
    const broken = TOY_MANIFEST.replace(
      `        name: "$snapshot.name"\n        email: "$snapshot.email"\n        plan: "$snapshot.plan"`,
      `        name: "$snapshot.nme"\n        email: "$snapshot.email"\n        plan: "$snapshot.plan"`,
    );
    expect(broken).not.toBe(TOY_MANIFEST);
    const dir = crmFolder(broken);
    const replies = await agent(dir, [
      ["update_customer", { id: "c_001", plan: "free", notes: "wrong notes" }],
      ["update_customer", { id: "c_002", plan: "free" }],
    ]);
    // The agent's calls are not failed by a bad policy (R-REF-4).
    expect(replies.get(1).result.isError).toBeUndefined();
    expect(state(dir).customers.c_001).toEqual({ ...ADA, plan: "free", notes: "wrong notes" });

    const shown = await json(dir, ["show"]);
    for (const action of shown.actions) {
      expect(action.status).toBe("applied");
      expect(action.inverse).toBeUndefined();
    }
    for (const row of journalRows(dir, "SELECT inverse, warnings, packed FROM actions ORDER BY seq")) {
      expect(row.inverse).toBeNull();
      const warnings = JSON.parse(row.warnings);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toStartWith("the inverse could not be resolved (");
      expect(warnings[0]).toContain("nme");
      expect(warnings[0]).toEndWith("); undo has no usable inverse for this call");
    }
    const show = await cli(dir, ["show"]);
    expect(show.stdout).toContain("warning  the inverse could not be resolved");

    const halted = await cli(dir, ["undo"]);
    expect(halted.code).toBe(1);
    expect(halted.stdout).toContain("#2  STOP");
    expect(halted.stdout).toContain("crm.update_customer has no usable inverse");
    expect(halted.stdout).toContain("--replan");
    expect(halted.stdout).toContain("Stopped at #2");
    expect(state(dir).customers.c_001.plan).toBe("free");
    expect((await runs(dir))[0].status).toBe("partial");

    // Fix the manifest; a replanning dry run shows the rebuilt calls and stores nothing.
    writeFileSync(join(dir, "synartesis.yaml"), TOY_MANIFEST);
    const dry = await cli(dir, ["undo", "--replan", "--dry-run"]);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain(
      `replanned #1 crm.update_customer: undo with crm.update_customer {"id":"c_001","name":"Ada Lovelace","email":"ada@example.com","plan":"pro","notes":"founding customer"}`,
    );
    expect(dry.stdout).toContain("2 calls would be reverted.");
    expect((await json(dir, ["show"])).actions.every((a: any) => a.inverse === undefined)).toBe(true);

    const replanned = await cli(dir, ["undo", "--replan"]);
    expect(replanned.code).toBe(0);
    expect(replanned.stdout).toContain("rolled back: 2 calls reverted");
    expect(state(dir).customers).toEqual(SEED);
    expect((await runs(dir))[0].status).toBe("rolled_back");
    const after = await json(dir, ["show"]);
    expect(after.actions[0]).toMatchObject({ status: "rolled_back", inverse: { server: "crm", tool: "update_customer", args: ADA } });
    expect(journalRows(dir, "SELECT warnings FROM actions WHERE seq = 1")).toEqual([{ warnings: null }]);
  });

  test("an inverse of two calls: both sent in order; when the second fails after the first ran, the outcome is unknown until a read settles it", async () => {
    const restore = `      tool: "crm.update_customer"\n      args:\n        id: "$.id"\n        name: "$snapshot.name"\n        email: "$snapshot.email"\n        plan: "$snapshot.plan"\n        notes: "$snapshot.notes"\n`;
    expect(TOY_MANIFEST).toContain(`    inverse:\n${restore}`);
    const listed = (second: string) =>
      TOY_MANIFEST.replace(
        `    inverse:\n${restore}`,
        `    inverse:\n${restore.replace('      tool: "crm.update_customer"', '      - tool: "crm.update_customer"').replaceAll("\n      args", "\n        args").replaceAll("\n        ", "\n          ").replace("\n          args:", "\n        args:")}      - tool: "crm.get_customer"\n        args: { id: "${second}" }\n`,
      );
    const dir = crmFolder(listed("c_999"));
    expect((await cli(dir, ["check"])).code).toBe(0);
    await agent(dir, [["update_customer", { id: "c_001", plan: "free" }]]);
    const shown = await json(dir, ["show"]);
    expect(shown.actions[0].inverse).toEqual({
      server: "crm",
      tool: "update_customer",
      args: ADA,
      then: [{ server: "crm", tool: "get_customer", args: { id: "c_999" } }],
    });
    expect((await cli(dir, ["show"])).stdout).toContain(`undo     crm.update_customer {"id":"c_001"`);

    const first = await cli(dir, ["undo"]);
    expect(first.code).toBe(1);
    expect(first.stdout).toContain("crm.update_customer ran, then crm.get_customer (call 2 of 2) failed: no customer with id c_999");
    expect(state(dir).customers.c_001).toEqual(ADA);
    expect((await json(dir, ["show"])).actions[0].status).toBe("rolling_back");

    // The next undo reads the record: it is as it was before the agent's call, so the inverse landed.
    const second = await cli(dir, ["undo"]);
    expect(second.stdout).toContain("rolled back");
    expect(second.code).toBe(0);
    expect((await json(dir, ["show"])).actions[0].status).toBe("rolled_back");
    expect(state(dir).customers).toEqual(SEED);
  });

  test("a server that will not start: undo exits 1 naming it, and the run and its actions are left as they were", async () => {
    const dir = crmFolder();
    await agent(dir, [["update_customer", { id: "c_001", plan: "free" }]]);
    const missing = join(dir, "no-such-crm");
    writeFileSync(
      join(dir, "synartesis.yaml"),
      TOY_MANIFEST.replace(`command: synartesis\n    args: ["toy-crm", "--state", "./crm.json"]`, `command: ${JSON.stringify(missing)}\n    args: []`),
    );

    const dry = await cli(dir, ["undo", "--dry-run"]);
    expect(dry.code).toBe(1);
    expect(dry.stdout).toContain("#1  STOP");
    expect(dry.stdout).toContain(`server "crm" would not start`);

    const undo = await cli(dir, ["undo"]);
    expect(undo.code).toBe(1);
    expect(undo.stderr).toContain(`synartesis: server "crm" would not start`);
    expect(undo.stderr).toContain(missing);
    expect(undo.stderr).not.toContain("internal error");
    expect((await runs(dir))[0].status).toBe("complete");
    expect(journalRows(dir, "SELECT status, claimed_by FROM actions")).toEqual([{ status: "applied", claimed_by: expect.any(String) }]);
    expect(state(dir).customers.c_001.plan).toBe("free");

    // With the manifest put right, the same undo goes through.
    writeFileSync(join(dir, "synartesis.yaml"), TOY_MANIFEST);
    expect((await cli(dir, ["undo"])).code).toBe(0);
    expect(state(dir).customers).toEqual(SEED);
  });

  test("a pending action (the proxy died mid-call) halts undo; close marks the abandoned run complete", async () => {
    const { dir, log } = countingFolder();
    const session = new LineSession([BIN, "proxy"], { cwd: dir, env: { COUNTING_HANG_TOOL: "delete_customer" } });
    try {
      await session.initialize("doomed-agent");
      session.send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "update_customer", arguments: { id: "c_001", plan: "free" } } });
      expect((await session.response(1)).result.structuredContent.plan).toBe("free");
      session.send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "delete_customer", arguments: { id: "c_002" } } });
      // The write-ahead row is committed before the call leaves the proxy.
      await until(() => countingLog(log).some((e) => e.event === "recv" && e.tool === "delete_customer"), "the delete to reach the server");
    } finally {
      session.proc.kill(9);
      await session.proc.exited;
    }
    const rows = journalRows(dir, "SELECT seq, tool, status FROM actions ORDER BY seq");
    expect(rows).toEqual([
      { seq: 1, tool: "update_customer", status: "applied" },
      { seq: 2, tool: "delete_customer", status: "pending" },
    ]);

    const [abandoned] = await runs(dir);
    expect(abandoned).toMatchObject({ label: "doomed-agent", status: "active", actions: 2 });
    expect(abandoned.endedAt).toBeUndefined();
    const list = await cli(dir, ["list"]);
    expect(
      list.stdout
        .trim()
        .split("\n")[1]!
        .split(/\s{2,}/)
        .slice(3),
    ).toEqual(["active", "2", "1", "0"]);

    const short = abandoned.id.replace(/-/g, "").slice(0, 8);
    const closed = await cli(dir, ["close"]);
    expect(closed.code).toBe(0);
    expect(closed.stdout.trim()).toBe(`Run ${short} (doomed-agent) is now marked complete.`);
    const [complete] = await runs(dir);
    expect(complete.status).toBe("complete");
    expect(complete.endedAt).toMatch(/^\d{4}-\d\d-\d\dT/);
    const twice = await cli(dir, ["close", short]);
    expect(twice.code).toBe(1);
    expect(twice.stderr.trim()).toBe(`synartesis: run ${short} is not active (it is complete)`);

    // The unknown call's answer could come for up to its server's timeout (60 s): as if that had passed.
    await ageCalls(dir, 61_000);
    // Suppose the delete did land before the proxy died: the record is not what it was, so undo stops.
    editState(dir, (crm) => delete crm.customers.c_002);
    const dry = await cli(dir, ["undo", "--dry-run"]);
    expect(dry.code).toBe(1);
    expect(dry.stdout).toContain("#2  STOP");

    const undo = await cli(dir, ["undo"]);
    expect(undo.code).toBe(1);
    expect(undo.stdout).toContain("#2  STOP");
    expect(undo.stdout).toContain(
      "the outcome of crm.delete_customer is unknown (the proxy never learnt whether it ran), and the state is not what it was before it",
    );
    expect(undo.stdout).toContain("Undo will not guess past a call whose effect is unknown.");
    expect(undo.stdout).toContain("Stopped at #2; nothing older than it was touched. 0 reverted before stopping.");
    // Nothing older than the unknown call was touched.
    const { c_002: _, ...withoutGrace } = SEED;
    expect(state(dir).customers).toEqual({ ...withoutGrace, c_001: { ...ADA, plan: "free" } });
    expect((await runs(dir))[0].status).toBe("partial");
    expect(countingLog(log).filter((e) => e.key !== undefined)).toEqual([]);

    // A person puts Grace back by hand: the unknown call left no trace now, and undo goes on past it,
    // leaving it pending (its outcome is still unknown), so the run stays partial.
    editState(dir, (crm) => (crm.customers.c_002 = SEED.c_002));
    const resumed = await cli(dir, ["undo"]);
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toContain(
      "the outcome of crm.delete_customer is unknown, but the record is what it was before the call: nothing to undo for it now",
    );
    expect(state(dir).customers).toEqual(SEED);
    expect((await runs(dir))[0].status).toBe("partial");
    expect(journalRows(dir, "SELECT seq, status, undo_note FROM actions ORDER BY seq")).toEqual([
      { seq: 1, status: "rolled_back", undo_note: null },
      {
        seq: 2,
        status: "pending",
        undo_note: "the outcome of crm.delete_customer is unknown, but the record is what it was before the call: nothing to undo for it now",
      },
    ]);
  });

  test("a compensating inverse that does not give the record back: the dry run warns, the undo stops NOT RESTORED, the next one leaves it for a person", async () => {
    const dir = crmFolder();
    // restore_customer over a customer that existed: its inverse (a delete) cannot bring Ada's record back.
    await agent(dir, [
      ["update_customer", { id: "c_002", plan: "free" }],
      ["restore_customer", { ...ADA, plan: "enterprise" }],
    ]);
    const short = (await runs(dir))[0].id.replace(/-/g, "").slice(0, 8);

    const dry = await cli(dir, ["undo", "--dry-run"]);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain(`#2  would revert      crm.restore_customer`);
    expect(dry.stdout).toContain(`would call: crm.delete_customer {"id":"c_001"}`);
    expect(dry.stdout).toContain(
      "note: the record existed before this call and this inverse is not built from it: undo reads it again afterwards and stops if it is not as it was",
    );
    expect(dry.stdout).toContain("2 calls would be reverted. Run without --dry-run to do it.");

    const undo = await cli(dir, ["undo"]);
    expect(undo.code).toBe(1);
    expect(undo.stdout).toContain(`#2  NOT RESTORED      crm.restore_customer`);
    expect(undo.stdout).toContain(`called: crm.delete_customer {"id":"c_001"}`);
    expect(undo.stdout).toContain("the inverse crm.delete_customer ran, but the state is not what it was before the call");
    expect(undo.stdout).toMatch(/before the agent's call +│ now, after the inverse/);
    expect(undo.stdout).toMatch(/≠ +"plan": "pro", +│/);
    expect(undo.stdout).toContain(
      `Stopped after #2: its inverse ran but did not give back the state from before. 0 reverted before it. Run ${short} is marked partial.`,
    );
    // Nothing older was touched; Ada is gone, and the action is the person's to put right.
    const { c_001: _, ...withoutAda } = SEED;
    expect(state(dir).customers).toEqual({ ...withoutAda, c_002: { ...GRACE, plan: "free" } });
    expect((await json(dir, ["show"])).actions.map((a: any) => a.status)).toEqual(["applied", "unrecoverable"]);

    const rest = await cli(dir, ["undo"]);
    expect(rest.code).toBe(0);
    expect(rest.stdout).toContain("#2  left in place");
    expect(rest.stdout).toContain(
      "crm.restore_customer: the inverse crm.delete_customer ran, but the state is not what it was before the call; left for a person",
    );
    expect(rest.stdout).toContain(`Run ${short} is partially rolled back: 1 reverted, 1 left in place (they cannot be undone).`);
    expect(state(dir).customers).toEqual(withoutAda);
  });

  test("an approved irreversible call that ran is left in place; the rest is reverted; the run is partial", async () => {
    const dir = crmFolder();
    const EMAIL = { to: "ada@example.com", subject: "Your plan changed", body: "You are now on the free plan." };
    const held = await agent(dir, [["send_email", EMAIL]]);
    const text = resultText(held.get(1));
    const id = /^Action id: ([0-9a-f]{8})\.$/m.exec(text)![1]!;
    const approved = await cli(dir, ["approve", id]);
    expect(approved.code).toBe(0);

    const replies = await agent(dir, [
      ["update_customer", { id: "c_001", plan: "free" }],
      ["send_email", EMAIL],
      ["create_customer", { name: "Bogus Customer", email: "bogus@example.com" }],
    ]);
    expect(replies.get(2).result.isError).toBeUndefined();
    expect(state(dir).outbox).toEqual([{ ...EMAIL, sentAt: expect.any(String) }]);

    const dry = await cli(dir, ["undo", "--dry-run"]);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain("2 calls would be reverted, 1 left in place.");

    const undo = await cli(dir, ["undo"]);
    expect(undo.code).toBe(0);
    expect(undo.stdout).toContain("#2  left in place");
    expect(undo.stdout).toContain(`crm.send_email is irreversible and ran (approved by ${ACCOUNT}); left in place`);
    expect(undo.stdout).toContain("partially rolled back: 2 reverted, 1 left in place (they cannot be undone).");
    const after = state(dir);
    expect(after.customers).toEqual(SEED);
    expect(after.outbox).toHaveLength(1);
    expect((await runs(dir))[0].status).toBe("partial");
    expect((await json(dir, ["show"])).actions.map((a: any) => `${a.tool} ${a.status}`)).toEqual([
      "update_customer rolled_back",
      "send_email unrecoverable",
      "create_customer rolled_back",
    ]);
  });
});

describe.concurrent("run ids", () => {
  async function journalWithRuns(dir: string, ids: string[]): Promise<void> {
    const journal = await openJournal(join(dir, "synartesis.db"), { create: true });
    try {
      for (const [i, id] of ids.entries()) await journal.startRun({ id, label: `agent-${i}`, startedAt: new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString() });
    } finally {
      await journal.close();
    }
  }

  test("an unknown prefix exits 2 naming it; an ambiguous one exits 2 naming the matches", async () => {
    const dir = crmFolder();
    await journalWithRuns(dir, ["abcd1111-0000-4000-8000-000000000001", "abcd2222-0000-4000-8000-000000000002", "ef001234-0000-4000-8000-000000000003"]);
    for (const command of ["show", "undo", "close"]) {
      const unknown = await cli(dir, [command, "0123"]);
      expect(unknown.code).toBe(2);
      expect(unknown.stdout).toBe("");
      expect(unknown.stderr).toContain(`synartesis: no run id starts with "0123"`);

      const ambiguous = await cli(dir, [command, "abcd"]);
      expect(ambiguous.code).toBe(2);
      expect(ambiguous.stdout).toBe("");
      expect(ambiguous.stderr).toContain(`"abcd" matches 2 runs: abcd2222-000, abcd1111-000`);
      expect(ambiguous.stderr).toContain("Give more characters of the run id.");
    }
    // A unique prefix works, with or without dashes.
    for (const prefix of ["abcd1", "abcd1111-0", "ABCD1111", "ef00"]) {
      const shown = await cli(dir, ["show", prefix]);
      expect(shown.code).toBe(0);
    }
    expect((await json(dir, ["show", "abcd2"])).run.label).toBe("agent-1");
    // Without a prefix: the most recent run.
    expect((await json(dir, ["show"])).run.label).toBe("agent-2");
  });
});

describe.concurrent("a missing journal", () => {
  const COMMANDS = [
    ["list"],
    ["list", "--json"],
    ["show"],
    ["show", "--json"],
    ["gates"],
    ["gates", "--json"],
    ["undo"],
    ["undo", "--dry-run"],
    ["approve", "abcd"],
    ["deny", "--all"],
    ["close"],
  ];

  test("read-only commands say there is no journal, exit 1, and create nothing (empty folder)", async () => {
    const dir = tempDir("syn-nojournal-");
    for (const args of COMMANDS) {
      const result = await cli(dir, args);
      expect(result.code).toBe(1);
      expect(result.stdout).toBe("");
      expect(result.stderr.split("\n")[0]).toBe(`synartesis: there is no journal at ${join(dir, "synartesis.db")}`);
    }
    expect(readdirSync(dir)).toEqual([]);
  });

  test("next to a manifest, and with --journal, the same", async () => {
    const dir = crmFolder();
    const sub = join(dir, "sub");
    mkdirSync(sub);
    for (const args of COMMANDS) {
      const result = await cli(sub, args);
      expect(result.code).toBe(1);
      expect(result.stderr.split("\n")[0]).toBe(`synartesis: there is no journal at ${join(dir, "synartesis.db")}`);
      const elsewhere = await cli(sub, [...args, "--journal", "elsewhere.db"]);
      expect(elsewhere.code).toBe(1);
      expect(elsewhere.stderr.split("\n")[0]).toBe(`synartesis: there is no journal at ${join(sub, "elsewhere.db")}`);
    }
    expect(readdirSync(dir).sort()).toEqual(["sub", "synartesis.yaml"]);
    expect(readdirSync(sub)).toEqual([]);
    expect(existsSync(join(dir, "crm.json"))).toBe(false);
    expect(readFileSync(join(dir, "synartesis.yaml"), "utf8")).toBe(TOY_MANIFEST);
  });
});
