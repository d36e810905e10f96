// The undo planner (R-UNDO-2…6): what a journal row alone decides, how a
// checked action is judged against a fresh read, and the dry-run plan — the
// judgement loop over a simulated world — that simulates newer steps so a
// record touched several times is not called drifted.
import { describe, expect, test } from "bun:test";
import type { Action, ActionStatus, Observation, Read, ResolvedCall, VerifyCall } from "../../src/journal/types.ts";
import type { ToolClass } from "../../src/manifest/types.ts";
import { judge, judgeInterrupted, judgeUnknown, verifyKey } from "../../src/undo/judge.ts";
import { undoActions } from "../../src/undo/loop.ts";
import { inScope, staticVerdict, type StaticVerdict, type Step } from "../../src/undo/plan.ts";
import { SimulatedWorld } from "../../src/undo/simulated-world.ts";

const ADA = { id: "c_001", name: "Ada Lovelace", email: "ada@example.com", plan: "pro", notes: "founding customer" };
const GRACE = { id: "c_002", name: "Grace Hopper", email: "grace@example.com", plan: "enterprise", notes: "renewal in March" };

const present = (payload: unknown): Observation => ({ absent: false, payload });
const ABSENT: Observation = { absent: true };
const seen = (payload: unknown): Read => ({ absent: false, payload });

function readOf(id: string): VerifyCall {
  return { server: "crm", tool: "get_customer", args: { id }, absentWhen: ["no customer with id"] };
}

function restoreCall(record: Record<string, string>): ResolvedCall {
  const { id, name, email, plan, notes } = record;
  return { server: "crm", tool: "update_customer", args: { id, name, email, plan, notes } };
}

function action(over: Partial<Action> & { seq: number }): Action {
  return {
    id: `action-${over.seq}`,
    runId: "run-1",
    server: "crm",
    tool: "update_customer",
    args: { id: "c_001" },
    class: "reversible",
    status: "applied",
    warnings: [],
    ts: "2026-01-01T00:00:00.000Z",
    ...over,
  };
}

/** An agent's update of one customer from `before` to `after`, recorded as the proxy records it. */
function update(seq: number, before: Record<string, string>, after: Record<string, string>, over: Partial<Action> = {}): Action {
  return action({
    seq,
    args: { id: before.id, ...after },
    snapshot: present(before),
    postState: present(after),
    inverse: restoreCall(before),
    verify: readOf(before.id!),
    ...over,
  });
}

/** The current state as a dry run observes it: one read per record. */
function observations(entries: Array<[string, Read]>): Map<string, Read> {
  return new Map(entries.map(([id, read]) => [verifyKey(readOf(id)), read]));
}

/**
 * A dry run: the judgement loop over a simulated world whose servers answer
 * from `reads` (a record not there is a failed read, "not observed"), and log
 * each read they are asked for in `asked`.
 */
async function planUndo(
  actions: Action[],
  fromSeq: number,
  reads: Map<string, Read>,
  /** Calls of unknown outcome whose answer may still come, with why. */
  stillLanding: Map<string, string> = new Map(),
  /** Actions whose rule says their server honours idempotency keys. */
  idempotent: Map<string, boolean> = new Map(),
  asked: VerifyCall[] = [],
): Promise<Step[]> {
  const world = new SimulatedWorld({
    servers: {
      read: async (verify) => {
        asked.push(verify);
        return reads.get(verifyKey(verify)) ?? { error: "not observed" };
      },
      invert: () => {
        throw new Error("a dry run sends no inverse");
      },
    },
    now: () => new Date("2026-01-01T01:00:00.000Z"),
    leaseMs: 60_000,
    stillLanding: async (action) => stillLanding.get(action.id),
    idempotent: (action) => idempotent.get(action.id) === true,
  });
  return (await undoActions(world, actions, fromSeq, () => {})).steps;
}

function outcomes(steps: Step[]): string[] {
  return steps.map((s) => `#${s.action.seq} ${s.outcome}`);
}

describe("staticVerdict", () => {
  const CLASSES: ToolClass[] = ["readonly", "reversible", "compensable", "irreversible"];
  const inverse = restoreCall(ADA);
  const verify = readOf("c_001");

  // Statuses that decide alone, whatever the class.
  const settled: Array<[ActionStatus, Partial<Action>, StaticVerdict]> = [
    ["gated", {}, { kind: "skip", why: "held for approval; it never ran (a real undo withdraws the request)" }],
    ["approved", {}, { kind: "skip", why: "approved, but never retried; it never ran (a real undo withdraws the approval)" }],
    ["approved", { spentBy: "other-action" }, { kind: "skip", why: "an approval, spent by the call that ran" }],
    ["denied", {}, { kind: "skip", why: "denied; it never ran" }],
    ["failed", {}, { kind: "skip", why: "it failed, so it changed nothing to undo" }],
    ["rolled_back", {}, { kind: "skip", why: "already undone" }],
    ["unrecoverable", {}, { kind: "left", why: "crm.update_customer cannot be undone; left in place" }],
  ];
  for (const [status, extra, expected] of settled) {
    for (const toolClass of CLASSES) {
      test(`${status}${extra.spentBy ? " (spent)" : ""} × ${toolClass} → ${expected.kind}`, () => {
        // Even a row with a usable inverse is not reverted in these statuses.
        const row = action({ seq: 1, status, class: toolClass, inverse, verify, snapshot: present(ADA), postState: present(ADA), ...extra });
        expect(staticVerdict(row)).toEqual(expected);
      });
    }
  }

  test("pending with a captured pre-state → unknown: a read decides; without one → halt", () => {
    const row = action({ seq: 1, status: "pending", inverse, verify, snapshot: present(ADA) });
    expect(staticVerdict(row)).toEqual({ kind: "unknown", verify });
    for (const bare of [action({ seq: 1, status: "pending", inverse }), action({ seq: 1, status: "pending", class: "irreversible", tool: "send_email" })]) {
      expect(staticVerdict(bare)).toEqual({
        kind: "halt",
        why: `the outcome of crm.${bare.tool} is unknown (the proxy never learnt whether it ran)`,
        hint: "Check the state by hand, then record what you found with synartesis settle (below). Undo will not guess past a call whose effect is unknown.",
        settle: "call",
      });
    }
  });

  test("judgeUnknown: the state as it was before → step over it; anything else, or an answer still to come → stop", () => {
    const row = action({ seq: 1, status: "pending", verify, snapshot: present(ADA) });
    // Stepped over, not settled: it stays pending (still unknown).
    expect(judgeUnknown(row, seen(ADA))).toMatchObject({ outcome: "skip" });
    expect(judgeUnknown(row, seen({ ...ADA, plan: "free" }))).toMatchObject({ outcome: "halt" });
    expect(judgeUnknown(row, ABSENT)).toMatchObject({ outcome: "halt" });
    expect(judgeUnknown(row, { error: "down" })).toMatchObject({ outcome: "halt", why: expect.stringContaining("could not read the record") });
    // An answer that may still come is waited for, whatever the state says now.
    expect(judgeUnknown(row, seen(ADA), "the proxy that made it (pid 7) is still running")).toMatchObject({
      outcome: "halt",
      why: "the outcome of crm.update_customer is not known yet: the proxy that made it (pid 7) is still running",
    });
  });

  for (const status of ["applied", "rolling_back"] as const) {
    describe(`${status}`, () => {
      test("readonly → skip", () => {
        expect(staticVerdict(action({ seq: 1, status, class: "readonly", tool: "get_customer" }))).toEqual({
          kind: "skip",
          why: "read only; nothing to undo",
        });
      });

      test("irreversible → left in place, naming the approver", () => {
        const sent = action({ seq: 1, status, class: "irreversible", tool: "send_email", approvedBy: "alice" });
        expect(staticVerdict(sent)).toEqual({ kind: "left", why: "crm.send_email is irreversible and ran (approved by alice); left in place" });
        const { approvedBy: _, ...unapproved } = sent;
        expect(staticVerdict(unapproved)).toEqual({ kind: "left", why: "crm.send_email is irreversible and ran; left in place" });
      });

      for (const toolClass of ["reversible", "compensable"] as const) {
        test(`${toolClass} with a verification read and a post-state → check`, () => {
          const row = action({ seq: 1, status, class: toolClass, inverse, verify, snapshot: present(ADA), postState: present({ ...ADA, plan: "free" }) });
          expect(staticVerdict(row)).toEqual({ kind: "check", call: inverse, verify });
        });

        test(`${toolClass} with an inverse but no verification read → revert [unverified]`, () => {
          const row = action({ seq: 1, status, class: toolClass, inverse });
          expect(staticVerdict(row)).toEqual({ kind: "revert", call: inverse, unverified: true, why: "no pre-read was declared, so drift cannot be checked" });
        });

        test(`${toolClass} whose post-read failed → halt`, () => {
          const row = action({ seq: 1, status, class: toolClass, inverse, verify, snapshot: present(ADA) });
          const verdict = staticVerdict(row);
          expect(verdict.kind).toBe("halt");
          expect(verdict).toMatchObject({
            why: "crm.update_customer has no recorded post-state (its post-read failed), so undo cannot tell whether someone changed it since",
          });
        });

        test(`${toolClass} without a usable inverse → halt naming --replan and the warning`, () => {
          const warning = "the inverse could not be resolved ($snapshot.nme: no key nme); undo has no usable inverse for this call";
          const verdict = staticVerdict(action({ seq: 1, status, class: toolClass, snapshot: present(ADA), warnings: [warning] }));
          expect(verdict).toEqual({
            kind: "halt",
            why: `crm.update_customer has no usable inverse (${warning})`,
            hint: "Fix the rule in the manifest, then run undo again with --replan to rebuild the inverses from the state already captured.",
          });
        });

        test(`${toolClass} that ran where nothing existed, with no inverse → left`, () => {
          const verdict = staticVerdict(action({ seq: 1, status, class: toolClass, snapshot: ABSENT }));
          expect(verdict).toEqual({
            kind: "left",
            why: "there was nothing there before crm.update_customer ran, and its rule's inverse can only write back a state from before; undo leaves what it created in place (remove it by hand if it must go)",
          });
        });
      }
    });
  }
});

describe("judge", () => {
  const before = ADA;
  const after = { ...ADA, plan: "free", notes: "wrong notes" };
  const row = update(3, before, after);
  const verdict = staticVerdict(row) as Extract<StaticVerdict, { kind: "check" }>;

  test("the state as the agent left it → revert with the inverse", () => {
    expect(judge(row, verdict, seen(after))).toEqual({ action: row, outcome: "revert", why: "state is as the agent left it", call: restoreCall(before) });
  });

  test("equal whatever the key order", () => {
    const reordered = { notes: after.notes, plan: after.plan, name: after.name, email: after.email, id: after.id };
    expect(judge(row, verdict, seen(reordered)).outcome).toBe("revert");
  });

  test("the state as it was before → already reverted", () => {
    const step = judge(row, verdict, seen({ ...before }));
    expect(step.outcome).toBe("already");
    expect(step.why).toBe("already reverted (the state equals what it was before)");
    expect(step.call).toBeUndefined();
  });

  test("anything else → drift, with the expected and actual state", () => {
    const human = { ...after, notes: "called her: keep her on free until May" };
    const step = judge(row, verdict, seen(human));
    expect(step).toMatchObject({
      outcome: "drift",
      why: "crm.update_customer: the state changed after the agent's call; undo will not overwrite it",
      expected: present(after),
      actual: present(human),
    });
    expect(step.hint).toContain("put this record right by hand, then run undo again");
    expect(step.call).toBeUndefined();
  });

  test("a record that vanished since is drift too", () => {
    expect(judge(row, verdict, ABSENT)).toMatchObject({ outcome: "drift", expected: present(after), actual: ABSENT });
  });

  test("a read error → halt naming the read and its error", () => {
    const step = judge(row, verdict, { error: "the server crm closed" });
    expect(step.outcome).toBe("halt");
    expect(step.why).toBe("the verification read crm.get_customer failed: the server crm closed");
    expect(step.hint).toBe("Undo cannot check this record for drift; fix the cause and run undo again.");
  });

  test("a delete: absent now equals the post-state → revert; present as before → already", () => {
    const deleted = action({
      seq: 1,
      tool: "delete_customer",
      args: { id: "c_002" },
      snapshot: present(GRACE),
      postState: ABSENT,
      inverse: { server: "crm", tool: "restore_customer", args: GRACE },
      verify: readOf("c_002"),
    });
    const check = staticVerdict(deleted) as Extract<StaticVerdict, { kind: "check" }>;
    expect(judge(deleted, check, ABSENT).outcome).toBe("revert");
    expect(judge(deleted, check, seen(GRACE)).outcome).toBe("already");
    expect(judge(deleted, check, seen({ ...GRACE, plan: "pro" })).outcome).toBe("drift");
  });

  test("a restore over nothing: present as left → revert; absent as before → already", () => {
    const restored = action({
      seq: 1,
      class: "compensable",
      tool: "restore_customer",
      args: GRACE,
      snapshot: ABSENT,
      postState: present(GRACE),
      inverse: { server: "crm", tool: "delete_customer", args: { id: "c_002" } },
      verify: readOf("c_002"),
    });
    const check = staticVerdict(restored) as Extract<StaticVerdict, { kind: "check" }>;
    expect(judge(restored, check, seen(GRACE)).outcome).toBe("revert");
    expect(judge(restored, check, ABSENT).outcome).toBe("already");
  });
});

describe("settled and withdrawn rows", () => {
  const settled = { settledBy: "jo", settledAt: "2026-01-01T01:00:00.000Z" };

  test("a reversible call settled as applied, with no post-state: reverted without a drift check, saying why", () => {
    const row = action({ seq: 1, inverse: restoreCall(ADA), verify: readOf("c_001"), snapshot: present(ADA), settled: "applied", ...settled });
    expect(staticVerdict(row)).toEqual({
      kind: "revert",
      call: restoreCall(ADA),
      unverified: true,
      why: "jo (2026-01-01T01:00:00.000Z) found that it ran; no state after it was recorded, so it is reverted without a drift check",
    });
  });

  test("a call settled as not applied, and a withdrawn request, are stepped over", () => {
    expect(staticVerdict(action({ seq: 1, status: "failed", settled: "not_applied", ...settled }))).toEqual({
      kind: "skip",
      why: "jo (2026-01-01T01:00:00.000Z) found that it did not run: nothing to undo",
    });
    const withdrawn = action({ seq: 2, status: "denied", withdrawnBy: "ada", withdrawnAt: "2026-01-01T02:00:00.000Z" });
    expect(staticVerdict(withdrawn)).toEqual({
      kind: "skip",
      why: "its request for approval was withdrawn by an undo (ada, 2026-01-01T02:00:00.000Z); it never ran",
    });
  });
});

describe("judgeInterrupted: an inverse sent by an undo that never learnt its outcome", () => {
  const row = update(2, ADA, { ...ADA, plan: "free" }, { status: "rolling_back", inverseSentAt: "2026-01-01T00:00:01.000Z" });
  const call = restoreCall(ADA);

  test("the state from before: it landed", () => {
    expect(judgeInterrupted(row, call, seen(ADA), false).outcome).toBe("already");
  });

  test("as the agent left it, not idempotent: stop for a person to settle, showing before and now", () => {
    const step = judgeInterrupted(row, call, seen({ ...ADA, plan: "free" }), false);
    expect(step).toMatchObject({ outcome: "halt", settle: "inverse", expected: present(ADA), actual: present({ ...ADA, plan: "free" }), call });
    expect(step.why).toContain("sending it again could apply it twice (the rule does not declare idempotent: true)");
  });

  test("idempotent: sent again with the same key; without a read, unverified", () => {
    expect(judgeInterrupted(row, call, seen({ ...ADA, plan: "free" }), true)).toMatchObject({ outcome: "revert", resent: true, call });
    expect(judgeInterrupted({ ...row, verify: undefined }, call, undefined, true)).toMatchObject({ outcome: "revert", resent: true, unverified: true });
    expect(judgeInterrupted({ ...row, verify: undefined }, call, undefined, false)).toMatchObject({ outcome: "halt", settle: "inverse" });
  });

  test("something else changed it, or it cannot be read: stop whatever the rule says", () => {
    expect(judgeInterrupted(row, call, seen({ ...ADA, plan: "enterprise" }), true)).toMatchObject({ outcome: "halt", settle: "inverse" });
    expect(judgeInterrupted(row, call, { error: "timed out" }, true)).toMatchObject({ outcome: "halt", hint: "Fix the cause and run undo again." });
  });

  test("a dry run plans the same: an interrupted inverse stops the plan unless idempotent", async () => {
    const reads = observations([["c_001", seen({ ...ADA, plan: "free" })]]);
    expect(outcomes(await planUndo([row], 1, reads, new Map(), new Map([[row.id, false]])))).toEqual(["#2 halt"]);
    expect(outcomes(await planUndo([row], 1, reads, new Map(), new Map([[row.id, true]])))).toEqual(["#2 revert"]);
  });
});

describe("planUndo", () => {
  const S0 = ADA;
  const S1 = { ...ADA, plan: "free" };
  const S2 = { ...S1, notes: "wrong notes" };
  const S3 = { ...S2, name: "A. Lovelace" };
  const S4 = { ...S3, email: "ada@wrong.example" };

  test("a record touched four times: no drift, each step reverts to the state before it", async () => {
    const actions = [update(1, S0, S1), update(2, S1, S2), update(3, S2, S3), update(4, S3, S4)];
    const steps = await planUndo(actions, 1, observations([["c_001", seen(S4)]]));
    expect(outcomes(steps)).toEqual(["#4 revert", "#3 revert", "#2 revert", "#1 revert"]);
    expect(steps.map((s) => s.call)).toEqual([restoreCall(S3), restoreCall(S2), restoreCall(S1), restoreCall(S0)]);
    expect(steps.every((s) => !s.unverified)).toBe(true);
  });

  test("the simulation is what avoids false drift: judged alone, older steps would drift", () => {
    const older = update(1, S0, S1);
    const check = staticVerdict(older) as Extract<StaticVerdict, { kind: "check" }>;
    expect(judge(older, check, seen(S4)).outcome).toBe("drift");
  });

  test("touched twice, then changed by someone else: drift at the newest step, nothing planned past it", async () => {
    const human = { ...S2, notes: "a person's note" };
    const actions = [update(1, S0, S1), update(2, S1, S2)];
    const steps = await planUndo(actions, 1, observations([["c_001", seen(human)]]));
    expect(outcomes(steps)).toEqual(["#2 drift"]);
    expect(steps[0]).toMatchObject({ expected: present(S2), actual: present(human) });
  });

  test("touched twice with someone else's change in between: #2 reverts, drift at #1 against the simulated state", async () => {
    const between = { ...S1, notes: "a person's note" };
    const actions = [update(1, S0, S1), update(2, between, S2)];
    const steps = await planUndo(actions, 1, observations([["c_001", seen(S2)]]));
    expect(outcomes(steps)).toEqual(["#2 revert", "#1 drift"]);
    expect(steps[1]).toMatchObject({ expected: present(S1), actual: present(between) });
  });

  test("a record already put back counts as already reverted, and the plan goes on", async () => {
    const steps = await planUndo([update(1, S0, S1), update(2, S1, S2)], 1, observations([["c_001", seen(S1)]]));
    expect(outcomes(steps)).toEqual(["#2 already", "#1 revert"]);
  });

  test("compensable without a pre-read → revert [unverified]", async () => {
    const created = action({
      seq: 2,
      class: "compensable",
      tool: "create_customer",
      args: { name: "Bogus", email: "bogus@example.com" },
      inverse: { server: "crm", tool: "delete_customer", args: { id: "c_004" } },
    });
    const steps = await planUndo([update(1, S0, S1), created], 1, observations([["c_001", seen(S1)]]));
    expect(outcomes(steps)).toEqual(["#2 revert", "#1 revert"]);
    expect(steps[0]).toMatchObject({
      unverified: true,
      why: "no pre-read was declared, so drift cannot be checked",
      call: { server: "crm", tool: "delete_customer", args: { id: "c_004" } },
    });
    expect(steps[1]!.unverified).toBeUndefined();
  });

  test("a pending action halts the plan; nothing older is planned", async () => {
    const actions = [update(1, S0, S1), action({ seq: 2, status: "pending", tool: "delete_customer" }), update(3, S1, S2)];
    const steps = await planUndo(actions, 1, observations([["c_001", seen(S2)]]));
    expect(outcomes(steps)).toEqual(["#3 revert", "#2 halt"]);
    expect(steps[1]!.why).toBe("the outcome of crm.delete_customer is unknown (the proxy never learnt whether it ran)");
    expect(steps[1]!.hint).toBe(
      "Check the state by hand, then record what you found with synartesis settle (below). Undo will not guess past a call whose effect is unknown.",
    );
    expect(steps[1]!.settle).toBe("call");
  });

  test("an irreversible call that ran is left in place; the rest is reverted", async () => {
    const sent = action({ seq: 2, class: "irreversible", tool: "send_email", args: { to: "ada@example.com" }, approvedBy: "alice" });
    const steps = await planUndo([update(1, S0, S1), sent, update(3, S1, S2)], 1, observations([["c_001", seen(S2)]]));
    expect(outcomes(steps)).toEqual(["#3 revert", "#2 left", "#1 revert"]);
    expect(steps[1]!.why).toBe("crm.send_email is irreversible and ran (approved by alice); left in place");
  });

  test("gated, denied, failed and read-only rows are skipped", async () => {
    const actions = [
      update(1, S0, S1),
      action({ seq: 2, status: "gated", class: "irreversible", tool: "send_email" }),
      action({ seq: 3, status: "denied", class: "irreversible", tool: "send_email" }),
      action({ seq: 4, status: "failed" }),
      action({ seq: 5, class: "readonly", tool: "get_customer" }),
    ];
    const steps = await planUndo(actions, 1, observations([["c_001", seen(S1)]]));
    expect(outcomes(steps)).toEqual(["#5 skip", "#4 skip", "#3 skip", "#2 skip", "#1 revert"]);
  });

  test("--to SEQ: only seq ≥ SEQ is planned", async () => {
    const grace = update(3, GRACE, { ...GRACE, plan: "free" }, { verify: readOf("c_002") });
    const actions = [update(1, S0, S1), update(2, S1, S2), grace];
    const obs = observations([
      ["c_001", seen(S2)],
      ["c_002", seen({ ...GRACE, plan: "free" })],
    ]);
    expect(outcomes(await planUndo(actions, 2, obs))).toEqual(["#3 revert", "#2 revert"]);
    expect(outcomes(await planUndo(actions, 3, obs))).toEqual(["#3 revert"]);
    expect(await planUndo(actions, 4, obs)).toEqual([]);
  });

  test("an unobserved record halts rather than guessing", async () => {
    const steps = await planUndo([update(1, S0, S1)], 1, new Map());
    expect(outcomes(steps)).toEqual(["#1 halt"]);
    expect(steps[0]!.why).toBe("the verification read crm.get_customer failed: not observed");
  });

  test("does not change the observations it was given", async () => {
    const obs = observations([["c_001", seen(S2)]]);
    await planUndo([update(1, S0, S1), update(2, S1, S2)], 1, obs);
    expect(obs.get(verifyKey(readOf("c_001")))).toEqual(seen(S2));
  });

  test("a delete then a restore of the same record simulate through absence", async () => {
    const deleted = action({
      seq: 1,
      tool: "delete_customer",
      args: { id: "c_002" },
      snapshot: present(GRACE),
      postState: ABSENT,
      inverse: { server: "crm", tool: "restore_customer", args: GRACE },
      verify: readOf("c_002"),
    });
    const restored = action({
      seq: 2,
      class: "compensable",
      tool: "restore_customer",
      args: GRACE,
      snapshot: ABSENT,
      postState: present(GRACE),
      inverse: { server: "crm", tool: "delete_customer", args: { id: "c_002" } },
      verify: readOf("c_002"),
    });
    const steps = await planUndo([deleted, restored], 1, observations([["c_002", seen(GRACE)]]));
    expect(outcomes(steps)).toEqual(["#2 revert", "#1 revert"]);
  });
});

describe("inScope and the reads a dry run makes", () => {
  test("inScope: seq ≥ fromSeq, newest first", () => {
    const actions = [action({ seq: 1 }), action({ seq: 3 }), action({ seq: 2 })];
    expect(inScope(actions).map((a) => a.seq)).toEqual([3, 2, 1]);
    expect(inScope(actions, 2).map((a) => a.seq)).toEqual([3, 2]);
  });

  test("one read per record, newest first, only for checked actions in scope", async () => {
    const actions = [
      update(1, ADA, { ...ADA, plan: "free" }),
      update(2, GRACE, { ...GRACE, plan: "free" }, { verify: readOf("c_002") }),
      update(3, ADA, { ...ADA, notes: "x" }),
      action({ seq: 4, class: "compensable", tool: "create_customer", inverse: { server: "crm", tool: "delete_customer", args: { id: "c_004" } } }),
      action({ seq: 5, status: "failed", verify: readOf("c_003") }),
      action({ seq: 6, status: "rolled_back", verify: readOf("c_003"), postState: present({}), inverse: restoreCall(ADA) }),
    ];
    const reads = observations([
      ["c_001", seen({ ...ADA, notes: "x" })],
      ["c_002", seen({ ...GRACE, plan: "free" })],
    ]);
    const readsFrom = async (fromSeq: number) => {
      const asked: VerifyCall[] = [];
      await planUndo(actions, fromSeq, reads, new Map(), new Map(), asked);
      return asked;
    };
    expect(await readsFrom(1)).toEqual([readOf("c_001"), readOf("c_002")]);
    expect(await readsFrom(2)).toEqual([readOf("c_001"), readOf("c_002")]);
    expect(await readsFrom(3)).toEqual([readOf("c_001")]);
    expect(await readsFrom(4)).toEqual([]);
  });

  test("verifyKey ignores the key order of the arguments", () => {
    const a = { server: "crm", tool: "t", args: { x: 1, y: 2 }, absentWhen: [] };
    const b = { server: "crm", tool: "t", args: { y: 2, x: 1 }, absentWhen: ["other"] };
    expect(verifyKey(a)).toBe(verifyKey(b));
  });
});
