// LineBatch (jsonrpc/line-batch.ts): the lines handed over in one turn of the
// event loop, a promise chain's among them, are one write, in order; each
// line's promise settles with that write; a failing write fails every line it
// carried, and only those.
import { describe, expect, test } from "bun:test";
import { LineBatch, MOST_BYTES_AT_ONCE } from "../../src/jsonrpc/line-batch.ts";

test("lines added in one turn, some after a few awaits, are one write, in order", async () => {
  const writes: string[] = [];
  const batch = new LineBatch((text) => void writes.push(text));
  const sent = [batch.add("first")];
  await (async () => {
    for (let i = 0; i < 5; i++) await Promise.resolve();
    sent.push(batch.add("second"), batch.add("third"));
  })();
  await Promise.all(sent);
  expect(writes).toEqual(["first\nsecond\nthird\n"]);
  await new Promise((resolve) => setImmediate(resolve));
  await batch.add("next turn");
  expect(writes).toEqual(["first\nsecond\nthird\n", "next turn\n"]);
});

test("flush() writes at once; a line's promise waits for a write that completes later", async () => {
  const writes: string[] = [];
  let complete!: () => void;
  const batch = new LineBatch((text) => {
    writes.push(text);
    return new Promise<void>((resolve) => (complete = resolve));
  });
  let done = false;
  const line = batch.add("a").then(() => (done = true));
  batch.flush();
  expect(writes).toEqual(["a\n"]);
  await Promise.resolve();
  expect(done).toBe(false);
  complete();
  await line;
  expect(done).toBe(true);
  batch.flush(); // nothing added since: no write
  expect(writes).toEqual(["a\n"]);
});

test("a write that fails (thrown or later) fails the lines it carried, not the next ones", async () => {
  let failNow = true;
  const batch = new LineBatch(() => {
    if (failNow) throw Object.assign(new Error("broken pipe"), { code: "EPIPE" });
    return Promise.reject(new Error("later"));
  });
  const both = [batch.add("x"), batch.add("y")];
  for (const sent of both) await expect(sent).rejects.toMatchObject({ code: "EPIPE" });
  failNow = false;
  await new Promise((resolve) => setImmediate(resolve));
  await expect(batch.add("z")).rejects.toThrow("later");
});

test("a write carries at most MOST_BYTES_AT_ONCE bytes: lines that would pass it start the next one, a longer line goes alone, the order kept", async () => {
  const writes: string[] = [];
  const batch = new LineBatch((text) => void writes.push(text));
  const line = (n: number, size: number) => `${n}:${"x".repeat(size - String(n).length - 1)}`;
  const small = Array.from({ length: 10 }, (_, n) => line(n, 1000)); // 1001 bytes each with its newline
  const big = line(10, 3 * MOST_BYTES_AT_ONCE);
  await Promise.all([...small.slice(0, 5), big, ...small.slice(5)].map((l) => batch.add(l)));
  expect(writes.map((text) => text.length)).toEqual([4004, 1001, 3 * MOST_BYTES_AT_ONCE + 1, 4004, 1001]);
  expect(writes.join("")).toBe([...small.slice(0, 5), big, ...small.slice(5)].map((l) => l + "\n").join(""));
  for (const text of writes) expect(text.length <= MOST_BYTES_AT_ONCE || text.split("\n").length === 2).toBe(true);
});

describe("a write still in flight", () => {
  /** A writer whose writes complete (or fail) when the test says. */
  function slowWriter() {
    const writes: string[] = [];
    const outcomes: Array<{ resolve(): void; reject(error: Error): void }> = [];
    const write = (text: string) => {
      writes.push(text);
      return new Promise<void>((resolve, reject) => outcomes.push({ resolve, reject }));
    };
    return { writes, outcomes, write };
  }

  test("holds the next lines back until it is done: each write is handed over on its own, in order", async () => {
    const { writes, outcomes, write } = slowWriter();
    const batch = new LineBatch(write);
    const first = batch.add("first");
    batch.flush();
    const second = batch.add("second");
    const third = batch.add("third");
    batch.flush();
    expect(writes).toEqual(["first\n"]);
    outcomes[0]!.resolve();
    await first;
    await Promise.resolve();
    expect(writes).toEqual(["first\n", "second\nthird\n"]);
    outcomes[1]!.resolve();
    await Promise.all([second, third]);
  });

  test("that fails fails the lines held behind it the same way, without handing them over", async () => {
    const { writes, outcomes, write } = slowWriter();
    const batch = new LineBatch(write);
    // Every caller attaches its handler at once (as Upstream does).
    const codeOf = (sent: Promise<void>) =>
      sent.then(
        () => "delivered",
        (error: NodeJS.ErrnoException) => error.code,
      );
    const first = codeOf(batch.add("first"));
    batch.flush();
    const held = codeOf(batch.add("held"));
    batch.flush();
    outcomes[0]!.reject(Object.assign(new Error("broken pipe"), { code: "EPIPE" }));
    expect([await first, await held]).toEqual(["EPIPE", "EPIPE"]);
    expect(writes).toEqual(["first\n"]);
  });

  test("flush(true) hands everything over now, in order (the peer's input is about to close)", () => {
    const { writes, write } = slowWriter();
    const batch = new LineBatch(write);
    void batch.add("first");
    batch.flush();
    void batch.add("second");
    batch.flush();
    void batch.add("third");
    batch.flush(true);
    expect(writes).toEqual(["first\n", "second\n", "third\n"]);
  });
});

test("a failed write whose lines nobody waits for ends nothing: no unhandled rejection (a process would exit on it)", async () => {
  const script = `
    import { LineBatch } from ${JSON.stringify(new URL("../../src/jsonrpc/line-batch.ts", import.meta.url).pathname)};
    const batch = new LineBatch(() => Promise.reject(Object.assign(new Error("broken pipe"), { code: "EPIPE" })));
    batch.add("sent and forgotten");
    await new Promise((resolve) => setTimeout(resolve, 0));
    await new Promise((resolve) => setImmediate(resolve));
    console.log("still running");
  `;
  const child = Bun.spawn([process.execPath, "-e", script], { stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  expect({ stdout, stderr, code }).toEqual({ stdout: "still running\n", stderr: "", code: 0 });
});
