// The commands that approve, deny or settle a call (R-GATE-1) are built in one
// place (self.ts decisionWords); every place that shows one — gates, show's
// notes, watch's frame, the review page's gate view, undo's settle lines and
// what the proxy tells the agent — shows that same command.
process.env.TZ = "UTC";

import { describe, expect, test } from "bun:test";
import type { Action } from "../../src/journal/types.ts";
import { actionNotes, renderGates } from "../../src/render/runs.ts";
import { plain } from "../../src/render/style.ts";
import { settleLines } from "../../src/render/undo.ts";
import { renderWatch } from "../../src/render/watch.ts";
import { approveCommandFor, decisionCommandFor, decisionWords } from "../../src/self.ts";
import { gateView } from "../../src/ui/views.ts";
import type { Step } from "../../src/undo/plan.ts";

const JOURNAL = "/home/ada/my crm/synartesis.db";
const QUOTED = "'/home/ada/my crm/synartesis.db'";

function action(fields: Partial<Action>): Action {
  return {
    id: "a1b2c3d4-0000-4000-8000-000000000000",
    runId: "4e77975e-1a2b-4c3d-8e9f-0123456789ab",
    seq: 3,
    server: "crm",
    tool: "send_email",
    class: "irreversible",
    status: "gated",
    ts: "2026-03-14T15:28:30.000Z",
    args: { to: "ada@example.com" },
    warnings: [],
    error: "crm.send_email is irreversible: once it runs it cannot be undone",
    ...fields,
  };
}

describe("decisionWords / decisionCommandFor", () => {
  test("program, verb, id, then the journal quoted for a shell", () => {
    expect(decisionWords("approve", "a1b2c3d4", { command: "synartesis", journalPath: JOURNAL })).toEqual([
      "synartesis",
      "approve",
      "a1b2c3d4",
      "--journal",
      QUOTED,
    ]);
    expect(decisionWords("settle", "a1b2c3d4", { command: "synartesis" })).toEqual(["synartesis", "settle", "a1b2c3d4"]);
    const command = decisionCommandFor(JOURNAL, "/opt/syn/synartesis");
    expect(command("deny", "a1b2c3d4")).toBe(`/opt/syn/synartesis deny a1b2c3d4 --journal ${QUOTED}`);
  });

  test("what the proxy tells the agent is the approve command of this program", () => {
    expect(approveCommandFor(JOURNAL)("a1b2c3d4")).toBe(decisionCommandFor(JOURNAL)("approve", "a1b2c3d4"));
    expect(approveCommandFor(JOURNAL)("a1b2c3d4")).toEndWith(` approve a1b2c3d4 --journal ${QUOTED}`);
  });
});

describe("every place shows the same command", () => {
  const command = decisionCommandFor(JOURNAL, "synartesis");
  const approve = `synartesis approve a1b2c3d4 --journal ${QUOTED}`;
  const deny = `synartesis deny a1b2c3d4 --journal ${QUOTED}`;

  test("gates: approve, and deny with the reason to fill in", () => {
    const lines = renderGates([action({})], plain, command);
    expect(lines).toContain(`          approve  ${approve}`);
    expect(lines).toContain(`          deny     ${deny} --reason "…"`);
  });

  test("show: a held call's approve note; an unknown outcome's settle note", () => {
    expect(actionNotes(action({}), command).find((n) => n.label === "approve")?.text).toBe(approve);
    const unknown = action({ status: "pending", class: "reversible", error: "the server did not answer" });
    expect(actionNotes(unknown, command).find((n) => n.label === "settle")?.text).toBe(
      `synartesis settle a1b2c3d4 --journal ${QUOTED} --applied | --not-applied`,
    );
  });

  test("the review page's gate view", () => {
    const view = gateView(action({}), undefined, command);
    expect(view.approveCommand).toBe(approve);
    expect(view.denyCommand).toBe(`${deny} --reason "…"`);
  });

  test("watch's waiting section", () => {
    const lines = renderWatch(
      {
        journalPath: JOURNAL,
        now: new Date("2026-03-14T15:30:00.000Z"),
        live: false,
        command: "synartesis",
        journal: { runs: [], recent: [], waiting: [action({})] },
      },
      200,
      Infinity,
      plain,
    );
    expect(lines).toContain(`    approve  ${approve}`);
    expect(lines).toContain(`    deny     ${deny}`);
  });

  test("undo's settle lines: the journal only when the person named one", () => {
    const step = { action: action({ status: "pending", seq: 1 }), outcome: "halt", why: "", settle: "call" } as Step;
    expect(settleLines(step)).toEqual([
      "Once you know whether #1 ran, record it:",
      "  synartesis settle a1b2c3d4 --applied       (it ran)",
      "  synartesis settle a1b2c3d4 --not-applied   (it did not run)",
    ]);
    expect(settleLines(step, JOURNAL)[1]).toBe(`  synartesis settle a1b2c3d4 --journal ${QUOTED} --applied       (it ran)`);
  });
});
