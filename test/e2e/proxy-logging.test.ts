// What the proxy logs at its default level, info (R-PROXY-15): one JSON line
// for each held call (with the command that approves it), each denial told,
// each unknown outcome, each server start and restart, each run opened and
// closed; routine calls only at debug.
import { expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { BIN, LineSession, manifestText, reap, run, until, ACCOUNT } from "../helpers.ts";
import { crmStateText, crmWorkspace, fixtureServer, journalRows, jsonFrame, readPid, workspace } from "../fixtures/proxy-kit.ts";

// Each file sets its own: the preload's default reaches only the first file bun runs.
setDefaultTimeout(60_000);

const logLines = (stderr: string) =>
  stderr
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line));
const EMAIL = { to: "ada@example.com", subject: "Hello", body: "Hi" };

test.concurrent("a held call, a denial told, the server start and the run are logged at the default level; routine calls are not", async () => {
  const ws = crmWorkspace(crmStateText());
  await using proxy = new LineSession([BIN, "proxy", "--manifest", ws.manifest], { cwd: ws.dir });
  await proxy.initialize("logged-agent");
  await proxy.request(1, "tools/call", { name: "get_customer", arguments: { id: "c_001" } });
  const held = await proxy.request(2, "tools/call", { name: "send_email", arguments: EMAIL });
  const command = /^ {2}(.+ approve [0-9a-f]{8} --journal .+)$/m.exec(held.result.content[0].text)![1]!;
  const action = /approve ([0-9a-f]{8})/.exec(command)![1]!;
  const denied = await run(["deny", action, "--reason", "not today", "--journal", ws.journal], { cwd: ws.dir });
  expect(denied.code).toBe(0);
  const told = await proxy.request(3, "tools/call", { name: "send_email", arguments: EMAIL });
  expect(told.result.content[0].text).toStartWith("DENIED");
  expect(await proxy.close()).toBe(0);

  const runId = journalRows(ws.journal)[0]!.run_id;
  const lines = logLines(proxy.stderr);
  for (const line of lines) expect(line.ts).toMatch(/^\d{4}-\d\d-\d\dT/);
  expect(lines.map(({ ts, ...rest }) => rest)).toEqual([
    {
      level: "info",
      msg: "server started",
      server: "crm",
      serverInfo: "synartesis-toy-crm 0.1.0",
      protocol: "2025-06-18",
    },
    { level: "info", msg: "run opened", run: runId, client: "logged-agent", journal: ws.journal },
    {
      level: "info",
      msg: "call held for approval",
      server: "crm",
      tool: "send_email",
      action,
      reason: "crm.send_email is irreversible: once it runs it cannot be undone",
      approve: command,
      newRequest: true,
    },
    { level: "info", msg: "denial told to the agent", server: "crm", tool: "send_email", action, by: ACCOUNT, reason: "not today" },
    { level: "info", msg: "run closed", run: runId, client: "logged-agent" },
  ]);
}, 60_000);

test.concurrent("an unknown outcome and a restart are logged; at debug, every call is too", async () => {
  const ws = workspace(
    manifestText({
      servers: { slow: fixtureServer("slow-server.ts", ["--pid-file", "./slow.pid"]) },
      tools: [{ match: "slow.*", class: "irreversible", gate: "never" }],
    }),
  );
  await using proxy = new LineSession([BIN, "proxy", "--manifest", ws.manifest, "--log-level", "debug"], { cwd: ws.dir });
  await proxy.initialize();
  await using server = reap(await until(() => readPid(join(ws.dir, "slow.pid")), "the server's pid"));
  const pid = server.pid;
  proxy.send(jsonFrame(1, "tools/call", { name: "slow_write", arguments: { key: "a", value: "A1", ms: 60_000 } }));
  await until(() => journalRows(ws.journal).length === 1, "the write-ahead row");
  process.kill(pid, "SIGKILL");
  expect((await proxy.response(1)).result.content[0].text).toContain("Its outcome is unknown");
  await proxy.request(2, "tools/call", { name: "read_value", arguments: { key: "a" } });
  expect(await proxy.close()).toBe(0);

  const lines = logLines(proxy.stderr);
  const pick = (msg: string) => lines.filter((l) => l.msg === msg);
  expect(pick("call outcome unknown")).toEqual([
    expect.objectContaining({ level: "error", server: "slow", tool: "slow_write", action: journalRows(ws.journal)[0]!.id }),
  ]);
  expect(pick("server started").map((l) => l.level)).toEqual(["info"]);
  expect(pick("server restarted").map((l) => [l.level, l.server])).toEqual([["info", "slow"]]);
  expect(pick("call").map((l) => [l.level, l.tool, l.class])).toEqual([
    ["debug", "slow_write", "irreversible"],
    ["debug", "read_value", "irreversible"],
  ]);
}, 60_000);
