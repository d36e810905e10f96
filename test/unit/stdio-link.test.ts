// The stdio link (servers/stdio-link.ts) against a real child process: lines
// sent in one turn of the event loop arrive together, in order (how they are
// gathered: line-batch.test.ts); what was sent right before close() still
// reaches the server.
import { expect, test } from "bun:test";
import { join } from "node:path";
import { createLogger } from "../../src/log.ts";
import type { ServerSpec } from "../../src/manifest/types.ts";
import { stdioLink } from "../../src/servers/stdio-link.ts";

const fixture = (name: string): Extract<ServerSpec, { kind: "command" }> => ({ ...spec, args: [join(import.meta.dir, "..", "fixtures", name)] });

const spec: Extract<ServerSpec, { kind: "command" }> = {
  name: "echo",
  kind: "command",
  command: process.execPath,
  args: [join(import.meta.dir, "..", "fixtures", "chunk-echo.ts")],
  env: {},
  cwd: import.meta.dir,
  timeoutMs: 5000,
  line: 1,
};

/** A link to chunk-echo and what it reported, parsed, as it comes. */
function echoLink(server = spec) {
  const reports: Array<{ read?: string[]; end?: boolean; partial?: string; ran?: string }> = [];
  let waiter: (() => void) | undefined;
  const link = stdioLink(
    server,
    { onLine: (line) => (reports.push(JSON.parse(line)), waiter?.()), onClose: () => {}, onStderr: () => {} },
    createLogger("silent"),
  );
  const reported = async (count: number) => {
    while (reports.length < count) await new Promise<void>((resolve) => (waiter = resolve));
    return reports.slice(0, count);
  };
  return { link, reported };
}

test("lines sent in one turn, some after a few awaits, reach the server together, in order", async () => {
  const { link, reported } = echoLink();
  const sent = [link.send("first")];
  const later = (async () => {
    for (let i = 0; i < 5; i++) await Promise.resolve();
    sent.push(link.send("second"), link.send("third"));
  })();
  await later;
  await Promise.all(sent);
  expect(await reported(1)).toEqual([{ read: ["first", "second", "third"] }]);
  link.send("next turn");
  expect((await reported(2))[1]).toEqual({ read: ["next turn"] });
  await link.close();
});

test("a line sent right before close() is written before the server's input ends", async () => {
  const { link, reported } = echoLink();
  // Once the server reads (close() gives a server 250 ms to end after its input does: one still starting on a busy machine is stopped).
  void link.send("up?");
  await reported(1);
  void link.send("last words");
  await link.close();
  expect(await reported(3)).toEqual([{ read: ["up?"] }, { read: ["last words"] }, { end: true, partial: "" }]);
});

test("a server that runs a line and exits: that line was delivered; only the long line behind it, which it never read, fails (EPIPE)", async () => {
  const { link, reported } = echoLink(fixture("first-line-exit.ts"));
  // Each outcome is taken as the line is sent: the long line's write may fail before the server's report arrives.
  const outcome = (sent: Promise<void> | void) =>
    Promise.resolve(sent).then(
      () => "delivered",
      (error) => (error as NodeJS.ErrnoException).code,
    );
  const first = outcome(link.send("first"));
  const long = outcome(link.send("x".repeat(4 * 1024 * 1024)));
  expect(await reported(1)).toEqual([{ ran: "first" }]);
  // Its promise settles with the write that carried it, which was not the long one's.
  expect(await first).toBe("delivered");
  expect(await long).toBe("EPIPE");
  await link.close(true);
});
