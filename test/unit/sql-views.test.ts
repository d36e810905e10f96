// How a recorded statement of SQL reads in `show` and on the review page
// (R-SQL-6): its statement and the text it was pinned to, its table, and each
// row it touched column by column (not the JSON of Synartesis's reads); and
// undo's drift for it, row by row. Values are the database's literals, made
// printable wherever they came from.
import { expect, test } from "bun:test";
import type { Action } from "../../src/journal/types.ts";
import { sqlDrift, sqlNotes } from "../../src/render/sql-rows.ts";
import { callView } from "../../src/ui/views.ts";

const rows = (list: string[][]) => ({ absent: false as const, payload: [{ synartesis_rows: JSON.stringify(list) }] });

const action: Action = {
  id: "a1b2c3d4e5",
  runId: "r1",
  seq: 1,
  server: "db",
  tool: "write_query",
  args: { query: "UPDATE customers SET note = 'x' WHERE id < 3" },
  class: "reversible",
  status: "applied",
  ts: "2026-12-02T04:00:00.000Z",
  warnings: [],
  snapshot: {
    absent: false,
    payload: {
      statement: "UPDATE customers SET note = 'x' WHERE id < 3",
      pinned: `UPDATE customers SET note = 'x' WHERE (id < 3) AND "id" IN (1, 2)`,
      table: "customers",
      key: ["id"],
      columns: ["id", "name", "note"],
      rows: [
        ["1", "1", "'Ada'", "NULL"],
        ["2", "2", "'Bob\u001b[2J'", "'vip'"],
      ],
    },
  },
  postState: rows([
    ["1", "1", "'Ada'", "'x'"],
    ["2", "2", "'Bob\u001b[2J'", "'x'"],
  ]),
};

test("show and the page: the statement, as pinned, and each row before → after, column by column", () => {
  expect(sqlNotes(action)).toEqual([
    { label: "sql", text: "UPDATE customers SET note = 'x' WHERE id < 3" },
    { label: "pinned", text: `UPDATE customers SET note = 'x' WHERE (id < 3) AND "id" IN (1, 2)` },
    { label: "rows", text: "table customers: 2 row(s) changed" },
    { label: "", text: "row id = 1: note: NULL → 'x'" },
    { label: "", text: "row id = 2: note: 'vip' → 'x'" },
  ]);
  const view = callView(action, (verb, id) => `synartesis ${verb} ${id}`);
  expect(view.states).toBeUndefined();
  expect(view.notes.filter((note) => ["sql", "pinned", "rows", ""].includes(note.label)).map((note) => note.text)).toHaveLength(5);
});

test("undo's drift: only the rows and columns someone changed since, made printable; a PostgreSQL row's xmin is not a value", () => {
  const now = rows([
    ["1", "1", "'Ada'", "'x'"],
    ["2", "2", "'Bob\u001b[2J'", "'someone'"],
  ]);
  expect(sqlDrift(action, action.postState, now)).toEqual(["table customers, as the agent's statement left it → now:", "row id = 2: note: 'x' → 'someone'"]);
  const withWriters = rows([["1", "1", "'Ada'", "'x'", "777"]]);
  expect(sqlDrift(action, rows([["1", "1", "'Ada'", "'x'", "700"]]), withWriters)).toEqual(["table customers, as the agent's statement left it → now:"]);
  const gone = sqlDrift(action, action.postState, rows([["1", "1", "'Ada'", "'x'"]]));
  expect(gone).toEqual(["table customers, as the agent's statement left it → now:", "row id = 2: gone since"]);
  const hostile = sqlNotes({ ...action, postState: rows([["2", "2", "'Bob\u001b[2J'", "'\u202e'"]]) });
  expect(hostile.map((note) => note.text).join("\n")).not.toMatch(/[\u001b\u202e]/);
});
