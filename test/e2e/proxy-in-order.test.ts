// A server that answers in order (`in_order: true`, issue 20): a write's
// post-read and the next call's pre-read go out right behind the write, in the
// same write to the server, and every row still holds the state its call
// replaced and the state it left; without the key, each waits for the write's
// answer. Through the binary, against a real server process.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { BIN, initializeFrame, LineSession, manifestText, tempDir } from "../helpers.ts";
import { fixtureServer, INITIALIZED, journalRows, jsonFrame, workspace } from "../fixtures/proxy-kit.ts";

setDefaultTimeout(60_000);

function notesWorkspace(inOrder: boolean) {
  const log = join(tempDir(), "order.log");
  const server = fixtureServer("ordered-notes.ts", [], { env: { ORDER_LOG: log }, ...(inOrder ? { in_order: true } : {}) });
  const text = manifestText({
    servers: { notes: server },
    tools: [
      { match: "notes.get_note", class: "readonly" },
      {
        match: "notes.set_note",
        class: "reversible",
        snapshot: { tool: "notes.get_note", args: { key: "$.key" }, absent_when: "no note with key" },
        inverse: { tool: "notes.set_note", args: { key: "$.key", text: "$snapshot.text" } },
      },
    ],
  });
  return { ...workspace(text), log };
}

/** `writes` (key, text) piped in at once through a proxy; every answer read, the proxy closed; the rows, what the server logged, the answers. */
async function record(inOrder: boolean, writes: Array<[string, string]>) {
  const ws = notesWorkspace(inOrder);
  await using proxy = new LineSession([BIN, "proxy", "--manifest", ws.manifest, "--log-level", "error"], { cwd: ws.dir });
  const calls = writes.map(([key, text], i) => jsonFrame(i + 1, "tools/call", { name: "set_note", arguments: { key, text } }));
  proxy.proc.stdin.write([initializeFrame(0, "notes-agent"), INITIALIZED, ...calls].join("\n") + "\n");
  proxy.proc.stdin.flush();
  const answers = [];
  for (let i = 1; i <= writes.length; i++) answers.push((await proxy.response(i)).result);
  expect(await proxy.close()).toBe(0);
  // "3 set_note a" → [3, "set_note a"]: which read of its stdin carried each request.
  const log = readFileSync(ws.log, "utf8")
    .trim()
    .split("\n")
    .map((line) => [Number(line.split(" ")[0]), line.split(" ").slice(1).join(" ")] as const);
  return { rows: journalRows(ws.journal), log, answers };
}

const states = (rows: ReturnType<typeof journalRows>) =>
  rows.map((row) => ({
    seq: row.seq,
    status: row.status,
    snapshot: row.snapshot && JSON.parse(row.snapshot),
    after: row.post_state && JSON.parse(row.post_state),
  }));

describe.concurrent("a server declared in_order", () => {
  test("gets each write with its post-read and the next call's pre-read behind it, in one write; without the key, each waits for the write's answer", async () => {
    // a twice in a row: the first one's post-read is the second one's pre-read.
    const writes: Array<[string, string]> = [
      ["a", "1"],
      ["a", "2"],
      ["b", "3"],
      ["a", "4"],
    ];
    const sequence = [
      "get_note a",
      "set_note a",
      "get_note a",
      "set_note a",
      "get_note a",
      "get_note b",
      "set_note b",
      "get_note b",
      "get_note a",
      "set_note a",
      "get_note a",
    ];
    const together = (log: ReadonlyArray<readonly [number, string]>) => {
      const groups: string[][] = [];
      log.forEach(([read, what], i) => (i > 0 && log[i - 1]![0] === read ? groups.at(-1)!.push(what) : groups.push([what])));
      return groups;
    };
    const inOrder = await record(true, writes);
    const plain = await record(false, writes);
    for (const { answers } of [inOrder, plain]) expect(answers.map((answer) => answer.structuredContent)).toEqual(writes.map(([key, text]) => ({ key, text })));
    // The same requests in the same order either way: pre-read, write, post-read, one call after the other.
    expect(inOrder.log.map(([, what]) => what)).toEqual(sequence);
    expect(plain.log.map(([, what]) => what)).toEqual(sequence);
    // In order: the first pre-read alone, then each write with its post-read and the next call's pre-read.
    expect(together(inOrder.log)).toEqual([
      ["get_note a"],
      ["set_note a", "get_note a"],
      ["set_note a", "get_note a", "get_note b"],
      ["set_note b", "get_note b", "get_note a"],
      ["set_note a", "get_note a"],
    ]);
    // Without it a write goes alone, and its post-read follows its answer, with the next call's pre-read.
    expect(together(plain.log)).toEqual([
      ["get_note a"],
      ["set_note a"],
      ["get_note a"],
      ["set_note a"],
      ["get_note a", "get_note b"],
      ["set_note b"],
      ["get_note b", "get_note a"],
      ["set_note a"],
      ["get_note a"],
    ]);
    // And the journal says the same either way: each row the state its call replaced, and the state it left.
    const expected = [
      { seq: 1, status: "applied", snapshot: { key: "a", text: "seed a" }, after: { key: "a", text: "1" } },
      { seq: 2, status: "applied", snapshot: { key: "a", text: "1" }, after: { key: "a", text: "2" } },
      { seq: 3, status: "applied", snapshot: { key: "b", text: "seed b" }, after: { key: "b", text: "3" } },
      { seq: 4, status: "applied", snapshot: { key: "a", text: "2" }, after: { key: "a", text: "4" } },
    ];
    expect(states(inOrder.rows)).toEqual(expected);
    expect(states(plain.rows)).toEqual(expected);
  });

  test("when the server dies under a write, the next call, whose pre-read went with it, reads again at the restarted server and runs", async () => {
    const { rows, answers } = await record(true, [
      ["a", "exit now"],
      ["b", "2"],
    ]);
    expect(answers[0].isError).toBe(true);
    expect(answers[0].content[0].text).toContain("Its outcome is unknown and is recorded as pending");
    expect(answers[1].structuredContent).toEqual({ key: "b", text: "2" });
    expect(states(rows)).toEqual([
      { seq: 1, status: "pending", snapshot: { key: "a", text: "seed a" }, after: null },
      { seq: 2, status: "applied", snapshot: { key: "b", text: "seed b" }, after: { key: "b", text: "2" } },
    ]);
  });

  test("so does one with a read-only call between it and the write the server died under", async () => {
    const ws = notesWorkspace(true);
    await using proxy = new LineSession([BIN, "proxy", "--manifest", ws.manifest, "--log-level", "error"], { cwd: ws.dir });
    const frames = [
      jsonFrame(1, "tools/call", { name: "set_note", arguments: { key: "a", text: "exit now" } }),
      jsonFrame(2, "tools/call", { name: "get_note", arguments: { key: "a" } }),
      jsonFrame(3, "tools/call", { name: "set_note", arguments: { key: "b", text: "2" } }),
    ];
    proxy.proc.stdin.write([initializeFrame(0, "notes-agent"), INITIALIZED, ...frames].join("\n") + "\n");
    proxy.proc.stdin.flush();
    expect((await proxy.response(1)).result.content[0].text).toContain("Its outcome is unknown");
    await proxy.response(2);
    expect((await proxy.response(3)).result.structuredContent).toEqual({ key: "b", text: "2" });
    expect(await proxy.close()).toBe(0);
    expect(states(journalRows(ws.journal).filter((row) => row.tool === "set_note")).map(({ seq: _, ...row }) => row)).toEqual([
      { status: "pending", snapshot: { key: "a", text: "seed a" }, after: null },
      { status: "applied", snapshot: { key: "b", text: "seed b" }, after: { key: "b", text: "2" } },
    ]);
  });
});
