// R-PEOPLE-1 through the built binary: a run whose undo stopped on drift is
// finished by keeping the drifted call (`undo --keep SEQ --reason TEXT`); the
// rest is undone, the run reaches rolled_back, and show and --json say who
// kept what and why. What cannot be kept is refused, recording nothing.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { agent, cli, crmFolder, json, SEED, state, stateText } from "../fixtures/counting-support.ts";

setDefaultTimeout(60_000);

/** A colleague's edit, straight in the CRM's state file. */
function colleagueEdits(dir: string, id: string, notes: string): void {
  const now = state(dir);
  now.customers[id].notes = notes;
  writeFileSync(join(dir, "crm.json"), JSON.stringify(now, null, 2));
}

describe.concurrent("undo --keep", () => {
  test("a drift stop names --keep; keeping the drifted call undoes the rest and finishes the run", async () => {
    const dir = crmFolder();
    await agent(dir, [
      ["update_customer", { id: "c_001", notes: "agent was here" }],
      ["delete_customer", { id: "c_002" }],
      ["update_customer", { id: "c_003", plan: "pro" }],
    ]);
    colleagueEdits(dir, "c_001", "call back on Monday (Jo)");
    const runRef: string = (await json(dir, ["list"]))[0].id.slice(0, 8);

    const stopped = await cli(dir, ["undo"]);
    expect(stopped.code).toBe(1);
    expect(stopped.stdout).toContain(`Or keep #1 as it is now and undo the rest: synartesis undo ${runRef} --keep 1 --reason "…"`);
    expect((await json(dir, ["list"]))[0].status).toBe("partial");

    const kept = await cli(dir, ["undo", runRef, "--keep", "1", "--reason", "Jo's note is right"], { USER: "ana" });
    expect(kept.stderr).toBe("");
    expect(kept.code).toBe(0);
    expect(kept.stdout).toMatch(
      /^Kept #1 crm\.update_customer \{"id":"c_001","notes":"agent was here"\}: by ana at [^:]+:\d\d:\d\d: Jo's note is right; undo leaves its effect in place\.$/m,
    );
    expect(kept.stdout).toContain(`Run ${runRef} is rolled back.`);
    // Everything else is back; the kept record keeps the colleague's fix.
    expect(state(dir).customers).toEqual({ ...SEED, c_001: { ...SEED.c_001, notes: "call back on Monday (Jo)" } });

    const [listed] = await json(dir, ["list"]);
    expect(listed.status).toBe("rolled_back");
    const shown = await cli(dir, ["show"]);
    expect(shown.stdout).toMatch(/#1 +↺ reversible +kept +crm\.update_customer/);
    expect(shown.stdout).toMatch(/kept +by ana at [^:]+:\d\d:\d\d: Jo's note is right; undo leaves its effect in place/);
    const first = (await json(dir, ["show"])).actions[0];
    expect(first).toMatchObject({ seq: 1, keptBy: "ana", keptReason: "Jo's note is right", keptAt: expect.stringMatching(/^\d{4}-/) });

    // Undo again: nothing to do, and it says so.
    const again = await cli(dir, ["undo", runRef]);
    expect([again.code, again.stdout.trim().split("\n").at(-1)]).toEqual([
      0,
      expect.stringMatching(new RegExp(`^Nothing to undo: run ${runRef} was already rolled back at .+ by ana\\.$`)),
    ]);
  });

  test("keeping a call in the middle: undo goes on to the older calls and reverts them", async () => {
    const dir = crmFolder();
    await agent(dir, [
      ["update_customer", { id: "c_003", plan: "pro" }],
      ["update_customer", { id: "c_001", notes: "agent was here" }],
    ]);
    colleagueEdits(dir, "c_001", "Jo's fix");
    expect((await cli(dir, ["undo"])).code).toBe(1);
    // Newest first: the stop at #2 touched nothing older.
    expect(state(dir).customers.c_003.plan).toBe("pro");
    const kept = await cli(dir, ["undo", "--keep", "2"]);
    expect(kept.code).toBe(0);
    expect((await json(dir, ["list"]))[0].status).toBe("rolled_back");
    expect(state(dir).customers).toEqual({ ...SEED, c_001: { ...SEED.c_001, notes: "Jo's fix" } });
  });

  test("what cannot be kept is refused and nothing is recorded; bad numbers are usage errors", async () => {
    const dir = crmFolder();
    await agent(dir, [
      ["get_customer", { id: "c_001" }],
      ["update_customer", { id: "c_001", plan: "free" }],
      ["send_email", { to: "ada@example.com", subject: "Hi", body: "Hello" }],
    ]);
    const before = stateText(dir);
    const refused = await cli(dir, ["undo", "--keep", "1,2,3"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      "synartesis: nothing was kept\n  #1 crm.get_customer: it only read; there is no effect to keep\n  #3 crm.send_email: it never ran; there is no effect to keep\n",
    );
    expect((await json(dir, ["show"])).actions.map((a: any) => a.keptBy)).toEqual([undefined, undefined, undefined]);
    expect(stateText(dir)).toBe(before);

    const missing = await cli(dir, ["undo", "--keep", "9"]);
    expect([missing.code, missing.stderr]).toEqual([2, expect.stringMatching(/^synartesis: run [0-9a-f]{8} has no call #9 /)]);
    const word = await cli(dir, ["undo", "--keep", "two"]);
    expect([word.code, word.stderr]).toEqual([
      2,
      expect.stringContaining('--keep needs call numbers as show prints them, e.g. --keep 3 or --keep 3,5 (got "two")'),
    ]);
    const lonely = await cli(dir, ["undo", "--reason", "because"]);
    expect([lonely.code, lonely.stderr]).toEqual([2, expect.stringContaining("--reason goes with --keep")]);
    const rehearsed = await cli(dir, ["undo", "--keep", "2", "--dry-run"]);
    expect([rehearsed.code, rehearsed.stderr]).toEqual([2, expect.stringContaining("--keep records a decision and cannot be rehearsed")]);
    expect(stateText(dir)).toBe(before);
  });
});
