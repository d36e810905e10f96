// One contract for both journals (R-TEAM-1, R-JOURNAL): every behaviour the
// commands rely on, run against a real SQLite file and a real PostgreSQL
// database (when SYNARTESIS_TEST_POSTGRES names a server; see
// test/fixtures/postgres.ts), then what only one of them has.
// Concurrency is real: several connections race for the same seq, approval,
// denial and claim, and each is had exactly once.
import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { JournalError, openJournal, type Journal, type NewAction } from "../../src/journal/journal.ts";
import { MIGRATIONS } from "../../src/journal/migrations.ts";
import { POSTGRES_MIGRATIONS } from "../../src/journal/postgres/migrations.ts";
import { DICTIONARY_SAMPLES, dictionaryIdOf } from "../../src/journal/packing.ts";
import type { Action } from "../../src/journal/types.ts";
import { statesOf, verifyRun } from "../../src/journal/chain.ts";
import { tempDir } from "../helpers.ts";
import { clientFor, describePostgres, firstMigrationOnly, freshDatabase, testPassword, urlFor } from "../fixtures/postgres.ts";

const T0 = "2026-11-29T10:00:00.000Z";
const T1 = "2026-11-29T11:00:00.000Z";
const T2 = "2026-11-29T12:00:00.000Z";

/** What a backend gives the contract: a place with no journal yet, and raw SQL for what the journal itself never writes. */
interface Backend {
  name: string;
  fresh(): Promise<string>;
  /** Write what the first release wrote there: the first migration only, and these statements after it. */
  firstMigrationOnly(location: string, statements: string[]): Promise<void>;
  /** The migrations names recorded, read directly. */
  migrationRows(location: string): Promise<string[]>;
  /** How text with U+0000 in it reads back (PostgreSQL's text cannot hold it). */
  nul: string;
  /** Run SQL on the journal directly (in its schema), as something other than the journal would. */
  raw(location: string, statement: string): Promise<Array<Record<string, unknown>>>;
}

const sqlite: Backend = {
  name: "SQLite file",
  fresh: async () => join(tempDir("syn-contract-"), "synartesis.db"),
  async firstMigrationOnly(location, statements) {
    const db = new Database(location, { create: true });
    db.run("PRAGMA journal_mode = WAL");
    db.run("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL) STRICT");
    db.run(MIGRATIONS[0]!.sql);
    db.run("INSERT INTO migrations (name, applied_at) VALUES (?, ?)", [MIGRATIONS[0]!.name, T0]);
    for (const statement of statements) db.run(statement);
    db.close();
  },
  async migrationRows(location) {
    const db = new Database(location, { readonly: true });
    try {
      return (db.query("SELECT name FROM migrations ORDER BY rowid").all() as Array<{ name: string }>).map((r) => r.name);
    } finally {
      db.close();
    }
  },
  nul: "\0",
  async raw(location, statement) {
    const db = new Database(location);
    try {
      return db.query(statement).all() as Array<Record<string, unknown>>;
    } finally {
      db.close();
    }
  },
};

const postgres: Backend = {
  name: "PostgreSQL",
  fresh: async () => urlFor(await freshDatabase()),
  firstMigrationOnly: (location, statements) => firstMigrationOnly(new URL(location).pathname.slice(1), statements),
  async migrationRows(location) {
    const sql = clientFor(new URL(location).pathname.slice(1));
    try {
      return (await sql`SELECT name FROM migrations ORDER BY position`).map((r: { name: string }) => r.name);
    } finally {
      await sql.close();
    }
  },
  nul: "\uFFFD",
  async raw(location, statement) {
    const sql = clientFor(new URL(location).pathname.slice(1));
    try {
      return [...(await sql.unsafe(statement))];
    } finally {
      await sql.close();
    }
  },
};

function action(runId: string, fields: Partial<NewAction> = {}): NewAction {
  return {
    id: crypto.randomUUID(),
    runId,
    server: "crm",
    tool: "update_customer",
    args: { id: "c_001" },
    class: "reversible",
    status: "pending",
    ts: T0,
    ...fields,
  };
}

/** Open `count` connections to one journal, run `work` with them, close them. */
async function connections<T>(location: string, count: number, work: (journals: Journal[]) => Promise<T>): Promise<T> {
  const journals = await Promise.all(Array.from({ length: count }, () => openJournal(location, { create: true })));
  try {
    return await work(journals);
  } finally {
    await Promise.all(journals.map((j) => j.close()));
  }
}

/** A fresh journal with one run; `work` gets both. */
async function withRun<T>(backend: Backend, work: (journal: Journal, runId: string, location: string) => Promise<T>): Promise<T> {
  const location = await backend.fresh();
  const journal = await openJournal(location, { create: true });
  try {
    const run = await journal.startRun({ id: crypto.randomUUID(), label: "agent", startedAt: T0, host: "h", pid: 42, manifest: "/abs/synartesis.yaml" });
    return await work(journal, run.id, location);
  } finally {
    await journal.close();
  }
}

/** A call held for a decision: the gate's request row. */
function held(runId: string, fields: Partial<NewAction> = {}): NewAction {
  return action(runId, {
    tool: "send_email",
    args: { to: "ada@example.com" },
    argsKey: '{"to":"ada@example.com"}',
    class: "irreversible",
    status: "gated",
    heldReason: "it is irreversible",
    ...fields,
  });
}

function contract(backend: Backend): void {
  test("every migration is recorded by name, once; reopening changes nothing", async () => {
    const location = await backend.fresh();
    const journal = await openJournal(location, { create: true });
    const names = (backend === postgres ? POSTGRES_MIGRATIONS : MIGRATIONS).map((m) => m.name);
    expect(names).toEqual(MIGRATIONS.map((m) => m.name));
    expect(await journal.appliedMigrations()).toEqual(names);
    await journal.proveWritable();
    await journal.close();
    const again = await openJournal(location, { create: false });
    expect(await again.appliedMigrations()).toEqual(names);
    await again.close();
    expect(await backend.migrationRows(location)).toEqual(names);
  });

  test("without create, a place with no journal is refused and left as it was", async () => {
    const location = await backend.fresh();
    const refused = await openJournal(location, { create: false }).then(
      () => undefined,
      (error) => error,
    );
    expect(refused).toMatchObject({ code: "no_journal" });
    expect(refused.message).toStartWith("there is no journal at ");
    if (backend === sqlite) expect(existsSync(location)).toBe(false);
    // Still nothing there: a later create starts from the first migration.
    const made = await openJournal(location, { create: true });
    expect(await made.appliedMigrations()).toHaveLength(MIGRATIONS.length);
    await made.close();
  });

  test("several processes opening an empty place at once migrate it once, without colliding", async () => {
    const location = await backend.fresh();
    await connections(location, 6, async (journals) => {
      for (const journal of journals) expect(await journal.appliedMigrations()).toEqual(MIGRATIONS.map((m) => m.name));
    });
    expect(await backend.migrationRows(location)).toEqual(MIGRATIONS.map((m) => m.name));
  });

  test("an older journal (first migration only) is upgraded in place: rows intact, each column given its one meaning", async () => {
    const location = await backend.fresh();
    await backend.firstMigrationOnly(location, [
      `INSERT INTO runs (id, label, started_at, status, last_seq) VALUES ('r-old', 'old-agent', '${T0}', 'complete', 4)`,
      `INSERT INTO actions (id, run_id, seq, server, tool, args, class, status, error, ts)
         VALUES ('a-applied', 'r-old', 1, 'crm', 'update_customer', '{"id":"c_001"}', 'reversible', 'failed', 'the server said no', '${T0}')`,
      `INSERT INTO actions (id, run_id, seq, server, tool, args, args_key, class, status, error, ts)
         VALUES ('a-gated', 'r-old', 2, 'crm', 'send_email', '{"to":"a"}', '{"to":"a"}', 'irreversible', 'gated', 'it is irreversible', '${T0}')`,
      `INSERT INTO actions (id, run_id, seq, server, tool, args, args_key, class, status, error, approved_by, approved_at, spent_by, spent_at, ts)
         VALUES ('a-approved', 'r-old', 3, 'crm', 'send_email', '{"to":"b"}', '{"to":"b"}', 'irreversible', 'approved', 'held: b', 'ann', '${T0}', 'a-spender', '${T1}', '${T0}')`,
      `INSERT INTO actions (id, run_id, seq, server, tool, args, args_key, class, status, error, approved_by, approved_at, reason, spent_by, spent_at, ts)
         VALUES ('a-denied', 'r-old', 4, 'crm', 'send_email', '{"to":"c"}', '{"to":"c"}', 'irreversible', 'denied', 'held: c', 'bob', '${T0}', 'no', 'r-told', '${T1}', '${T0}')`,
    ]);
    const journal = await openJournal(location, { create: false });
    try {
      expect(await journal.appliedMigrations()).toEqual(MIGRATIONS.map((m) => m.name));
      expect(await journal.getRun("r-old")).toMatchObject({ label: "old-agent", status: "complete" });
      const byId = Object.fromEntries((await journal.actionsOfRun("r-old")).map((a) => [a.id, a]));
      expect(byId["a-applied"]).toMatchObject({ seq: 1, status: "failed", error: "the server said no" });
      expect(byId["a-applied"]!.heldReason).toBeUndefined();
      expect(byId["a-gated"]).toMatchObject({ seq: 2, status: "gated", heldReason: "it is irreversible" });
      expect(byId["a-gated"]!.error).toBeUndefined();
      expect(byId["a-approved"]).toMatchObject({ heldReason: "held: b", spentBy: "a-spender", spentAt: T1 });
      expect(byId["a-denied"]).toMatchObject({ heldReason: "held: c", toldRun: "r-told", toldAt: T1, reason: "no" });
      expect(byId["a-denied"]!.spentBy).toBeUndefined();
      // The upgraded journal goes on from where it was.
      expect((await journal.insertAction(action("r-old"))).seq).toBe(5);
      const run = await journal.startRun({ id: "r-new", label: "new-agent", startedAt: T1, manifest: "/abs/synartesis.yaml" });
      expect(run.manifest).toBe("/abs/synartesis.yaml");
    } finally {
      await journal.close();
    }
  });

  test("seq is allocated per run, gapless and unique, by many connections at once", async () => {
    const location = await backend.fresh();
    await connections(location, 4, async (journals) => {
      const runs = await Promise.all(["one", "two"].map((label) => journals[0]!.startRun({ id: crypto.randomUUID(), label, startedAt: T0 })));
      const inserted = await Promise.all(Array.from({ length: 80 }, (_, i) => journals[i % 4]!.insertAction(action(runs[i % 2]!.id))));
      for (const run of runs) {
        const seqs = inserted
          .filter((a) => a.runId === run.id)
          .map((a) => a.seq)
          .sort((a, b) => a - b);
        expect(seqs).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
        expect((await journals[3]!.actionsOfRun(run.id)).map((a) => a.seq)).toEqual(seqs);
      }
    });
  });

  test("the chain: the writes of many connections at once, each row's states in order, chained by whichever connection passes; a write by anything else is not", async () => {
    const location = await backend.fresh();
    const { runs, updated } = await connections(location, 4, async (journals) => {
      const runs = await Promise.all(["one", "two"].map((label) => journals[0]!.startRun({ id: crypto.randomUUID(), label, startedAt: T0 })));
      const inserted = await Promise.all(Array.from({ length: 40 }, (_, i) => journals[i % 4]!.insertAction(action(runs[i % 2]!.id))));
      // Each row finished by another connection than the one that wrote it; a run completed by a third.
      await Promise.all(inserted.map((a, i) => journals[(i + 1) % 4]!.finishAction(a.id, { status: "applied", resultText: `done ${i}` })));
      await journals[2]!.completeRun(runs[0]!.id, T1);
      return { runs, updated: inserted[7]! };
    });
    await connections(location, 1, async ([journal]) => {
      const ids = runs.map((run) => run.id).sort();
      expect((await journal!.runIds()).sort()).toEqual(ids);
      expect((await journal!.chainedRuns()).sort()).toEqual(ids);
      for (const run of runs) {
        const entries = await journal!.chainOf(run.id);
        expect(verifyRun(run.id, await journal!.getRun(run.id), await journal!.actionStatesOf(run.id), entries)).toEqual([]);
        // The run's first state, then for each call its intent and its outcome (in that order), then the run's end.
        const mine = entries.filter((e) => e.action === updated.id);
        if (run.id === updated.runId) expect(mine.map((e) => e.state.status)).toEqual(["pending", "applied"]);
        expect(entries.filter((e) => e.kind === "run").map((e) => e.state.status)).toEqual(run === runs[0] ? ["active", "complete"] : ["active"]);
      }
    });
    await backend.raw(location, `UPDATE actions SET status = 'rolled_back' WHERE id = '${updated.id}'`);
    await connections(location, 1, async ([journal]) => {
      const breaks = verifyRun(
        updated.runId,
        await journal!.getRun(updated.runId),
        await journal!.actionStatesOf(updated.runId),
        await journal!.chainOf(updated.runId),
      );
      expect(breaks.map((b) => b.what)).toEqual([expect.stringMatching(/^its row was changed outside Synartesis \(status differ from its last entry, \d+\)$/)]);
    });
  });

  test("an action given its seq (the order its request arrived) keeps it; one without takes the next after the highest", async () => {
    await withRun(backend, async (journal, runId) => {
      const late = await journal.insertAction(action(runId, { seq: 3 }));
      const early = await journal.insertAction(action(runId, { seq: 1 }));
      const next = await journal.insertAction(action(runId));
      expect([late.seq, early.seq, next.seq]).toEqual([3, 1, 4]);
      expect((await journal.actionsOfRun(runId)).map((a) => [a.id, a.seq])).toEqual([
        [early.id, 1],
        [late.id, 3],
        [next.id, 4],
      ]);
    });
  });

  test("a row's chained state read from its stored bodies, unparsed, is the state of the action read whole: packed or as text, every kind of body", async () => {
    await withRun(backend, async (journal, runId) => {
      const big = "x".repeat(3000);
      const shapes: Array<[Partial<NewAction>, Parameters<Journal["finishAction"]>[1] | undefined]> = [
        [
          {
            args: { id: "c_001", n: 1e21, small: -0, odd: "\u2028 \ud800 \u0000 日本" },
            snapshot: { absent: false, payload: { plan: "pro", n: [1.5, null] } },
          },
          undefined,
        ],
        [
          { snapshot: { absent: true }, argsKey: '{"id":"c_002"}' },
          { status: "applied", resultText: '{"a":  1}', postState: { absent: true }, warnings: ["w"] },
        ],
        [
          { args: { id: "c_003", body: big }, verify: { server: "crm", tool: "get_customer", args: { id: "c_003" }, absentWhen: ["not found"] } },
          {
            status: "applied",
            resultText: big,
            inverse: { server: "crm", tool: "update_customer", args: { id: "c_003", notes: big } },
            postState: { absent: false, payload: { big } },
          },
        ],
        [{ resultText: "" }, { status: "failed", error: "boom" }],
      ];
      for (const [fields, outcome] of shapes) {
        const written = await journal.insertAction(action(runId, fields));
        if (outcome) await journal.finishAction(written.id, outcome);
      }
      const actions = await journal.actionsOfRun(runId);
      expect(actions).toHaveLength(shapes.length);
      expect(await journal.actionStatesOf(runId)).toEqual(statesOf(actions));
    });
  });

  test("an action reads back as written: arguments, snapshot, outcome, warnings, exact result text", async () => {
    await withRun(backend, async (journal, runId) => {
      const args = { id: "c_001", notes: "line\nbreak \u0000 nul, 日本, \x1b[2J", nested: [1, { deep: null }] };
      const written = await journal.insertAction(
        action(runId, {
          args,
          snapshot: { absent: false, payload: { plan: "pro" } },
          verify: { server: "crm", tool: "get_customer", args: { id: "c_001" }, absentWhen: ["not found"] },
        }),
      );
      expect(written).toMatchObject({ seq: 1, args, status: "pending" });
      const resultText = '{"content":[{"type":"text","text":"ok"}],  "isError":false}';
      await journal.finishAction(written.id, {
        status: "applied",
        resultText,
        inverse: { server: "crm", tool: "update_customer", args: { id: "c_001", plan: "pro" } },
        postState: { absent: true },
        warnings: ["w1"],
      });
      // Only a pending call can end: a second outcome changes nothing.
      await journal.finishAction(written.id, { status: "failed", error: "late" });
      const read = (await journal.getAction(written.id))!;
      expect(read).toMatchObject({
        args,
        status: "applied",
        resultText,
        postState: { absent: true },
        snapshot: { absent: false, payload: { plan: "pro" } },
        warnings: ["w1"],
      });
      expect(read.verify).toEqual({ server: "crm", tool: "get_customer", args: { id: "c_001" }, absentWhen: ["not found"] });
      expect(read.error).toBeUndefined();
      expect(await journal.getAction("no-such-id")).toBeUndefined();
    });
  });

  test("bodies are packed against their tool's dictionary (an intent once its outcome is in); a new connection reads every column back exactly; a broken one says so", async () => {
    await withRun(backend, async (journal, runId, location) => {
      const written: Array<{ id: string; args: unknown; snapshot: unknown; postState: unknown; resultText: string; inverse: unknown; verify: unknown }> = [];
      for (let n = 1; n <= DICTIONARY_SAMPLES + 3; n++) {
        const before = { id: `c_${n}`, name: `Customer ${n}`, email: `customer${n}@example.com`, plan: "pro", notes: `account opened, batch ${n}` };
        const after = { ...before, plan: "free", notes: `edit ${n}: 日本 \u0000 "quoted"` };
        const verify = { server: "crm", tool: "get_customer", args: { id: before.id }, absentWhen: ["no customer with id"] };
        const args = { id: before.id, plan: "free", notes: after.notes };
        const intent = await journal.insertAction(action(runId, { args, snapshot: { absent: false, payload: before }, verify }));
        // An intent stays text until its outcome comes, and is packed with it.
        const [pending] = await backend.raw(location, `SELECT args, snapshot, packed FROM actions WHERE id = '${intent.id}'`);
        expect(pending!.packed).toBeNull();
        expect([JSON.parse(String(pending!.args)), JSON.parse(String(pending!.snapshot))]).toEqual([args, before]);
        const resultText = `{"content":[{"type":"text","text":${JSON.stringify(JSON.stringify(after, null, 2))}}], "structuredContent":${JSON.stringify(after)}}`;
        const inverse = { server: "crm", tool: "update_customer", args: before };
        await journal.finishAction(intent.id, { status: "applied", resultText, inverse, postState: { absent: false, payload: after } });
        written.push({ id: intent.id, args, snapshot: before, postState: after, resultText, inverse, verify });
      }
      const big = await journal.insertAction(action(runId, { tool: "read_file", args: { path: "/big" } }));
      const bigText = JSON.stringify({ content: [{ type: "text", text: Array.from({ length: 40_000 }, (_, i) => `line ${i} of a big file`).join("\n") }] });
      await journal.finishAction(big.id, { status: "applied", resultText: bigText });

      const reader = await openJournal(location, { create: false });
      try {
        const read = await reader.actionsOfRun(runId);
        for (const [i, expected] of written.entries()) {
          expect(read[i]).toMatchObject({
            id: expected.id,
            args: expected.args,
            resultText: expected.resultText,
            inverse: expected.inverse,
            verify: expected.verify,
          });
          expect(read[i]!.snapshot).toEqual({ absent: false, payload: expected.snapshot });
          expect(read[i]!.postState).toEqual({ absent: false, payload: expected.postState });
        }
        expect((await reader.getAction(big.id))!.resultText).toBe(bigText);
      } finally {
        await reader.close();
      }

      const rows = await backend.raw(location, "SELECT id, args, result, packed FROM actions ORDER BY seq");
      expect(rows.map((row) => [row.args, row.result])).toEqual(rows.map(() => ["", null]));
      const [dictionary] = await backend.raw(location, "SELECT id, server, tool FROM dictionaries");
      expect(dictionary).toMatchObject({ server: "crm", tool: "update_customer" });
      const namesIt = rows.slice(0, -1).map((row) => dictionaryIdOf(row.packed as Uint8Array) === Number(dictionary!.id));
      // The body that completes the samples is the first one packed against them.
      expect(namesIt).toEqual([...Array(DICTIONARY_SAMPLES - 1).fill(false), true, true, true, true]);
      expect((rows.at(-1)!.packed as Uint8Array).length).toBeLessThan(bigText.length / 5);

      await backend.raw(location, `UPDATE actions SET packed = ${backend === sqlite ? "X'020507'" : "'\\x020507'::bytea"} WHERE id = '${written[0]!.id}'`);
      const broken = await journal.getAction(written[0]!.id).catch((error) => error);
      expect(broken).toBeInstanceOf(JournalError);
      expect(broken.message).toContain(`the packed body of action ${written[0]!.id} cannot be read: it was compressed against dictionary 5`);
    });
  });

  test("a write that may be grouped resolves once committed, and another connection then sees it; close commits what is left", async () => {
    const location = await backend.fresh();
    const journal = await openJournal(location, { create: true });
    const other = await openJournal(location, { create: false });
    try {
      const { id: runId } = await journal.startRun({ id: crypto.randomUUID(), label: "agent", startedAt: T0 });
      const call = await journal.insertAction(action(runId));
      const finished = journal.finishAction(call.id, { status: "applied", warnings: ["w"] }, { group: "with-next" });
      const read = journal.insertAction(action(runId, { class: "readonly", status: "applied", resultText: '{"content":[]}' }), { group: "soon" });
      await finished;
      expect((await read).seq).toBe(2);
      expect(await other.getAction(call.id)).toMatchObject({ status: "applied", warnings: ["w"] });
      const last = await journal.insertAction(action(runId));
      const noted = journal.noteUndo(last.id, "noted", { group: "with-next" });
      await journal.close();
      await noted;
      expect(await other.getAction(last.id)).toMatchObject({ undoNote: "noted" });
    } finally {
      await other.close();
    }
  });

  test("a pending call notes a new pre-read and its task (R-ERA-3, R-ERA-4); once it ended, its row keeps what it had", async () => {
    await withRun(backend, async (journal, runId) => {
      const written = await journal.insertAction(action(runId, { snapshot: { absent: false, payload: { plan: "pro" } } }));
      await journal.notePending(written.id, { snapshot: { absent: true } });
      expect((await journal.getAction(written.id))!.snapshot).toEqual({ absent: true });
      await journal.notePending(written.id, { task: "task-7" });
      await journal.notePending(written.id, { snapshot: { absent: false, payload: { plan: "free" } } });
      expect(await journal.getAction(written.id)).toMatchObject({ status: "pending", task: "task-7", snapshot: { absent: false, payload: { plan: "free" } } });
      await journal.finishAction(written.id, { status: "applied" });
      await journal.notePending(written.id, { snapshot: { absent: true }, task: "other" });
      expect(await journal.getAction(written.id)).toMatchObject({ status: "applied", task: "task-7", snapshot: { absent: false, payload: { plan: "free" } } });
    });
  });

  test("text an agent or server chose is kept (U+0000 shown as the backend can hold it)", async () => {
    const location = await backend.fresh();
    const journal = await openJournal(location, { create: true });
    try {
      const run = await journal.startRun({ id: crypto.randomUUID(), label: "agent \u0000 \x1b[31mred 日本", startedAt: T0 });
      expect((await journal.getRun(run.id))!.label).toBe(`agent ${backend.nul} \x1b[31mred 日本`);
      const failed = await journal.insertAction(action(run.id, { status: "failed", error: "bad\u0000byte" }));
      expect((await journal.getAction(failed.id))!.error).toBe(`bad${backend.nul}byte`);
    } finally {
      await journal.close();
    }
  });

  test("runs: found by any unique prefix with or without dashes, the latest by default, ambiguity named", async () => {
    const location = await backend.fresh();
    const journal = await openJournal(location, { create: true });
    try {
      await expect(journal.findRun(undefined)).rejects.toThrow(`the journal ${journal.path} has no runs yet`);
      const one = await journal.startRun({ id: "4e77975e-1111-4000-8000-000000000001", label: "a", startedAt: T0 });
      await journal.startRun({ id: "4e77975e-2222-4000-8000-000000000002", label: "b", startedAt: T1 });
      expect((await journal.findRun("4e77975e-11")).id).toBe(one.id);
      expect((await journal.findRun("4e77975e11")).id).toBe(one.id);
      expect((await journal.findRun(undefined)).label).toBe("b");
      await expect(journal.findRun("4e77")).rejects.toThrow('"4e77" matches 2 runs: 4e77975e-222, 4e77975e-111');
      await expect(journal.findRun("ffff")).rejects.toThrow('no run id starts with "ffff"');
      await expect(journal.findRun("4e7_")).rejects.toThrow('no run id starts with "4e7_"');
      const first = await journal.insertAction(action(one.id, { id: "9a000000-0000-4000-8000-000000000001" }));
      await journal.insertAction(action(one.id, { id: "9a000000-0000-4000-8000-000000000002" }));
      await expect(journal.findAction("9a00")).rejects.toThrow('"9a00" matches 2 actions: 9a000000-000, 9a000000-000');
      expect((await journal.findAction("9a000000000040008000000000000001")).id).toBe(first.id);
    } finally {
      await journal.close();
    }
  });

  test("runs: listed newest first with their counts; a session's end never overwrites undo's verdict", async () => {
    await withRun(backend, async (journal, runId) => {
      const later = await journal.startRun({ id: crypto.randomUUID(), label: "later", startedAt: T1 });
      await journal.insertAction(action(runId));
      await journal.insertAction(held(runId));
      const done = await journal.insertAction(action(runId));
      await journal.finishAction(done.id, { status: "applied" });
      const list = await journal.listRuns();
      expect(list.map((r) => [r.label, r.actions, r.unknown, r.waiting])).toEqual([
        ["later", 0, 0, 0],
        ["agent", 3, 1, 1],
      ]);
      expect(list[1]).toMatchObject({ host: "h", pid: 42, manifest: "/abs/synartesis.yaml", status: "active" });

      await journal.completeRun(later.id, T1);
      expect(await journal.getRun(later.id)).toMatchObject({ status: "complete", endedAt: T1 });
      await journal.setRunStatus({ id: runId, status: "partial", at: T0, undoneBy: "ann" });
      await journal.completeRun(runId, T1);
      expect(await journal.getRun(runId)).toMatchObject({ status: "partial", endedAt: T0, undoneBy: "ann", undoneAt: T0 });
      await journal.setRunStatus({ id: runId, status: "rolled_back", at: T1 });
      expect(await journal.getRun(runId)).toMatchObject({ status: "rolled_back", endedAt: T0, undoneBy: "ann", undoneAt: T0 });
    });
  });

  test("recent actions newest first; what waits oldest first; an open request is found by its exact call", async () => {
    await withRun(backend, async (journal, runId) => {
      const a = await journal.insertAction(held(runId, { ts: T0 }));
      const b = await journal.insertAction(held(runId, { ts: T1, args: { to: "b" }, argsKey: '{"to":"b"}' }));
      const c = await journal.insertAction(action(runId, { ts: T1 }));
      expect((await journal.recentActions(2)).map((x) => x.id)).toEqual([c.id, b.id]);
      expect((await journal.waiting()).map((x) => x.id)).toEqual([a.id, b.id]);
      expect((await journal.openRequest({ server: "crm", tool: "send_email", argsKey: '{"to":"b"}' }))?.id).toBe(b.id);
      expect(await journal.openRequest({ server: "crm", tool: "send_email", argsKey: '{"to":"z"}' })).toBeUndefined();
      expect(await journal.openRequest({ server: "crm", tool: "send_other", argsKey: '{"to":"b"}' })).toBeUndefined();
    });
  });

  test("a decision is made once: approving again says what it is now; an unknown id is an error", async () => {
    await withRun(backend, async (journal, runId) => {
      const request = await journal.insertAction(held(runId));
      const decided = await journal.decide(request.id, { status: "approved", by: "ann", at: T1 });
      expect(decided).toMatchObject({ action: { status: "approved", approvedBy: "ann", approvedAt: T1, heldReason: "it is irreversible" } });
      expect(await journal.decide(request.id, { status: "denied", by: "bob", at: T1, reason: "late" })).toEqual({ settled: "approved" });
      await expect(journal.decide("no-such-id", { status: "approved", by: "ann", at: T1 })).rejects.toThrow("no action no-such-id");
    });
  });

  test("an approval is spent exactly once, whichever of many connections races for it; given back, it can be spent again", async () => {
    const location = await backend.fresh();
    await connections(location, 5, async (journals) => {
      /** The held email's approval spent by `spender` on `journal`, under rule-a, approved since T0 (unless said). */
      const spend = (journal: Journal, spender: string, { since = T0, rule = "rule-a" }: { since?: string; rule?: string } = {}) =>
        journal.spendApproval({
          call: { server: "crm", tool: "send_email", argsKey: '{"to":"ada@example.com"}' },
          approvedSince: since,
          spender,
          now: T1,
          rule,
        });
      const run = await journals[0]!.startRun({ id: crypto.randomUUID(), label: "agent", startedAt: T0 });
      const request = await journals[0]!.insertAction(held(run.id));
      await journals[1]!.decide(request.id, { status: "approved", by: "ann", at: T1, rule: "rule-a" });
      const spenders = journals.map(() => crypto.randomUUID());
      const spent = await Promise.all(journals.map((j, i) => spend(j, spenders[i]!)));
      const winners = spent.filter((a): a is Action => a !== undefined);
      expect(winners).toHaveLength(1);
      expect(winners[0]).toMatchObject({ id: request.id, spentBy: spenders[spent.indexOf(winners[0])], spentAt: T1 });
      // Not spendable again; an expired one never; given back by its spender only.
      expect(await spend(journals[2]!, "late")).toBeUndefined();
      await journals[3]!.returnApproval(request.id, "not-the-spender");
      expect(await spend(journals[3]!, "late")).toBeUndefined();
      await journals[3]!.returnApproval(request.id, winners[0]!.spentBy!);
      // Given under one rule, it is not spent by a call whose rule is another now (the policy changed since).
      expect(await spend(journals[4]!, "late", { rule: "rule-b" })).toBeUndefined();
      expect(await spend(journals[4]!, "late", { since: "2026-11-29T11:30:00.000Z" })).toBeUndefined();
      expect(await spend(journals[4]!, "again")).toMatchObject({ spentBy: "again" });
    });
  });

  test("a denial is told to exactly one agent, whichever of many connections races for it; a withdrawn request never", async () => {
    const location = await backend.fresh();
    await connections(location, 5, async (journals) => {
      const run = await journals[0]!.startRun({ id: crypto.randomUUID(), label: "agent", startedAt: T0 });
      const request = await journals[0]!.insertAction(held(run.id));
      await journals[1]!.decide(request.id, { status: "denied", by: "bob", at: T1, reason: "no emails" });
      const told = await Promise.all(
        journals.map((j, i) => j.takeDenial({ call: { server: "crm", tool: "send_email", argsKey: '{"to":"ada@example.com"}' }, runId: `run-${i}`, now: T1 })),
      );
      const winners = told.filter((a): a is Action => a !== undefined);
      expect(winners).toHaveLength(1);
      expect(winners[0]).toMatchObject({ id: request.id, approvedBy: "bob", reason: "no emails", toldRun: `run-${told.indexOf(winners[0])}`, toldAt: T1 });
      expect((await journals[2]!.getAction(request.id))!.spentBy).toBeUndefined();

      const withdrawn = await journals[0]!.insertAction(held(run.id, { args: { to: "w" }, argsKey: '{"to":"w"}' }));
      const later = await journals[0]!.insertAction(held(run.id, { args: { to: "v" }, argsKey: '{"to":"v"}' }));
      expect((await journals[3]!.withdrawRequests({ runId: run.id, fromSeq: withdrawn.seq, by: "undo by ann", at: T1 })).map((a) => a.id)).toEqual([
        withdrawn.id,
        later.id,
      ]);
      expect(await journals[3]!.waiting()).toEqual([]);
      expect(await journals[4]!.getAction(withdrawn.id)).toMatchObject({ status: "denied", withdrawnBy: "undo by ann", withdrawnAt: T1 });
      expect(await journals[4]!.takeDenial({ call: { server: "crm", tool: "send_email", argsKey: '{"to":"w"}' }, runId: "run-x", now: T1 })).toBeUndefined();
      expect(await journals[4]!.decide(withdrawn.id, { status: "approved", by: "ann", at: T1 })).toEqual({ settled: "denied" });
    });
  });

  test("an undo claim is had by exactly one of many connections; only a named dead owner's claim is taken over, once", async () => {
    const location = await backend.fresh();
    await connections(location, 5, async (journals) => {
      const run = await journals[0]!.startRun({ id: crypto.randomUUID(), label: "agent", startedAt: T0 });
      const done = await journals[0]!.insertAction(action(run.id));
      await journals[0]!.finishAction(done.id, { status: "applied" });
      const claims = await Promise.all(journals.map((j, i) => j.claim({ id: done.id, owner: `owner-${i}`, now: T1, from: ["applied"] })));
      expect(claims.filter(Boolean)).toHaveLength(1);
      const owner = `owner-${claims.indexOf(true)}`;
      expect(await journals[0]!.getAction(done.id)).toMatchObject({ status: "rolling_back", claimedBy: owner, claimedAt: T1 });
      // Another status, or a claim already held: no.
      expect(await journals[1]!.claim({ id: done.id, owner: "late", now: T1, from: ["applied"] })).toBe(false);

      // Only the owner writes on the claim.
      expect(await journals[2]!.markInverseSent({ id: done.id, owner: "someone-else", at: T1 })).toBe(false);
      await journals[2]!.noteClaim({ id: done.id, owner: "someone-else", undoNote: "not mine" });
      expect((await journals[2]!.getAction(done.id))!.inverseSentAt).toBeUndefined();
      expect(await journals[2]!.markInverseSent({ id: done.id, owner, at: T1 })).toBe(true);
      await journals[2]!.noteClaim({ id: done.id, owner, undoNote: "no answer" });
      expect(await journals[2]!.getAction(done.id)).toMatchObject({ inverseSentAt: T1, undoNote: "no answer" });

      // The owner is gone: many take over at once, one wins; naming the wrong owner never does, nor the
      // claim as it was before its owner restamped it (that owner is alive, and its claim stays its own).
      expect(await journals[3]!.takeOverClaim({ id: done.id, judged: { owner: "not-the-owner", at: T1 }, owner: "new", now: T1 })).toBe(false);
      expect(await journals[3]!.takeOverClaim({ id: done.id, judged: { owner, at: T1 }, owner, now: T2 })).toBe(true);
      expect(await journals[3]!.takeOverClaim({ id: done.id, judged: { owner, at: T1 }, owner: "judged-too-early", now: T2 })).toBe(false);
      expect(await journals[3]!.markInverseSent({ id: done.id, owner, at: T2 })).toBe(true);
      const takeovers = await Promise.all(journals.map((j, i) => j.takeOverClaim({ id: done.id, judged: { owner, at: T2 }, owner: `heir-${i}`, now: T2 })));
      expect(takeovers.filter(Boolean)).toHaveLength(1);
      const heir = `heir-${takeovers.indexOf(true)}`;
      await journals[4]!.settleClaim({ id: done.id, owner, status: "rolled_back" });
      expect((await journals[4]!.getAction(done.id))!.status).toBe("rolling_back");
      await journals[4]!.settleClaim({ id: done.id, owner: heir, status: "applied", undoNote: "drift" });
      expect(await journals[4]!.getAction(done.id)).toMatchObject({ status: "applied", undoNote: "drift" });
      expect((await journals[4]!.getAction(done.id))!.inverseSentAt).toBeUndefined();
      expect(await journals[4]!.claim({ id: done.id, owner: "again", now: T1, from: ["applied"] })).toBe(true);
      await journals[4]!.settleClaim({ id: done.id, owner: "again", status: "rolled_back" });
      expect(await journals[0]!.getAction(done.id)).toMatchObject({ status: "rolled_back" });
      expect((await journals[0]!.getAction(done.id))!.undoNote).toBeUndefined();
    });
  });

  test("settle moves an unknown outcome only from where it was; notes, unrecoverable and replan", async () => {
    await withRun(backend, async (journal, runId) => {
      const unknown = await journal.insertAction(action(runId));
      await journal.noteUndo(unknown.id, "its answer may still come");
      const inverse = { server: "crm", tool: "update_customer", args: { id: "c_001", plan: "pro" } };
      expect(await journal.settle(unknown.id, { status: "applied" }, { status: "applied", settled: "applied", by: "ann", at: T1 })).toBe(false);
      expect(
        await journal.settle(
          unknown.id,
          { status: "pending" },
          { status: "applied", settled: "applied", by: "ann", at: T1, note: "saw it", inverse, warnings: [] },
        ),
      ).toBe(true);
      const settled = (await journal.getAction(unknown.id))!;
      expect(settled).toMatchObject({ status: "applied", settled: "applied", settledBy: "ann", settledAt: T1, settledNote: "saw it", inverse, warnings: [] });
      expect(settled.undoNote).toBeUndefined();

      // A claimed inverse is settled only by the holder named.
      expect(await journal.claim({ id: unknown.id, owner: "undo-1", now: T1, from: ["applied"] })).toBe(true);
      expect(
        await journal.settle(
          unknown.id,
          { status: "rolling_back", claimedBy: "undo-2" },
          { status: "rolled_back", settled: "inverse_applied", by: "ann", at: T1 },
        ),
      ).toBe(false);
      expect(
        await journal.settle(
          unknown.id,
          { status: "rolling_back", claimedBy: "undo-1" },
          { status: "rolled_back", settled: "inverse_applied", by: "ann", at: T1 },
        ),
      ).toBe(true);
      expect((await journal.getAction(unknown.id))!.warnings).toEqual([]);

      const sent = await journal.insertAction(action(runId, { class: "irreversible" }));
      await journal.markUnrecoverable(sent.id);
      expect((await journal.getAction(sent.id))!.status).toBe("pending");
      await journal.finishAction(sent.id, { status: "applied", warnings: ["kept"] });
      await journal.markUnrecoverable(sent.id);
      expect((await journal.getAction(sent.id))!.status).toBe("unrecoverable");
      expect(await journal.settle(sent.id, { status: "pending" }, { status: "applied", settled: "applied", by: "ann", at: T1 })).toBe(false);

      await journal.replan(sent.id, inverse, { ...inverse, tool: "get_customer", absentWhen: [] }, ["rebuilt"]);
      expect(await journal.getAction(sent.id)).toMatchObject({ inverse, verify: { tool: "get_customer", absentWhen: [] }, warnings: ["rebuilt"] });
      await journal.replan(sent.id, undefined, undefined, []);
      const cleared = (await journal.getAction(sent.id))!;
      expect([cleared.inverse, cleared.verify, cleared.warnings]).toEqual([undefined, undefined, []]);
    });
  });

  test("a change committed by another connection wakes a subscriber; stopped, it is quiet", async () => {
    const location = await backend.fresh();
    await connections(location, 2, async ([watcher, writer]) => {
      let changes = 0;
      let woke!: () => void;
      let next = new Promise<void>((resolve) => (woke = resolve));
      const stop = await watcher!.watchChanges(() => {
        changes++;
        woke();
      });
      const run = await writer!.startRun({ id: crypto.randomUUID(), label: "agent", startedAt: T0 });
      await next;
      next = new Promise<void>((resolve) => (woke = resolve));
      await writer!.insertAction(action(run.id));
      await next;
      await stop();
      const seen = changes;
      await writer!.insertAction(action(run.id));
      // A change after stop() would come as fast as the ones before did: another commit and a read later, none came.
      await writer!.completeRun(run.id, T1);
      await watcher!.listRuns();
      expect(changes).toBe(seen);
    });
  });
}

describe("journal contract: SQLite file", () => {
  contract(sqlite);

  test("the change mark moves with a commit of its own or of another connection, and only then (PostgreSQL has none)", async () => {
    await withRun(sqlite, async (journal, runId, location) => {
      const other = await openJournal(location, { create: false });
      try {
        const start = await journal.changeMark();
        expect(start).toMatch(/^\d+:\d+$/);
        await journal.listRuns();
        expect(await journal.changeMark()).toBe(start);
        await journal.insertAction(action(runId));
        const own = await journal.changeMark();
        expect(own).not.toBe(start);
        await other.insertAction(action(runId));
        const theirs = await journal.changeMark();
        expect(theirs).not.toBe(own);
        expect(await journal.changeMark()).toBe(theirs);
      } finally {
        await other.close();
      }
    });
  });

  test("grouped writes ride on the next transaction, one that fails fails alone, and none is seen by others before its commit", async () => {
    await withRun(sqlite, async (journal, runId, location) => {
      const other = await openJournal(location, { create: false });
      try {
        const first = await journal.insertAction(action(runId));
        let committed = false;
        const finished = journal.finishAction(first.id, { status: "applied" }, { group: "with-next" }).then(() => (committed = true));
        const orphan = journal.insertAction(action("no-such-run"), { group: "with-next" }).catch((error) => error);
        expect((await other.getAction(first.id))!.status).toBe("pending");
        expect(committed).toBe(false);
        // The next call's intent commits them with it: the finish, and the failure of the insert into no run, alone.
        const second = await journal.insertAction(action(runId));
        expect(second.seq).toBe(2);
        await finished;
        expect((await other.getAction(first.id))!.status).toBe("applied");
        expect(await orphan).toBeInstanceOf(Error);
        expect((await other.actionsOfRun(runId)).map((a) => a.seq)).toEqual([1, 2]);
        // One grouped alone in its transaction fails alone too: the journal goes on.
        expect(await journal.insertAction(action("no-such-run"), { group: "soon" }).catch((error) => error)).toBeInstanceOf(Error);
        expect((await journal.insertAction(action(runId), { group: "soon" })).seq).toBe(3);
        // Its own reads see a grouped write at once.
        void journal.finishAction(second.id, { status: "failed", error: "no" }, { group: "with-next" });
        expect(await journal.getAction(second.id)).toMatchObject({ status: "failed", error: "no" });
      } finally {
        await other.close();
      }
    });
  });

  test("WAL mode and strict tables", async () => {
    const location = await sqlite.fresh();
    await (await openJournal(location, { create: true })).close();
    const db = new Database(location, { readonly: true });
    try {
      expect((db.query("PRAGMA journal_mode").get() as { journal_mode: string }).journal_mode).toBe("wal");
      const tables = db.query("SELECT name, strict FROM pragma_table_list WHERE schema = 'main' AND name NOT LIKE 'sqlite_%' ORDER BY name").all();
      expect(tables).toEqual([
        { name: "actions", strict: 1 },
        // The chain's copies of rows not chained yet (created as copies of those tables' columns).
        { name: "chain_actions", strict: 0 },
        { name: "chain_origin", strict: 1 },
        { name: "chain_runs", strict: 0 },
        { name: "dictionaries", strict: 1 },
        { name: "entries", strict: 1 },
        { name: "migrations", strict: 1 },
        { name: "runs", strict: 1 },
      ]);
    } finally {
      db.close();
    }
  });

  test("a new journal indexes actions by 8 characters of their run id; an older one keeps its index, rows and rowids; both find a run's rows, older binaries' too", async () => {
    const runIds = ["5f0c2a9e-0000-4000-8000-000000000001", "5f0c2a9e-0000-4000-8000-000000000002"]; // one prefix: the whole id tells them apart
    const older = await sqlite.fresh();
    await sqlite.firstMigrationOnly(older, [
      ...runIds.map((id) => `INSERT INTO runs (id, label, started_at, status, last_seq) VALUES ('${id}', 'old', '${T0}', 'complete', 2)`),
      ...[1, 2].flatMap((seq) =>
        runIds.map(
          (runId, r) =>
            `INSERT INTO actions (id, run_id, seq, server, tool, args, class, status, ts) VALUES ('a-${r}-${seq}', '${runId}', ${seq}, 'crm', 'update_customer', '{}', 'reversible', 'applied', '${T0}')`,
        ),
      ),
    ]);
    const fresh = await sqlite.fresh();
    await (await openJournal(fresh, { create: true })).close();
    await sqlite.raw(
      fresh,
      `INSERT INTO runs (id, label, started_at, status, last_seq) VALUES ${runIds.map((id) => `('${id}', 'new', '${T0}', 'complete', 2)`).join(", ")}`,
    );
    for (const seq of [1, 2]) {
      for (const [r, runId] of runIds.entries()) {
        await sqlite.raw(
          fresh,
          `INSERT INTO actions (id, run_id, seq, server, tool, args, class, status, ts) VALUES ('a-${r}-${seq}', '${runId}', ${seq}, 'crm', 'update_customer', '{}', 'reversible', 'applied', '${T0}')`,
        );
      }
    }
    const indexes = async (location: string) =>
      (await sqlite.raw(location, "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'actions' ORDER BY name")).map((row) => row.name);
    const rowids = await sqlite.raw(older, "SELECT rowid, id FROM actions ORDER BY rowid");

    for (const [location, runIndex] of [
      [older, "sqlite_autoindex_actions_2"],
      [fresh, "actions_of_run"],
    ] as const) {
      const journal = await openJournal(location, { create: false });
      try {
        expect(await journal.appliedMigrations()).toEqual(MIGRATIONS.map((m) => m.name));
        expect(await indexes(location)).toEqual(["actions_gate_key", runIndex, "actions_waiting", "sqlite_autoindex_actions_1"].sort());
        // An older binary's insert (no packed body, no prefix in its queries) is found too.
        await sqlite.raw(location, `UPDATE runs SET last_seq = 3 WHERE id = '${runIds[1]}'`);
        await sqlite.raw(
          location,
          `INSERT INTO actions (id, run_id, seq, server, tool, args, class, status, ts) VALUES ('a-old-binary', '${runIds[1]}', 3, 'crm', 'get_customer', '{}', 'readonly', 'applied', '${T0}')`,
        );
        expect((await journal.actionsOfRun(runIds[0]!)).map((a) => a.id)).toEqual(["a-0-1", "a-0-2"]);
        expect((await journal.actionsOfRun(runIds[1]!)).map((a) => a.id)).toEqual(["a-1-1", "a-1-2", "a-old-binary"]);
        expect((await journal.listRuns()).map((run) => run.actions)).toEqual([3, 2]);
        const plan = await sqlite.raw(
          location,
          `EXPLAIN QUERY PLAN SELECT * FROM actions WHERE substr(run_id, 1, 8) = substr('${runIds[0]}', 1, 8) AND run_id = '${runIds[0]}' ORDER BY seq`,
        );
        expect(plan.map((row) => String(row.detail)).join("\n")).toContain(`USING INDEX ${runIndex}`);
        // seq stays unique per run, by the constraint or by the trigger that stands for it.
        const again = `INSERT INTO actions (id, run_id, seq, server, tool, args, class, status, ts) VALUES ('a-again', '${runIds[0]}', 2, 'crm', 'get_customer', '{}', 'readonly', 'applied', '${T0}')`;
        await expect(sqlite.raw(location, again)).rejects.toThrow("UNIQUE constraint failed: actions.run_id, actions.seq");
      } finally {
        await journal.close();
      }
    }
    // The older journal's rows kept their rowids (its table was not built again).
    expect((await sqlite.raw(older, "SELECT rowid, id FROM actions ORDER BY rowid")).slice(0, rowids.length)).toEqual(rowids);
  });

  test("identity: a journal file deleted or replaced under an open connection says so; a broken file is a JournalError", async () => {
    const location = await sqlite.fresh();
    const journal = await openJournal(location, { create: true });
    expect(await journal.identityLost()).toBeUndefined();
    rmSync(location);
    expect(await journal.identityLost()).toBe(`the journal ${location} was deleted while this proxy was recording into it`);
    await journal.close();
    const notAJournal = await sqlite.fresh();
    writeFileSync(notAJournal, "not a database, just text that is long enough to be read as one ".repeat(20));
    const broken = await openJournal(notAJournal, { create: false }).catch((error) => error);
    expect(broken).toBeInstanceOf(JournalError);
  });
});

describePostgres("journal contract: PostgreSQL", () => {
  contract(postgres);

  test("a subscriber is woken by NOTIFY itself: a bare notification on the journal's channel, with nothing changed, wakes it (no polling would)", async () => {
    const database = await freshDatabase();
    const journal = await openJournal(urlFor(database), { create: true });
    expect(await journal.changeMark()).toBeUndefined();
    const admin = clientFor(database);
    try {
      let woke!: () => void;
      const next = new Promise<void>((resolve) => (woke = resolve));
      const stop = await journal.watchChanges(() => woke());
      await admin`SELECT pg_notify('synartesis_journal', 'runs')`;
      await next;
      await stop();
    } finally {
      await admin.close();
      await journal.close();
    }
  });

  test("connections the server ended (a restart, an administrator) are replaced: the next call works, and a subscriber still wakes", async () => {
    const database = await freshDatabase();
    const journal = await openJournal(urlFor(database), { create: true });
    const writer = await openJournal(urlFor(database), { create: false });
    const admin = clientFor(database);
    try {
      let woke!: () => void;
      let next = new Promise<void>((resolve) => (woke = resolve));
      const stop = await journal.watchChanges(() => woke());
      const run = await journal.startRun({ id: crypto.randomUUID(), label: "agent", startedAt: T0 });
      await next;
      const ended = await admin`SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity
                                 WHERE datname = ${database} AND application_name = 'synartesis' AND pid <> pg_backend_pid()`;
      expect(ended.length).toBeGreaterThanOrEqual(3);
      next = new Promise<void>((resolve) => (woke = resolve));
      expect((await journal.getRun(run.id))?.label).toBe("agent");
      expect((await writer.insertAction(action(run.id))).seq).toBe(1);
      await next;
      await stop();
    } finally {
      await admin.close();
      await writer.close();
      await journal.close();
    }
  });

  test("where it is, as shown, has no password; a wrong password or a closed port is a JournalError that names neither it", async () => {
    const database = await freshDatabase();
    const journal = await openJournal(urlFor(database), { create: true });
    expect(journal.path).toBe(urlFor(database, { password: false }));
    expect(journal.path).not.toContain(testPassword());
    expect(await journal.identityLost()).toBeUndefined();
    await journal.close();

    const wrong = new URL(urlFor(database));
    wrong.password = "wrong-password-123";
    const refused = await openJournal(wrong.toString(), { create: false }).catch((error) => error);
    expect(refused).toBeInstanceOf(JournalError);
    expect(refused.message).toContain("password authentication failed");
    expect(refused.message).not.toContain("wrong-password-123");
    expect(refused.hint).toBe("The password came from the journal URL.");

    const closed = new URL(urlFor(database));
    closed.port = "1";
    const unreachable = await openJournal(closed.toString(), { create: false }).catch((error) => error);
    expect(unreachable).toBeInstanceOf(JournalError);
    expect(unreachable.message).toStartWith(
      `the journal ${closed.toString().replace(`:${closed.password}@`, "@")} cannot be used: no connection to ${closed.hostname}:1: `,
    );
    expect(unreachable.message).not.toContain(testPassword());
  });
});
