// A journal that cannot be trusted stops the recording loudly (issue 13 items
// 1, 9 and 11): a corrupt or unwritable journal ends the proxy with one line
// naming it (exit 2, servers stopped, no hang) and `list`/`show` say the same;
// a new journal is private to its user; a journal deleted or replaced under a
// running proxy makes it refuse every mutating call.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, chownSync, copyFileSync, existsSync, openSync, renameSync, rmSync, statSync, writeSync, closeSync } from "node:fs";
import { join } from "node:path";
import { BIN, initializeFrame, LineSession, reap, run, until } from "../helpers.ts";
import { INITIALIZED, journalRows, jsonFrame, processExists, readPid, slowWorkspace } from "../fixtures/proxy-kit.ts";

// Each file sets its own: the preload's default reaches only the first file bun runs.
setDefaultTimeout(60_000);

const write = (id: number, key: string, value: string) => jsonFrame(id, "tools/call", { name: "slow_write", arguments: { key, value, ms: 0 } });
const read = (id: number, key: string) => jsonFrame(id, "tools/call", { name: "read_value", arguments: { key } });

/** A journal with a run in it, recorded by the proxy itself. */
async function recordARun(ws: ReturnType<typeof slowWorkspace>): Promise<void> {
  const result = await run(["proxy", "--manifest", ws.manifest], {
    cwd: ws.dir,
    stdin: [initializeFrame(0), INITIALIZED, write(1, "a", "A1"), read(2, "a"), write(3, "b", "B1"), ""].join("\n"),
  });
  expect(result.code).toBe(0);
}

/** Deterministic garbage over pages `first`.. of the file (4 KiB pages). */
function corruptPages(path: string, first: number, count: number): void {
  let seed = 7;
  const bytes = Buffer.alloc(4096 * count, 0);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (seed = (seed * 1103515245 + 12345) >>> 0) >>> 24;
  const fd = openSync(path, "r+");
  writeSync(fd, bytes, 0, bytes.length, 4096 * (first - 1));
  closeSync(fd);
}

describe.concurrent("a journal that cannot be used (issue 13 item 1)", () => {
  test("corrupt pages: the first call is refused unrun, the proxy exits 2 with one line naming the journal, its server is stopped; list and show say the same", async () => {
    const ws = slowWorkspace();
    await recordARun(ws);
    corruptPages(ws.journal, 4, 4);
    await using proxy = new LineSession([BIN, "proxy", "--manifest", ws.manifest], { cwd: ws.dir });
    await proxy.initialize();
    await using server = reap(await until(() => readPid(ws.pidFile), "the server's pid"));
    const pid = server.pid;
    const refused = await proxy.request(1, "tools/call", { name: "slow_write", arguments: { key: "a", value: "NEVER", ms: 0 } });
    expect(refused.result.isError).toBe(true);
    expect(refused.result.content[0].text).toBe(
      `Synartesis did not run this call: it could not record it (the journal ${ws.journal} cannot be used: database disk image is malformed).`,
    );
    // Not waiting for stdin: the proxy ends by itself, within its drain.
    expect(await proxy.proc.exited).toBe(2);
    expect(processExists(pid)).toBe(false);
    const message = `synartesis: the journal ${ws.journal} cannot be used: database disk image is malformed`;
    const plain = proxy.stderr.split("\n").filter((line) => line && !line.startsWith("{"));
    expect(plain).toEqual([message]);
    for (const command of [["list"], ["show"], ["list", "--json"]]) {
      const result = await run([...command, "--journal", ws.journal], { cwd: ws.dir });
      expect([result.code, result.stdout, result.stderr]).toEqual([2, "", message + "\n"]);
    }
  }, 60_000);

  test("a journal this user cannot write: exit 2 at start with one line, before any server starts, never a hang", async () => {
    const ws = slowWorkspace();
    await recordARun(ws);
    chmodSync(ws.journal, 0o444);
    // As root the file would still be writable: run the proxy as an ordinary user.
    const asUser = process.getuid?.() === 0 ? ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] : [];
    if (asUser.length) {
      chmodSync(ws.dir, 0o755);
      for (const file of [ws.dir, ws.journal, `${ws.journal}-wal`, `${ws.journal}-shm`]) if (existsSync(file)) chownSync(file, 65534, 65534);
    }
    rmSync(ws.pidFile);
    const proc = Bun.spawn([...asUser, BIN, "proxy", "--manifest", ws.manifest], {
      cwd: ws.dir,
      env: { ...process.env, HOME: ws.dir },
      stdin: new TextEncoder().encode(initializeFrame(0) + "\n"),
      stdout: "pipe",
      stderr: "pipe",
    });
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    expect({ code, stdout }).toEqual({ code: 2, stdout: "" });
    expect(stderr).toBe(`synartesis: the journal ${ws.journal} cannot be used: attempt to write a readonly database\n`);
    expect(existsSync(ws.pidFile)).toBe(false);
  }, 60_000);
});

describe.concurrent("the journal is private (issue 13 item 9)", () => {
  test("a new journal, its -wal and -shm are 0600, folders made for it 0700; an existing one others can read gets a warning", async () => {
    const ws = slowWorkspace();
    const journal = join(ws.dir, "private", "records", "journal.db");
    await using proxy = new LineSession([BIN, "proxy", "--manifest", ws.manifest, "--journal", journal], { cwd: ws.dir });
    await proxy.initialize();
    await proxy.request(1, "tools/call", { name: "slow_write", arguments: { key: "a", value: "A1", ms: 0 } });
    // While the proxy runs (the last connection to close removes -wal and -shm).
    const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);
    expect([journal, `${journal}-wal`, `${journal}-shm`].map(mode)).toEqual(["600", "600", "600"]);
    expect([join(ws.dir, "private"), join(ws.dir, "private", "records")].map(mode)).toEqual(["700", "700"]);
    expect(await proxy.close()).toBe(0);
    expect(proxy.stderr).not.toContain("can be read by other users");
    expect(journalRows(journal).map((r) => r.status)).toEqual(["applied"]);

    chmodSync(journal, 0o644);
    const again = await run(["proxy", "--manifest", ws.manifest, "--journal", journal], { cwd: ws.dir, stdin: [initializeFrame(0), ""].join("\n") });
    expect(again.code).toBe(0);
    const warnings = again.stderr
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .filter((l) => l.level === "warn");
    expect(warnings).toEqual([
      {
        ts: expect.any(String),
        level: "warn",
        msg: `the journal ${journal} can be read by other users (mode 0644); it holds every recorded argument and result: chmod 600 it`,
      },
    ]);
  }, 60_000);
});

describe.concurrent("a journal deleted or replaced under a running proxy (issue 13 item 11)", () => {
  test("its -wal and -shm deleted (the newest records): mutating calls are refused and nothing reaches the server", async () => {
    const ws = slowWorkspace();
    await using proxy = new LineSession([BIN, "proxy", "--manifest", ws.manifest], { cwd: ws.dir });
    await proxy.initialize();
    expect((await proxy.request(1, "tools/call", { name: "slow_write", arguments: { key: "a", value: "A1", ms: 0 } })).result.structuredContent).toEqual({
      key: "a",
      value: "A1",
    });
    for (const file of [`${ws.journal}-wal`, `${ws.journal}-shm`]) rmSync(file, { force: true });
    const refused = await proxy.request(2, "tools/call", { name: "slow_write", arguments: { key: "a", value: "A2", ms: 0 } });
    expect(refused.result.isError).toBe(true);
    expect(refused.result.content[0].text).toStartWith(
      `Synartesis did not run this call: it has stopped recording, because the journal's ${ws.journal}-wal was deleted while this proxy was recording into it (it holds the newest records).`,
    );
    const after = await proxy.request(3, "tools/call", { name: "read_value", arguments: { key: "a" } });
    expect(after.result.structuredContent).toEqual({ key: "a", value: "A1" });
    expect(await proxy.close()).toBe(0);
  }, 60_000);

  for (const how of ["deleted", "replaced"] as const) {
    test(`${how}: mutating calls are refused with a tool error and never reach the server; reads still work`, async () => {
      const ws = slowWorkspace();
      await using proxy = new LineSession([BIN, "proxy", "--manifest", ws.manifest], { cwd: ws.dir });
      await proxy.initialize();
      expect((await proxy.request(1, "tools/call", { name: "slow_write", arguments: { key: "a", value: "A1", ms: 0 } })).result.structuredContent).toEqual({
        key: "a",
        value: "A1",
      });
      if (how === "deleted") {
        for (const file of [ws.journal, `${ws.journal}-wal`, `${ws.journal}-shm`]) rmSync(file, { force: true });
      } else {
        copyFileSync(ws.journal, join(ws.dir, "other.db"));
        renameSync(join(ws.dir, "other.db"), ws.journal);
      }
      const refused = await proxy.request(2, "tools/call", { name: "slow_write", arguments: { key: "a", value: "A2", ms: 0 } });
      expect(refused.result.isError).toBe(true);
      expect(refused.result.content[0].text).toStartWith(
        `Synartesis did not run this call: it has stopped recording, because the journal ${ws.journal} was ${how === "deleted" ? "deleted" : "replaced by another file"} while this proxy was recording into it.`,
      );
      const after = await proxy.request(3, "tools/call", { name: "read_value", arguments: { key: "a" } });
      expect(after.result.structuredContent).toEqual({ key: "a", value: "A1" });
      expect(await proxy.close()).toBe(0);
      const logged = proxy.stderr
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l))
        .filter((l) => l.msg.startsWith("recording stopped"));
      expect(logged).toHaveLength(1);
      expect(logged[0].level).toBe("error");
    }, 60_000);
  }
});
