// Gates (R-GATE, R-CLASS-1/2): which calls the manifest gates, and passGate
// against a real journal in a temp file with a clock the test controls:
// approvals cover one identical retry within an hour, denials are told once.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { callKey } from "../../src/canonical.ts";
import { openJournal, type Journal } from "../../src/journal/journal.ts";
import { createMatcher } from "../../src/manifest/match.ts";
import type { Rule } from "../../src/manifest/types.ts";
import { shortId } from "../../src/journal/types.ts";
import { APPROVAL_TTL_MS, gateVerdict, passGate, type GateContext, type HeldCall } from "../../src/proxy/policy/gate.ts";
import { tempDir } from "../helpers.ts";

const rule = (match: string, cls: Rule["class"], gate: Rule["gate"]): Rule => ({ match, class: cls, gate, line: 1 });

describe("gateVerdict", () => {
  const matcher = createMatcher({
    rules: [
      rule("crm.get_customer", "readonly", "never"),
      rule("crm.update_customer", "reversible", "never"),
      rule("crm.create_customer", "compensable", "always"),
      rule("crm.send_*", "irreversible", "always"),
      rule("crm.send_newsletter", "irreversible", "never"),
      rule("db.query", "reversible", "on_write"),
    ],
  });
  const verdict = (server: string, tool: string, args: unknown = {}) => gateVerdict(matcher.classify(server, tool), server, tool, args);

  test("gate: never lets a call through, whatever its class", async () => {
    expect(verdict("crm", "get_customer")).toEqual({ gated: false });
    expect(verdict("crm", "update_customer")).toEqual({ gated: false });
    expect(verdict("crm", "send_newsletter")).toEqual({ gated: false });
  });

  test("gate: always on an irreversible tool says it cannot be undone", async () => {
    expect(verdict("crm", "send_email")).toEqual({ gated: true, reason: "crm.send_email is irreversible: once it runs it cannot be undone" });
  });

  test("gate: always on another class says the manifest gates it", async () => {
    expect(verdict("crm", "create_customer")).toEqual({ gated: true, reason: "the manifest gates every call of crm.create_customer (gate: always)" });
  });

  test("a tool no rule matches is irreversible and always gated (R-CLASS-1)", async () => {
    const classification = matcher.classify("crm", "drop_everything");
    expect(classification).toEqual({ rule: undefined, class: "irreversible", gate: "always" });
    expect(verdict("crm", "drop_everything")).toEqual({
      gated: true,
      reason: "no rule in the manifest covers crm.drop_everything, so it is treated as irreversible",
    });
    expect(verdict("other", "get_customer").gated).toBe(true);
  });

  test("gate: on_write lets one read-only statement through and holds anything else", async () => {
    expect(verdict("db", "query", { sql: "SELECT * FROM customers" })).toEqual({ gated: false, readOnlySql: true });
    const write = verdict("db", "query", { sql: "DELETE FROM customers" });
    expect(write.gated).toBe(true);
    expect(write.gated && write.reason).toStartWith("db.query is gated on writes: ");
    expect(verdict("db", "query", { sql: "SELECT 1; DELETE FROM customers" }).gated).toBe(true);
    // A harmless statement under one key does not vouch for a write under another.
    expect(verdict("db", "query", { query: "DELETE FROM customers", sql: "SELECT 1" })).toEqual({
      gated: true,
      reason: "db.query is gated on writes: DELETE modifies data",
    });
    expect(verdict("db", "query", { limit: 3 })).toEqual({
      gated: true,
      reason: "db.query is gated on writes and its arguments hold no SQL text to check",
    });
  });
});

describe("passGate", () => {
  const T0 = new Date("2026-03-01T12:00:00.000Z");
  const COMMAND = (id: string) => `synartesis approve ${id} --journal /abs/synartesis.db`;
  const REASON = "crm.send_email is irreversible: once it runs it cannot be undone";
  const EMAIL = { to: "ada@example.com", subject: "Your plan", body: "You are now on the free plan." };
  const SEND: HeldCall = { server: "crm", tool: "send_email", args: EMAIL, class: "irreversible" };

  let path: string;
  let journal: Journal;
  let clock: Date;
  let counter: number;
  const newId = () => `${String(++counter).padStart(8, "0")}-0000-4000-8000-000000000000`;

  function context(runId: string, db = journal): GateContext {
    return { journal: db, runId, now: () => clock, newId, approveCommand: COMMAND };
  }

  async function startRun(db = journal): Promise<string> {
    const id = newId();
    await db.startRun({ id, label: "agent", startedAt: clock.toISOString() });
    return id;
  }

  /** The action id a held text names (its short form). */
  function heldId(text: string): string {
    const match = /^Action id: ([0-9a-f]{8})\.$/m.exec(text);
    if (!match) throw new Error(`not a held text:\n${text}`);
    return match[1]!;
  }

  async function decide(shortId: string, status: "approved" | "denied", by: string, reason?: string) {
    const outcome = await journal.decide((await journal.findAction(shortId)).id, { status, by, at: clock.toISOString(), reason });
    expect("action" in outcome).toBe(true);
  }

  const later = (ms: number) => (clock = new Date(clock.getTime() + ms));

  beforeEach(async () => {
    path = join(tempDir("syn-gate-"), "synartesis.db");
    journal = await openJournal(path, { create: true });
    clock = T0;
    counter = 0;
  });
  afterEach(async () => await journal.close());

  test("a first call is held: the text gives the reason, the id, the command, and the way to retry", async () => {
    const run = await startRun();
    const outcome = await passGate(context(run), SEND, REASON);
    expect(outcome.proceed).toBe(false);
    const text = (outcome as { text: string }).text;
    const id = heldId(text);
    expect(text).toBe(
      [
        `HELD FOR APPROVAL — Synartesis did not run this call. Reason: ${REASON}.`,
        `Action id: ${id}.`,
        `A person must approve it by running this command in a shell:`,
        `  synartesis approve ${id} --journal /abs/synartesis.db`,
        `Relay that command to the person. Once they have approved it, make exactly the same call again (same tool, same arguments); it will then run once.`,
        `Do not try to reach the same result with other tools while it is held.`,
      ].join("\n"),
    );
    const [held] = await journal.waiting();
    expect(held).toMatchObject({
      runId: run,
      seq: 1,
      server: "crm",
      tool: "send_email",
      args: EMAIL,
      argsKey: callKey(EMAIL),
      class: "irreversible",
      status: "gated",
      heldReason: REASON,
      ts: T0.toISOString(),
    });
    expect(shortId(held!.id)).toBe(id);
  });

  test("a retry before anyone answered, in the same run, does not raise a second request", async () => {
    const run = await startRun();
    const first = (await passGate(context(run), SEND, REASON)) as { text: string };
    later(5_000);
    const second = (await passGate(context(run), { ...SEND, args: { body: EMAIL.body, subject: EMAIL.subject, to: EMAIL.to } }, REASON)) as { text: string };
    expect(heldId(second.text)).toBe(heldId(first.text));
    expect(await journal.waiting()).toHaveLength(1);
    expect(await journal.actionsOfRun(run)).toHaveLength(1);
  });

  test("a retry from a restarted client (another run) reuses the open request: approving it lets the call run once", async () => {
    const first = (await passGate(context(await startRun()), SEND, REASON)) as { text: string };
    const second = (await passGate(context(await startRun()), SEND, REASON)) as { text: string };
    expect(heldId(second.text)).toBe(heldId(first.text));
    expect(await journal.waiting()).toHaveLength(1);
    await decide(heldId(first.text), "approved", "alice");
    const run = await startRun();
    expect((await passGate(context(run), SEND, REASON)).proceed).toBe(true);
    expect((await passGate(context(run), SEND, REASON)).proceed).toBe(false);
  });

  test("an approval spent by a call that then never ran is given back for the next retry", async () => {
    const held = heldId(((await passGate(context(await startRun()), SEND, REASON)) as { text: string }).text);
    await decide(held, "approved", "alice");
    const run = await startRun();
    const first = (await passGate(context(run), SEND, REASON)) as Extract<Awaited<ReturnType<typeof passGate>>, { proceed: true }>;
    expect(first.proceed).toBe(true);
    await journal.returnApproval(first.approval!.id, first.actionId); // e.g. the server could not be started
    expect((await passGate(context(run), SEND, REASON)).proceed).toBe(true);
    expect((await passGate(context(run), SEND, REASON)).proceed).toBe(false);
  });

  test("an approval covers one retry of the same call, key order irrelevant, in another run", async () => {
    const held = heldId(((await passGate(context(await startRun()), SEND, REASON)) as { text: string }).text);
    later(60_000);
    await decide(held, "approved", "alice");

    later(60_000);
    const retryRun = await startRun(); // the agent's client was restarted: a new session
    const reordered = { body: EMAIL.body, to: EMAIL.to, subject: EMAIL.subject };
    const outcome = await passGate(context(retryRun), { ...SEND, args: reordered }, REASON);
    expect(outcome.proceed).toBe(true);
    const { approval, actionId } = outcome as Extract<typeof outcome, { proceed: true }>;
    expect(shortId(approval!.id)).toBe(held);
    expect(approval).toMatchObject({ status: "approved", approvedBy: "alice", approvedAt: new Date(T0.getTime() + 60_000).toISOString() });
    // The approval is spent by the action that will run.
    expect(await journal.findAction(held)).toMatchObject({ status: "approved", spentBy: actionId, spentAt: clock.toISOString() });
    expect(await journal.waiting()).toHaveLength(0);

    // Only one retry: the same call once more is held again, as a new request.
    const again = await passGate(context(retryRun), SEND, REASON);
    expect(again.proceed).toBe(false);
    const newId = heldId((again as { text: string }).text);
    expect(newId).not.toBe(held);
    expect((await journal.waiting()).map((a) => shortId(a.id))).toEqual([newId]);
  });

  test("different arguments, or another tool with the same arguments, are not covered", async () => {
    const run = await startRun();
    const held = heldId(((await passGate(context(run), SEND, REASON)) as { text: string }).text);
    await decide(held, "approved", "alice");

    const other = await passGate(context(run), { ...SEND, args: { ...EMAIL, to: "grace@example.com" } }, REASON);
    expect(other.proceed).toBe(false);
    const otherTool = await passGate(context(run), { ...SEND, tool: "send_sms" }, REASON);
    expect(otherTool.proceed).toBe(false);
    const otherServer = await passGate(context(run), { ...SEND, server: "mail" }, REASON);
    expect(otherServer.proceed).toBe(false);
    expect((await journal.findAction(held)).spentBy).toBeUndefined();
    expect(await journal.waiting()).toHaveLength(3);

    // The approved call itself still goes through.
    expect((await passGate(context(run), SEND, REASON)).proceed).toBe(true);
  });

  test("an approval expires after one hour (the clock moves, nobody sleeps)", async () => {
    const run = await startRun();
    const held = heldId(((await passGate(context(run), SEND, REASON)) as { text: string }).text);
    await decide(held, "approved", "alice");
    later(APPROVAL_TTL_MS + 1_000);

    const outcome = await passGate(context(run), SEND, REASON);
    expect(outcome.proceed).toBe(false);
    expect(heldId((outcome as { text: string }).text)).not.toBe(held);
    expect((await journal.findAction(held)).spentBy).toBeUndefined();
  });

  test("an approval just inside the hour still counts", async () => {
    const run = await startRun();
    const held = heldId(((await passGate(context(run), SEND, REASON)) as { text: string }).text);
    await decide(held, "approved", "alice");
    later(APPROVAL_TTL_MS - 1_000);
    expect((await passGate(context(run), SEND, REASON)).proceed).toBe(true);
  });

  test("a deny: the next identical call is told who denied it and why; the retry after that raises a new request", async () => {
    const run = await startRun();
    const held = heldId(((await passGate(context(run), SEND, REASON)) as { text: string }).text);
    later(30_000);
    const decidedAt = clock.toISOString();
    await decide(held, "denied", "bob", "we do not email customers about plan changes");

    later(30_000);
    const told = await passGate(context(run), SEND, REASON);
    expect(told.proceed).toBe(false);
    expect((told as { text: string }).text).toBe(
      [
        `DENIED — Synartesis did not run this call: bob denied it at ${decidedAt} with the reason: we do not email customers about plan changes.`,
        `Do not route around this decision with other tools. Ask the person how to proceed; calling it again raises a new request for approval.`,
      ].join("\n"),
    );
    expect(await journal.findAction(held)).toMatchObject({ status: "denied", toldRun: run });
    expect(await journal.waiting()).toHaveLength(0);

    const retry = await passGate(context(run), SEND, REASON);
    expect(retry.proceed).toBe(false);
    const fresh = heldId((retry as { text: string }).text);
    expect(fresh).not.toBe(held);
    expect((await journal.waiting()).map((a) => shortId(a.id))).toEqual([fresh]);
  });

  test("a deny without a reason says so", async () => {
    const run = await startRun();
    const held = heldId(((await passGate(context(run), SEND, REASON)) as { text: string }).text);
    await decide(held, "denied", "bob");
    const told = (await passGate(context(run), SEND, REASON)) as { text: string };
    expect(told.text.split("\n")[0]).toBe(`DENIED — Synartesis did not run this call: bob denied it at ${T0.toISOString()} (no reason given).`);
  });

  test("two proxies on one journal: one approval lets exactly one of them through", async () => {
    const other = await openJournal(path, { create: false });
    try {
      const runA = await startRun();
      const runB = await startRun(other);
      const held = heldId(((await passGate(context(runA), SEND, REASON)) as { text: string }).text);
      await decide(held, "approved", "alice");
      const a = await passGate(context(runA), SEND, REASON);
      const b = await passGate(context(runB, other), SEND, REASON);
      expect([a.proceed, b.proceed]).toEqual([true, false]);
    } finally {
      await other.close();
    }
  });
});
