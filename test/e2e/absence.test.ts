// Absence as manifests expect it (R-ABSENT-1…3), through the built binary: a
// snapshot without absent_when takes every tool-level error of its read for
// "does not exist" (pre-read and post-read alike), so a manifest written for
// the original Synartesis undoes a delete and holds a write to a missing
// record for approval; with absent_when, only its phrases (in any case) mean
// absence; and `check` names each snapshot that has none, and what it risks.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { agent, cli, crmFolder, editState, journalRows, resultText, SEED, state, TOY_MANIFEST } from "../fixtures/counting-support.ts";

// The preload's default timeout reaches only the first file bun runs; tests sharing the machine need the room.
setDefaultTimeout(60_000);

/** The shipped toy CRM policy as the original Synartesis read it: no absent_when anywhere. */
const ORIGINAL_FORM = TOY_MANIFEST.split("\n")
  .filter((line) => !line.includes("absent_when"))
  .join("\n");
const withPhrase = (phrase: string) => TOY_MANIFEST.replaceAll('absent_when: "no customer with id"', `absent_when: ${JSON.stringify(phrase)}`);

describe.concurrent("a manifest without absent_when", () => {
  test("undoes a delete (the absent post-state is recorded, and compared with absent) and holds a write to a missing record", async () => {
    expect(ORIGINAL_FORM).not.toContain("absent_when");
    const dir = crmFolder(ORIGINAL_FORM);
    const replies = await agent(dir, [
      ["delete_customer", { id: "c_002" }],
      ["update_customer", { id: "c_042", plan: "pro" }],
    ]);
    expect(replies.get(1).result.isError).toBeUndefined();
    const held = replies.get(2).result;
    expect(held.isError).toBe(true);
    expect(resultText(replies.get(2))).toStartWith(
      "HELD FOR APPROVAL — Synartesis did not run this call. Reason: crm.update_customer is reversible, but its pre-read crm.get_customer found nothing to restore (no customer with id c_042).",
    );
    const rows = journalRows(dir, "SELECT tool, status, post_absent, warnings FROM actions ORDER BY seq");
    expect(rows).toEqual([
      { tool: "delete_customer", status: "applied", post_absent: 1, warnings: null },
      { tool: "update_customer", status: "gated", post_absent: 0, warnings: null },
    ]);
    expect(state(dir).customers.c_042).toBeUndefined();

    const undo = await cli(dir, ["undo"]);
    expect(undo.stderr).toBe("");
    expect(undo.code).toBe(0);
    expect(undo.stdout).toContain("#2  skip");
    expect(undo.stdout).toContain('#1  reverted          crm.delete_customer {"id":"c_002"}');
    expect(state(dir).customers).toEqual(SEED);
  });

  test("a deleted record that someone created again by hand is drift: undo shows absent against what is there, and keeps it", async () => {
    const dir = crmFolder(ORIGINAL_FORM);
    await agent(dir, [["delete_customer", { id: "c_002" }]]);
    editState(dir, (s) => (s.customers.c_002 = { id: "c_002", name: "Grace B. Hopper", email: "gbh@example.com", plan: "free", notes: "" }));
    const undo = await cli(dir, ["undo"]);
    expect(undo.code).toBe(1);
    expect(undo.stdout).toContain('#1  DRIFT             crm.delete_customer {"id":"c_002"}');
    expect(undo.stdout).toMatch(/≠ \(does not exist\)\s+│ \{/);
    expect(state(dir).customers.c_002.name).toBe("Grace B. Hopper");
  });

  test("check names each such snapshot, what it risks, and the phrase this server uses", async () => {
    const dir = crmFolder(ORIGINAL_FORM);
    const check = await cli(dir, ["check"]);
    expect(check.code).toBe(0);
    expect(check.stdout).toContain(
      'Snapshots without absent_when: any error of the read is taken to mean "does not exist", so a record that could not be read (a timeout, a refused permission) is taken for a missing one, and the call is offered for approval as a creation:',
    );
    const lines = check.stdout.split("\n").filter((line) => line.includes("the snapshot of"));
    const manifest = join(dir, "synartesis.yaml");
    const advice = 'this server says "no customer with id" when a record does not exist: add absent_when: "no customer with id"';
    const reads = ORIGINAL_FORM.split("\n").flatMap((line, i) => (line === '      tool: "crm.get_customer"' ? [i + 1] : []));
    expect(lines).toEqual([
      `  ${manifest}:${reads[0]}:13: crm.get_customer, the snapshot of "crm.update_customer": ${advice}`,
      `  ${manifest}:${reads[1]}:13: crm.get_customer, the snapshot of "crm.delete_customer": ${advice}`,
      `  ${manifest}:${reads[2]}:13: crm.get_customer, the snapshot of "crm.restore_customer": ${advice}`,
    ]);
    // The shipped policy declares them all: nothing to say.
    expect((await cli(crmFolder(), ["check"])).stdout).not.toContain("Snapshots without absent_when");
  });
});

describe.concurrent("a manifest with absent_when", () => {
  test("its phrase means absence in any case; any other error of the read is a failure and nothing is forwarded", async () => {
    const shouting = crmFolder(withPhrase("NO CUSTOMER WITH ID"));
    const held = await agent(shouting, [["update_customer", { id: "c_042", plan: "pro" }]]);
    expect(resultText(held.get(1))).toStartWith("HELD FOR APPROVAL");

    const other = crmFolder(withPhrase("record is gone"));
    const refused = await agent(other, [["update_customer", { id: "c_042", plan: "pro" }]]);
    expect(refused.get(1).result.isError).toBe(true);
    expect(resultText(refused.get(1))).toBe(
      "Synartesis did not run update_customer, because it could not record the state it would replace (reading it with get_customer failed): no customer with id c_042",
    );
    expect(journalRows(other, "SELECT status, error FROM actions")).toEqual([
      { status: "failed", error: "the pre-read crm.get_customer failed: no customer with id c_042" },
    ]);
    const check = await cli(other, ["check"]);
    expect(check.stdout).not.toContain("Snapshots without absent_when");
  });
});
