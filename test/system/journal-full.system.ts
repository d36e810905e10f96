// A journal on a disk that runs full (issue 13 item 3), on a real 600 KiB
// tmpfs (ENOSPC, not a page-count limit): a call that ran is never reported as
// failed (the agent gets the server's real result, the row keeps its intent,
// pending), and a call whose intent cannot be written is refused unrun.
// Mounting needs root: run by .ci/run; it fails, never skips, without it.
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BIN, LineSession } from "../helpers.ts";
import { journalRows, slowWorkspace } from "../fixtures/proxy-kit.ts";

const ws = slowWorkspace();
// Outside the workspace, which the helpers remove after the file (it must be unmounted first).
const disk = mkdtempSync(join(tmpdir(), "syn-small-disk-"));
const mount = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", disk], { stderr: "pipe" });
if (mount.exitCode !== 0) {
  throw new Error(`this check mounts a 600 KiB tmpfs and needs root: mount said ${mount.stderr.toString().trim()}`);
}
afterAll(() => {
  Bun.spawnSync(["umount", disk]);
  rmSync(disk, { recursive: true, force: true });
});

test("the disk runs full after a call was forwarded, then before one: the real result, a pending row with its intent, then a refusal with nothing forwarded", async () => {
  const journal = join(disk, "synartesis.db");
  const filler = join(disk, "filler");
  const proxy = new LineSession([BIN, "proxy", "--manifest", ws.manifest, "--journal", journal], {
    cwd: ws.dir,
    env: { SLOW_FILL_PATH: filler },
  });
  try {
    await proxy.initialize();
    // The server writes, then fills the disk before the proxy records the outcome.
    const ran = await proxy.request(1, "tools/call", { name: "slow_write", arguments: { key: "a", value: "A1", ms: 0, fill: true } });
    expect(ran.result.isError).toBeUndefined();
    expect(ran.result.structuredContent).toEqual({ key: "a", value: "A1" });

    // A read still answers (its record is lost, and logged).
    const a = await proxy.request(2, "tools/call", { name: "read_value", arguments: { key: "a" } });
    expect(a.result.structuredContent).toEqual({ key: "a", value: "A1" });

    // No room for the next intent: refused, and never forwarded.
    const refused = await proxy.request(3, "tools/call", { name: "slow_write", arguments: { key: "b", value: "B1", ms: 0 } });
    expect(refused.result.isError).toBe(true);
    expect(refused.result.content[0].text).toBe(
      `Synartesis did not run this call: it could not record it (the journal ${journal} could not be written: database or disk is full).`,
    );
    const b = await proxy.request(4, "tools/call", { name: "read_value", arguments: { key: "b" } });
    expect(b.result.structuredContent).toEqual({ key: "b", value: "B0" });

    // Room again: recording goes on.
    rmSync(filler);
    const later = await proxy.request(5, "tools/call", { name: "slow_write", arguments: { key: "c", value: "C1", ms: 0 } });
    expect(later.result.structuredContent).toEqual({ key: "c", value: "C1" });
    expect(await proxy.close()).toBe(0);
  } finally {
    proxy.proc.kill("SIGKILL");
  }

  const logs = proxy.stderr
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line));
  const lost = logs.filter((l) => l.msg.startsWith("the outcome of a forwarded call could not be journalled"));
  expect(lost.map((l) => [l.level, l.tool])).toEqual([
    ["warn", "slow_write"],
    ["warn", "read_value"],
    ["warn", "read_value"],
  ]);
  expect(logs.filter((l) => l.msg === "a call was refused: the journal could not record it").map((l) => l.tool)).toEqual(["slow_write"]);
  for (const l of lost) expect(l.error).toContain("database or disk is full");

  const rows = journalRows(journal);
  expect(rows.map((r) => [r.tool, JSON.parse(r.args).key, r.status])).toEqual([
    ["slow_write", "a", "pending"],
    ["slow_write", "c", "applied"],
  ]);
  // The pending row still holds what undo needs to halt there honestly: the intent and the state before.
  expect(JSON.parse(rows[0]!.snapshot!)).toEqual({ key: "a", value: "A0" });
}, 60_000);
