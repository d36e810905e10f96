// The proxy under bad input and failure, through the built binary
// (R-PROXY-5, 7, 9, 10, 11): garbage from the client, kill -9 of the proxy or
// of its server mid-call, EOF and SIGTERM with calls in flight, config errors.
// Every test has its own folder and processes, so they run side by side; a slow
// write that must still be running while something happens waits for the test
// to create its release file, not for a fixed time.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { BIN, connect, initializeFrame, LineSession, manifestText, reap, run, until } from "../helpers.ts";
import {
  ADA,
  crmStateText,
  crmWorkspace,
  EVERYTHING,
  INITIALIZED,
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

function proxy(ws: Workspace, extra: string[] = []): LineSession {
  return new LineSession([BIN, "proxy", "--manifest", ws.manifest, ...extra], { cwd: ws.dir });
}

const writeAhead = (ws: Workspace) => until(() => journalRows(ws.journal).find((r) => r.tool === "slow_write"), "the write-ahead row");
const serverPid = (ws: { pidFile: string }) => until(() => readPid(ws.pidFile), "the server's pid file");

describe.concurrent("bad input from the client", () => {
  test("an argument error found by a reversible call's pre-read is said of the call made, the read named after", async () => {
    const ws = crmWorkspace(crmStateText());
    const result = await run(["proxy", "--manifest", ws.manifest, "--log-level", "warn"], {
      cwd: ws.dir,
      stdin: [
        initializeFrame(0),
        INITIALIZED,
        jsonFrame(1, "tools/call", { name: "update_customer", arguments: { id: 5, plan: "pro" } }),
        jsonFrame(2, "tools/call", { name: "update_customer", arguments: { plan: "pro" } }),
        "",
      ].join("\n"),
    });
    const text = (id: number) => JSON.parse(result.stdout.split("\n").find((line) => line.includes(`"id":${id},`))!).result.content[0].text;
    expect(text(1)).toBe(
      'Synartesis did not run update_customer, because it could not record the state it would replace (reading it with get_customer failed): argument "id" must be a string (got number)',
    );
    expect(text(2)).toBe(
      'Synartesis did not run update_customer: the arguments it was given lack what is needed to read the state it would replace ($.id: $ has no key "id").',
    );
  });

  test("a batch is answered as one array once all its requests are, a one-element batch too; ids as written", async () => {
    const ws = crmWorkspace(crmStateText());
    const result = await run(["proxy", "--manifest", ws.manifest, "--log-level", "warn"], {
      cwd: ws.dir,
      stdin: [
        initializeFrame(0),
        INITIALIZED,
        `[${jsonFrame(1, "ping")},${jsonFrame(2, "tools/call", { name: "get_customer", arguments: { id: "c_001" } })},${INITIALIZED}]`,
        `[${jsonFrame(3, "ping")}]`,
        `[${INITIALIZED}]`,
        '{"jsonrpc":"2.0","id":1e400,"method":"ping"}',
        "",
      ].join("\n"),
    });
    expect(result.code).toBe(0);
    const lines = result.stdout.trim().split("\n");
    const batches = lines.filter((line) => line.startsWith("["));
    expect(batches.length).toBe(2);
    const both = JSON.parse(batches.find((line) => line.includes('"id":1'))!);
    expect(both.map((answer: any) => answer.id).sort()).toEqual([1, 2]);
    expect(both.find((answer: any) => answer.id === 2).result.structuredContent).toEqual(ADA);
    expect(JSON.parse(batches.find((line) => line.includes('"id":3'))!)).toEqual([{ jsonrpc: "2.0", id: 3, result: {} }]);
    // A batch of notifications is answered with nothing; an id is echoed as written.
    expect(
      lines
        .filter((line) => !line.startsWith("["))
        .map((line) => JSON.parse(line.replace('"id":1e400', '"id":"1e400"')).id)
        .sort(),
    ).toEqual([0, "1e400"]);
  });

  test("every R-PROXY-11 case is answered or ignored, the next call still works, and nothing is journalled", async () => {
    const ws = crmWorkspace(crmStateText());
    let next = 100;
    const good = () => jsonFrame(next++, "tools/call", { name: "get_customer", arguments: { id: "c_001" } });
    const bad: Array<{ line: string; expect: { id: unknown; code: number } | "nothing" }> = [
      { line: "this is not JSON", expect: { id: null, code: -32700 } },
      { line: '{"jsonrpc":"2.0","id":5,"method":"tools/call"', expect: { id: null, code: -32700 } }, // cut short
      { line: "42", expect: { id: null, code: -32600 } },
      { line: '"a string"', expect: { id: null, code: -32600 } },
      { line: "null", expect: { id: null, code: -32600 } },
      { line: "true", expect: { id: null, code: -32600 } },
      { line: "[]", expect: { id: null, code: -32600 } },
      { line: '{"id":6,"method":"ping"}', expect: { id: 6, code: -32600 } }, // no "jsonrpc"
      { line: jsonFrame(7, "tools/call", { arguments: { id: "c_001" } }), expect: { id: 7, code: -32602 } },
      { line: jsonFrame(8, "tools/call", { name: 12, arguments: {} }), expect: { id: 8, code: -32602 } },
      { line: jsonFrame(9, "tools/call"), expect: { id: 9, code: -32602 } },
      { line: jsonFrame(10, "tools/call", { name: "update_customer", arguments: [1, 2] }), expect: { id: 10, code: -32602 } },
      { line: jsonFrame(11, "tools/call", { name: "update_customer", arguments: "id=c_001" }), expect: { id: 11, code: -32602 } },
      { line: jsonFrame(12, "tools/call", { name: "update_customer", arguments: null }), expect: { id: 12, code: -32602 } },
      { line: jsonFrame(13, "no/such/method", {}), expect: { id: 13, code: -32601 } },
      {
        line: '{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"update_customer","arguments":{"id":"c_001","notes":"x"},"x":}}',
        expect: { id: null, code: -32700 },
      },
      { line: '{"jsonrpc":"2.0","id":999,"result":{}}', expect: "nothing" }, // a stray response
      { line: '{"jsonrpc":"2.0","id":"stray","error":{"code":1,"message":"no"}}', expect: "nothing" },
      { line: '{"jsonrpc":"2.0","method":"notifications/no_such_thing","params":{"x":1}}', expect: "nothing" },
      { line: '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"never-sent"}}', expect: "nothing" },
    ];
    const lines = [initializeFrame(0), INITIALIZED, good()];
    const goodIds = [next - 1];
    for (const item of bad) {
      lines.push(item.line, good());
      goodIds.push(next - 1);
    }
    const result = await run(["proxy", "--manifest", ws.manifest, "--log-level", "warn"], { cwd: ws.dir, stdin: lines.join("\n") + "\n" });
    expect(result.code).toBe(0);
    expect(result.stderr).toBe("");
    const out = result.stdout
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));

    // Exactly one line per request that deserves one: nothing for the stray responses and notifications.
    const expectedErrors = bad.filter((b) => b.expect !== "nothing").map((b) => b.expect as { id: unknown; code: number });
    expect(out).toHaveLength(1 + goodIds.length + expectedErrors.length);
    const errors = out.filter((m) => m.error).map((m) => ({ id: m.id, code: m.error.code }));
    const sortKey = (e: { id: unknown; code: number }) => `${JSON.stringify(e.id)}:${e.code}`;
    expect(errors.map(sortKey).sort()).toEqual(expectedErrors.map(sortKey).sort());
    for (const m of out.filter((m) => m.error)) {
      expect(m.jsonrpc).toBe("2.0");
      expect(typeof m.error.message).toBe("string");
      expect(m.error.message.length).toBeGreaterThan(5);
    }
    for (const id of goodIds) {
      const reply = out.find((m) => m.id === id);
      expect(reply?.result?.structuredContent).toEqual(ADA);
    }

    // No journal side effect: only the good reads are recorded.
    const rows = journalRows(ws.journal);
    expect(rows.map((r) => `${r.tool}:${r.status}`)).toEqual(goodIds.map(() => "get_customer:applied"));
    expect(JSON.parse(readFileSync(ws.state, "utf8")).customers.c_001).toEqual(ADA);
  }, 60_000);

  test("requests before initialize are refused, and initialize twice is refused", async () => {
    const ws = crmWorkspace(crmStateText());
    await using session = proxy(ws);
    const early = await session.request(1, "tools/list");
    expect(early.error.code).toBeLessThan(0);
    expect(early.error.message).toContain("initialize");
    await session.initialize();
    const again = await session.request(2, "initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "x", version: "1" } });
    expect(again.error.code).toBe(-32600);
    const ok = await session.request(3, "tools/call", { name: "get_customer", arguments: { id: "c_001" } });
    expect(ok.result.structuredContent).toEqual(ADA);
    expect(await session.close()).toBe(0);
  }, 60_000);
});

describe.concurrent("failures mid-call", () => {
  test("kill -9 of the proxy while a slow write is in flight leaves its row pending", async () => {
    const ws = slowWorkspace();
    await using session = proxy(ws);
    await session.initialize();
    await using _server = reap(await serverPid(ws));
    session.send(jsonFrame(1, "tools/call", { name: "slow_write", arguments: { key: "a", value: "A1", ms: 3000 } }));
    const row = await writeAhead(ws);
    expect(row.status).toBe("pending");
    session.proc.kill("SIGKILL");
    expect(await session.proc.exited).not.toBe(0);

    // Let the orphaned server finish its sleep if it is still there: nothing may change the row now.
    const rows = journalRows(ws.journal);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ tool: "slow_write", class: "reversible", status: "pending", error: null });
    expect(JSON.parse(rows[0]!.args)).toEqual({ key: "a", value: "A1", ms: 3000 });
    expect(JSON.parse(rows[0]!.snapshot!)).toEqual({ key: "a", value: "A0" });
    expect(journalRuns(ws.journal)[0]!.status).toBe("active");
  }, 60_000);

  test("a write cancelled while it waits for the lock is never forwarded, and gets no reply", async () => {
    const ws = slowWorkspace();
    await using session = proxy(ws);
    await session.initialize();
    session.send(jsonFrame(1, "tools/call", { name: "slow_write", arguments: { key: "a", value: "A1", wait_for: ws.release } }));
    await writeAhead(ws);
    session.send(jsonFrame(2, "tools/call", { name: "slow_write", arguments: { key: "b", value: "B1", ms: 0 } }));
    session.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 2, reason: "changed my mind" } });
    // The proxy reads its input in order: once this ping is answered, it has seen the cancellation.
    expect((await session.request(9, "ping")).result).toEqual({});
    writeFileSync(ws.release, "");
    expect((await session.response(1)).result.structuredContent).toEqual({ key: "a", value: "A1" });
    expect((await session.request(3, "tools/call", { name: "read_value", arguments: { key: "b" } })).result.structuredContent).toEqual({
      key: "b",
      value: "B0",
    });
    expect(await session.close()).toBe(0);
    expect(session.lines.some((line) => JSON.parse(line).id === 2)).toBe(false);
    const cancelled = journalRows(ws.journal).filter((r) => r.tool === "slow_write" && JSON.parse(r.args).key === "b");
    expect(cancelled).toMatchObject([{ status: "failed", error: "the client cancelled it before it was forwarded" }]);
  }, 60_000);

  test("EOF with several calls in flight: every one is answered before the proxy exits 0", async () => {
    const ws = slowWorkspace();
    await using session = proxy(ws, ["--log-level", "warn"]);
    const wait_for = ws.release;
    for (const frame of [
      initializeFrame(0, "eof-agent"),
      INITIALIZED,
      jsonFrame(1, "tools/call", { name: "slow_write", arguments: { key: "a", value: "A1", wait_for } }),
      jsonFrame(2, "tools/call", { name: "slow_write", arguments: { key: "b", value: "B1", wait_for } }),
      jsonFrame(3, "tools/call", { name: "read_value", arguments: { key: "c" } }),
      jsonFrame(4, "tools/call", { name: "slow_write", arguments: { key: "a", value: "A2", wait_for } }),
      jsonFrame(5, "tools/list"),
      jsonFrame(6, "ping"),
    ]) {
      session.send(frame);
    }
    await writeAhead(ws);
    // EOF while the first write is held by the server; then it may finish.
    session.proc.stdin.end();
    writeFileSync(ws.release, "");
    expect(await session.exited()).toBe(0);
    const out = session.lines.map((l) => JSON.parse(l));
    expect(out.map((m) => m.id).sort()).toEqual([0, 1, 2, 3, 4, 5, 6]);
    for (const m of out) expect(m.error).toBeUndefined();
    expect(out.find((m) => m.id === 4).result.structuredContent).toEqual({ key: "a", value: "A2" });
    const rows = journalRows(ws.journal);
    expect(rows.map((r) => r.status)).toEqual(["applied", "applied", "applied", "applied"]);
    // The two writes to "a" ran one after the other: the second one's snapshot is the first one's result.
    const writesOfA = rows.filter((r) => r.tool === "slow_write" && JSON.parse(r.args).key === "a");
    expect(writesOfA.map((r) => JSON.parse(r.snapshot!).value)).toEqual(["A0", "A1"]);
    expect(journalRuns(ws.journal)[0]).toMatchObject({ label: "eof-agent", status: "complete" });
  }, 60_000);

  test("the server killed mid-call: the call reports an unknown outcome, its row stays pending, the next call restarts it", async () => {
    const ws = slowWorkspace();
    await using session = proxy(ws, ["--log-level", "warn"]);
    await session.initialize();
    const first = await session.request(1, "tools/call", { name: "read_value", arguments: { key: "a" } });
    expect(first.result.structuredContent).toEqual({ key: "a", value: "A0" });
    const pid = await serverPid(ws);

    session.send(jsonFrame(2, "tools/call", { name: "slow_write", arguments: { key: "a", value: "A1", ms: 3000 } }));
    await writeAhead(ws);
    process.kill(pid, "SIGKILL");
    const lost = await session.response(2, 30_000);
    expect(lost.result.isError).toBe(true);
    expect(lost.result.content[0].text).toContain("unknown");
    const row = journalRows(ws.journal).find((r) => r.tool === "slow_write")!;
    expect(row.status).toBe("pending");
    expect(row.error).toContain("unknown");

    // The next call starts the server again (a fresh one: its value is the initial one).
    const after = await session.request(3, "tools/call", { name: "read_value", arguments: { key: "a" } });
    expect(after.result.structuredContent).toEqual({ key: "a", value: "A0" });
    await using restarted = reap(readPid(ws.pidFile));
    const newPid = restarted.pid;
    expect(newPid).not.toBe(pid);
    const write = await session.request(4, "tools/call", { name: "slow_write", arguments: { key: "a", value: "A3", ms: 0 } });
    expect(write.result.structuredContent).toEqual({ key: "a", value: "A3" });

    expect(await session.close()).toBe(0);
    expect(processExists(newPid)).toBe(false);
    const rows = journalRows(ws.journal);
    expect(rows.map((r) => `${r.tool}:${r.status}`)).toEqual(["read_value:applied", "slow_write:pending", "read_value:applied", "slow_write:applied"]);
  }, 60_000);

  test("SIGTERM: the call in flight is answered, the proxy exits 0, and its server is gone", async () => {
    const ws = slowWorkspace();
    await using session = proxy(ws);
    await session.initialize();
    await using server = reap(await serverPid(ws));
    const pid = server.pid;
    expect(processExists(pid)).toBe(true);
    session.send(jsonFrame(1, "tools/call", { name: "slow_write", arguments: { key: "b", value: "B1", wait_for: ws.release } }));
    await writeAhead(ws);
    session.proc.kill("SIGTERM");
    writeFileSync(ws.release, "");
    const reply = await session.response(1, 30_000);
    expect(reply.result.structuredContent).toEqual({ key: "b", value: "B1" });
    expect(await session.proc.exited).toBe(0);
    expect(processExists(pid)).toBe(false);
    expect(journalRows(ws.journal).map((r) => r.status)).toEqual(["applied"]);
    expect(journalRuns(ws.journal)[0]!.status).toBe("complete");
  }, 60_000);

  test("SIGTERM on an idle proxy: exit 0 and no orphan", async () => {
    const ws = slowWorkspace();
    await using session = proxy(ws);
    await session.initialize();
    await using server = reap(await serverPid(ws));
    session.proc.kill("SIGTERM");
    expect(await session.proc.exited).toBe(0);
    expect(processExists(server.pid)).toBe(false);
  }, 60_000);

  test("a client that cancels a forwarded call gets no reply for it, and EOF does not wait for it", async () => {
    const ws = slowWorkspace();
    await using session = proxy(ws, ["--log-level", "warn"]);
    await session.initialize();
    session.send(jsonFrame(1, "tools/call", { name: "slow_write", arguments: { key: "c", value: "C1", ms: 600_000 } }));
    await writeAhead(ws);
    session.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 1, reason: "changed my mind" } });
    const ok = await session.request(2, "ping");
    expect(ok.result).toEqual({});
    // The call sleeps 10 minutes and the server never answers a cancelled request:
    // a proxy that keeps waiting for it would still be running long after this.
    const ended = await Promise.race([session.close(), Bun.sleep(45_000).then(() => "still running")]);
    expect(ended).toBe(0);
    await expect(session.response(1, 100)).rejects.toThrow("no matching message");
    const rows = journalRows(ws.journal);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.status).toBe("pending");
    expect(rows[0]!.error).toContain("cancelled");
    expect(rows[0]!.error).toContain("unknown");
  }, 90_000);
});

/** A proxy in front of server-everything (every tool readonly), initialized by a client that offers sampling. */
async function everythingWithSampling(clientName: string): Promise<{ ws: Workspace; session: LineSession }> {
  const ws = workspace(
    manifestText({ servers: { everything: { command: "node", args: [EVERYTHING, "stdio"] } }, tools: [{ match: "everything.*", class: "readonly" }] }),
  );
  const session = proxy(ws, ["--log-level", "warn"]);
  session.send(
    JSON.stringify({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: { sampling: {} }, clientInfo: { name: clientName, version: "1" } },
    }),
  );
  await session.response(0);
  session.send(INITIALIZED);
  return { ws, session };
}

describe.concurrent("a client that closes stdin while a server waits on it", () => {
  test("the server's sampling request is refused, the tool call is answered, and the proxy exits 0", async () => {
    const started = await everythingWithSampling("leaver");
    const ws = started.ws;
    await using session = started.session;
    session.send(jsonFrame(1, "tools/call", { name: "trigger-sampling-request", arguments: { prompt: "anyone there?" } }));
    const asked = await session.next((m) => m.method === "sampling/createMessage");
    expect(asked.id).toBeDefined();
    // The client leaves without answering. The proxy's own timeout for the call is 60 s.
    session.proc.stdin.end();
    const reply = await session.response(1, 40_000);
    expect(reply.result.isError).toBe(true);
    expect(JSON.stringify(reply.result.content)).toContain("disconnected");
    const ended = await Promise.race([session.proc.exited, Bun.sleep(40_000).then(() => "still running")]);
    expect(ended).toBe(0);
    expect(journalRows(ws.journal).map((r) => `${r.tool}:${r.status}`)).toEqual(["trigger-sampling-request:failed"]);
  }, 90_000);
});

describe.concurrent("frames that are not what they claim", () => {
  test("params that are not an object get -32602; an answer to a server's request that is not a response is refused to that server, which stops waiting", async () => {
    await using session = (await everythingWithSampling("sloppy")).session;
    session.send('{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[1,2]}');
    expect((await session.response(1)).error.code).toBe(-32602);
    session.send(jsonFrame(2, "tools/call", { name: "trigger-sampling-request", arguments: { prompt: "anyone there?" } }));
    const asked = await session.next((m) => m.method === "sampling/createMessage");
    session.send(`{"jsonrpc":"2.0","id":${JSON.stringify(asked.id)},"result":"a string, not a result"}`);
    // Well before the server's own 60 s timeout: it was told the answer was not one.
    const reply = await session.response(2, 30_000);
    expect(JSON.stringify(reply)).toContain("the client's answer was not a valid JSON-RPC response");
    expect(await session.close()).toBe(0);
  }, 60_000);
});

describe.concurrent("outcomes of mutating calls", () => {
  test("a read runs while a slow write to the same server is in flight; a second write waits for the first", async () => {
    const ws = slowWorkspace();
    await using session = proxy(ws, ["--log-level", "warn"]);
    await session.initialize();
    session.send(jsonFrame(1, "tools/call", { name: "slow_write", arguments: { key: "a", value: "A1", wait_for: ws.release } }));
    session.send(jsonFrame(2, "tools/call", { name: "slow_write", arguments: { key: "a", value: "A2", ms: 0 } }));
    await writeAhead(ws);
    session.send(jsonFrame(3, "tools/call", { name: "read_value", arguments: { key: "a" } }));
    // The first reply to arrive is the read's, and it sees the value from before both writes.
    const first = await session.next((m) => m.id !== undefined, 30_000);
    expect(first.id).toBe(3);
    expect(first.result.structuredContent).toEqual({ key: "a", value: "A0" });
    writeFileSync(ws.release, "");
    expect((await session.response(1, 30_000)).result.structuredContent).toEqual({ key: "a", value: "A1" });
    expect((await session.response(2, 30_000)).result.structuredContent).toEqual({ key: "a", value: "A2" });
    expect(await session.close()).toBe(0);
    // seq is the order the requests arrived (writes to one server also run in it): both writes, then the read.
    const rows = journalRows(ws.journal);
    expect(rows.map((r) => [r.seq, r.tool, r.snapshot && JSON.parse(r.snapshot).value, r.post_state && JSON.parse(r.post_state).value])).toEqual([
      [1, "slow_write", "A0", "A1"],
      [2, "slow_write", "A1", "A2"],
      [3, "read_value", null, null],
    ]);
  }, 60_000);

  test("an isError result of a reversible call is returned unchanged, recorded failed, with no inverse", async () => {
    const ws = crmWorkspace(crmStateText());
    await using session = proxy(ws, ["--log-level", "warn"]);
    await session.initialize();
    const reply = await session.request(1, "tools/call", { name: "update_customer", arguments: { id: "c_001", plan: "gold" } });
    expect(reply.result).toEqual({ isError: true, content: [{ type: "text", text: 'unknown plan "gold" (allowed: free, pro, enterprise)' }] });
    expect(await session.close()).toBe(0);
    const [row] = journalRows(ws.journal);
    expect(row).toMatchObject({ tool: "update_customer", status: "failed", inverse: null, post_state: null });
    expect(row!.error).toContain("unknown plan");
    expect(JSON.parse(row!.snapshot!)).toEqual(ADA);
  }, 60_000);

  test("a pre-read that fails keeps the write from being forwarded and records it failed", async () => {
    const ws = slowWorkspace();
    await using session = proxy(ws, ["--log-level", "warn"]);
    await session.initialize();
    const reply = await session.request(1, "tools/call", { name: "slow_write", arguments: { key: "zzz", value: "Z", ms: 0 } });
    expect(reply.result.isError).toBe(true);
    expect(reply.result.content[0].text).toContain("no value for key zzz");
    // It was never sent: the key still has no value.
    const read = await session.request(2, "tools/call", { name: "read_value", arguments: { key: "zzz" } });
    expect(read.result.isError).toBe(true);
    expect(await session.close()).toBe(0);
    expect(journalRows(ws.journal).map((r) => `${r.tool}:${r.status}`)).toEqual(["slow_write:failed", "read_value:failed"]);
  }, 60_000);
});

describe.concurrent("configuration errors", () => {
  test("a malformed manifest exits 2 with one file:line:col line on stderr and nothing on stdout", async () => {
    const cases: Array<{ text: string; line: number; col: number; says: RegExp }> = [
      {
        text: ["version: 1", "servers:", "  crm:", "    command: synartesis", "    timeuot: 5", "tools: []", ""].join("\n"),
        line: 5,
        col: 5,
        says: /timeuot/,
      },
      { text: ["version: 1", "servers:", "  crm: [unclosed", ""].join("\n"), line: 0, col: 0, says: /./ },
      {
        text: [
          "version: 1",
          "servers:",
          "  crm:",
          "    command: synartesis",
          '    args: ["toy-crm"]',
          "tools:",
          '  - match: "crm.update_customer"',
          "    class: compensable",
          "",
        ].join("\n"),
        line: 7,
        col: 5,
        says: /inverse/,
      },
    ];
    for (const c of cases) {
      const ws = workspace(c.text);
      const result = await run(["proxy", "--manifest", ws.manifest], { cwd: ws.dir, stdin: initializeFrame(0) + "\n" });
      expect({ code: result.code, stdout: result.stdout }).toEqual({ code: 2, stdout: "" });
      const lines = result.stderr.trimEnd().split("\n");
      expect(lines).toHaveLength(1);
      const match = /^(?:synartesis: )?(.+):(\d+):(\d+): (.+)$/.exec(lines[0]!);
      expect(match?.[1]).toBe(ws.manifest);
      if (c.line) expect([Number(match![2]), Number(match![3])]).toEqual([c.line, c.col]);
      expect(match![4]).toMatch(c.says);
    }
  }, 60_000);

  test("a flag the proxy does not know, or a bad --log-level, exits 2", async () => {
    const ws = crmWorkspace();
    const unknown = await run(["proxy", "--manifest", ws.manifest, "--verbose"], { cwd: ws.dir, stdin: "" });
    expect(unknown.code).toBe(2);
    expect(unknown.stdout).toBe("");
    expect(unknown.stderr).toContain("--verbose");
    const level = await run(["proxy", "--manifest", ws.manifest, "--log-level", "loud"], { cwd: ws.dir, stdin: "" });
    expect(level.code).toBe(2);
    expect(level.stdout).toBe("");
  });

  test("a server command that does not exist: the client's initialize gets an error naming the server, then exit 1 (R-PROXY-14)", async () => {
    const ws = workspace(manifestText({ servers: { ghost: { command: "/nonexistent/bin/ghost-server", args: ["--x"] } }, tools: [] }));
    const result = await run(["proxy", "--manifest", ws.manifest], { cwd: ws.dir, stdin: initializeFrame(0) + "\n" });
    expect(result.code).toBe(1);
    expect(
      result.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l)),
    ).toEqual([
      { jsonrpc: "2.0", id: 0, error: { code: -32603, message: 'server "ghost" would not start: command not found: /nonexistent/bin/ghost-server' } },
    ]);
    expect(result.stderr).toContain('server "ghost"');
    expect(result.stderr).toContain("/nonexistent/bin/ghost-server");
    expect(result.stderr).not.toMatch(/\n\s+at /); // no stack trace
  });

  test("a client that shows only protocol errors (the SDK's, like the Inspector) shows why the server would not start", async () => {
    const ws = workspace(
      manifestText({
        servers: { broken: { command: "sh", args: ["-c", "echo 'cannot open database: permission denied' >&2; echo 'giving up' >&2; exit 3"] } },
      }),
    );
    const failure = await connect(BIN, ["proxy", "--manifest", ws.manifest], { cwd: ws.dir }).then(
      () => "connected",
      (error: Error) => error.message,
    );
    expect(failure).toContain('server "broken" would not start: it exited with code 3 before answering');
    expect(failure).toContain("its stderr said:\n  cannot open database: permission denied\n  giving up");
  });

  test("a server that dies at start exits 1 quoting its stderr", async () => {
    const ws = workspace(manifestText({ servers: { broken: { command: "sh", args: ["-c", "echo 'cannot open database: permission denied' >&2; exit 3"] } } }));
    const result = await run(["proxy", "--manifest", ws.manifest], { cwd: ws.dir, stdin: initializeFrame(0) + "\n" });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('server "broken"');
    expect(result.stderr).toContain("cannot open database: permission denied");
    // The client's initialize is answered with the same: the server and its stderr.
    const [reply] = result.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(reply.id).toBe(0);
    expect(reply.error.message).toContain('server "broken" would not start');
    expect(reply.error.message).toContain("cannot open database: permission denied");
  });
});

test.concurrent("the proxy writes only protocol frames to stdout, and JSON log lines to stderr", async () => {
  const ws = crmWorkspace();
  writeFileSync(ws.state, crmStateText());
  const result = await run(["proxy", "--manifest", ws.manifest, "--log-level", "debug"], {
    cwd: ws.dir,
    stdin: [initializeFrame(0), INITIALIZED, jsonFrame(1, "tools/call", { name: "update_customer", arguments: { id: "c_003", notes: "x" } }), ""].join("\n"),
  });
  expect(result.code).toBe(0);
  for (const line of result.stdout.split("\n").filter(Boolean)) expect(JSON.parse(line).jsonrpc).toBe("2.0");
  const logs = result.stderr.split("\n").filter(Boolean);
  expect(logs.length).toBeGreaterThan(0);
  for (const line of logs) expect(JSON.parse(line)).toMatchObject({ level: expect.any(String), msg: expect.any(String) });
});
