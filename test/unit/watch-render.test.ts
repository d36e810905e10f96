// The frames of `synartesis watch` (R-CLI-5) from a fixed state and a fixed
// clock: several widths and heights, plain and coloured, the waiting-for-a-
// journal frame, the gated-call section, and the live-or-once decision.
process.env.TZ = "UTC";

import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import type { Action, RunSummary } from "../../src/journal/types.ts";
import { colours, displayWidth, fitWidth, plain, printable } from "../../src/render/style.ts";
import { renderWatch, watchMode, type WatchState } from "../../src/render/watch.ts";
import { decisionWords } from "../../src/self.ts";

const NOW = new Date("2026-03-14T15:30:00.000Z");
const PATH = "/home/ada/crm/synartesis.db";
const RUN_A = "4e77975e-1a2b-4c3d-8e9f-0123456789ab";
const RUN_B = "9c0ffee0-aaaa-4bbb-8ccc-dddddddddddd";

let counter = 0;
function action(fields: Partial<Action> & Pick<Action, "tool" | "class" | "status" | "ts">): Action {
  counter++;
  return {
    id: `a${String(counter).padStart(7, "0")}-0000-4000-8000-000000000000`,
    runId: RUN_A,
    seq: counter,
    server: "crm",
    args: {},
    warnings: [],
    ...fields,
  };
}

const SEND = action({
  tool: "send_email",
  class: "irreversible",
  status: "gated",
  ts: "2026-03-14T15:28:30.000Z",
  args: { to: "ada@example.com", subject: "Your plan changed", body: "Dear Ada, your plan is now free. Regards, the CRM" },
  heldReason: "crm.send_email is irreversible: once it runs it cannot be undone",
});
const SQL = action({
  runId: RUN_B,
  server: "db",
  tool: "run_sql",
  class: "reversible",
  status: "gated",
  ts: "2026-03-14T15:29:50.000Z",
  args: { sql: "DELETE FROM customers" },
  heldReason: "db.run_sql is gated on writes: DELETE is not read-only",
});

const RECENT: Action[] = [
  SQL,
  action({ tool: "update_customer", class: "reversible", status: "applied", ts: "2026-03-14T15:29:40.000Z", args: { id: "c_003", notes: "日本 \x1b[2J" } }),
  action({ tool: "send_email", class: "irreversible", status: "approved", spentBy: "x", ts: "2026-03-14T15:29:00.000Z", args: { to: "grace@example.com" } }),
  SEND,
  action({ tool: "delete_customer", class: "reversible", status: "applied", ts: "2026-03-14T15:28:00.000Z", args: { id: "c_002" } }),
  action({ tool: "create_customer", class: "compensable", status: "failed", ts: "2026-03-14T15:27:00.000Z", args: { name: "Alan", email: "x" } }),
  action({ tool: "update_customer", class: "reversible", status: "pending", ts: "2026-03-14T15:26:00.000Z", args: { id: "c_001", plan: "free" } }),
  action({ tool: "get_customer", class: "readonly", status: "applied", ts: "2026-03-14T15:25:00.000Z", args: { id: "c_001" } }),
  action({ tool: "send_email", class: "irreversible", status: "denied", ts: "2026-03-13T09:00:00.000Z", args: { to: "all@example.com" } }),
];

const RUNS: RunSummary[] = [
  { id: RUN_B, label: "cursor", startedAt: "2026-03-14T15:29:00.000Z", status: "active", actions: 1, unknown: 0, waiting: 1 },
  {
    id: RUN_A,
    label: "claude-code \x07 with a rather long agent name",
    startedAt: "2026-03-14T15:20:00.000Z",
    status: "active",
    actions: 8,
    unknown: 1,
    waiting: 1,
  },
];

const STATE: WatchState = {
  journalPath: PATH,
  now: NOW,
  live: true,
  command: "synartesis",
  journal: { runs: [RUNS[0]!, { ...RUNS[1]!, gone: true }], recent: RECENT, waiting: [SEND, SQL] },
};

const frame = (state: WatchState, columns: number, rows: number, style = plain) => renderWatch(state, columns, rows, style).join("\n");
const strip = (text: string) => text.replace(/\x1b\[[0-9;]*m/g, "");

describe("renderWatch", () => {
  test("100 columns, 40 rows: everything fits", () => {
    expect(frame(STATE, 100, 40)).toMatchInlineSnapshot(`
      "synartesis watch  /home/ada/crm/synartesis.db                                 15:30:00  Ctrl-C quits

      Waiting for a decision (2)
        a0000001  ⚠ irreversible  crm.send_email {"to":"ada@example.com","subject":"Your plan changed","b…
          why      crm.send_email is irreversible: once it runs it cannot be undone
          since    15:28:30 (1m ago), run 4e77975e
          approve  synartesis approve a0000001 --journal /home/ada/crm/synartesis.db
          deny     synartesis deny a0000001 --journal /home/ada/crm/synartesis.db
        a0000002  ↺ reversible  db.run_sql {"sql":"DELETE FROM customers"}
          why      db.run_sql is gated on writes: DELETE is not read-only
          since    15:29:50 (10s ago), run 9c0ffee0
          approve  synartesis approve a0000002 --journal /home/ada/crm/synartesis.db
          deny     synartesis deny a0000002 --journal /home/ada/crm/synartesis.db

      Live runs (2)
        9c0ffee0  cursor                    1 call, 1 waiting                          since 15:29:00 (1m…
        4e77975e  claude-code \\x07 with a…  8 calls, 1 waiting, 1 unknown, proxy gone  since 15:20:00 (10…

      Recent calls, newest first
        15:29:50          ↺  gated    db.run_sql {"sql":"DELETE FROM customers"}
        15:29:40          ↺  applied  crm.update_customer {"id":"c_003","notes":"日本 \\u001b[2J"}
        15:29:00          ⚠  used     crm.send_email {"to":"grace@example.com"}
        15:28:30          ⚠  gated    crm.send_email {"to":"ada@example.com","subject":"Your plan changed…
        15:28:00          ↺  applied  crm.delete_customer {"id":"c_002"}
        15:27:00          ↩  failed   crm.create_customer {"name":"Alan","email":"x"}
        15:26:00          ↺  pending  crm.update_customer {"id":"c_001","plan":"free"}
        15:25:00          ○  applied  crm.get_customer {"id":"c_001"}
        2026-03-13 09:00  ⚠  denied   crm.send_email {"to":"all@example.com"}"
    `);
  });

  test("60 columns, 30 rows: lines are cut with …, decision commands wrap with a shell continuation", () => {
    expect(frame(STATE, 60, 30)).toMatchInlineSnapshot(`
      "synartesis watch  …crm/synartesis.db  15:30:00  Ctrl-C quits

      Waiting for a decision (2)
        a0000001  ⚠ irreversible  crm.send_email {"to":"ada@examp…
          why      crm.send_email is irreversible: once it runs i…
          since    15:28:30 (1m ago), run 4e77975e
          approve  synartesis approve a0000001 --journal \\
                   /home/ada/crm/synartesis.db
          deny     synartesis deny a0000001 --journal \\
                   /home/ada/crm/synartesis.db
        a0000002  ↺ reversible  db.run_sql {"sql":"DELETE FROM cu…
          why      db.run_sql is gated on writes: DELETE is not r…
          since    15:29:50 (10s ago), run 9c0ffee0
          approve  synartesis approve a0000002 --journal \\
                   /home/ada/crm/synartesis.db
          deny     synartesis deny a0000002 --journal \\
                   /home/ada/crm/synartesis.db

      Live runs (2)
        9c0ffee0  cursor                    1 call, 1 waiting    …
        4e77975e  claude-code \\x07 with a…  8 calls, 1 waiting, 1…

      Recent calls, newest first
        15:29:50          ↺  gated    db.run_sql {"sql":"DELETE F…
        15:29:40          ↺  applied  crm.update_customer {"id":"…
        15:29:00          ⚠  used     crm.send_email {"to":"grace…
        15:28:30          ⚠  gated    crm.send_email {"to":"ada@e…
        15:28:00          ↺  applied  crm.delete_customer {"id":"…
        15:27:00          ↩  failed   crm.create_customer {"name"…
        15:26:00          ↺  pending  crm.update_customer {"id":"…"
    `);
  });

  test("160 columns, 24 rows: recent calls get the rows that are left", () => {
    expect(frame(STATE, 160, 24)).toMatchInlineSnapshot(`
      "synartesis watch  /home/ada/crm/synartesis.db                                                                                             15:30:00  Ctrl-C quits

      Waiting for a decision (2)
        a0000001  ⚠ irreversible  crm.send_email {"to":"ada@example.com","subject":"Your plan changed","body":"Dear Ada, your plan is now free. Regards, the CRM"}
          why      crm.send_email is irreversible: once it runs it cannot be undone
          since    15:28:30 (1m ago), run 4e77975e
          approve  synartesis approve a0000001 --journal /home/ada/crm/synartesis.db
          deny     synartesis deny a0000001 --journal /home/ada/crm/synartesis.db
        a0000002  ↺ reversible  db.run_sql {"sql":"DELETE FROM customers"}
          why      db.run_sql is gated on writes: DELETE is not read-only
          since    15:29:50 (10s ago), run 9c0ffee0
          approve  synartesis approve a0000002 --journal /home/ada/crm/synartesis.db
          deny     synartesis deny a0000002 --journal /home/ada/crm/synartesis.db

      Live runs (2)
        9c0ffee0  cursor                    1 call, 1 waiting                          since 15:29:00 (1m ago)
        4e77975e  claude-code \\x07 with a…  8 calls, 1 waiting, 1 unknown, proxy gone  since 15:20:00 (10m ago)

      Recent calls, newest first
        15:29:50          ↺  gated    db.run_sql {"sql":"DELETE FROM customers"}
        15:29:40          ↺  applied  crm.update_customer {"id":"c_003","notes":"日本 \\u001b[2J"}
        15:29:00          ⚠  used     crm.send_email {"to":"grace@example.com"}
        15:28:30          ⚠  gated    crm.send_email {"to":"ada@example.com","subject":"Your plan changed","body":"Dear Ada, your plan is now free. Regards, the CRM"}
        15:28:00          ↺  applied  crm.delete_customer {"id":"c_002"}"
    `);
  });

  test("12 rows: what waits for a decision has priority, the rest is noted", () => {
    expect(frame(STATE, 100, 12)).toMatchInlineSnapshot(`
      "synartesis watch  /home/ada/crm/synartesis.db                                 15:30:00  Ctrl-C quits

      Waiting for a decision (2)
        a0000001  ⚠ irreversible  crm.send_email {"to":"ada@example.com","subject":"Your plan changed","b…
          why      crm.send_email is irreversible: once it runs it cannot be undone
          since    15:28:30 (1m ago), run 4e77975e
          approve  synartesis approve a0000001 --journal /home/ada/crm/synartesis.db
          deny     synartesis deny a0000001 --journal /home/ada/crm/synartesis.db
        … and 1 more: synartesis gates --journal /home/ada/crm/synartesis.db

      Live runs (2)"
    `);
  });

  test("once (not live): no quit hint; unlimited rows", () => {
    const lines = renderWatch({ ...STATE, live: false }, 100, Infinity, plain);
    expect(lines[0]).toBe("synartesis watch  /home/ada/crm/synartesis.db                                    2026-03-14 15:30:00");
    expect(lines.filter((line) => /^ {2}\d\d:\d\d|^ {2}2026-/.test(line))).toHaveLength(RECENT.length);
  });

  test("the journal does not exist yet", () => {
    const missing: WatchState = { journalPath: PATH, now: NOW, live: true, command: "synartesis" };
    expect(frame(missing, 100, 40)).toMatchInlineSnapshot(`
      "synartesis watch  /home/ada/crm/synartesis.db                                 15:30:00  Ctrl-C quits

      Waiting for the first run at /home/ada/crm/synartesis.db
      The journal is created when an agent first connects through \`synartesis proxy\`.
      This view shows it as soon as it appears."
    `);
    expect(frame({ ...missing, live: false }, 100, 40)).toMatchInlineSnapshot(`
      "synartesis watch  /home/ada/crm/synartesis.db                                    2026-03-14 15:30:00

      Waiting for the first run at /home/ada/crm/synartesis.db
      The journal is created when an agent first connects through \`synartesis proxy\`."
    `);
  });

  test("an empty journal", () => {
    expect(frame({ ...STATE, journal: { runs: [], recent: [], waiting: [] } }, 80, 40)).toMatchInlineSnapshot(`
      "synartesis watch  /home/ada/crm/synartesis.db             15:30:00  Ctrl-C quits

      Waiting for a decision
        Nothing is waiting.

      Live runs (0)
        No agent is connected.

      Recent calls, newest first
        No calls recorded yet."
    `);
  });

  test("a journal that cannot be read", () => {
    expect(frame({ ...STATE, journal: undefined, problem: "file is not a database" }, 80, 40)).toMatchInlineSnapshot(`
      "synartesis watch  /home/ada/crm/synartesis.db             15:30:00  Ctrl-C quits

      Cannot read the journal: file is not a database
      Trying again every second."
    `);
  });

  test("the gated-call section gives the exact commands, with the journal path quoted for a shell", () => {
    const state: WatchState = { ...STATE, journalPath: "/home/ada/my crm/synartesis.db", journal: { runs: [], recent: [], waiting: [SEND] } };
    const text = frame(state, 120, 40);
    expect(text).toContain("    approve  synartesis approve a0000001 --journal '/home/ada/my crm/synartesis.db'\n");
    expect(text).toContain("    deny     synartesis deny a0000001 --journal '/home/ada/my crm/synartesis.db'\n");
    expect(text).toContain("    why      crm.send_email is irreversible: once it runs it cannot be undone\n");
    expect(decisionWords("approve", "a0000001", { command: state.command, journalPath: state.journalPath }).join(" ")).toBe(
      "synartesis approve a0000001 --journal '/home/ada/my crm/synartesis.db'",
    );
    // Narrow: wrapped lines rejoin (shell continuation) into the same command.
    for (const columns of [50, 64, 80]) {
      const lines = renderWatch(state, columns, 40, plain);
      const start = lines.findIndex((line) => line.startsWith("    approve  "));
      let command = lines[start]!.slice(13);
      for (let i = start + 1; command.endsWith(" \\"); i++) command = command.slice(0, -2) + " " + lines[i]!.trimStart();
      expect(command).toBe("synartesis approve a0000001 --journal '/home/ada/my crm/synartesis.db'");
    }
  });

  test("a spent approval shows as used; agent text cannot reach the terminal as control codes", () => {
    const text = frame(STATE, 160, 40);
    expect(text).toMatch(/15:29:00 +⚠ +used +crm\.send_email/);
    expect(text).not.toMatch(/[\x00-\x09\x0b-\x1f]/);
    expect(text).toContain("claude-code \\x07 with");
  });

  test("colour is the plain frame plus SGR codes only", () => {
    for (const [columns, rows] of [
      [60, 30],
      [100, 40],
      [160, 24],
      [100, 12],
    ] as const) {
      const coloured = frame(STATE, columns, rows, colours);
      expect(coloured).toContain("\x1b[");
      expect(strip(coloured)).toBe(frame(STATE, columns, rows, plain));
    }
  });

  test("never wider than the columns, never taller than the rows", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 220 }), fc.integer({ min: 0, max: 60 }), fc.boolean(), fc.boolean(), (columns, rows, coloured, live) => {
        const lines = renderWatch({ ...STATE, live }, columns, rows, coloured ? colours : plain);
        expect(lines.length).toBeLessThanOrEqual(rows);
        for (const line of lines) expect(displayWidth(line)).toBeLessThanOrEqual(columns);
        if (rows >= 8 && columns >= 40) expect(lines.join("\n")).toContain("Waiting for a decision (2)");
      }),
      { numRuns: 300 },
    );
  });
});

describe("style helpers for screens", () => {
  test("fitWidth cuts by terminal columns, keeps colour codes and resets after a cut", () => {
    expect(fitWidth("abcdef", 6)).toBe("abcdef");
    expect(fitWidth("abcdef", 4)).toBe("abc…");
    expect(fitWidth("日本語です", 5)).toBe("日本…");
    expect(fitWidth("\x1b[31mabcdef\x1b[39m", 4)).toBe("\x1b[31mabc…\x1b[0m");
    expect(fitWidth("abc", 0)).toBe("");
  });

  test("printable shows control characters and bidi overrides as escapes", () => {
    expect(printable("a\x1b[2Jb\u202ec\x9bd\te\nf\x00")).toBe("a\\x1b[2Jb\\u202ec\\x9bd\\te\\nf\\x00");
  });
});

describe("watchMode: should the full-screen view run, and if not why", () => {
  test.each([
    [true, false, {}, true, "stdout is a terminal"],
    [true, true, {}, false, "--once prints the state once"],
    [false, false, {}, false, "stdout is not a terminal"],
    [false, true, {}, false, "--once prints the state once"],
    [true, false, { TERM: "dumb" }, false, "TERM=dumb cannot redraw in place"],
    [true, false, { NO_COLOR: "1" }, true, "stdout is a terminal"],
  ] as const)("isTTY=%p once=%p env=%p → live=%p", (isTTY, once, env, live, reason) => {
    expect(watchMode(isTTY, once, env)).toEqual({ live, reason });
  });
});
