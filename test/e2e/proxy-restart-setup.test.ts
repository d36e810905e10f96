// A server that dies mid-session is started again on next use, and gets back
// what the client had set up on it: its logging level and its subscriptions.
import { expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BIN, connect, manifestText, tempDir, until } from "../helpers.ts";
import { fixtureServer } from "../fixtures/proxy-kit.ts";

// Each file sets its own: the preload's default reaches only the first file bun runs.
setDefaultTimeout(60_000);

test("a restarted server gets the client's logging level and resource subscriptions again", async () => {
  const dir = tempDir();
  const log = join(dir, "record.jsonl");
  writeFileSync(
    join(dir, "synartesis.yaml"),
    manifestText({ servers: { rec: fixtureServer("setup-recorder.ts", [], { env: { RECORD_LOG: log } }) }, tools: [{ match: "rec.ping", class: "readonly" }] }),
  );
  await using agent = await connect(BIN, ["proxy"], { cwd: dir });
  const client = agent.client;
  await client.setLoggingLevel("debug");
  await client.subscribeResource({ uri: "rec://one" });
  const first = await client.callTool({ name: "ping", arguments: {} });
  const firstPid = Number((first.content as Array<{ text: string }>)[0]!.text.split(" ").at(-1));
  process.kill(firstPid, "SIGKILL");
  // The proxy notices the death first (it logs it), so the next call restarts rather than races it.
  await until(() => agent.stderr().includes('"msg":"server stopped"'), "the proxy to log that its server stopped");

  const second = await client.callTool({ name: "ping", arguments: {} });
  const secondPid = Number((second.content as Array<{ text: string }>)[0]!.text.split(" ").at(-1));
  expect(secondPid).not.toBe(firstPid);
  await client.close();

  const records = readFileSync(log, "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line));
  expect(records).toEqual([
    { pid: firstPid, level: "debug" },
    { pid: firstPid, subscribe: "rec://one" },
    { pid: secondPid, level: "debug" },
    { pid: secondPid, subscribe: "rec://one" },
  ]);
});
