// `list` and `show` through the built binary (R-CLI-4, R-CLI-8): runs newest
// first with their counts, every kind of action row in text, and the JSON
// shapes the spec documents (camelCase, absent values omitted).
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { openJournal } from "../../src/journal/journal.ts";
import { BIN, LineSession, ACCOUNT } from "../helpers.ts";
import { ADA, cli, crmFolder, json, resultText, TOY_MANIFEST, type Call } from "../fixtures/counting-support.ts";

// The preload's default timeout reaches only the first file bun runs; tests sharing the machine need the room.
setDefaultTimeout(60_000);

/** The keys R-CLI-8 documents for an action. */
const SPEC_ACTION_KEYS = [
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
/**
 * Keys the implementation adds that R-CLI-8 does not list (a deny's reason,
 * the warnings of a call whose inverse or post-read failed). Reported to the
 * lead: either the spec/README documents them or the JSON drops them.
 */
const EXTRA_ACTION_KEYS = ["warnings", "reason"];

/** In the order the spec lists them: the JSON keeps that order. */
function keysInSpecOrder(action: Record<string, unknown>): string[] {
  return Object.keys(action).filter((k) => SPEC_ACTION_KEYS.includes(k));
}

/** An agent that waits for each reply before the next call, so seq follows the order written here. */
async function session(dir: string, name: string, calls: Call[]): Promise<any[]> {
  const agent = new LineSession([BIN, "proxy"], { cwd: dir });
  const replies: any[] = [];
  try {
    await agent.initialize(name);
    for (const [i, [tool, args]] of calls.entries()) {
      replies.push(await agent.request(i + 1, "tools/call", { name: tool, arguments: args }));
    }
  } finally {
    expect(await agent.close()).toBe(0);
  }
  return replies;
}

const heldId = (reply: any) => /^Action id: ([0-9a-f]{8})\.$/m.exec(resultText(reply))![1]!;
const EMAIL_A = { to: "ada@example.com", subject: "Plan", body: "You are on free now." };
const EMAIL_B = { to: "grace@example.com", subject: "Plan", body: "You are on free now." };

describe.concurrent("list", () => {
  test("a journal with no runs", async () => {
    const dir = crmFolder();
    await (await openJournal(join(dir, "synartesis.db"), { create: true })).close();
    const list = await cli(dir, ["list"]);
    expect(list.code).toBe(0);
    expect(list.stdout).toBe("No runs recorded yet.\n");
    expect(await json(dir, ["list"])).toEqual([]);
    const show = await cli(dir, ["show"]);
    expect(show.code).toBe(1);
    expect(show.stderr.trim()).toBe(`synartesis: the journal ${join(dir, "synartesis.db")} has no runs yet`);
    const undo = await cli(dir, ["undo"]);
    expect(undo.code).toBe(1);
    expect(undo.stderr.trim()).toBe(`synartesis: the journal ${join(dir, "synartesis.db")} has no runs yet`);
  });

  test("runs newest first, with actions, unknown outcomes and waiting approvals counted", async () => {
    const dir = crmFolder();
    await session(dir, "first-agent", [["update_customer", { id: "c_001", plan: "free" }]]);
    await session(dir, "second-agent", [
      ["get_customer", { id: "c_001" }],
      ["send_email", EMAIL_A],
      ["send_email", EMAIL_B],
    ]);
    const runs = await json(dir, ["list"]);
    expect(runs.map((r: any) => Object.keys(r))).toEqual([
      ["id", "label", "startedAt", "endedAt", "status", "actions"],
      ["id", "label", "startedAt", "endedAt", "status", "actions"],
    ]);
    expect(runs.map((r: any) => [r.label, r.status, r.actions])).toEqual([
      ["second-agent", "complete", 3],
      ["first-agent", "complete", 1],
    ]);
    for (const run of runs) {
      expect(run.startedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(run.endedAt >= run.startedAt).toBe(true);
    }
    expect(runs[0].startedAt >= runs[1].startedAt).toBe(true);

    const list = await cli(dir, ["list"]);
    expect(list.code).toBe(0);
    const rows = list.stdout
      .trim()
      .split("\n")
      .map((line) => line.split(/\s{2,}/));
    expect(rows[0]).toEqual(["RUN", "AGENT", "STARTED", "STATUS", "ACTIONS", "UNKNOWN", "WAITING"]);
    const short = (id: string) => id.replace(/-/g, "").slice(0, 8);
    expect(rows[1]).toEqual([short(runs[0].id), "second-agent", expect.any(String), "complete", "3", "0", "2"]);
    expect(rows[2]).toEqual([short(runs[1].id), "first-agent", expect.any(String), "complete", "1", "0", "0"]);
  });
});

describe.concurrent("list with wide agent names", () => {
  test("CJK and emoji agent names keep the columns aligned on the screen (display columns, not characters)", async () => {
    const dir = crmFolder();
    const names = ["日本語のエージェント", "🤖 robot 🤖", "plain-agent"];
    for (const name of names) await session(dir, name, [["get_customer", { id: "c_001" }]]);
    const list = await cli(dir, ["list"]);
    expect(list.code).toBe(0);
    const lines = list.stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(4);
    // Where STARTED begins, counted in terminal columns, is the same on every line.
    const startedAt = (line: string) => Bun.stringWidth(line.slice(0, line.search(/STARTED|\d{4}-\d\d-\d\d /)));
    const columns = lines.map(startedAt);
    expect(new Set(columns).size).toBe(1);
    expect(columns[0]).toBe(10 + Bun.stringWidth("日本語のエージェント") + 2);
    for (const name of names) expect(lines.some((line) => line.includes(`  ${name}  `))).toBe(true);
  });
});

describe.concurrent("show", () => {
  test("every kind of row, in text and in the documented JSON shape", async () => {
    // No rule covers restore_customer here: a tool the server has but the policy does not name is held.
    const rule = TOY_MANIFEST.indexOf('  - match: "crm.restore_customer"');
    const dir = crmFolder(TOY_MANIFEST.slice(0, rule) + TOY_MANIFEST.slice(TOY_MANIFEST.indexOf("  # An email that was sent")));
    const first = await session(dir, "deciding", [
      ["send_email", EMAIL_A],
      ["send_email", EMAIL_B],
    ]);
    expect((await cli(dir, ["deny", heldId(first[0]), "--reason", "not this one"])).code).toBe(0);
    expect((await cli(dir, ["approve", heldId(first[1])])).code).toBe(0);

    await session(dir, "busy-agent", [
      ["get_customer", { id: "c_001" }],
      ["update_customer", { id: "c_001", plan: "free" }],
      ["update_customer", { id: "c_001", plan: "platinum" }],
      ["update_customer", { id: "c_999", plan: "free" }],
      ["send_email", EMAIL_B],
      ["restore_customer", { id: "c_009" }],
      ["create_customer", { name: "Bogus Customer", email: "bogus@example.com" }],
    ]);
    const [busy, deciding] = await json(dir, ["list"]);

    const shown = await json(dir, ["show", busy.id.slice(0, 6)]);
    expect(Object.keys(shown)).toEqual(["run", "actions"]);
    expect(shown.run).toEqual({ id: busy.id, label: "busy-agent", startedAt: busy.startedAt, endedAt: busy.endedAt, status: "complete" });
    const actions = shown.actions;
    expect(actions.map((a: any) => [a.seq, a.tool, a.class, a.status])).toEqual([
      [1, "get_customer", "readonly", "applied"],
      [2, "update_customer", "reversible", "applied"],
      [3, "update_customer", "reversible", "failed"],
      [4, "update_customer", "reversible", "gated"],
      [5, "send_email", "irreversible", "applied"],
      [6, "restore_customer", "irreversible", "gated"],
      [7, "create_customer", "compensable", "applied"],
    ]);
    for (const action of actions) {
      for (const key of Object.keys(action)) expect([...SPEC_ACTION_KEYS, ...EXTRA_ACTION_KEYS]).toContain(key);
      expect(keysInSpecOrder(action)).toEqual(SPEC_ACTION_KEYS.filter((k) => k in action));
      expect(action.runId).toBe(busy.id);
      expect(action.server).toBe("crm");
      expect(action.ts).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
    const [read, update, failed, absent, sent, unknown, created] = actions;
    expect(Object.keys(read)).toEqual(["id", "runId", "seq", "server", "tool", "args", "class", "status", "result", "ts"]);
    expect(read.result.structuredContent).toEqual(ADA);
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
    expect(update).toMatchObject({ snapshot: ADA, postState: { ...ADA, plan: "free" }, inverse: { server: "crm", tool: "update_customer", args: ADA } });
    expect(update.verify).toEqual({ server: "crm", tool: "get_customer", args: { id: "c_001" } });
    expect(failed).toMatchObject({
      snapshot: { ...ADA, plan: "free" },
      result: { isError: true },
      error: `unknown plan "platinum" (allowed: free, pro, enterprise)`,
    });
    expect(failed.inverse).toBeUndefined();
    expect(failed.postState).toBeUndefined();
    expect(Object.keys(absent)).toEqual(["id", "runId", "seq", "server", "tool", "args", "class", "status", "error", "ts"]);
    expect(absent.error).toBe("crm.update_customer is reversible, but its pre-read crm.get_customer found nothing to restore (no customer with id c_999)");
    expect(Object.keys(sent)).toEqual(["id", "runId", "seq", "server", "tool", "args", "class", "status", "result", "approvedBy", "approvedAt", "ts"]);
    expect(sent.approvedBy).toBe(ACCOUNT);
    expect(unknown).toMatchObject({ args: { id: "c_009" }, error: "no rule in the manifest covers crm.restore_customer, so it is treated as irreversible" });
    expect(Object.keys(created)).toEqual(["id", "runId", "seq", "server", "tool", "args", "class", "status", "result", "inverse", "ts"]);
    expect(created.inverse).toEqual({ server: "crm", tool: "delete_customer", args: { id: "c_004" } });

    const decided = (await json(dir, ["show", deciding.id])).actions;
    expect(decided.map((a: any) => [a.tool, a.status, a.approvedBy])).toEqual([
      ["send_email", "denied", ACCOUNT],
      ["send_email", "used", ACCOUNT],
    ]);
    expect(decided[0].reason).toBe("not this one");
    expect(decided[1].approvedAt).toBe(sent.approvedAt);

    // The same, as text.
    const text = (await cli(dir, ["show", busy.id])).stdout;
    const journalPath = join(dir, "synartesis.db");
    const id8 = (a: any) => a.id.replace(/-/g, "").slice(0, 8);
    expect(text.split("\n")[0]).toMatch(new RegExp(`^Run ${busy.id}  busy-agent  started \\S+ \\S+, ended \\S+ \\S+  complete  7 actions$`));
    expect(text).toContain(`  #1  ○ readonly      applied       crm.get_customer {"id":"c_001"}\n       id       ${id8(read)}  at `);
    expect(text).toContain(`  #2  ↺ reversible    applied       crm.update_customer {"id":"c_001","plan":"free"}`);
    expect(text).toContain(
      `       undo     crm.update_customer {"id":"c_001","name":"Ada Lovelace","email":"ada@example.com","plan":"pro","notes":"founding customer"}\n       verify   crm.get_customer {"id":"c_001"}\n`,
    );
    expect(text).toContain(`  #3  ↺ reversible    failed        crm.update_customer {"id":"c_001","plan":"platinum"}`);
    expect(text).toContain(`       error    unknown plan "platinum" (allowed: free, pro, enterprise)\n`);
    expect(text).toContain(`  #4  ↺ reversible    gated         crm.update_customer {"id":"c_999","plan":"free"}`);
    expect(text).toMatch(new RegExp(`       approve  \\S+ approve ${id8(absent)} --journal ${journalPath}\\n`));
    expect(text).toContain(`  #5  ⚠ irreversible  applied       crm.send_email ${JSON.stringify(EMAIL_B)}`);
    expect(text).toMatch(
      new RegExp(
        `       approved by ${ACCOUNT} at \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d\\n       undo     crm\\.send_email is irreversible and ran \\(approved by ${ACCOUNT}\\); left in place\\n`,
      ),
    );
    expect(text).toContain(`  #6  ⚠ irreversible  gated         crm.restore_customer {"id":"c_009"}`);
    expect(text).toContain(`       held     no rule in the manifest covers crm.restore_customer, so it is treated as irreversible\n`);
    expect(text).toContain(`  #7  ↩ compensable   applied       crm.create_customer {"name":"Bogus Customer","email":"bogus@example.com"}`);
    expect(text).toContain(`       undo     crm.delete_customer {"id":"c_004"}\n`);
    // A read has nothing to undo.
    const readBlock = text.slice(text.indexOf("  #1 "), text.indexOf("  #2 "));
    expect(readBlock).not.toContain("undo");

    const decidedText = (await cli(dir, ["show", deciding.id])).stdout;
    expect(decidedText).toContain(`  #1  ⚠ irreversible  denied        crm.send_email ${JSON.stringify(EMAIL_A)}`);
    expect(decidedText).toMatch(new RegExp(`       denied   by ${ACCOUNT} at \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d: not this one\\n`));
    expect(decidedText).toContain(`  #2  ⚠ irreversible  used          crm.send_email ${JSON.stringify(EMAIL_B)}`);
    expect(decidedText).toMatch(new RegExp(`       used     by action ${id8(sent)} at `));
  });
});
