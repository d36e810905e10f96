// The dry run is exact by construction (R-UNDO-5): every undo scenario the
// tests cover runs through both worlds from the same starting state — first
// the dry run (the judgement loop over the simulated world), then the real
// undo (the same loop over the live world: a real journal, claims, inverses
// sent) — and the dry run's plan must be the real undo's steps. Where only
// the inverse's own answer can tell (refused, unanswered, not restoring what
// was there), the plan said "revert" with that very call and the real undo
// parts from it exactly there. No child processes: the toy CRM's store sits
// behind undo's server seam (test/fixtures/undo-bench.ts).
import { describe, expect, test } from "bun:test";
import type { Step } from "../../src/undo/plan.ts";
import { ADA, ALAN, GRACE, SEED, TOY_MANIFEST } from "../fixtures/counting-support.ts";
import { Bench, NOW, toyManifest, type Faults } from "../fixtures/undo-bench.ts";
import type { UndoReport } from "../../src/undo/loop.ts";

const NOT_IDEMPOTENT = TOY_MANIFEST.replaceAll("    idempotent: true\n", "");
const BROKEN_INVERSE = TOY_MANIFEST.replace('name: "$snapshot.name"', 'name: "$snapshot.nme"');
const A_PERSON = { id: "c_001", notes: "a person's note" };

interface Scenario {
  name: string;
  /** The manifest the agent's calls were recorded with (default: the toy CRM's). */
  recordedWith?: string;
  setup(bench: Bench): Promise<void>;
  faults?: Faults;
  undo?: { fromSeq?: number; replan?: boolean; manifest?: string };
  /** The dry run's plan, and (unless `real` says otherwise) the real undo's steps. */
  plan: string[];
  /** Where the inverse's own answer made the real undo part from the plan. */
  real?: string[];
  after?(bench: Bench, real: UndoReport, dry: UndoReport): Promise<void> | void;
}

const crm = (bench: Bench): Record<string, unknown> => Object.fromEntries(bench.servers.store.list().map((c) => [c.id, c]));
const statusOf = async (bench: Bench, seq: number) => (await bench.actions()).find((a) => a.seq === seq)!.status;

const SCENARIOS: Scenario[] = [
  {
    name: "a record touched four times: each step puts back the state just before it",
    async setup(bench) {
      const changes: Array<Record<string, string>> = [{ plan: "free" }, { notes: "downgraded" }, { name: "A. Lovelace" }, { email: "ada@wrong.example" }];
      for (const args of changes) {
        await bench.act("update_customer", { id: "c_001", ...args });
      }
    },
    plan: ["#4 revert", "#3 revert", "#2 revert", "#1 revert"],
    after: (bench, real) => {
      expect(crm(bench)).toEqual(SEED);
      expect(real.runStatus).toBe("rolled_back");
    },
  },
  {
    name: "drift: a person changed the record after the agent; nothing older is touched",
    async setup(bench) {
      await bench.act("update_customer", { id: "c_001", plan: "free" });
      await bench.act("delete_customer", { id: "c_003" });
      bench.servers.call("update_customer", A_PERSON);
    },
    plan: ["#2 revert", "#1 drift"],
    after: (bench, real) => {
      expect(crm(bench)).toEqual({ ...SEED, c_001: { ...ADA, plan: "free", notes: "a person's note" } });
      expect(real).toMatchObject({ runStatus: "partial", halted: { outcome: "drift", actual: { payload: { notes: "a person's note" } } } });
    },
  },
  {
    name: "a person's change between two agent changes: drift at the older one, judged against the simulated state",
    async setup(bench) {
      await bench.act("update_customer", { id: "c_001", plan: "free" });
      bench.servers.call("update_customer", A_PERSON);
      await bench.act("update_customer", { id: "c_001", name: "A. Lovelace" });
    },
    plan: ["#2 revert", "#1 drift"],
  },
  {
    name: "already reverted: a person put the record back by hand",
    async setup(bench) {
      await bench.act("update_customer", { id: "c_001", plan: "free" });
      await bench.act("update_customer", { id: "c_002", plan: "free" });
      bench.servers.call("restore_customer", GRACE);
    },
    plan: ["#2 already", "#1 revert"],
    after: (bench) => expect(crm(bench)).toEqual(SEED),
  },
  {
    name: "compensable without a pre-read: the record it created is deleted, unverified",
    async setup(bench) {
      await bench.act("create_customer", { name: "Bogus", email: "bogus@example.com" });
      await bench.act("update_customer", { id: "c_001", plan: "free" });
    },
    plan: ["#2 revert", "#1 revert"],
    after: (bench, real) => {
      expect(real.steps[1]).toMatchObject({ unverified: true, call: { tool: "delete_customer", args: { id: "c_004" } } });
      expect(crm(bench)).toEqual(SEED);
    },
  },
  {
    name: "a compensating inverse that does not give the record back: NOT RESTORED, after the plan's warning",
    async setup(bench) {
      await bench.act("update_customer", { id: "c_002", plan: "free" });
      await bench.act("restore_customer", { ...ADA, plan: "enterprise" });
    },
    plan: ["#2 revert", "#1 revert"],
    real: ["#2 unrestored"],
    after: async (bench, real, dry) => {
      expect(dry.steps[0]!.caution).toContain("undo reads it again afterwards and stops if it is not as it was");
      expect(real.halted).toMatchObject({
        why: "the inverse crm.delete_customer ran, but the state is not what it was before the call",
        expected: { payload: ADA },
        actual: { absent: true },
      });
      expect(await statusOf(bench, 2)).toBe("unrecoverable");
      expect(await statusOf(bench, 1)).toBe("applied");
    },
  },
  {
    name: "a compensating inverse whose read-back fails: NOT RESTORED, unread",
    async setup(bench) {
      await bench.act("update_customer", { id: "c_001", plan: "free" });
      await bench.act("restore_customer", { id: "c_009", name: "Nine", email: "nine@example.com", plan: "free", notes: "" });
    },
    faults: { readsFailAfterInverse: true },
    plan: ["#2 revert", "#1 revert"],
    real: ["#2 unrestored"],
    after: (_bench, real) => {
      expect(real.halted!.why).toBe(
        "the inverse crm.delete_customer ran, but reading the record afterwards failed (the server crm closed), so undo cannot tell whether it is as it was before",
      );
      expect(real.halted!.actual).toBeUndefined();
    },
  },
  {
    name: "an unknown outcome that left no trace: stepped over, and left pending",
    async setup(bench) {
      await bench.act("update_customer", { id: "c_001", plan: "free" });
      await bench.act("update_customer", { id: "c_002", plan: "free" }, { outcome: "unknown", landed: false });
    },
    plan: ["#2 skip", "#1 revert"],
    after: async (bench, real) => {
      const row = (await bench.actions())[1]!;
      expect(row).toMatchObject({ status: "pending", undoNote: real.steps[0]!.why });
      expect(real.runStatus).toBe("partial");
    },
  },
  {
    name: "an unknown outcome that left a trace: stop for a person to settle, before and now side by side",
    async setup(bench) {
      await bench.act("update_customer", { id: "c_001", plan: "free" });
      await bench.act("delete_customer", { id: "c_002" }, { outcome: "unknown", landed: true });
    },
    plan: ["#2 halt"],
    after: (_bench, real) => expect(real.halted).toMatchObject({ settle: "call", expected: { payload: GRACE }, actual: { absent: true } }),
  },
  {
    name: "an unknown outcome whose answer may still come: stop and wait for it",
    async setup(bench) {
      await bench.act("update_customer", { id: "c_001", plan: "free" }, { outcome: "unknown", landed: true, ts: new Date(NOW.getTime() - 1000).toISOString() });
    },
    plan: ["#1 halt"],
    after: (_bench, real) =>
      expect(real.halted!.why).toBe("the outcome of crm.update_customer is not known yet: it was made less than its server's timeout (60 s) ago"),
  },
  {
    name: "settled as applied: reverted without a drift check",
    async setup(bench) {
      const pending = await bench.act("update_customer", { id: "c_001", plan: "free" }, { outcome: "unknown", landed: true });
      await bench.settle(pending, true);
    },
    plan: ["#1 revert"],
    after: (bench, real) => {
      expect(real.steps[0]).toMatchObject({ unverified: true, why: expect.stringContaining("jo (") });
      expect(crm(bench)).toEqual(SEED);
    },
  },
  {
    name: "settled as not applied: stepped over",
    async setup(bench) {
      await bench.act("update_customer", { id: "c_001", plan: "free" });
      await bench.settle(await bench.act("delete_customer", { id: "c_002" }, { outcome: "unknown", landed: false }), false);
    },
    plan: ["#2 skip", "#1 revert"],
    after: (bench, real) => {
      expect(crm(bench)).toEqual(SEED);
      expect(real.runStatus).toBe("rolled_back");
    },
  },
  {
    name: "an irreversible call that ran is left in place; the rest is reverted",
    async setup(bench) {
      await bench.act("update_customer", { id: "c_001", plan: "free" });
      await bench.act("send_email", { to: "ada@example.com", subject: "Plan", body: "You are on free." }, { approvedBy: "alice" });
      await bench.act("create_customer", { name: "Bogus", email: "bogus@example.com" });
    },
    plan: ["#3 revert", "#2 left", "#1 revert"],
    after: async (bench, real) => {
      expect(crm(bench)).toEqual(SEED);
      expect(bench.servers.store.outbox()).toHaveLength(1);
      expect(await statusOf(bench, 2)).toBe("unrecoverable");
      expect(real.runStatus).toBe("partial");
    },
  },
  {
    name: "--to: only the calls from that seq on",
    async setup(bench) {
      for (const id of ["c_001", "c_002", "c_003"]) await bench.act("update_customer", { id, plan: "enterprise" });
    },
    undo: { fromSeq: 2 },
    plan: ["#3 revert", "#2 revert"],
    after: (bench) => expect(crm(bench)).toEqual({ c_001: { ...ADA, plan: "enterprise" }, c_002: GRACE, c_003: ALAN }),
  },
  {
    name: "an inverse that could not be built: stop, naming --replan",
    recordedWith: BROKEN_INVERSE,
    async setup(bench) {
      await bench.act("update_customer", { id: "c_001", plan: "free" });
    },
    plan: ["#1 halt"],
    after: (_bench, real) => expect(real.halted!.hint).toContain("--replan"),
  },
  {
    name: "--replan: the inverses rebuilt from the fixed manifest and the state captured",
    recordedWith: BROKEN_INVERSE,
    async setup(bench) {
      await bench.act("update_customer", { id: "c_001", plan: "free" });
      await bench.act("delete_customer", { id: "c_002" });
    },
    undo: { replan: true, manifest: TOY_MANIFEST },
    plan: ["#2 revert", "#1 revert"],
    after: (bench) => expect(crm(bench)).toEqual(SEED),
  },
  {
    name: "an interrupted undo's inverse that landed: already reverted, not sent again",
    async setup(bench) {
      await bench.act("update_customer", { id: "c_001", plan: "free" });
      await bench.interruptedUndo(await bench.act("update_customer", { id: "c_002", plan: "free" }), true);
    },
    plan: ["#2 already", "#1 revert"],
    after: (bench) => {
      expect(bench.servers.received.filter((r) => r.startsWith("invert"))).toEqual([`invert update_customer ${JSON.stringify(ADA)}`]);
      expect(crm(bench)).toEqual(SEED);
    },
  },
  {
    name: "an interrupted undo's inverse that did not land, idempotent: sent again with the same key",
    async setup(bench) {
      await bench.act("update_customer", { id: "c_001", plan: "free" });
      await bench.interruptedUndo(await bench.act("update_customer", { id: "c_002", plan: "free" }), false);
    },
    plan: ["#2 revert", "#1 revert"],
    after: (bench, real) => {
      expect(real.steps[0]).toMatchObject({ resent: true, why: "sent again with the same idempotency key (the rule is idempotent) and reverted" });
      expect(real.steps[0]!.unverified).toBeUndefined();
      expect(crm(bench)).toEqual(SEED);
    },
  },
  {
    name: "an interrupted undo's inverse with no read to check it, idempotent: sent again, unverified",
    async setup(bench) {
      await bench.interruptedUndo(await bench.act("create_customer", { name: "Bogus", email: "bogus@example.com" }), false);
    },
    plan: ["#1 revert"],
    after: (bench, real) => {
      expect(real.steps[0]).toMatchObject({ resent: true, unverified: true });
      expect(crm(bench)).toEqual(SEED);
    },
  },
  {
    name: "an interrupted undo's inverse, not idempotent: stop for a person to settle it; nothing is sent",
    recordedWith: NOT_IDEMPOTENT,
    async setup(bench) {
      await bench.act("update_customer", { id: "c_001", plan: "free" });
      await bench.interruptedUndo(await bench.act("update_customer", { id: "c_002", plan: "free" }), false);
    },
    plan: ["#2 halt"],
    after: async (bench, real) => {
      expect(real.halted).toMatchObject({ settle: "inverse", actual: { payload: { ...GRACE, plan: "free" } } });
      expect(bench.servers.received.filter((r) => r.startsWith("invert"))).toEqual([]);
      expect(await statusOf(bench, 2)).toBe("rolling_back");
    },
  },
  {
    name: "an inverse the server refuses: the real undo stops where the plan said revert",
    async setup(bench) {
      await bench.act("update_customer", { id: "c_001", plan: "free" });
      await bench.act("update_customer", { id: "c_002", plan: "free" });
    },
    faults: { inverses: "refused" },
    plan: ["#2 revert", "#1 revert"],
    real: ["#2 halt"],
    after: async (bench, real) => {
      expect(real.halted!.why).toBe("the inverse crm.update_customer failed: refused by the test");
      expect(await statusOf(bench, 2)).toBe("applied");
    },
  },
  {
    name: "an inverse that gets no answer: the real undo stops, its claim kept for the next undo",
    async setup(bench) {
      await bench.act("update_customer", { id: "c_001", plan: "free" });
      await bench.act("update_customer", { id: "c_002", plan: "free" });
    },
    faults: { inverses: "unanswered" },
    plan: ["#2 revert", "#1 revert"],
    real: ["#2 halt"],
    after: async (bench, real) => {
      expect(real.halted!.why).toBe("the inverse crm.update_customer got no answer (no answer within 1 s); whether it landed is unknown");
      expect((await bench.actions())[1]).toMatchObject({ status: "rolling_back", inverseSentAt: NOW.toISOString() });
    },
  },
];

/** What a step decides; a revert's wording differs (planned in a dry run, done in an undo), and so may a note before it. */
function decisions(steps: Step[]) {
  return steps.map((s) => ({
    seq: s.action.seq,
    outcome: s.outcome,
    call: s.call,
    unverified: s.unverified === true,
    resent: s.resent === true,
    settle: s.settle,
    why: s.outcome === "revert" ? undefined : s.why,
    hint: s.hint,
    expected: s.expected,
    actual: s.actual,
  }));
}

const outcomes = (steps: Step[]) => steps.map((s) => `#${s.action.seq} ${s.outcome}`);

describe("the dry run's plan is the real undo's steps", () => {
  for (const scenario of SCENARIOS) {
    test(scenario.name, async () => {
      const bench = await Bench.open(toyManifest(scenario.recordedWith));
      await scenario.setup(bench);
      bench.servers.faults = scenario.faults ?? {};
      const undo = {
        fromSeq: scenario.undo?.fromSeq,
        replan: scenario.undo?.replan,
        ...(scenario.undo?.manifest ? { manifest: toyManifest(scenario.undo.manifest) } : {}),
      };
      const rows = await bench.actions();
      const state = bench.servers.customers();
      const received = bench.servers.received.length;

      const dry = await bench.undo({ ...undo, dryRun: true });
      expect(outcomes(dry.steps)).toEqual(scenario.plan);
      // The dry run changed nothing and sent nothing.
      expect(await bench.actions()).toEqual(rows);
      expect(bench.servers.customers()).toEqual(state);
      expect(bench.servers.received.slice(received).filter((r) => !r.startsWith("read"))).toEqual([]);
      expect(dry.runStatus).toBeUndefined();

      const real = await bench.undo({ ...undo, dryRun: false });
      expect(outcomes(real.steps)).toEqual(scenario.real ?? scenario.plan);
      if (scenario.real) {
        const at = real.steps.length - 1;
        expect(decisions(real.steps.slice(0, at))).toEqual(decisions(dry.steps.slice(0, at)));
        expect(dry.steps[at]).toMatchObject({ outcome: "revert", call: real.steps[at]!.call! });
      } else {
        expect(decisions(real.steps)).toEqual(decisions(dry.steps));
      }
      await scenario.after?.(bench, real, dry);
      await bench.journal.close();
    });
  }

  test("a server that will not start: the plan stops at the first read; the real undo refuses before it changes anything", async () => {
    const bench = await Bench.open();
    await bench.act("update_customer", { id: "c_001", plan: "free" });
    bench.servers.faults = { down: 'server "crm" would not start: no-such-crm: not found' };
    const dry = await bench.undo({ dryRun: true });
    expect(outcomes(dry.steps)).toEqual(["#1 halt"]);
    expect(dry.halted!.why).toBe('the verification read crm.get_customer failed: server "crm" would not start: no-such-crm: not found');
    await expect(bench.undo({ dryRun: false })).rejects.toThrow('server "crm" would not start');
    const [row] = await bench.actions();
    expect(row).toMatchObject({ status: "applied", undoNote: 'undo could not read the current state: server "crm" would not start: no-such-crm: not found' });
    expect((await bench.journal.getRun(bench.run.id))!.status).toBe("active");
    await bench.journal.close();
  });
});
