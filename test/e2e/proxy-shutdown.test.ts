// How the proxy ends when a server will not (R-PROXY-13) and when a server
// stops reading (issue 13 item 12): a call that hangs upstream gets `--drain`
// seconds after EOF or a signal, then an unknown-outcome answer and a pending
// row, and the proxy exits 0 without orphans; a second signal stops at once;
// EPIPE from a deaf server stays a JSON log line and the call is resent to a
// fresh server.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { BIN, LineSession, manifestText, reap, run, until } from "../helpers.ts";
import {
  crmWorkspace,
  fixtureServer,
  journalRows,
  journalRuns,
  jsonFrame,
  processExists,
  readPid,
  slowWorkspace,
  workspace,
  type Workspace,
} from "../fixtures/proxy-kit.ts";

// Each file sets its own: the preload's default reaches only the first file bun runs.
setDefaultTimeout(60_000);

const writeAhead = (ws: Workspace) => until(() => journalRows(ws.journal).find((r) => r.tool === "slow_write"), "the write-ahead row");

const HUNG = { name: "slow_write", arguments: { key: "a", value: "A1", ms: 600_000 } };

function expectUnknownOutcome(reply: any, why: RegExp): void {
  expect(reply.result.isError).toBe(true);
  const text: string = reply.result.content[0].text;
  expect(text).toMatch(/^Synartesis forwarded this call, but /);
  expect(text).toMatch(why);
  expect(text).toContain("Its outcome is unknown and is recorded as pending");
}

describe.concurrent("bounded shutdown (R-PROXY-13)", () => {
  test("EOF with a hung call: after the drain it is answered as unknown, its row stays pending, exit 0, no orphan", async () => {
    const ws = slowWorkspace();
    await using proxy = new LineSession([BIN, "proxy", "--manifest", ws.manifest, "--drain", "1"], { cwd: ws.dir });
    await proxy.initialize("eof-agent");
    proxy.send(jsonFrame(1, "tools/call", HUNG));
    await writeAhead(ws);
    await using server = reap(readPid(ws.pidFile));
    const pid = server.pid;
    proxy.proc.stdin.end();
    // Bounded by the test's own deadline, far below the call's 600 s and the server's 60 s timeout.
    expectUnknownOutcome(await proxy.response(1, 30_000), /stopped waiting for the server after 1 s \(--drain\)/);
    expect(await proxy.proc.exited).toBe(0);
    expect(processExists(pid)).toBe(false);
    const [row] = journalRows(ws.journal);
    expect(row).toMatchObject({ tool: "slow_write", status: "pending" });
    expect(row!.error).toContain("the outcome is unknown");
    expect(journalRuns(ws.journal)[0]).toMatchObject({ label: "eof-agent", status: "complete" });
    expect(proxy.stderr).toContain('"msg":"calls still in flight are given up; their outcome is unknown"');
  }, 60_000);

  test("SIGTERM with a hung call and --drain 1: answered as unknown, row pending, exit 0; a read that was quick is answered normally", async () => {
    const ws = slowWorkspace();
    await using proxy = new LineSession([BIN, "proxy", "--manifest", ws.manifest, "--drain", "1"], { cwd: ws.dir });
    await proxy.initialize();
    proxy.send(jsonFrame(1, "tools/call", HUNG));
    await writeAhead(ws);
    expect((await proxy.request(2, "tools/call", { name: "read_value", arguments: { key: "b" } })).result.structuredContent).toEqual({ key: "b", value: "B0" });
    await using server = reap(readPid(ws.pidFile));
    const pid = server.pid;
    proxy.proc.kill("SIGTERM");
    expectUnknownOutcome(await proxy.response(1, 30_000), /after 1 s \(--drain\)/);
    expect(await proxy.proc.exited).toBe(0);
    expect(processExists(pid)).toBe(false);
    expect(journalRows(ws.journal).map((r) => `${r.tool}:${r.status}`)).toEqual(["slow_write:pending", "read_value:applied"]);
  }, 60_000);

  test("EOF while a call reports progress forever: answered within --drain as an unknown outcome, the row pending, exit 0", async () => {
    const ws = workspace(
      manifestText({
        servers: { slow: fixtureServer("slow-server.ts", [], { timeout: 5, timeout_max: 3600 }) },
        tools: [{ match: "slow.busy_forever", class: "irreversible", gate: "never" }],
      }),
    );
    await using proxy = new LineSession([BIN, "proxy", "--manifest", ws.manifest, "--drain", "1"], { cwd: ws.dir });
    await proxy.initialize();
    proxy.send(jsonFrame(1, "tools/call", { name: "busy_forever", arguments: { ms: 100 }, _meta: { progressToken: "p1" } }));
    await proxy.next((m) => m.method === "notifications/progress" && m.params.progressToken === "p1" && m.params.progress >= 2, 30_000);
    proxy.proc.stdin.end();
    // Bounded by the drain, not by the hour of timeout_max the progress would allow.
    const reply = await proxy.response(1, 30_000);
    expect(reply.result.isError).toBe(true);
    expect(reply.result.content[0].text).toMatch(/^Synartesis forwarded this call, but .*stopped waiting for the server after 1 s \(--drain\)/);
    expect(await proxy.exited()).toBe(0);
    expect(journalRows(ws.journal)[0]).toMatchObject({ tool: "busy_forever", status: "pending" });
  }, 60_000);

  test("a second signal stops at once, without waiting out the drain (default 5 s): the hung call is answered as unknown, row pending", async () => {
    const ws = slowWorkspace();
    await using proxy = new LineSession([BIN, "proxy", "--manifest", ws.manifest], { cwd: ws.dir });
    await proxy.initialize();
    proxy.send(jsonFrame(1, "tools/call", HUNG));
    await writeAhead(ws);
    await using server = reap(readPid(ws.pidFile));
    const pid = server.pid;
    proxy.proc.kill("SIGTERM");
    await until(() => proxy.stderr.includes('"msg":"shutting down","signal":"SIGTERM","drainSeconds":5}'), "the first signal's log line");
    proxy.proc.kill("SIGINT");
    expectUnknownOutcome(await proxy.response(1, 30_000), /stopped by a second signal before the server answered/);
    expect(await proxy.proc.exited).toBe(0);
    expect(processExists(pid)).toBe(false);
    expect(journalRows(ws.journal).map((r) => r.status)).toEqual(["pending"]);
  }, 60_000);

  test("--drain takes seconds, 0 or more", async () => {
    const ws = slowWorkspace();
    for (const bad of ["soon", "-1", ""]) {
      const result = await run(["proxy", "--manifest", ws.manifest, "--drain", bad], { cwd: ws.dir, stdin: "" });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`--drain must be a number of seconds, 0 or more (got "${bad}")`);
    }
  });
});

describe.concurrent("a server or a client that stops reading (EPIPE)", () => {
  test("the proxy's stderr stays JSON lines, and a call it could not deliver is sent to a fresh server", async () => {
    const ws = workspace(manifestText({ servers: { deaf: fixtureServer("deaf-server.ts") }, tools: [{ match: "deaf.*", class: "readonly" }] }));
    const big = "x".repeat(300_000);
    await using proxy = new LineSession([BIN, "proxy", "--manifest", ws.manifest], { cwd: ws.dir });
    await proxy.initialize();
    expect((await proxy.request(1, "tools/call", { name: "go_deaf", arguments: {} })).result.content[0].text).toBe("not listening any more");
    // Large (written later, fails in the background) and small (fails at once).
    const large = await proxy.request(2, "tools/call", { name: "echo", arguments: { big } });
    expect(JSON.parse(large.result.content[0].text)).toEqual({ big });
    expect((await proxy.request(3, "tools/call", { name: "go_deaf", arguments: {} })).result.isError).toBeUndefined();
    const small = await proxy.request(4, "tools/call", { name: "echo", arguments: { n: 1 } });
    expect(small.result.content[0].text).toBe('{"n":1}');
    expect(await proxy.close()).toBe(0);
    const lines = proxy.stderr.split("\n").filter(Boolean);
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
    expect(proxy.stderr).not.toContain("EPIPE: broken pipe, write\n");
    expect(
      lines
        .map((l) => JSON.parse(l))
        .filter((l) => l.msg === "server stopped")
        .map((l) => l.reason),
    ).toEqual(["stopped reading its input (EPIPE)", "stopped reading its input (EPIPE)"]);
    expect(journalRows(ws.journal).map((r) => `${r.tool}:${r.status}`)).toEqual(["go_deaf:applied", "echo:applied", "go_deaf:applied", "echo:applied"]);
  }, 60_000);

  test("a client that stops reading: one JSON warning line (EPIPE), what it sent is still run and recorded, the run ends, exit 0", async () => {
    const ws = crmWorkspace();
    const proc = Bun.spawn([BIN, "proxy", "--manifest", ws.manifest], {
      cwd: ws.dir,
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, NO_COLOR: "1" },
    });
    await proc.stdout.cancel(); // the client closes its end of the proxy's output
    proc.stdin.write(
      [
        jsonFrame(0, "initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "deaf-agent", version: "1" } }),
        JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
        jsonFrame(1, "tools/call", { name: "update_customer", arguments: { id: "c_001", plan: "free" } }),
      ].join("\n") + "\n",
    );
    proc.stdin.end();
    const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
    expect(code).toBe(0);
    const lines = stderr
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line));
    expect(lines.filter((l) => l.level === "warn")).toEqual([
      expect.objectContaining({ msg: "the client stopped reading the proxy's output", error: "EPIPE" }),
    ]);
    expect(journalRows(ws.journal).map((r) => `${r.tool}:${r.status}`)).toEqual(["update_customer:applied"]);
    expect(journalRuns(ws.journal)[0]).toMatchObject({ label: "deaf-agent", status: "complete" });
  }, 60_000);
});
