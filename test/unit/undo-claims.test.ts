// Two undos of one run on the live world (real SQLite journal, servers
// counted in memory): a claim taken ahead in a batch and restamped by its
// owner is not taken over by an undo that judged it stale before the restamp,
// so the inverse is sent once (R-UNDO-8).
import { expect, test } from "bun:test";
import { hostname } from "node:os";
import { join } from "node:path";
import { openSqliteJournal } from "../../src/journal/sqlite/journal.ts";
import type { UndoSetting } from "../../src/undo/claims.ts";
import { LiveWorld } from "../../src/undo/live-world.ts";
import type { UndoServers } from "../../src/undo/servers.ts";
import { tempDir } from "../helpers.ts";

test("an undo that judged a batch claim stale does not take it over once its owner restamped it: the inverse is sent once", async () => {
  const path = join(tempDir("syn-claims-"), "synartesis.db");
  const [journalA, journalB] = [openSqliteJournal(path, { create: true }), openSqliteJournal(path, { create: true })];
  try {
    const run = await journalA.startRun({ id: crypto.randomUUID(), label: "agent", startedAt: new Date().toISOString() });
    const inserted = await journalA.insertAction({
      id: crypto.randomUUID(),
      runId: run.id,
      server: "crm",
      tool: "update_customer",
      args: { id: "c_001", plan: "free" },
      class: "reversible",
      status: "pending",
      ts: new Date().toISOString(),
    });
    await journalA.finishAction(inserted.id, { status: "applied", inverse: { server: "crm", tool: "update_customer", args: { id: "c_001", plan: "pro" } } });
    const [action] = await journalA.actionsOfRun(run.id);

    let sent = 0;
    const servers = { read: async () => ({ absent: false, payload: {} }), invert: async () => (sent++, { kind: "ok" }) } as unknown as UndoServers;
    const setting = (now: () => Date): UndoSetting => ({ servers, now, leaseMs: 180_000, stillLanding: async () => undefined, idempotent: () => false });
    const log = { warn: () => {} };
    // Undo A claimed its batch ten minutes ago (its earlier steps were slow); B starts now.
    let clockA = Date.now() - 10 * 60_000;
    const undoA = new LiveWorld(
      journalA,
      run,
      setting(() => new Date(clockA)),
      { owner: `${hostname()}:${process.pid}:A`, by: "a", log } as never,
    );
    const undoB = new LiveWorld(
      journalB,
      run,
      setting(() => new Date()),
      { owner: `${hostname()}:${process.pid}:B`, by: "b", log } as never,
    );
    await undoA.prepare([action!]);
    clockA = Date.now();
    const seenByB = await undoB.current(action!); // A's claim, ten minutes old: past its lease
    const seenByA = await undoA.current(action!); // A restamps its claim and goes on
    expect(await undoA.claim(seenByA)).toBe("claimed");
    expect(await undoB.claim(seenByB)).toBe("again");
    await undoA.invert(seenByA, action!.inverse!);
    expect(sent).toBe(1);
    expect(await journalA.getAction(action!.id)).toMatchObject({ status: "rolling_back", claimedBy: `${hostname()}:${process.pid}:A` });
  } finally {
    await journalA.close();
    await journalB.close();
  }
});
