// The SQLite journal, a finished call whose outcome is committed with the
// next call's intent ("with-next"): the outcome is committed as text, so
// nothing is compressed on the way to the call that waits for it, and the
// body is packed in the next turn of the event loop — unless the row's body
// changed meanwhile; what is still waiting when the journal closes is packed
// then. Every row reads back the same either way.
import { Database } from "bun:sqlite";
import { expect, test } from "bun:test";
import { join } from "node:path";
import { openJournal, type Journal, type NewAction } from "../../src/journal/journal.ts";
import { DICTIONARY_SAMPLES } from "../../src/journal/packing.ts";
import { tempDir } from "../helpers.ts";

const T0 = "2026-12-01T10:00:00.000Z";
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

function action(runId: string, n: number): NewAction {
  const before = { id: `c_${n}`, name: `Customer ${n}`, email: `customer${n}@example.com`, plan: "pro", notes: `account opened, batch ${n}` };
  return {
    id: crypto.randomUUID(), runId, server: "crm", tool: "update_customer", args: { id: before.id, plan: "free" }, class: "reversible",
    status: "pending", ts: T0, snapshot: { absent: false, payload: before },
  };
}

/** A journal with a run and DICTIONARY_SAMPLES finished calls, so that the tool has a dictionary and bodies are packed. */
async function journalWithDictionary(): Promise<{ journal: Journal; path: string; runId: string; finish(n: number, group?: "with-next"): Promise<string> }> {
  const path = join(tempDir(), "synartesis.db");
  const journal = await openJournal(path, { create: true });
  const runId = crypto.randomUUID();
  await journal.startRun({ id: runId, label: "agent", startedAt: T0 });
  const finish = async (n: number, group?: "with-next") => {
    const intent = await journal.insertAction(action(runId, n));
    const payload = { id: `c_${n}`, plan: "free" };
    await journal.finishAction(intent.id, { status: "applied", resultText: JSON.stringify({ structuredContent: payload }), postState: { absent: false, payload } }, group && { group });
    return intent.id;
  };
  for (let n = 1; n <= DICTIONARY_SAMPLES + 1; n++) await finish(n);
  return { journal, path, runId, finish };
}

const packedOf = (path: string, id: string) => {
  const db = new Database(path, { readonly: true });
  try {
    return (db.query("SELECT packed FROM actions WHERE id = ?").get(id) as { packed: Uint8Array | null }).packed;
  } finally {
    db.close();
  }
};

test("committed as text with the next write, packed in the next turn; it reads back the same", async () => {
  const { journal, path, runId, finish } = await journalWithDictionary();
  const packedNow = await finish(100);
  expect(packedOf(path, packedNow)).toBeInstanceOf(Uint8Array);
  const outcome = finish(101, "with-next");
  // The outcome is committed with the next write (here the next call's intent) …
  const next = await journal.insertAction(action(runId, 102));
  const id = await outcome;
  expect(packedOf(path, id)).toBeNull();
  // … and packed once that has left.
  await nextTurn();
  await nextTurn();
  expect(packedOf(path, id)).toBeInstanceOf(Uint8Array);
  const [read] = (await journal.actionsOfRun(runId)).filter((a) => a.id === id);
  expect(read).toMatchObject({ status: "applied", args: { id: "c_101", plan: "free" }, postState: { absent: false, payload: { id: "c_101", plan: "free" } } });
  expect(read!.snapshot).toEqual(action(runId, 101).snapshot);
  expect(next.seq).toBe(read!.seq + 1);
  await journal.close();
});

test("a body changed by another connection before it was packed is left as that connection wrote it", async () => {
  const { journal, path, runId, finish } = await journalWithDictionary();
  const outcome = finish(200, "with-next");
  await journal.insertAction(action(runId, 201));
  const id = await outcome;
  const other = new Database(path);
  other.query("UPDATE actions SET inverse = ? WHERE id = ?").run('{"server":"crm","tool":"update_customer","args":{"id":"c_200"}}', id);
  other.close();
  await nextTurn();
  await nextTurn();
  expect(packedOf(path, id)).toBeNull();
  expect((await journal.getAction(id))!.inverse).toEqual({ server: "crm", tool: "update_customer", args: { id: "c_200" } });
  await journal.close();
});

test("what is still waiting to be packed when the journal closes is packed then", async () => {
  const { journal, path, runId, finish } = await journalWithDictionary();
  const outcome = finish(300, "with-next");
  await journal.insertAction(action(runId, 301));
  const id = await outcome;
  await journal.close();
  expect(packedOf(path, id)).toBeInstanceOf(Uint8Array);
});
