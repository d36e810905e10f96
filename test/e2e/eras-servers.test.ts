// Each server is spoken to in the newest era it supports (R-ERA-1): a process
// is probed with server/discover, a 2026-era server (the v2 SDK, refusing
// initialize) is spoken to in 2026-07-28 with the per-request _meta, a
// 2025-era one falls back to initialize however it meets the probe (an error,
// silence, exiting); the choice is logged once per server start. The proxy's
// own reads and undo's inverses reach a 2026-era server as well.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { BIN, connect, manifestText, run, until } from "../helpers.ts";
import { connectModern, EVERYTHING_RULES, EVERYTHING_SERVER, eraWorkspace, notesRules, notesServer, readNotes, writeNotes } from "../fixtures/era-kit.ts";
import { fixtureServer, journalRows, workspace } from "../fixtures/proxy-kit.ts";

// Each file sets its own: the preload's default reaches only the first file bun runs.
setDefaultTimeout(60_000);

const logLines = (stderr: string) =>
  stderr
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line));
const text = (result: any) => result.content[0].text as string;

// Each test has its own folder, journal and processes: they run side by side.
describe.concurrent("servers of both eras behind one proxy", () => {
  test("a 2026-era server and 2025-era ones: each in its era (logged), tools listed, a read, a write undone exactly, a gated call approved", async () => {
    const ws = eraWorkspace({ ...notesServer("notes"), ...EVERYTHING_SERVER }, [...notesRules("notes"), ...EVERYTHING_RULES]);
    writeNotes(ws, "notes", { notes: { plan: "ship on Friday" }, outbox: [] });
    await using connection = await connect(BIN, ["proxy", "--manifest", ws.manifest, "--log-level", "debug"], { cwd: ws.dir, name: "legacy-agent" });
    const { client, stderr } = connection;

    const started = logLines(stderr()).filter((line) => line.msg === "server started");
    expect(started.map(({ server, protocol }) => [server, protocol]).sort()).toEqual([
      ["everything", "2025-11-25"],
      ["notes", "2026-07-28"],
    ]);
    // Why a server speaks 2025 is a debug line: the normal case, nothing for a person to act on.
    // A 2025-era client gets a server that speaks both in its own era (issue 28 item 5); one that refuses initialize is probed.
    expect(
      logLines(stderr())
        .filter((line) => line.msg === "server speaks the 2025 protocol")
        .map(({ server, why, level }) => [level, server, why]),
    ).toEqual([["debug", "everything", "its client speaks 2025, and so does it"]]);
    expect(client.getServerVersion()).toEqual({ name: "synartesis", version: expect.any(String) });
    expect(client.getInstructions()).toContain('Server "notes":\nNotes by key.');

    const names = (await client.listTools()).tools.map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(["notes__get_note", "notes__put_note", "notes__send_note", "everything__echo"]));
    const read = await client.callTool({ name: "notes__get_note", arguments: { key: "plan" } });
    expect(text(read)).toBe('{"key":"plan","text":"ship on Friday"}');
    // Nothing only 2026-07-28 has reaches a 2025-era client.
    expect(read.resultType).toBeUndefined();
    expect(JSON.stringify(read._meta ?? {})).not.toContain("io.modelcontextprotocol/");
    expect(text(await client.callTool({ name: "everything__echo", arguments: { message: "hi" } }))).toBe("Echo: hi");
    await client.callTool({ name: "notes__put_note", arguments: { key: "plan", text: "ship never" } });
    expect(readNotes(ws, "notes").notes.plan).toBe("ship never");

    const held = await client.callTool({ name: "notes__send_note", arguments: { to: "team", text: "we ship never" } });
    expect(held.isError).toBe(true);
    const action = /Action id: ([0-9a-f]{8})/.exec(text(held))![1]!;
    expect((await run(["approve", action, "--journal", ws.journal], { cwd: ws.dir })).code).toBe(0);
    expect(text(await client.callTool({ name: "notes__send_note", arguments: { to: "team", text: "we ship never" } }))).toBe("sent to team");
    await client.close();

    const rows = journalRows(ws.journal);
    expect(rows.map((row) => [row.server, row.tool, row.status])).toEqual([
      ["notes", "get_note", "applied"],
      ["everything", "echo", "applied"],
      ["notes", "put_note", "applied"],
      ["notes", "send_note", "approved"],
      ["notes", "send_note", "applied"],
    ]);
    expect(JSON.parse(rows[2]!.snapshot!)).toEqual({ key: "plan", text: "ship on Friday" });
    expect(JSON.parse(rows[2]!.post_state!)).toEqual({ key: "plan", text: "ship never" });

    // undo starts the servers itself, in their eras, and puts the note back (the sent note stays: it was approved).
    const undo = await run(["undo", "--journal", ws.journal, "--manifest", ws.manifest], { cwd: ws.dir });
    expect(undo.stdout).toContain('notes.put_note {"key":"plan","text":"ship on Friday"}');
    expect(readNotes(ws, "notes")).toEqual({ notes: { plan: "ship on Friday" }, outbox: [{ to: "team", text: "we ship never" }] });
    const check = await run(["check", "--manifest", ws.manifest], { cwd: ws.dir });
    expect(check.code).toBe(0);
  }, 60_000);
});

describe.concurrent("a server that ignores requests it does not know (issue 28 item 8)", () => {
  test("with its full 60 s timeout, the probe (for a 2026-era client) is raced by initialize: the client is served, and a restart is not probed again", async () => {
    const ws = workspace(
      manifestText({
        servers: { raw: fixtureServer("raw-server.ts", ["--before-initialize", "silent"], { env: { RAW_LOG: "./raw.log" } }) },
        tools: [{ match: "raw.*", class: "readonly" }],
      }),
      "syn-era-",
    );
    const { client, stderr } = await connectModern(ws, { args: ["--log-level", "debug"] });
    const proxyPid = () =>
      Number(
        Bun.spawnSync(["pgrep", "-f", `proxy --manifest ${ws.manifest}`])
          .stdout.toString()
          .trim()
          .split("\n")[0],
      );
    expect((await client.callTool({ name: "raw_read", arguments: {} })).structuredContent).toMatchObject({ word: "café" });
    expect(logLines(stderr()).find((line) => line.msg === "server speaks the 2025 protocol").why).toBe(
      "it did not answer server/discover, and answered initialize",
    );
    const received = () =>
      readFileSync(join(ws.dir, "raw.log"), "utf8")
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line).method);
    expect(received().slice(-6, -3)).toEqual(["server/discover", "ping", "initialize"]);
    // The server dies; the next call starts it again, with initialize straight away.
    const before = received().length;
    const [server] = Bun.spawnSync(["pgrep", "-P", String(proxyPid())])
      .stdout.toString()
      .trim()
      .split("\n")
      .map(Number);
    process.kill(server!, "SIGKILL");
    await until(
      () =>
        !Bun.spawnSync(["pgrep", "-P", String(proxyPid())])
          .stdout.toString()
          .trim(),
      "the server to be gone",
    );
    expect((await client.callTool({ name: "raw_read", arguments: {} })).structuredContent).toMatchObject({ word: "café" });
    expect(received().slice(before, before + 2)).toEqual(["initialize", "notifications/initialized"]);
    await client.close();
  });
});

test("a 2026-era server too slow to start to answer the probe within its timeout is probed again once it refuses initialize, and serves", async () => {
  const ws = workspace(
    manifestText({
      servers: { slow: fixtureServer("silent-listens-server.ts", [], { timeout: 1, env: { START_DELAY_MS: "1500" } }) },
      tools: [{ match: "slow.*", class: "readonly" }],
    }),
    "syn-era-",
  );
  // A 2026-era client: the probe goes first, and its 1 s run out before the server reads it.
  const { client, stderr } = await connectModern(ws, { args: ["--log-level", "debug"] });
  expect(text(await client.callTool({ name: "echo", arguments: {} }))).toBe("echo");
  const started = logLines(stderr()).filter((line) => line.msg === "server started");
  expect(started.map((line) => line.protocol)).toEqual(["2026-07-28"]);
  await client.close();
});

describe.concurrent("2025-era servers meet the probe in their own ways", () => {
  for (const [how, why] of [
    ["exit", /^it closed on server\/discover/],
    ["silent", /^it did not answer server\/discover/],
    // It answers a ping: the race begins right after, not when PROBE_MS is out.
    ["unknown", /^it did not answer server\/discover, and answered initialize$/],
  ] as const) {
    const way = { exit: "exiting", silent: "saying nothing", unknown: "ignoring it while it answers a ping" }[how];
    test(`a server that answers the probe (for a 2026-era client) by ${way} is initialized instead, and serves`, async () => {
      const ws = workspace(
        manifestText({
          servers: { raw: fixtureServer("raw-server.ts", ["--before-initialize", how], { timeout: 1 }) },
          tools: [{ match: "raw.*", class: "readonly" }],
        }),
        "syn-era-",
      );
      const { client, stderr } = await connectModern(ws, { args: ["--log-level", "debug"] });
      // A 2026-era client has no handshake: its first request starts the servers.
      expect((await client.callTool({ name: "raw_read", arguments: {} })).structuredContent).toEqual({
        float: 1,
        big: 12345678901234567890,
        word: "café",
        exp: 100,
        list: [1.5, -0],
      });
      const started = logLines(stderr()).filter((line) => line.msg === "server started");
      expect(started).toHaveLength(1);
      expect(started[0].protocol).toBe("2025-11-25");
      expect(logLines(stderr()).find((line) => line.msg === "server speaks the 2025 protocol").why).toMatch(why);
      await client.close();
    }, 30_000);
  }
});
