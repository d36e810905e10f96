// Opening a journal that another connection is putting in WAL mode at that
// moment: two processes opening a new journal at once (bench/scale.ts's first
// two proxies). The converting connection holds the rollback-mode write lock;
// SQLite then refuses the other's conversion with SQLITE_BUSY at once, without
// its busy handler, so the opener must wait its turn itself. Here the peer is a
// second real connection on the same file, holding that lock for as long as
// the test says; the opener's pauses are the test's, so nothing sleeps.
import { Database } from "bun:sqlite";
import { afterEach, describe, expect, test } from "bun:test";
import { closeSync, openSync } from "node:fs";
import { join } from "node:path";
import { JournalError } from "../../src/journal/journal.ts";
import { openJournalFile } from "../../src/journal/sqlite/file.ts";
import { tempDir } from "../helpers.ts";

const open: Database[] = [];
afterEach(() => {
  for (const db of open.splice(0)) db.close();
});

/** A new journal as a starting proxy leaves it (an empty file, private to its user), and a peer connection on it. */
function newJournalWithPeer(): { path: string; peer: Database } {
  const path = join(tempDir("syn-concurrent-open-"), "synartesis.db");
  closeSync(openSync(path, "wx", 0o600));
  const peer = new Database(path, { strict: true });
  open.push(peer);
  return { path, peer };
}

/**
 * A new journal whose peer is putting it in WAL mode: the peer holds the
 * rollback-mode write lock. `openIt` opens the journal as a proxy would, with
 * `atPause` run at each of its pauses (which it records, and does not sleep).
 */
function peerMidConversion() {
  const { path, peer } = newJournalWithPeer();
  peer.run("BEGIN IMMEDIATE");
  const pauses: number[] = [];
  const openIt = (atPause: () => void = () => {}) => {
    const pause = (ms: number) => {
      pauses.push(ms);
      atPause();
    };
    const opened = openJournalFile(path, { create: true, pause });
    open.push(opened.db);
    return opened.db;
  };
  return { path, peer, pauses, openIt };
}

const journalMode = (db: Database) => (db.query("PRAGMA journal_mode").get() as { journal_mode: string }).journal_mode;

describe("opening a journal another connection is putting in WAL mode", () => {
  test("the opener waits its turn, then finds the journal in WAL mode and writes to it", () => {
    const { peer, pauses, openIt } = peerMidConversion();
    const db = openIt(() => {
      // The peer finishes: the file is now WAL, and the opener's next try has nothing left to do.
      peer.run("COMMIT");
      peer.query("PRAGMA journal_mode = WAL").get();
    });
    expect(pauses).toEqual([1]);
    expect(journalMode(db)).toBe("wal");
    db.run("CREATE TABLE written (x INTEGER) STRICT");
    db.run("INSERT INTO written VALUES (1)");
    expect(peer.query("SELECT x FROM written").all()).toEqual([{ x: 1 }]);
  });

  test("a peer that gives up instead: the opener's next try puts the journal in WAL mode itself", () => {
    const { peer, pauses, openIt } = peerMidConversion();
    const db = openIt(() => {
      if (pauses.length === 3) peer.run("ROLLBACK");
    });
    expect(pauses).toEqual([1, 2, 4]);
    expect(journalMode(db)).toBe("wal");
    expect(journalMode(peer)).toBe("wal");
  });

  test("a lock never let go: the opener waits the busy timeout out (10 s of pauses, at most 50 ms each), then the one-line busy error", () => {
    const { path, pauses, openIt } = peerMidConversion();
    let failure: unknown;
    try {
      openIt();
    } catch (error) {
      failure = error;
    }
    expect(failure).toBeInstanceOf(JournalError);
    expect((failure as JournalError).kind).toBe("busy");
    expect((failure as JournalError).message).toBe(`the journal ${path} could not be written: database is locked`);
    expect(pauses.slice(0, 7)).toEqual([1, 2, 4, 8, 16, 32, 50]);
    expect(Math.max(...pauses)).toBe(50);
    expect(pauses.reduce((sum, ms) => sum + ms, 0)).toBe(10_000);
  });

  test("a journal already in WAL mode opens at once while another connection holds its write lock", () => {
    const { path, peer } = newJournalWithPeer();
    peer.query("PRAGMA journal_mode = WAL").get();
    peer.run("CREATE TABLE t (x INTEGER) STRICT");
    peer.run("BEGIN IMMEDIATE");
    peer.run("INSERT INTO t VALUES (1)");
    const pauses: number[] = [];
    const opened = openJournalFile(path, { create: false, pause: (ms) => void pauses.push(ms) });
    open.push(opened.db);
    expect(pauses).toEqual([]);
    expect(journalMode(opened.db)).toBe("wal");
    peer.run("COMMIT");
  });
});
