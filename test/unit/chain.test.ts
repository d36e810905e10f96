// The chain's checks (src/journal/chain.ts), pure: entries built as the
// SQLite journal builds them, then one thing changed at a time.
import { describe, expect, test } from "bun:test";
import { actionState, entryHash, genesis, runState, stateDelta, statesOf, verifyRun, type ChainEntry } from "../../src/journal/chain.ts";
import type { Action, Run } from "../../src/journal/types.ts";

const RUN: Run = { id: "11111111-0000-4000-8000-000000000001", label: "agent", startedAt: "2026-12-01T00:00:00.000Z", status: "complete" };
const held: Action = {
  id: "aaaaaaaa-0000-4000-8000-000000000001",
  runId: RUN.id,
  seq: 1,
  server: "crm",
  tool: "send_email",
  args: { to: "ada@example.com" },
  class: "irreversible",
  status: "gated",
  warnings: [],
  ts: "2026-12-01T00:00:01.000Z",
};

/** A chain for `states` (each a run or an action as it stood), each entry what changed since the last of the same row. */
function chainOf(states: Array<Run | Action>): ChainEntry[] {
  const entries: ChainEntry[] = [];
  const last = new Map<string, Record<string, unknown>>();
  let previous = genesis(RUN.id);
  for (const row of states) {
    const isRun = !("seq" in row);
    const state = isRun ? runState(row as Run) : actionState(row as Action);
    const delta = stateDelta(last.get(row.id) ?? {}, state);
    last.set(row.id, state);
    const content = {
      run: RUN.id,
      seq: entries.length + 1,
      kind: isRun ? ("run" as const) : ("action" as const),
      ...(isRun ? {} : { action: row.id }),
      state: delta,
      at: "2026-12-01T00:00:02.000Z",
    };
    previous = entryHash(previous, content);
    entries.push({ ...content, hash: previous });
  }
  return entries;
}

const approved: Action = { ...held, status: "approved", approvedBy: "ann", approvedAt: "2026-12-01T00:01:00.000Z" };

describe("verifyRun", () => {
  test("rows as their entries say: no break; a state folds the changes (a field gone is null)", () => {
    expect(verifyRun(RUN.id, RUN, statesOf([approved]), chainOf([RUN, held, approved]))).toEqual([]);
    expect(stateDelta({ a: 1, b: [1], c: "x" }, { a: 1, b: [2] })).toEqual({ b: [2], c: null });
  });

  test("an entry changed, removed, or out of its run: the first is named", () => {
    const entries = chainOf([RUN, held, approved]);
    const changed = entries.map((e) => (e.seq === 2 ? { ...e, state: { ...e.state, tool: "other" } } : e));
    expect(verifyRun(RUN.id, RUN, statesOf([approved]), changed)[0]).toEqual({
      entry: 2,
      what: "entry 2 was changed or inserted (its hash does not follow from its content and the entry before)",
    });
    expect(verifyRun(RUN.id, RUN, statesOf([approved]), [entries[0]!, entries[2]!])[0]).toEqual({ entry: 2, what: "entry 2 was removed (the next is 3)" });
  });

  test("a forged approval is named twice: the row moved, and no decision recorded it", () => {
    expect(verifyRun(RUN.id, RUN, statesOf([approved]), chainOf([RUN, held]))).toEqual([
      { action: "#1 crm.send_email (aaaaaaaa)", what: "its row was changed outside Synartesis (approvedAt, approvedBy, status differ from its last entry, 2)" },
      { action: "#1 crm.send_email (aaaaaaaa)", what: "it is approved, but no approve, deny or page decision recorded it" },
    ]);
  });

  test("rows removed or inserted, the run's row too", () => {
    const entries = chainOf([RUN, held]);
    expect(verifyRun(RUN.id, undefined, statesOf([]), entries)).toEqual([
      { what: "its row in runs was removed" },
      { entry: 2, action: "#1 crm.send_email (aaaaaaaa)", what: "its row was removed" },
    ]);
    const stranger = { ...held, id: "bbbbbbbb-0000-4000-8000-000000000002", seq: 2 };
    expect(verifyRun(RUN.id, { ...RUN, label: "renamed" }, statesOf([held, stranger]), entries)).toEqual([
      { what: "its row in runs was changed outside Synartesis (label differ from entry 1)" },
      { action: "#2 crm.send_email (bbbbbbbb)", what: "its row has no entry: it was inserted outside Synartesis" },
    ]);
  });

  test("a body is kept as a digest: the same value in another key order is another body", () => {
    const a = actionState({ ...held, args: { to: "a", cc: "b" } });
    const b = actionState({ ...held, args: { cc: "b", to: "a" } });
    expect(typeof a.args).toBe("string");
    expect(a.args).not.toBe(b.args);
    expect(actionState({ ...held, args: { to: "a", cc: "b" } }).args).toBe(a.args);
  });
});
