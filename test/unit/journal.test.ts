// The journal module against a real SQLite file: pragmas, migrations recorded
// and re-run safely, seq allocation shared by several connections, prefixes.
import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { openJournal, type Journal } from "../../src/journal/journal.ts";
import { MIGRATIONS } from "../../src/journal/migrations.ts";
import { SynartesisError } from "../../src/errors.ts";
import { tempDir } from "../helpers.ts";

const at = "2026-11-29T10:00:00.000Z";

function newAction(journal: Journal, runId: string, tool = "update_customer") {
  return journal.insertAction({
    id: crypto.randomUUID(),
    runId,
    server: "crm",
    tool,
    args: { id: "c_001" },
    class: "reversible",
    status: "pending",
    ts: at,
  });
}

describe("journal", () => {
  test("WAL mode, strict tables and every migration recorded by name; reopening changes nothing", async () => {
    const path = join(tempDir(), "synartesis.db");
    const journal = await openJournal(path, { create: true });
    expect(await journal.appliedMigrations()).toEqual(MIGRATIONS.map((m) => m.name));
    await journal.close();
    const db = new Database(path, { readonly: true });
    expect((db.query("PRAGMA journal_mode").get() as any).journal_mode).toBe("wal");
    const tables = db.query("SELECT name, strict FROM pragma_table_list WHERE schema = 'main' AND name NOT LIKE 'sqlite_%' ORDER BY name").all();
    expect(tables).toEqual([
      { name: "actions", strict: 1 },
      { name: "migrations", strict: 1 },
      { name: "runs", strict: 1 },
    ]);
    db.close();
    const again = await openJournal(path, { create: false });
    expect(await again.appliedMigrations()).toEqual(MIGRATIONS.map((m) => m.name));
    await again.close();
  });

  test("a journal written by an older version (only the first migration) is upgraded in place, its rows kept", async () => {
    const path = join(tempDir(), "synartesis.db");
    // What the first release wrote: the first migration and a run recorded under it.
    const old = new Database(path, { create: true });
    old.run("PRAGMA journal_mode = WAL");
    old.run("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL) STRICT");
    old.run(MIGRATIONS[0]!.sql);
    old.run("INSERT INTO migrations (name, applied_at) VALUES (?, ?)", [MIGRATIONS[0]!.name, at]);
    old.run("INSERT INTO runs (id, label, started_at, status) VALUES ('r-old', 'old-agent', ?, 'complete')", [at]);
    old.run(
      `INSERT INTO actions (id, run_id, seq, server, tool, args, class, status, ts)
       VALUES ('a-old', 'r-old', 1, 'crm', 'update_customer', '{"id":"c_001"}', 'reversible', 'applied', ?)`,
      [at],
    );
    old.close();

    const upgraded = await openJournal(path, { create: false });
    expect(await upgraded.appliedMigrations()).toEqual(MIGRATIONS.map((m) => m.name));
    expect(await upgraded.getRun("r-old")).toMatchObject({ label: "old-agent", status: "complete" });
    expect((await upgraded.actionsOfRun("r-old")).map((a) => [a.tool, a.status, a.undoNote])).toEqual([["update_customer", "applied", undefined]]);
    // The new columns work on the old rows.
    const run = await upgraded.startRun({ id: "r-new", label: "new-agent", startedAt: at, manifest: "/abs/synartesis.yaml" });
    expect(run.manifest).toBe("/abs/synartesis.yaml");
    await upgraded.close();
  });

  test("a missing journal is refused, not created, unless asked to create", async () => {
    const path = join(tempDir(), "nested", "synartesis.db");
    await expect(openJournal(path, { create: false })).rejects.toThrow(SynartesisError);
    expect(existsSync(path)).toBe(false);
    await (await openJournal(path, { create: true })).close();
    expect(existsSync(path)).toBe(true);
  });

  test("two connections share seq allocation without gaps or duplicates", async () => {
    const path = join(tempDir(), "synartesis.db");
    const a = await openJournal(path, { create: true });
    const b = await openJournal(path, { create: false });
    const run = await a.startRun({ id: crypto.randomUUID(), label: "shared", startedAt: at });
    const seqs: number[] = [];
    for (let i = 0; i < 50; i++) seqs.push((await newAction(i % 2 ? a : b, run.id)).seq);
    expect(seqs).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect((await b.actionsOfRun(run.id)).map((x) => x.seq)).toEqual(seqs);
    await a.close();
    await b.close();
  });

  test("runs and actions are found by any unique prefix, with or without dashes; ambiguity names the matches", async () => {
    const journal = await openJournal(join(tempDir(), "synartesis.db"), { create: true });
    const one = await journal.startRun({ id: "4e77975e-1111-4000-8000-000000000001", label: "a", startedAt: at });
    await journal.startRun({ id: "4e77975e-2222-4000-8000-000000000002", label: "b", startedAt: "2026-11-29T11:00:00.000Z" });
    expect((await journal.findRun("4e77975e-11")).id).toBe(one.id);
    expect((await journal.findRun("4e77975e11")).id).toBe(one.id);
    expect((await journal.findRun(undefined)).label).toBe("b");
    await expect(journal.findRun("4e77")).rejects.toThrow('"4e77" matches 2 runs: 4e77975e-222, 4e77975e-111');
    await expect(journal.findRun("ffff")).rejects.toThrow('no run id starts with "ffff"');
    const action = await newAction(journal, one.id);
    expect((await journal.findAction(action.id.slice(0, 8))).id).toBe(action.id);
    await journal.close();
  });

  test("a session's end does not overwrite what undo decided", async () => {
    const journal = await openJournal(join(tempDir(), "synartesis.db"), { create: true });
    const run = await journal.startRun({ id: crypto.randomUUID(), label: "a", startedAt: at });
    await journal.setRunStatus(run.id, "partial", at);
    await journal.completeRun(run.id, "2026-11-29T12:00:00.000Z");
    expect((await journal.getRun(run.id))!.status).toBe("partial");
    await journal.close();
  });
});
