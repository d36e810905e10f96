// Output is never cut short (R-CLI-9): every command writes all of its stdout
// and stderr before it exits, also into a pipe whose reader is slower than the
// writer. The reader here starts reading a moment late (as `| (sleep 1; cat)`
// does); nothing about timing is asserted, only that every byte arrived.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { openJournal } from "../../src/journal/journal.ts";
import { BIN, manifestText, run, tempDir, until } from "../helpers.ts";

// The preload's default timeout reaches only the first file bun runs; tests sharing the machine need the room.
setDefaultTimeout(60_000);

/** A journal holding one run whose call carries `size` bytes of notes, recorded as a proxy would. */
async function bigJournal(size: number): Promise<string> {
  const dir = tempDir("syn-output-");
  const path = join(dir, "synartesis.db");
  const journal = await openJournal(path, { create: true });
  const runId = crypto.randomUUID();
  await journal.startRun({ id: runId, label: "big-agent", startedAt: "2026-05-01T10:00:00.000Z" });
  const notes = "n".repeat(size);
  await journal.insertAction({
    id: crypto.randomUUID(),
    runId,
    server: "crm",
    tool: "update_customer",
    args: { id: "c_001", notes },
    class: "reversible",
    status: "applied",
    ts: "2026-05-01T10:00:01.000Z",
    resultText: JSON.stringify({ content: [{ type: "text", text: notes }] }),
  });
  await journal.insertAction({
    id: crypto.randomUUID(),
    runId,
    server: "crm",
    tool: "send_email",
    args: { to: "all@example.com", body: notes },
    class: "irreversible",
    status: "gated",
    argsKey: "k",
    error: "crm.send_email is irreversible",
    ts: "2026-05-01T10:00:02.000Z",
  });
  await journal.close();
  return path;
}

/** Run `command` in bash with a reader that takes its time, and count what reached it on each stream. */
async function slowlyRead(command: string): Promise<{ code: number; stdoutBytes: number; stderrBytes: number }> {
  const script = `set -o pipefail
{ ${command} 2> >(sleep 1; wc -c > "$ERR_COUNT") ; } | (sleep 1; wc -c)`;
  const errCount = join(tempDir("syn-output-count-"), "stderr-bytes");
  const result = await run(["-c", script], { bin: "bash", env: { ERR_COUNT: errCount } });
  if (result.stderr) throw new Error(result.stderr);
  // The process substitution may finish after the pipeline: wait for its count.
  await until(async () => (await Bun.file(errCount).text()).endsWith("\n"), "the count of stderr bytes");
  return { code: result.code, stdoutBytes: Number(result.stdout.trim()), stderrBytes: Number((await Bun.file(errCount).text()).trim()) };
}

const journal = await bigJournal(3 * 1024 * 1024);

describe.concurrent("a slow reader gets every byte", () => {
  const q = (s: string) => `'${s}'`;

  test("show --json, gates --json and show of a multi-MiB run, and list", async () => {
    const commands = [["show", "--json"], ["gates", "--json"], ["show"], ["list", "--json"]];
    const expected = await Promise.all(commands.map((args) => run([...args, "--journal", journal])));
    for (const full of expected) expect(full.code).toBe(0);
    expect(expected[0]!.stdout.length).toBeGreaterThan(9 * 1024 * 1024);
    const slow = await Promise.all(commands.map((args) => slowlyRead([q(BIN), ...args, "--journal", q(journal)].join(" "))));
    slow.forEach((got, i) => {
      expect({ command: commands[i], ...got }).toEqual({ command: commands[i], code: 0, stdoutBytes: Buffer.byteLength(expected[i]!.stdout), stderrBytes: 0 });
    });
  });

  test("stderr too: a manifest with thousands of problems reports every one of them", async () => {
    const dir = tempDir("syn-output-manifest-");
    const tools = Array.from({ length: 4_000 }, (_, i) => ({ match: `crm.tool_${i % 2}`, class: "readonly" as const }));
    writeFileSync(join(dir, "synartesis.yaml"), manifestText({ servers: { crm: { command: "synartesis" } }, tools }));
    const full = await run(["check", "--manifest", join(dir, "synartesis.yaml")]);
    expect(full.code).toBe(2);
    expect(full.stderr.split("\n").filter((l) => l.includes("duplicate match")).length).toBe(3_998);
    const slow = await slowlyRead(`${q(BIN)} check --manifest ${q(join(dir, "synartesis.yaml"))}`);
    expect(slow).toEqual({ code: 2, stdoutBytes: 0, stderrBytes: Buffer.byteLength(full.stderr) });
  });
});
