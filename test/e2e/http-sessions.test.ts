// Many MCP sessions over one `synartesis proxy --http` (R-HTTP-4/5, R-PROXY-13),
// through the built binary with the SDK's StreamableHTTPClientTransport: each
// session is one run under its client's name; mutating calls to one server
// are serialised across sessions; undo of one session's run restores its
// records exactly; a server's request reaches only the session whose call
// caused it; gates work as over stdio; SIGTERM drains every session.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync } from "node:fs";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { eventData, httpClient, postRaw, rawSession, startHttpProxy, stopHttpProxiesAfterAll } from "../fixtures/http-kit.ts";
import {
  ALAN,
  crmStateText,
  crmWorkspace,
  fixtureServer,
  GRACE,
  journalRows,
  journalRuns,
  processExists,
  SEED,
  slowWorkspace,
  workspace,
} from "../fixtures/proxy-kit.ts";
import { manifestText, run, until } from "../helpers.ts";

stopHttpProxiesAfterAll();
// Each test starts a proxy and its servers; under load that takes more than bun's default 5 s.
setDefaultTimeout(60_000);

const textOf = (result: Record<string, unknown>) => (result.content as Array<{ text: string }>)[0]!.text;

describe.concurrent("sessions share one pool of servers (R-HTTP-4/5)", () => {
  test("three sessions at once: a run each, 100 interleaved updates of one record serialised, the third's undo restores its records exactly", async () => {
    const ws = crmWorkspace(crmStateText());
    const proxy = await startHttpProxy(ws);
    const [alpha, beta, gamma] = await Promise.all(["alpha-agent", "beta-agent", "gamma-agent"].map((name) => httpClient(proxy.url, name)));
    const update = (id: string, changes: Record<string, string>) => ({ name: "update_customer", arguments: { id, ...changes } });
    const calls: Array<Promise<unknown>> = [];
    for (let i = 0; i < 50; i++) {
      calls.push(alpha!.client.callTool(update("c_001", { notes: `alpha ${i}` })));
      calls.push(beta!.client.callTool(update("c_001", { notes: `beta ${i}` })));
      if (i < 20) calls.push(gamma!.client.callTool(update(i % 2 ? "c_003" : "c_002", { email: `gamma${i}@example.com`, notes: `gamma ${i}` })));
    }
    const results = (await Promise.all(calls)) as Array<{ isError?: boolean }>;
    expect(results.filter((result) => result.isError)).toEqual([]);

    const runs = journalRuns(ws.journal);
    expect(runs.map((r) => [r.label, r.status]).sort()).toEqual([
      ["alpha-agent", "active"],
      ["beta-agent", "active"],
      ["gamma-agent", "active"],
    ]);
    const labelOf = new Map(runs.map((r) => [r.id, r.label]));
    const rows = journalRows(ws.journal).filter((row) => JSON.parse(row.args).id === "c_001");
    expect(rows.map((row) => row.status)).toEqual(Array(100).fill("applied"));
    // Serialised whichever session made them: each call's recorded pre-state is the post-state of the one before.
    let state: unknown = SEED.c_001;
    const remaining = new Set(rows);
    const order: string[] = [];
    while (remaining.size > 0) {
      const next = [...remaining].filter((row) => Bun.deepEquals(JSON.parse(row.snapshot!), state));
      expect(next).toHaveLength(1);
      remaining.delete(next[0]!);
      state = JSON.parse(next[0]!.post_state!);
      order.push(labelOf.get(next[0]!.run_id)!);
    }
    expect(order.filter((label) => label === "alpha-agent")).toHaveLength(50);
    expect(order.filter((label) => label === "beta-agent")).toHaveLength(50);
    // Interleaved: the chain passes from one session to the other and back.
    expect(order.filter((label, i) => i > 0 && label !== order[i - 1]).length).toBeGreaterThan(1);
    const lastC001 = state;
    expect(JSON.parse(readFileSync(ws.state, "utf8")).customers.c_001).toEqual(lastC001);

    for (const client of [alpha, beta, gamma]) await client!.transport.terminateSession();
    expect(journalRuns(ws.journal).map((r) => r.status)).toEqual(["complete", "complete", "complete"]);
    proxy.proc.kill("SIGTERM");
    expect(await proxy.proc.exited).toBe(0);

    const gammaRun = runs.find((r) => r.label === "gamma-agent")!.id;
    const undone = await run(["undo", gammaRun, "--journal", ws.journal], { cwd: ws.dir });
    expect([undone.code, undone.stderr]).toEqual([0, ""]);
    expect(undone.stdout).toContain(`Run ${gammaRun.slice(0, 8)} is rolled back: 20 calls reverted.`);
    expect(JSON.parse(readFileSync(ws.state, "utf8")).customers).toEqual({ c_001: lastC001, c_002: GRACE, c_003: ALAN });
  }, 60_000);

  test("a server's request reaches only the session whose call caused it; when two sessions wait on that server it reaches neither", async () => {
    const ws = workspace(
      manifestText({ servers: { conformance: fixtureServer("conformance-server.ts") }, tools: [{ match: "conformance.test_*", class: "readonly" }] }),
    );
    const proxy = await startHttpProxy(ws);
    const asked = { a: [] as string[], b: [] as string[] };
    let releaseA!: () => void;
    const aMayAnswer = new Promise<void>((resolve) => (releaseA = resolve));
    const a = await httpClient(proxy.url, "agent-a", { capabilities: { elicitation: {} } });
    const b = await httpClient(proxy.url, "agent-b", { capabilities: { elicitation: {} } });
    a.client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.a.push(request.params.message);
      await aMayAnswer;
      return { action: "accept", content: { username: "alice", email: "alice@example.com" } };
    });
    b.client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.b.push(request.params.message);
      return { action: "accept", content: { username: "bob", email: "bob@example.com" } };
    });
    const elicit = (message: string) => ({ name: "test_elicitation", arguments: { message } });

    const aCall = a.client.callTool(elicit("for A"));
    await until(() => asked.a.length === 1, "A to be asked");
    // A's call still waits on the server: B's request to it cannot be told apart, so nobody is asked.
    await expect(b.client.callTool(elicit("for B, while A waits"))).rejects.toThrow("Synartesis cannot tell which client this request is for");
    releaseA();
    expect(textOf(await aCall)).toBe('Elicitation completed: action=accept, content={"username":"alice","email":"alice@example.com"}');
    // Now only B's call waits on it: B is asked, and only B.
    expect(textOf(await b.client.callTool(elicit("for B")))).toBe('Elicitation completed: action=accept, content={"username":"bob","email":"bob@example.com"}');
    expect(asked).toEqual({ a: ["for A"], b: ["for B"] });
    await a.client.close();
    await b.client.close();
  }, 60_000);

  test("a gated call over HTTP is held; after `synartesis approve` the same call runs, once", async () => {
    const ws = crmWorkspace(crmStateText());
    const proxy = await startHttpProxy(ws);
    const { client } = await httpClient(proxy.url, "mailing-agent");
    const email = { name: "send_email", arguments: { to: "ada@example.com", subject: "Hello", body: "Welcome back" } };
    const held = await client.callTool(email);
    expect(held.isError).toBe(true);
    expect(textOf(held)).toStartWith("HELD FOR APPROVAL — Synartesis did not run this call.");
    const actionId = /Action id: ([0-9a-f]+)\./.exec(textOf(held))![1]!;
    const outbox = () => JSON.parse(readFileSync(ws.state, "utf8")).outbox.map((mail: Record<string, string>) => [mail.to, mail.subject]);
    expect(outbox()).toEqual([]);
    await until(
      () => proxy.stderr().includes(`"msg":"call held for approval","server":"crm","tool":"send_email","action":"${actionId}"`),
      "the held call's log line",
    );

    expect((await run(["approve", actionId, "--journal", ws.journal], { cwd: ws.dir })).code).toBe(0);
    const sent = await client.callTool(email);
    expect(sent.isError).toBeFalsy();
    expect(outbox()).toEqual([["ada@example.com", "Hello"]]);
    // The approval is spent: the same call again is held afresh, and nothing more is sent.
    expect(textOf(await client.callTool(email))).toStartWith("HELD FOR APPROVAL");
    expect(outbox()).toEqual([["ada@example.com", "Hello"]]);
    expect(journalRows(ws.journal).map((row) => [row.tool, row.status])).toEqual([
      ["send_email", "approved"],
      ["send_email", "applied"],
      ["send_email", "gated"],
    ]);
    await client.close();
  }, 60_000);
});

describe.concurrent("shutdown (R-HTTP-6, R-PROXY-13)", () => {
  test("SIGTERM with calls in flight in two sessions: one that finishes within the drain is answered, one that hangs gets its unknown outcome; exit 0, runs complete, no orphan", async () => {
    const ws = slowWorkspace();
    const proxy = await startHttpProxy(ws, ["--drain", "2"]);
    const first = { "Mcp-Session-Id": await rawSession(proxy.url, "quick-agent") };
    const second = { "Mcp-Session-Id": await rawSession(proxy.url, "hung-agent") };
    const call = (key: string, ms: number) =>
      JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "slow_write", arguments: { key, value: `${key}1`, ms } } });
    // Each response's headers come once the proxy has the call: the quick one first, the hung one queued behind it.
    const quick = await postRaw(proxy.url, call("a", 300), first);
    const hung = await postRaw(proxy.url, call("b", 600_000), second);
    const pid = Number(await until(() => readFileSync(ws.pidFile, "utf8"), "the slow server's pid"));
    proxy.proc.kill("SIGTERM");
    expect(JSON.parse((await eventData(quick))[0]!).result.structuredContent).toEqual({ key: "a", value: "a1" });
    const unknown = JSON.parse((await eventData(hung))[0]!).result;
    expect(unknown.isError).toBe(true);
    expect(unknown.content[0].text).toContain("stopped waiting for the server after 2 s (--drain)");
    expect(unknown.content[0].text).toContain("Its outcome is unknown and is recorded as pending");
    expect(await proxy.proc.exited).toBe(0);
    expect(processExists(pid)).toBe(false);
    expect(journalRows(ws.journal).map((row) => [JSON.parse(row.args).key, row.status])).toEqual([
      ["a", "applied"],
      ["b", "pending"],
    ]);
    expect(journalRuns(ws.journal).map((r) => [r.label, r.status])).toEqual([
      ["quick-agent", "complete"],
      ["hung-agent", "complete"],
    ]);
    expect(await proxy.allStderr).toContain('"msg":"shutting down","signal":"SIGTERM","drainSeconds":2}');
  }, 60_000);
});
