// A server that dies mid-session is started again on next use, and gets back
// what the client had set up on it: its logging level and its subscriptions.
import { expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BIN, connect, ROOT, tempDir } from "../helpers.ts";

test("a restarted server gets the client's logging level and resource subscriptions again", async () => {
  const dir = tempDir();
  const log = join(dir, "record.jsonl");
  writeFileSync(
    join(dir, "synartesis.yaml"),
    [
      "version: 1",
      "servers:",
      "  rec:",
      `    command: ${JSON.stringify(process.execPath)}`,
      `    args: [${JSON.stringify(join(ROOT, "test/fixtures/setup-recorder.ts"))}]`,
      `    env: { RECORD_LOG: ${JSON.stringify(log)} }`,
      "tools:",
      '  - match: "rec.ping"',
      "    class: readonly",
      "",
    ].join("\n"),
  );
  const { client } = await connect(BIN, ["proxy"], { cwd: dir });
  await client.setLoggingLevel("debug");
  await client.subscribeResource({ uri: "rec://one" });
  const first = await client.callTool({ name: "ping", arguments: {} });
  const firstPid = Number((first.content as Array<{ text: string }>)[0]!.text.split(" ").at(-1));
  process.kill(firstPid, "SIGKILL");
  // Let the proxy notice the death first, so the next call restarts rather than races it.
  while (existsSync(`/proc/${firstPid}`)) await Bun.sleep(20);
  await Bun.sleep(100);

  const second = await client.callTool({ name: "ping", arguments: {} });
  const secondPid = Number((second.content as Array<{ text: string }>)[0]!.text.split(" ").at(-1));
  expect(secondPid).not.toBe(firstPid);
  await client.close();

  const records = readFileSync(log, "utf8").trim().split("\n").map((line) => JSON.parse(line));
  expect(records).toEqual([
    { pid: firstPid, level: "debug" },
    { pid: firstPid, subscribe: "rec://one" },
    { pid: secondPid, level: "debug" },
    { pid: secondPid, subscribe: "rec://one" },
  ]);
});
