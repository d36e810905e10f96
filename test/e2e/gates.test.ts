// Gates through the built binary (R-GATE): an SDK client calls send_email
// through the proxy and is refused at once with the command that approves it;
// a person runs that command from another folder; the identical call in a new
// session goes through once. Denials, --all, prefixes, settled decisions,
// `gates` (text and JSON), --by and the default decider.
import { Database } from "bun:sqlite";
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { openJournal } from "../../src/journal/journal.ts";
import { BIN, connect, run, tempDir, ACCOUNT } from "../helpers.ts";
import { cli, crmFolder, json, journalRows, outbox, SEED, state, TOY_MANIFEST } from "../fixtures/counting-support.ts";
import { UiProcess } from "../fixtures/ui-kit.ts";

const EMAIL = { to: "ada@example.com", subject: "Your plan changed", body: "You are now on the free plan." };
const OTHER = { to: "grace@example.com", subject: "Your plan changed", body: "You are now on the free plan." };
const REASON = "crm.send_email is irreversible: once it runs it cannot be undone";

// The preload's default timeout reaches only the first file bun runs; tests sharing the machine need the room.
setDefaultTimeout(60_000);

// Closed at the end of the file: the tests run concurrently, so one test's cleanup must not close another's clients.
const open: Client[] = [];
afterAll(async () => {
  for (const client of open.splice(0)) await client.close();
});

async function agent(dir: string, name = "test-agent"): Promise<Client> {
  const { client } = await connect(BIN, ["proxy"], { cwd: dir, name });
  open.push(client);
  return client;
}

async function close(client: Client): Promise<void> {
  open.splice(open.indexOf(client), 1);
  await client.close();
}

function send(client: Client, args: Record<string, unknown>): Promise<any> {
  return client.callTool({ name: "send_email", arguments: args });
}

/** A held call's action id and the exact command it tells the agent to relay. */
function held(result: any, dir: string): { id: string; command: string } {
  expect(result.isError).toBe(true);
  expect(result.content).toHaveLength(1);
  const text: string = result.content[0].text;
  const lines = text.split("\n");
  expect(lines[0]).toBe(`HELD FOR APPROVAL — Synartesis did not run this call. Reason: ${REASON}.`);
  const id = /^Action id: ([0-9a-f]{8})\.$/.exec(lines[1]!)![1]!;
  expect(lines[2]).toBe("A person must approve it by running this command in a shell:");
  const command = lines[3]!.trim();
  // An absolute journal path: the command works pasted into any folder.
  expect(command).toMatch(new RegExp(`^\\S+ approve ${id} --journal ${join(dir, "synartesis.db").replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`));
  expect(lines[4]).toContain("make exactly the same call again (same tool, same arguments); it will then run once.");
  expect(lines[5]).toBe("Do not try to reach the same result with other tools while it is held.");
  return { id, command };
}

/** Run a command line exactly as a person pastes it, from `cwd`. */
function shell(command: string, cwd: string, env: Record<string, string | undefined> = {}) {
  return run(["-c", command], { bin: "bash", cwd, env });
}

const decider = (name: string) => ({ USER: name, LOGNAME: undefined });

describe.concurrent("a held call, approved from another folder", () => {
  test("refused at once → approved by pasting the command → runs once in a new session → held again", async () => {
    const dir = crmFolder();
    const first = await agent(dir, "agent-one");
    const { id, command } = held(await send(first, EMAIL), dir);
    // A retry before anyone answered does not raise a second request.
    expect(held(await send(first, { body: EMAIL.body, to: EMAIL.to, subject: EMAIL.subject }), dir).id).toBe(id);
    const waiting = await json(dir, ["gates"]);
    expect(waiting).toHaveLength(1);
    expect(Object.keys(waiting[0])).toEqual(["id", "runId", "seq", "server", "tool", "args", "class", "status", "error", "ts"]);
    expect(waiting[0]).toMatchObject({ seq: 1, server: "crm", tool: "send_email", args: EMAIL, class: "irreversible", status: "gated", error: REASON });
    await close(first);

    // The person pastes the command in a shell somewhere else entirely.
    const elsewhere = tempDir("syn-elsewhere-");
    const approved = await shell(command, elsewhere, decider("alice"));
    expect(approved.code).toBe(0);
    expect(approved.stderr).toBe("");
    expect(approved.stdout.trim()).toBe(
      `Approved ${id} crm.send_email ${JSON.stringify(EMAIL)} (by ${ACCOUNT}). It runs once when the agent makes the same call again, within the next hour.`,
    );
    expect((await cli(dir, ["gates"])).stdout.trim()).toBe("Nothing is waiting for approval.");
    expect(outbox(dir)).toEqual([]);

    // The agent's client was restarted: a new proxy process, a new run; the identical call goes through.
    const second = await agent(dir, "agent-two");
    const sent = await send(second, EMAIL);
    expect(sent.isError).toBeUndefined();
    expect(sent.structuredContent).toEqual({ ...EMAIL, sentAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });
    expect(state(dir).outbox).toEqual([sent.structuredContent]);
    expect(state(dir).customers).toEqual(SEED);

    const [newest, oldest] = await json(dir, ["list"]);
    expect(newest.label).toBe("agent-two");
    expect(oldest.label).toBe("agent-one");
    const approval = (await json(dir, ["show", oldest.id])).actions[0];
    expect(approval).toMatchObject({ tool: "send_email", status: "used", approvedBy: ACCOUNT });
    const ran = (await json(dir, ["show", newest.id])).actions[0];
    expect(ran).toMatchObject({ seq: 1, tool: "send_email", class: "irreversible", status: "applied", approvedBy: ACCOUNT, approvedAt: approval.approvedAt });
    expect(ran.result.structuredContent).toEqual(sent.structuredContent);
    // The journal records who approved it, and when, on the row of the call that ran.
    expect(journalRows(dir, "SELECT approved_by, approved_at FROM actions WHERE id = ?", ran.id)).toEqual([
      { approved_by: ACCOUNT, approved_at: approval.approvedAt },
    ]);
    const show = await cli(dir, ["show", oldest.id]);
    expect(show.stdout).toMatch(new RegExp(`used +crm\\.send_email`));
    expect(show.stdout).toContain(`used     by action ${ran.id.replace(/-/g, "").slice(0, 8)} at `);

    // One approval, one call: the same call once more is held again, as a new request.
    const again = held(await send(second, EMAIL), dir);
    expect(again.id).not.toBe(id);
    expect(state(dir).outbox).toHaveLength(1);
    const settled = await cli(dir, ["approve", id]);
    expect(settled.code).toBe(1);
    expect(settled.stderr.trim()).toBe(`synartesis: ${id} is no longer awaiting approval (it is used)`);
  });

  test("the command quotes a journal path with spaces and quotes, so pasting it still works", async () => {
    const dir = join(tempDir("syn-quoted-"), "the agent's project");
    mkdirSync(dir);
    writeFileSync(join(dir, "synartesis.yaml"), TOY_MANIFEST);
    const client = await agent(dir);
    const result = await send(client, EMAIL);
    const command = result.content[0].text.split("\n")[3].trim();
    expect(command).toEndWith(` --journal '${dir.replace(/'/g, `'\\''`)}/synartesis.db'`);
    const approved = await shell(command, tempDir("syn-elsewhere-"), decider("alice"));
    expect(approved.code).toBe(0);
    expect(approved.stdout).toStartWith("Approved ");
    expect(await json(dir, ["gates"])).toEqual([]);
    expect((await send(client, EMAIL)).isError).toBeUndefined();
    expect(outbox(dir)).toHaveLength(1);
  });

  test("an approval covers the same arguments in any key order, and nothing else", async () => {
    const dir = crmFolder();
    const client = await agent(dir);
    const a = held(await send(client, EMAIL), dir);
    const b = held(await send(client, OTHER), dir);
    expect(b.id).not.toBe(a.id);
    expect((await cli(dir, ["approve", a.id])).code).toBe(0);

    // Same tool, different arguments: still held (the request already raised in this run).
    expect(held(await send(client, OTHER), dir).id).toBe(b.id);
    // Same arguments, another key order: covered.
    const sent = await send(client, { subject: EMAIL.subject, body: EMAIL.body, to: EMAIL.to });
    expect(sent.isError).toBeUndefined();
    expect(state(dir).outbox.map((m: any) => m.to)).toEqual(["ada@example.com"]);
    expect((await json(dir, ["gates"])).map((g: any) => g.args)).toEqual([OTHER]);
  });

  test("an approval is bound to the rule it was given under: once the policy changed, the retry is held again and nothing is sent", async () => {
    const dir = crmFolder();
    const first = await agent(dir);
    const { id } = held(await send(first, EMAIL), dir);
    expect((await cli(dir, ["approve", id])).code).toBe(0);
    expect(journalRows(dir, "SELECT decided_rule FROM actions WHERE status = 'approved'")[0].decided_rule).toMatch(/^[0-9a-f]{64}$/);
    await close(first);
    // The person who approved it, and the rule they approved under, are not what the policy says now.
    writeFileSync(join(dir, "synartesis.yaml"), TOY_MANIFEST.replace("class: irreversible", `class: irreversible\n    approvers: [${ACCOUNT}]`));
    const second = await agent(dir);
    const again = held(await send(second, EMAIL), dir);
    expect(again.id).not.toBe(id);
    expect(outbox(dir)).toEqual([]);
    // Approved again under the rule as it is now, the retry runs.
    expect((await cli(dir, ["approve", again.id])).code).toBe(0);
    expect((await send(second, EMAIL)).isError).toBeFalsy();
    expect(outbox(dir)).toHaveLength(1);
  });

  test("an approval older than one hour does not let the call through", async () => {
    const dir = crmFolder();
    const client = await agent(dir);
    const { id } = held(await send(client, EMAIL), dir);
    expect((await cli(dir, ["approve", id])).code).toBe(0);
    // Age the decision in the journal instead of waiting an hour.
    const db = new Database(join(dir, "synartesis.db"));
    db.query("UPDATE actions SET approved_at = ? WHERE status = 'approved'").run(new Date(Date.now() - 61 * 60 * 1000).toISOString());
    db.close();
    const again = held(await send(client, EMAIL), dir);
    expect(again.id).not.toBe(id);
    expect(outbox(dir)).toEqual([]);
  });
});

describe.concurrent("deny", () => {
  test("the agent's retry is told who denied it and why; the retry after that raises a new request", async () => {
    const dir = crmFolder();
    const client = await agent(dir);
    const { id } = held(await send(client, EMAIL), dir);
    const denied = await cli(dir, ["deny", id, "--reason", "not on a Sunday"]);
    expect(denied.code).toBe(0);
    expect(denied.stdout.trim()).toBe(
      `Denied ${id} crm.send_email ${JSON.stringify(EMAIL)} (by ${ACCOUNT}: not on a Sunday). The agent is told on its next try.`,
    );
    const decidedAt = journalRows(dir, "SELECT approved_at FROM actions WHERE status = 'denied'")[0].approved_at;

    const told = await send(client, EMAIL);
    expect(told.isError).toBe(true);
    expect(told.content[0].text).toBe(
      [
        `DENIED — Synartesis did not run this call: ${ACCOUNT} denied it at ${decidedAt} with the reason: not on a Sunday.`,
        `Do not route around this decision with other tools. Ask the person how to proceed; calling it again raises a new request for approval.`,
      ].join("\n"),
    );
    const retry = held(await send(client, EMAIL), dir);
    expect(retry.id).not.toBe(id);
    expect((await json(dir, ["gates"])).map((g: any) => g.id.replace(/-/g, "").slice(0, 8))).toEqual([retry.id]);
    expect(outbox(dir)).toEqual([]);

    const show = await json(dir, ["show"]);
    expect(show.actions.map((a: any) => a.status)).toEqual(["denied", "gated"]);
    expect(show.actions[0]).toMatchObject({ approvedBy: ACCOUNT, approvedAt: decidedAt });

    for (const verb of ["deny", "approve"]) {
      const twice = await cli(dir, [verb, id]);
      expect(twice.code).toBe(1);
      expect(twice.stdout).toBe("");
      expect(twice.stderr.trim()).toBe(`synartesis: ${id} is no longer awaiting approval (it is denied)`);
    }
  });
});

describe.concurrent("deciding", () => {
  test("--all, prefixes, no id, --by, and settled decisions", async () => {
    const dir = crmFolder();
    const client = await agent(dir);
    const third = { ...EMAIL, to: "alan@example.com" };
    const ids = [held(await send(client, EMAIL), dir).id, held(await send(client, OTHER), dir).id, held(await send(client, third), dir).id];

    const gates = await cli(dir, ["gates"]);
    expect(gates.code).toBe(0);
    const journalPath = join(dir, "synartesis.db");
    for (const [i, args] of [EMAIL, OTHER, third].entries()) {
      expect(gates.stdout).toContain(`${ids[i]}  ⚠ irreversible  crm.send_email ${JSON.stringify(args)}`);
      expect(gates.stdout).toMatch(new RegExp(`approve  \\S+ approve ${ids[i]} --journal ${journalPath}\\n`));
      expect(gates.stdout).toMatch(new RegExp(`deny     \\S+ deny ${ids[i]} --journal ${journalPath} --reason "…"\\n`));
    }
    expect(gates.stdout.match(/why      crm\.send_email is irreversible: once it runs it cannot be undone/g)).toHaveLength(3);
    expect((await json(dir, ["gates"])).map((g: any) => g.seq)).toEqual([1, 2, 3]);

    const ambiguous = await cli(dir, ["approve"]);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toContain("synartesis: 3 calls are waiting; name one (or use --all)");
    for (const id of ids) expect(ambiguous.stderr).toContain(`  ${id}  crm.send_email `);
    const both = await cli(dir, ["approve", ids[0]!, "--all"]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("give an action id or --all, not both");
    const unknown = await cli(dir, ["approve", "ffffffff"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain(`synartesis: no action id starts with "ffffffff"`);

    // A short prefix is enough.
    const one = await cli(dir, ["approve", ids[0]!.slice(0, 5)]);
    expect(one.code).toBe(0);
    expect(one.stdout).toStartWith(`Approved ${ids[0]} crm.send_email`);

    const rest = await cli(dir, ["deny", "--all", "--reason", "batch"]);
    expect(rest.code).toBe(0);
    expect(rest.stdout.trim().split("\n")).toEqual([
      `Denied ${ids[1]} crm.send_email ${JSON.stringify(OTHER)} (by ${ACCOUNT}: batch). The agent is told on its next try.`,
      `Denied ${ids[2]} crm.send_email ${JSON.stringify(third)} (by ${ACCOUNT}: batch). The agent is told on its next try.`,
    ]);
    expect((await json(dir, ["show"])).actions.map((a: any) => `${a.status} ${a.approvedBy}`)).toEqual([
      `approved ${ACCOUNT}`,
      `denied ${ACCOUNT}`,
      `denied ${ACCOUNT}`,
    ]);

    for (const verb of ["approve", "deny"]) {
      const none = await cli(dir, [verb, "--all"]);
      expect(none.code).toBe(0);
      expect(none.stdout.trim()).toBe("Nothing is waiting for approval.");
      const noId = await cli(dir, [verb]);
      expect(noId.code).toBe(1);
      expect(noId.stderr.trim()).toBe("synartesis: nothing is waiting for approval");
    }
    const again = await cli(dir, ["approve", ids[0]!]);
    expect(again.code).toBe(1);
    expect(again.stderr.trim()).toBe(`synartesis: ${ids[0]} is no longer awaiting approval (it is approved)`);
    expect((await cli(dir, ["gates"])).stdout.trim()).toBe("Nothing is waiting for approval.");
    expect(await json(dir, ["gates"])).toEqual([]);
  });

  test("the only waiting call needs no id; the decider is the account running the command, whatever $USER, $LOGNAME or --by say", async () => {
    const dir = crmFolder();
    const client = await agent(dir);
    const first = held(await send(client, EMAIL), dir);
    const named = await cli(dir, ["approve", "--by", "frank"]);
    expect(named.code).toBe(2);
    expect(named.stderr).toContain("unknown flag --by");
    const byUser = await cli(dir, ["approve"], { USER: "frank", LOGNAME: "not-this-one" });
    expect(byUser.code).toBe(0);
    expect(byUser.stdout).toContain(`Approved ${first.id} crm.send_email`);
    expect(byUser.stdout).toContain(`(by ${ACCOUNT})`);

    const second = held(await send(client, OTHER), dir);
    const byLogname = await cli(dir, ["deny", second.id], { USER: undefined, LOGNAME: "grace" });
    expect(byLogname.code).toBe(0);
    expect(byLogname.stdout).toContain(`(by ${ACCOUNT})`);
    expect(journalRows(dir, "SELECT status, approved_by FROM actions ORDER BY seq")).toEqual([
      { status: "approved", approved_by: ACCOUNT },
      { status: "denied", approved_by: ACCOUNT },
    ]);
  });

  test("approvers: a decision by an account the rule does not name is refused and said; one in its group is recorded", async () => {
    const rule = `  - match: "crm.send_*"\n    class: irreversible\n    gate: always\n`;
    expect(TOY_MANIFEST).toContain(rule);
    const policy = (approvers: string) =>
      `${TOY_MANIFEST.replace(rule, `${rule}    approvers: ${approvers}\n`)}groups:\n  ops: [${JSON.stringify(ACCOUNT)}, dana]\n`;
    const dir = crmFolder(policy(`["erin", "group:nobody-here"]`));
    const check = await cli(dir, ["check"]);
    expect(check.code).toBe(2);
    expect(check.stderr).toContain('approver "group:nobody-here" names a group the manifest\'s groups: does not define (defined: ops)');

    writeFileSync(join(dir, "synartesis.yaml"), policy(`[erin]`));
    const client = await agent(dir);
    const first = held(await send(client, EMAIL), dir);
    const refused = await cli(dir, ["approve", first.id]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`refused: #1 crm.send_email (${first.id}) is not approved: ${ACCOUNT} may not decide it: its rule's approvers are erin`);
    expect(await cli(dir, ["deny", first.id])).toMatchObject({ code: 1 });
    expect(journalRows(dir, "SELECT status, approved_by FROM actions")).toEqual([{ status: "gated", approved_by: null }]);

    // The same on the page, whose decisions are its own account's.
    await using page = await UiProcess.start(dir);
    const auth = await page.signIn();
    const gate = (await (await page.request("/api/gates", { auth })).json()).view.gates[0];
    const denied = await page.request(`/api/actions/${gate.id}/approve`, { auth, method: "POST", body: { by: "erin" } });
    expect(denied.status).toBe(403);
    expect((await denied.json()).error).toBe(`Not approved: ${ACCOUNT} may not decide it: its rule's approvers are erin.`);

    writeFileSync(join(dir, "synartesis.yaml"), policy(`[erin, "group:ops"]`));
    const approved = await cli(dir, ["approve", first.id]);
    expect(approved.code).toBe(0);
    expect(approved.stdout).toContain(`(by ${ACCOUNT})`);
    expect(journalRows(dir, "SELECT status, approved_by FROM actions")).toEqual([{ status: "approved", approved_by: ACCOUNT }]);
  });

  test("an ambiguous action prefix exits 2 naming the matches", async () => {
    const dir = crmFolder();
    const journal = await openJournal(join(dir, "synartesis.db"), { create: true });
    try {
      const runId = "0f0f0f0f-0000-4000-8000-000000000000";
      await journal.startRun({ id: runId, label: "agent", startedAt: new Date().toISOString() });
      for (const [id, to] of [
        ["abcd1111-0000-4000-8000-000000000001", "a@example.com"],
        ["abcd2222-0000-4000-8000-000000000002", "b@example.com"],
      ] as const) {
        await journal.insertAction({
          id,
          runId,
          server: "crm",
          tool: "send_email",
          args: { to },
          argsKey: to,
          class: "irreversible",
          status: "gated",
          error: REASON,
          ts: new Date().toISOString(),
        });
      }
    } finally {
      await journal.close();
    }
    for (const verb of ["approve", "deny"]) {
      const result = await cli(dir, [verb, "abcd"]);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`synartesis: "abcd" matches 2 actions: abcd1111-000, abcd2222-000`);
      expect(result.stderr).toContain("Give more characters of the action id.");
    }
    expect((await cli(dir, ["approve", "abcd2"])).code).toBe(0);
    expect((await json(dir, ["gates"])).map((g: any) => g.id)).toEqual(["abcd1111-0000-4000-8000-000000000001"]);
  });
});
