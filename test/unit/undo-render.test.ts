// What undo prints around and for its steps (render/undo.ts, renderStep in
// render/runs.ts), from hand-built steps and reports: pure, plain and coloured.
process.env.TZ = "UTC";

import { describe, expect, test } from "bun:test";
import type { Action, Run } from "../../src/journal/types.ts";
import { renderStep } from "../../src/render/runs.ts";
import { colours, plain } from "../../src/render/style.ts";
import { continueCommand, nothingToUndo, settleLines, undoHeading, undoSummary } from "../../src/render/undo.ts";
import type { UndoReport } from "../../src/undo/loop.ts";
import type { Step } from "../../src/undo/plan.ts";

const RUN: Run = {
  id: "4e77975e-1a2b-4c3d-8e9f-0123456789ab",
  label: "agent-7",
  startedAt: "2026-03-14T15:20:00.000Z",
  endedAt: "2026-03-14T15:29:00.000Z",
  status: "complete",
};

function action(seq: number, fields: Partial<Action> = {}): Action {
  return {
    id: `a000000${seq}-0000-4000-8000-000000000000`,
    runId: RUN.id,
    seq,
    server: "crm",
    tool: "update_customer",
    class: "reversible",
    status: "applied",
    ts: "2026-03-14T15:2" + seq + ":00.000Z",
    args: { id: "c_001", plan: "free" },
    warnings: [],
    ...fields,
  };
}

const INVERSE = { server: "crm", tool: "update_customer", args: { id: "c_001", plan: "pro" } };
const revert = (seq: number): Step => ({ action: action(seq), outcome: "revert", why: "its state from before is recorded", call: INVERSE });
const render = (step: Step, dryRun = false) => renderStep(step, plain, { dryRun, width: 80 }).join("\n");

describe("undo's steps", () => {
  test("a revert: called (or would call) with literal values, no why", () => {
    expect(render(revert(3))).toMatchInlineSnapshot(`
      "  #3  reverted          crm.update_customer {"id":"c_001","plan":"free"}
              called: crm.update_customer {"id":"c_001","plan":"pro"}"
    `);
    expect(render(revert(3), true)).toMatchInlineSnapshot(`
      "  #3  would revert      crm.update_customer {"id":"c_001","plan":"free"}
              would call: crm.update_customer {"id":"c_001","plan":"pro"}"
    `);
  });

  test("a drift: both sides under their titles, and the hint", () => {
    const step: Step = {
      action: action(2, { verify: { server: "crm", tool: "get_customer", args: { id: "c_001" }, absentWhen: [] } }),
      outcome: "drift",
      why: "crm.get_customer shows a change made after the agent's call",
      hint: "Someone changed c_001 since. Look, then undo with --force-drift to overwrite it, or leave it.",
      expected: { absent: false, payload: { id: "c_001", plan: "free" } },
      actual: { absent: false, payload: { id: "c_001", plan: "enterprise" } },
    };
    expect(render(step)).toMatchInlineSnapshot(`
      "  #2  DRIFT             crm.update_customer {"id":"c_001","plan":"free"}
              crm.get_customer shows a change made after the agent's call
              read: crm.get_customer {"id":"c_001"}
          expected (as the agent left it)      │ actual (now)
          {                                    │ {
            "id": "c_001",                     │   "id": "c_001",
        ≠   "plan": "free"                     │   "plan": "enterprise"
          }                                    │ }
              Someone changed c_001 since. Look, then undo with --force-drift to overwrite it, or leave it."
    `);
  });

  test("left in place, and a step's untrusted text made printable", () => {
    const left: Step = {
      action: action(4, { tool: "send_email", class: "irreversible", args: { to: "x\x1b[2J" } }),
      outcome: "left",
      why: "it is irreversible\x07",
    };
    expect(render(left)).toMatchInlineSnapshot(`
      "  #4  left in place     crm.send_email {"to":"x\\u001b[2J"}
              it is irreversible\\x07"
    `);
  });

  test("colour goes only where the tone says", () => {
    const coloured = renderStep(revert(1), colours, { dryRun: false, width: 80 });
    expect(coloured[0]).toContain("\x1b[32mreverted");
    expect(renderStep(revert(1), plain, { dryRun: false, width: 80 })[0]).not.toContain("\x1b[");
  });
});

describe("around the steps", () => {
  test("the heading, plain, for an undo and a dry run", () => {
    expect(undoHeading(RUN, 3, false, plain)).toMatchInlineSnapshot(
      `"Run 4e77975e-1a2b-4c3d-8e9f-0123456789ab  agent-7  started 2026-03-14 15:20:00, ended 2026-03-14 15:29:00  complete  3 actions"`,
    );
    expect(undoHeading(RUN, 3, true, plain)).toMatchInlineSnapshot(
      `"Dry run — nothing will be changed. Run 4e77975e-1a2b-4c3d-8e9f-0123456789ab  agent-7  started 2026-03-14 15:20:00, ended 2026-03-14 15:29:00  complete  3 actions"`,
    );
  });

  test("nothing to undo: already rolled back (when, by whom), or nothing changed (what was withdrawn)", () => {
    expect(nothingToUndo(RUN, { kind: "already", when: "2026-03-14T16:00:00.000Z", by: "ada@laptop" }, 1)).toMatchInlineSnapshot(`
      [
        "Nothing to undo: run 4e77975e was already rolled back at 2026-03-14 16:00:00 by ada@laptop.",
      ]
    `);
    const held = action(5, { tool: "send_email", class: "irreversible", status: "gated", args: { to: "ada@example.com" } });
    const approved = action(6, { tool: "send_email", class: "irreversible", status: "approved", approvedBy: "grace", args: { to: "bob@example.com" } });
    expect(nothingToUndo(RUN, { kind: "nothing", withdrawn: [held, approved], wouldWithdraw: [] }, 1)).toMatchInlineSnapshot(`
      [
        "Withdrew the request for approval of #5 crm.send_email {"to":"ada@example.com"}: it will not run.",
        "Withdrew the approval (by grace, never used) of #6 crm.send_email {"to":"bob@example.com"}: it will not run.",
        "Nothing else to undo: no call in this run changed anything.",
      ]
    `);
    expect(nothingToUndo(RUN, { kind: "nothing", withdrawn: [], wouldWithdraw: [held] }, 3)).toMatchInlineSnapshot(`
      [
        "Would withdraw the request for approval of #5 crm.send_email {"to":"ada@example.com"}.",
        "Nothing else to undo: no call in this run from #3 on changed anything.",
      ]
    `);
  });

  test("the closing line for each way an undo ends", () => {
    const options = { dryRun: false, runRef: "4e77975e", fromSeq: 1 };
    const done: UndoReport = { steps: [revert(2), revert(1)], runStatus: "rolled_back" };
    expect(undoSummary(done, options)).toMatchInlineSnapshot(`
      {
        "text": "Run 4e77975e is rolled back: 2 calls reverted.",
        "tone": "good",
      }
    `);
    const partial: UndoReport = { steps: [revert(3), { action: action(2), outcome: "left", why: "irreversible" }], runStatus: "partial" };
    expect(undoSummary(partial, { ...options, fromSeq: 2 })).toMatchInlineSnapshot(`
      {
        "text": "Run 4e77975e is partially rolled back: 1 reverted, 1 left in place (they cannot be undone); calls before #2 were not in scope.",
        "tone": "partial",
      }
    `);
    const halt: Step = { action: action(2), outcome: "halt", why: "its outcome is unknown" };
    expect(undoSummary({ steps: [revert(3), halt], halted: halt, runStatus: "partial" }, options)).toMatchInlineSnapshot(`
      {
        "text": "Stopped at #2; nothing older than it was touched. 1 reverted before stopping. Run 4e77975e is marked partial.",
        "tone": "stop",
      }
    `);
    const unrestored: Step = { action: action(2), outcome: "unrestored", why: "the state differs" };
    expect(undoSummary({ steps: [unrestored], halted: unrestored, runStatus: "partial" }, options)).toMatchInlineSnapshot(`
      {
        "text": "Stopped after #2: its inverse ran but did not give back the state from before. 0 reverted before it. Run 4e77975e is marked partial.",
        "tone": "stop",
      }
    `);
    expect(undoSummary({ steps: [revert(3), halt], halted: halt }, { ...options, dryRun: true })).toMatchInlineSnapshot(`
      {
        "text": "A real undo would stop at #2. 1 step before it would be reverted.",
        "tone": "stop",
      }
    `);
    expect(undoSummary({ steps: [revert(3), { action: action(2), outcome: "left", why: "x" }] }, { ...options, dryRun: true })).toMatchInlineSnapshot(`
      {
        "text": "1 call would be reverted, 1 left in place.",
        "tone": "plain",
      }
    `);
  });

  test("how to continue keeps --to and quotes the paths; how to settle names the journal", () => {
    expect(continueCommand("4e77975e", 3, { manifest: "/tmp/my crm/synartesis.yaml", journal: "/tmp/j.db" })).toEqual([
      "When the cause is dealt with, continue with: synartesis undo 4e77975e --to 3 --manifest '/tmp/my crm/synartesis.yaml' --journal /tmp/j.db",
    ]);
    const unknown: Step = { action: action(2, { status: "pending" }), outcome: "halt", why: "its outcome is unknown", settle: "call" };
    // A stop on a call a person may keep names that way out too (R-PEOPLE-1); an inverse of unknown outcome is settled instead.
    expect(continueCommand("4e77975e", 1, {}, unknown)).toEqual([
      "When the cause is dealt with, continue with: synartesis undo 4e77975e",
      'Or keep #2 as it is now and undo the rest: synartesis undo 4e77975e --keep 2 --reason "…"',
    ]);
    expect(continueCommand("4e77975e", 1, {}, { ...unknown, action: action(2, { status: "rolling_back" }), settle: "inverse" })).toHaveLength(1);
    expect(settleLines(unknown, "/tmp/j.db")).toMatchInlineSnapshot(`
      [
        "Once you know whether #2 ran, record it:",
        "  synartesis settle a0000002 --journal /tmp/j.db --applied       (it ran)",
        "  synartesis settle a0000002 --journal /tmp/j.db --not-applied   (it did not run)",
      ]
    `);
    expect(settleLines({ ...unknown, settle: "inverse" })).toMatchInlineSnapshot(`
      [
        "Once you know whether the inverse undo sent for #2 ran, record it:",
        "  synartesis settle a0000002 --applied       (it ran)",
        "  synartesis settle a0000002 --not-applied   (it did not run)",
      ]
    `);
    expect(settleLines(revert(1))).toEqual([]);
  });
});
