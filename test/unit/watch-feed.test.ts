// watch's Feed in-process, on a real journal file: it waits for a journal that
// does not exist (and never creates one), reads it once it appears, re-reads
// only when its data version moves, marks runs whose proxy is gone, lets go of
// a journal that was removed, and says why one cannot be read. The frames it
// feeds are snapshots.
process.env.TZ = "UTC";

import { describe, expect, test } from "bun:test";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Feed } from "../../src/commands/watch-feed.ts";
import { openJournal, type Journal } from "../../src/journal/journal.ts";
import { plain } from "../../src/render/style.ts";
import { renderWatch } from "../../src/render/watch.ts";
import { tempDir, until } from "../helpers.ts";

const RUN = "4e77975e-1a2b-4c3d-8e9f-0123456789ab";
const ENDED = "9c0ffee0-aaaa-4bbb-8ccc-dddddddddddd";
const NOW = new Date("2026-03-14T15:30:00.000Z");

/** A journal with a live run (one applied call, one held) and an ended run. */
async function journalWithRuns(path: string): Promise<Journal> {
  const journal = await openJournal(path, { create: true });
  await journal.startRun({ id: ENDED, label: "earlier-agent", startedAt: "2026-03-14T14:00:00.000Z", host: "elsewhere", pid: 1 });
  await journal.completeRun(ENDED, "2026-03-14T14:05:00.000Z");
  await journal.startRun({ id: RUN, label: "claude-code", startedAt: "2026-03-14T15:20:00.000Z", host: "elsewhere", pid: 4242 });
  await journal.insertAction({
    id: "a0000001-0000-4000-8000-000000000000",
    runId: RUN,
    server: "crm",
    tool: "update_customer",
    args: { id: "c_001", plan: "free" },
    class: "reversible",
    status: "applied",
    ts: "2026-03-14T15:25:00.000Z",
  });
  await journal.insertAction({
    id: "a0000002-0000-4000-8000-000000000000",
    runId: RUN,
    server: "crm",
    tool: "send_email",
    args: { to: "ada@example.com" },
    class: "irreversible",
    status: "gated",
    argsKey: "k",
    heldReason: "crm.send_email is irreversible: once it runs it cannot be undone",
    ts: "2026-03-14T15:28:30.000Z",
  });
  return journal;
}

/** The frame watch --once would print from the feed (the journal's temp path shown as a fixed one). */
const frame = (feed: Feed) =>
  renderWatch({ journalPath: SHOWN, now: NOW, live: false, command: "synartesis", journal: feed.view, problem: feed.problem }, 100, Infinity, plain).join("\n");
const SHOWN = "/home/ada/crm/synartesis.db";

describe("Feed", () => {
  test("no journal yet: nothing to show, nothing created, for as long as it takes; an empty file is one being created", async () => {
    const path = join(tempDir(), "synartesis.db");
    const feed = new Feed(path, () => false);
    expect(await feed.poll(10)).toBe(false);
    expect(await feed.poll(10, true)).toBe(false);
    expect([feed.view, feed.problem]).toEqual([undefined, undefined]);
    expect(existsSync(path)).toBe(false);
    writeFileSync(path, "");
    expect(await feed.poll(10)).toBe(false);
    expect(feed.view).toBeUndefined();
    expect(frame(feed)).toMatchInlineSnapshot(`
      "synartesis watch  /home/ada/crm/synartesis.db                                    2026-03-14 15:30:00

      Waiting for the first run at /home/ada/crm/synartesis.db
      The journal is created when an agent first connects through \`synartesis proxy\`."
    `);
  });

  test("reads the journal once it exists, and again only when it changed (or when asked to)", async () => {
    const path = join(tempDir(), "synartesis.db");
    const feed = new Feed(path, () => false);
    expect(await feed.poll(10)).toBe(false);
    const journal = await journalWithRuns(path);
    try {
      expect(await feed.poll(10)).toBe(true);
      expect(feed.view!.runs.map((r) => r.label)).toEqual(["claude-code"]);
      expect(feed.view!.recent.map((a) => a.tool)).toEqual(["send_email", "update_customer"]);
      expect(feed.view!.waiting.map((a) => a.tool)).toEqual(["send_email"]);
      expect(await feed.poll(10)).toBe(false);
      expect(await feed.poll(10, true)).toBe(true);
      // Another connection writes: the journal tells the feed (a file polls its data version), and it reads again.
      await journal.decide("a0000002-0000-4000-8000-000000000000", { status: "approved", by: "alice", at: "2026-03-14T15:29:00.000Z" });
      await until(() => feed.poll(10), "the feed to see the change");
      expect(feed.view!.waiting).toEqual([]);
      expect(await feed.poll(1, true)).toBe(true);
      expect(feed.view!.recent.map((a) => a.tool)).toEqual(["send_email"]);
    } finally {
      feed.close();
      await journal.close();
    }
  });

  test("a run whose proxy is gone is marked, at once and on each refresh", async () => {
    const path = join(tempDir(), "synartesis.db");
    await (await journalWithRuns(path)).close();
    let gone = false;
    const feed = new Feed(path, (run) => gone && run.pid === 4242);
    await feed.poll(10);
    expect(feed.view!.runs[0]!.gone).toBeUndefined();
    gone = true;
    feed.refresh();
    expect(feed.view!.runs[0]!.gone).toBe(true);
    expect(frame(feed)).toMatchInlineSnapshot(`
      "synartesis watch  /home/ada/crm/synartesis.db                                    2026-03-14 15:30:00

      Waiting for a decision (1)
        a0000002  ⚠ irreversible  crm.send_email {"to":"ada@example.com"}
          why      crm.send_email is irreversible: once it runs it cannot be undone
          since    15:28:30 (1m ago), run 4e77975e
          approve  synartesis approve a0000002 --journal /home/ada/crm/synartesis.db
          deny     synartesis deny a0000002 --journal /home/ada/crm/synartesis.db

      Live runs (1)
        4e77975e  claude-code  2 calls, 1 waiting, proxy gone  since 15:20:00 (10m ago)

      Recent calls, newest first
        15:28:30  ⚠  gated    crm.send_email {"to":"ada@example.com"}
        15:25:00  ↺  applied  crm.update_customer {"id":"c_001","plan":"free"}"
    `);
    feed.close();
  });

  test("a journal removed while watched is let go of; a file that is not a journal says why", async () => {
    const dir = tempDir();
    const path = join(dir, "synartesis.db");
    await (await journalWithRuns(path)).close();
    const feed = new Feed(path, () => false, 0);
    expect(await feed.poll(10)).toBe(true);
    for (const file of [path, `${path}-wal`, `${path}-shm`]) rmSync(file, { force: true });
    feed.refresh();
    expect([feed.view, feed.problem]).toEqual([undefined, undefined]);

    writeFileSync(path, "this is not a database, it is a text file that is long enough to look like one");
    expect(await feed.poll(10)).toBe(true);
    expect(feed.view).toBeUndefined();
    expect(feed.problem).toBe(`the journal ${path} cannot be used: file is not a database`);
    expect(await feed.poll(10)).toBe(false);
    // Cut to the frame's 100 columns, as any line is.
    expect(frame(feed)).toContain(`Cannot read the journal: the journal ${path} cannot be used: file is`);
    feed.close();
  });
});
