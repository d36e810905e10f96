// `synartesis proxy --http` as an HTTP endpoint (R-HTTP-1…3, 6), through the
// built binary: the token (where it comes from; none, short or wrong), Host
// and Origin, /healthz, the Streamable HTTP exchange itself (event-stream
// answers, 202, the session header, the errors of each kind), results byte for
// byte, and how a session ends: DELETE and --http-idle.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { rawMember } from "../../src/jsonrpc/raw-json.ts";
import { eventData, httpClient, MCP_HEADERS, postRaw, rawSession, startHttpProxy, stopHttpProxiesAfterAll, TOKEN } from "../fixtures/http-kit.ts";
import { ADA, crmStateText, crmWorkspace, journalRows, journalRuns, rawWorkspace, slowWorkspace, workspace } from "../fixtures/proxy-kit.ts";
import { manifestText, run, tempDir, until } from "../helpers.ts";

stopHttpProxiesAfterAll();
// Each test starts a proxy and its servers; under load that takes more than bun's default 5 s.
setDefaultTimeout(60_000);

const initializeBody = (name = "raw-client") =>
  JSON.stringify({
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name, version: "1" } },
  });

describe.concurrent("the token (R-HTTP-2)", () => {
  test("none, or fewer than 16 characters: exit 2 before any server starts, the token never echoed", async () => {
    const ws = slowWorkspace();
    const none = await run(["proxy", "--http", "0", "--manifest", ws.manifest], { cwd: ws.dir, env: { SYNARTESIS_TOKEN: undefined } });
    expect([none.code, none.stdout]).toEqual([2, ""]);
    expect(none.stderr).toBe(
      "synartesis: --http needs a bearer token: set SYNARTESIS_TOKEN, or give --token-file FILE (or --token TOKEN, which other users of this machine can see in ps) (see synartesis proxy --help)\n",
    );
    const short = await run(["proxy", "--http", "0", "--manifest", ws.manifest], { cwd: ws.dir, env: { SYNARTESIS_TOKEN: "fifteen-chars-x" } });
    expect([short.code, short.stderr]).toEqual([
      2,
      "synartesis: the token from SYNARTESIS_TOKEN is 15 characters long; it must have at least 16 (see synartesis proxy --help)\n",
    ]);
    const flag = await run(["proxy", "--http", "0", "--manifest", ws.manifest, "--token", "short"], { cwd: ws.dir });
    expect([flag.code, flag.stderr]).toEqual([
      2,
      "synartesis: the token from --token is 5 characters long; it must have at least 16 (see synartesis proxy --help)\n",
    ]);
    const file = join(ws.dir, "token.txt");
    writeFileSync(file, "has a space in it, long enough\n");
    chmodSync(file, 0o600);
    const spaced = await run(["proxy", "--http", "0", "--manifest", ws.manifest, "--token-file", file], { cwd: ws.dir });
    expect(spaced.code).toBe(2);
    expect(spaced.stderr).toContain(`the token from --token-file ${file} has a space, a control character or a non-ASCII character`);
    const missing = await run(["proxy", "--http", "0", "--manifest", ws.manifest, "--token-file", join(ws.dir, "nope")], { cwd: ws.dir });
    expect([missing.code, missing.stderr]).toEqual([
      2,
      `synartesis: cannot read the token: --token-file ${join(ws.dir, "nope")}: ENOENT (see synartesis proxy --help)\n`,
    ]);
    const both = await run(["proxy", "--http", "0", "--manifest", ws.manifest, "--token", TOKEN, "--token-file", file], { cwd: ws.dir });
    expect([both.code, both.stderr]).toEqual([2, "synartesis: give the token one way: --token or --token-file, not both (see synartesis proxy --help)\n"]);
    for (const result of [none, short, flag, spaced, missing, both]) expect(result.stderr).not.toContain("fifteen-chars-x");
    // The server would have written its pid on starting.
    expect(existsSync(ws.pidFile)).toBe(false);
  });

  test("the HTTP flags are checked before anything starts, and refused without --http", async () => {
    const ws = slowWorkspace();
    const cases: Array<[string[], string]> = [
      [["--http", "http"], '--http takes a port number, 0 to 65535 (0: any free port; got "http")'],
      [["--http", "70000"], '--http takes a port number, 0 to 65535 (0: any free port; got "70000")'],
      [["--http", "0", "--http-idle", "soon"], '--http-idle takes minutes, 0 or more (0: sessions never expire; decimals allowed; got "soon")'],
      [["--http", "0", "--http-max-sessions", "0"], '--http-max-sessions takes a whole number, 1 or more (got "0")'],
      [["--http-max-sessions", "5"], "--http-max-sessions is for serving over HTTP: add --http PORT"],
      [
        ["--http", "0", "--http-allow-host", "mcp.example.com:443"],
        '--http-allow-host takes a name without a port (got "mcp.example.com:443"): any port is accepted',
      ],
      [["--http", "0", "--http-allow-host", "http://x"], '--http-allow-host takes a host name or an address (got "http://x")'],
      [["--token", TOKEN, "--http-allow-host", "x"], "--token, --http-allow-host are for serving over HTTP: add --http PORT"],
    ];
    for (const [flags, message] of cases) {
      const result = await run(["proxy", "--manifest", ws.manifest, ...flags], { cwd: ws.dir, env: { SYNARTESIS_TOKEN: TOKEN } });
      expect([result.code, result.stderr]).toEqual([2, `synartesis: ${message} (see synartesis proxy --help)\n`]);
    }
    expect(existsSync(ws.pidFile)).toBe(false);
  });

  test("a wrong token, or none: 401 with WWW-Authenticate: Bearer, nothing journalled, the token never logged", async () => {
    const ws = crmWorkspace(crmStateText());
    const proxy = await startHttpProxy(ws);
    const update = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "update_customer", arguments: { id: "c_001", notes: "x" } } });
    for (const [authorization, challenge] of [
      [`Bearer ${TOKEN}x`, 'Bearer realm="synartesis", error="invalid_token"'],
      [`Bearer ${TOKEN.slice(0, -1)}`, 'Bearer realm="synartesis", error="invalid_token"'],
      [`Basic ${TOKEN}`, 'Bearer realm="synartesis"'],
      ["", 'Bearer realm="synartesis"'],
    ]) {
      for (const body of [initializeBody(), update]) {
        const response = await postRaw(proxy.url, body, { Authorization: authorization! });
        expect(response.status).toBe(401);
        expect(response.headers.get("www-authenticate")).toBe(challenge!);
        expect(await response.json()).toEqual({
          jsonrpc: "2.0",
          id: null,
          error: { code: -32000, message: "Unauthorized: send Authorization: Bearer with the token this proxy was started with" },
        });
      }
    }
    await expect(httpClient(proxy.url, "intruder", { token: "wrong-token-0123456789" })).rejects.toThrow();
    expect(journalRuns(ws.journal)).toEqual([]);
    expect(journalRows(ws.journal)).toEqual([]);
    expect(readFileSync(ws.state, "utf8")).toBe(crmStateText());
    proxy.proc.kill("SIGTERM");
    expect(await proxy.proc.exited).toBe(0);
    const logged = await proxy.allStderr;
    expect(logged).toContain('"msg":"shutting down"');
    expect(logged).not.toContain(TOKEN.slice(0, 16));
    expect(logged).not.toContain("wrong-token");
  });

  test("--token-file: the file's token (its newline left off) is the one that opens the endpoint", async () => {
    const ws = crmWorkspace(crmStateText());
    const file = join(tempDir(), "token");
    writeFileSync(file, "file-token-0123456789abcdef\n");
    chmodSync(file, 0o644);
    // A token file other users can read is refused, as a credentials file is.
    const readable = await run(["proxy", "--http", "0", "--manifest", ws.manifest, "--token-file", file], {
      cwd: ws.dir,
      env: { SYNARTESIS_TOKEN: undefined },
    });
    expect([readable.code, readable.stderr]).toEqual([2, `synartesis: the token file ${file} can be read by other users (mode 0644); run chmod 600 on it\n`]);
    chmodSync(file, 0o600);
    const proxy = await startHttpProxy(ws, ["--token-file", file], { SYNARTESIS_TOKEN: undefined });
    expect((await postRaw(proxy.url, initializeBody())).status).toBe(401);
    const { client } = await httpClient(proxy.url, "file-agent", { token: "file-token-0123456789abcdef" });
    expect((await client.callTool({ name: "get_customer", arguments: { id: "c_001" } })).structuredContent).toEqual(ADA);
    await client.close();
  });
});

describe.concurrent("Host and Origin (R-HTTP-3)", () => {
  test("403 for a Host or an Origin that is not the bound address, localhost or an allowed name; those pass", async () => {
    const ws = crmWorkspace(crmStateText());
    const proxy = await startHttpProxy(ws, ["--http-allow-host", "mcp.example.com"]);
    const port = new URL(proxy.url).port;
    const refused: Array<Record<string, string>> = [
      { Host: "evil.example.com" },
      { Host: `evil.example.com:${port}` },
      { Host: `127.0.0.1.evil.example:${port}` },
      { Origin: "http://evil.example.com" },
      { Origin: "null" },
      { Host: "mcp.example.com", Origin: "http://evil.example.com" },
    ];
    for (const headers of refused) {
      const response = await postRaw(proxy.url, initializeBody(), headers);
      expect([JSON.stringify(headers), response.status]).toEqual([JSON.stringify(headers), 403]);
      expect((await response.json()).error.message).toStartWith("Forbidden: the ");
    }
    const accepted: Array<Record<string, string>> = [
      { Host: `localhost:${port}` },
      { Origin: `http://localhost:${port}` },
      { Host: "mcp.example.com", Origin: "https://mcp.example.com" },
      {},
    ];
    for (const headers of accepted) {
      const response = await postRaw(proxy.url, initializeBody(), headers);
      expect([JSON.stringify(headers), response.status]).toEqual([JSON.stringify(headers), 200]);
      await response.text();
    }
    // A refused request never reaches the servers: no session, no run.
    expect(proxy.stderr()).not.toContain('"msg":"run opened"');
  });

  test("a Host that is no host name with a port is 400, said in one log line however often it comes", async () => {
    const ws = crmWorkspace(crmStateText());
    const proxy = await startHttpProxy(ws);
    for (const host of ["localhost:abc", "127.0.0.1:", "localhost:abc"]) {
      const response = await postRaw(proxy.url, initializeBody(), { Host: host });
      expect([host, response.status, (await response.json()).error.message]).toEqual([
        host,
        400,
        "Bad Request: the Host header is not a host name with an optional port",
      ]);
    }
    const said = proxy
      .stderr()
      .split("\n")
      .filter((line) => line.includes("Host header"));
    expect(said.map((line) => JSON.parse(line)).map(({ level, msg, host }) => ({ level, msg, host }))).toEqual([
      { level: "warn", msg: "a request's Host header is not a host name with an optional port; answered 400", host: "localhost:abc" },
    ]);
    expect(proxy.stderr()).not.toContain('"level":"error"');
  });

  test("bound to every interface: a warning that anyone reaching it with the token can write; this machine's addresses are its names", async () => {
    const ws = crmWorkspace(crmStateText());
    const proxy = await startHttpProxy(ws, ["--http-host", "0.0.0.0"]);
    expect(proxy.url).toMatch(/^http:\/\/0\.0\.0\.0:\d+\/mcp$/);
    expect(proxy.stderr()).toContain(
      '"level":"warn","msg":"serving beyond this machine: anyone who can reach this address and holds the token can write through every server in the manifest","host":"0.0.0.0"}',
    );
    const url = proxy.url.replace("0.0.0.0", "127.0.0.1");
    const { client } = await httpClient(url, "lan-agent");
    expect((await client.callTool({ name: "get_customer", arguments: { id: "c_001" } })).structuredContent).toEqual(ADA);
    await client.close();
  });
});

describe.concurrent("the endpoint", () => {
  test("listening: one JSON line with the URL, also at --log-level silent; /healthz answers without a token and says nothing else", async () => {
    const ws = crmWorkspace(crmStateText());
    const proxy = await startHttpProxy(ws, ["--log-level", "silent"], { SYNARTESIS_TOKEN: TOKEN });
    expect(proxy.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    const [line] = proxy.stderr().split("\n");
    expect(Object.keys(JSON.parse(line!))).toEqual(["ts", "level", "msg", "url"]);
    const base = proxy.url.replace(/\/mcp$/, "");
    const health = await fetch(`${base}/healthz`);
    expect([health.status, health.headers.get("content-type"), await health.text()]).toEqual([200, "text/plain; charset=utf-8", "ok\n"]);
    expect((await fetch(`${base}/healthz`, { method: "POST" })).status).toBe(405);
    const other = await fetch(`${base}/`, { headers: { Authorization: `Bearer ${TOKEN}` } });
    expect([other.status, await other.text()]).toEqual([404, "Not found: the MCP endpoint is /mcp\n"]);
    proxy.proc.kill("SIGTERM");
    expect(await proxy.proc.exited).toBe(0);
    expect((await proxy.allStderr).trim().split("\n")).toHaveLength(1);
  });

  test("Streamable HTTP: answers on an event stream with the session header, 202 for notifications, and each refusal with its status", async () => {
    const ws = crmWorkspace(crmStateText());
    const proxy = await startHttpProxy(ws);
    const init = await postRaw(proxy.url, initializeBody());
    expect([init.status, init.headers.get("content-type")]).toEqual([200, "text/event-stream"]);
    const session = init.headers.get("mcp-session-id")!;
    expect(session).toMatch(/^[0-9a-f-]{36}$/);
    const [answer] = await eventData(init);
    expect(JSON.parse(answer!).result.serverInfo.name).toBe("synartesis-toy-crm");
    const withSession = { "Mcp-Session-Id": session };
    const initialized = await postRaw(proxy.url, '{"jsonrpc":"2.0","method":"notifications/initialized"}', withSession);
    expect([initialized.status, await initialized.text(), initialized.headers.get("mcp-session-id")]).toEqual([202, "", session]);
    const ping = await postRaw(proxy.url, '{"jsonrpc":"2.0","id":"p","method":"ping"}', { ...withSession, "MCP-Protocol-Version": "2025-03-26" });
    expect(await eventData(ping)).toEqual(['{"jsonrpc":"2.0","id":"p","result":{}}']);
    // A batch (2025-03-26): both answers on one stream.
    const batch = await postRaw(proxy.url, '[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]', withSession);
    expect((await eventData(batch)).sort()).toEqual(['{"jsonrpc":"2.0","id":1,"result":{}}', '{"jsonrpc":"2.0","id":2,"result":{}}']);
    // An invalid request is answered as over stdio, on its stream.
    const invalid = await postRaw(proxy.url, '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"arguments":{}}}', withSession);
    expect(JSON.parse((await eventData(invalid))[0]!).error).toEqual({
      code: -32602,
      message: "Invalid params: tools/call needs params.name (the tool's name, a string)",
    });

    const refusals: Array<[string, Promise<Response>, number, string]> = [
      [
        "no session",
        postRaw(proxy.url, '{"jsonrpc":"2.0","id":1,"method":"ping"}'),
        400,
        "Bad Request: the Mcp-Session-Id header is missing; start a session with initialize",
      ],
      [
        "unknown session",
        postRaw(proxy.url, '{"jsonrpc":"2.0","id":1,"method":"ping"}', { "Mcp-Session-Id": "nope" }),
        404,
        "Session not found: it ended (DELETE, --http-idle or a restart); start a new one with initialize",
      ],
      ["not JSON", postRaw(proxy.url, "{nope", withSession), 400, "Parse error: the body is not valid JSON"],
      ["empty batch", postRaw(proxy.url, "[]", withSession), 400, "Invalid Request: empty batch"],
      [
        "accepts no event stream",
        postRaw(proxy.url, '{"jsonrpc":"2.0","id":1,"method":"ping"}', { ...withSession, Accept: "application/json" }),
        406,
        "Not Acceptable: the client must accept both application/json and text/event-stream",
      ],
      [
        "not JSON content",
        postRaw(proxy.url, '{"jsonrpc":"2.0","id":1,"method":"ping"}', { ...withSession, "Content-Type": "text/plain" }),
        415,
        "Unsupported Media Type: the body must be application/json",
      ],
      [
        "unknown protocol version",
        postRaw(proxy.url, '{"jsonrpc":"2.0","id":1,"method":"ping"}', { ...withSession, "MCP-Protocol-Version": "1999-01-01" }),
        400,
        'Bad Request: unsupported MCP-Protocol-Version "1999-01-01" (supported: 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05, 2024-10-07)',
      ],
      [
        "initialize in a session",
        postRaw(proxy.url, initializeBody(), withSession),
        400,
        "Bad Request: initialize starts a new session; send it without Mcp-Session-Id",
      ],
      [
        "initialize in a batch",
        postRaw(proxy.url, `[${initializeBody()},{"jsonrpc":"2.0","id":5,"method":"ping"}]`),
        400,
        "Invalid Request: initialize must come alone, not in a batch",
      ],
      ["PUT", fetch(proxy.url, { method: "PUT", headers: { ...MCP_HEADERS, ...withSession } }), 405, "Method Not Allowed: /mcp takes POST, GET and DELETE"],
      [
        "GET without event stream",
        fetch(proxy.url, { headers: { ...MCP_HEADERS, ...withSession, Accept: "application/json" } }),
        406,
        "Not Acceptable: the client must accept text/event-stream",
      ],
    ];
    for (const [what, pending, status, message] of refusals) {
      const response = await pending;
      expect([what, response.status, (await response.json()).error.message]).toEqual([what, status, message]);
    }
    // One GET stream at a time.
    const stream = await fetch(proxy.url, { headers: { ...MCP_HEADERS, ...withSession } });
    expect([stream.status, stream.headers.get("content-type")]).toEqual([200, "text/event-stream"]);
    const second = await fetch(proxy.url, { headers: { ...MCP_HEADERS, ...withSession } });
    expect([second.status, (await second.json()).error.message]).toEqual([409, "Conflict: this session already has a GET stream open"]);
    await stream.body!.cancel();
  });

  test("a result from a stdio server reaches the HTTP client byte for byte (id swapped); a body on several lines reaches the server as one", async () => {
    const { received, ...ws } = rawWorkspace();
    const proxy = await startHttpProxy(ws);
    const session = { "Mcp-Session-Id": await rawSession(proxy.url) };
    const RESULT =
      '{"content":[{"type":"text","text":"caf\\u00e9 1.0"}],' +
      '"structuredContent":{"float":1.0,"big":12345678901234567890,"word":"caf\\u00e9","exp":1E+2,"list":[1.50, -0.0]}}';
    const read = await postRaw(
      proxy.url,
      '{"jsonrpc":"2.0","id":12345678901234567890,"method":"tools/call","params":{"name":"raw_read","arguments":{}}}',
      session,
    );
    expect(await eventData(read)).toEqual([`{"jsonrpc":"2.0", "id":12345678901234567890, "result":${RESULT}}`]);
    const body =
      '{\n  "jsonrpc": "2.0",\r\n  "id": "two",\n  "method": "tools/call",\n  "params": {"name": "raw_write", "arguments": { "word" : "caf\\u00e9", "n": 1.50 }}\n}\n';
    const write = await postRaw(proxy.url, body, session);
    expect(await eventData(write)).toEqual([`{"jsonrpc":"2.0", "id":"two", "result":${RESULT}}`]);
    const calls = readFileSync(received, "utf8")
      .split("\n")
      .filter((line) => line.includes("raw_write"));
    expect(calls).toHaveLength(1);
    expect(rawMember(rawMember(calls[0]!, "params")!, "arguments")).toBe('{ "word" : "caf\\u00e9", "n": 1.50 }');
    expect(journalRows(ws.journal).map((row) => [row.tool, row.status, row.result])).toEqual([
      ["raw_read", "applied", RESULT],
      ["raw_write", "applied", RESULT],
    ]);
  });
});

describe.concurrent("a server that will not start (R-PROXY-10, R-PROXY-14)", () => {
  const serverBlock = (script: string) => manifestText({ servers: { broken: { command: process.execPath, args: ["-e", script] } }, tools: [] });

  test("dying before any client came: exit 1 naming it and quoting its stderr", async () => {
    const ws = workspace(serverBlock("console.error('cannot open the database'); process.exit(3)"));
    const result = await run(["proxy", "--http", "0", "--manifest", ws.manifest], { cwd: ws.dir, env: { SYNARTESIS_TOKEN: TOKEN } });
    expect(result.code).toBe(1);
    expect(result.stderr).toEndWith(
      'synartesis: server "broken" would not start: it exited with code 3 before answering\n  its stderr said:\n    cannot open the database\n',
    );
  });

  test("dying at the first client's initialize: that client is told why, then exit 1", async () => {
    const ws = workspace(serverBlock("process.stdin.once('data', () => { console.error('refusing every client'); process.exit(4) })"));
    const proxy = await startHttpProxy(ws);
    const init = await postRaw(proxy.url, initializeBody());
    const [answer] = await eventData(init);
    expect(JSON.parse(answer!).error.message).toStartWith('server "broken" would not start: it exited with code 4 before answering');
    expect(await proxy.proc.exited).toBe(1);
    expect(await proxy.allStderr).toContain("refusing every client");
  });
});

describe.concurrent("a session ends complete (R-HTTP-4)", () => {
  test("DELETE ends its run complete before it answers; the session is gone after", async () => {
    const ws = crmWorkspace(crmStateText());
    const proxy = await startHttpProxy(ws);
    const { client, transport } = await httpClient(proxy.url, "deleting-agent");
    await client.callTool({ name: "update_customer", arguments: { id: "c_001", notes: "deleted session" } });
    expect(journalRuns(ws.journal)).toMatchObject([{ label: "deleting-agent", status: "active" }]);
    const session = transport.sessionId!;
    await transport.terminateSession();
    expect(journalRuns(ws.journal)).toMatchObject([{ label: "deleting-agent", status: "complete" }]);
    const after = await postRaw(proxy.url, '{"jsonrpc":"2.0","id":1,"method":"ping"}', { "Mcp-Session-Id": session });
    expect(after.status).toBe(404);
    await client.close();
  });

  test("--http-max-sessions: one session more, or one sessionless run more, gets 503 and opens no run; once one ends, the next can start", async () => {
    const ws = crmWorkspace(crmStateText());
    const proxy = await startHttpProxy(ws, ["--http-max-sessions", "2"]);
    const first = await rawSession(proxy.url, "first");
    await rawSession(proxy.url, "second");
    const full = "Service Unavailable: 2 sessions are open, the most --http-max-sessions allows; one more can start when one ends (DELETE, or --http-idle)";
    const third = await postRaw(proxy.url, initializeBody("third"));
    expect([third.status, (await third.json()).error.message]).toEqual([503, full]);
    const meta = {
      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
      "io.modelcontextprotocol/clientCapabilities": {},
      "io.modelcontextprotocol/clientInfo": { name: "sessionless", version: "1" },
    };
    const modern = () =>
      postRaw(proxy.url, JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: { _meta: meta } }), {
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/list",
      });
    const refused = await modern();
    expect([refused.status, (await refused.json()).error.message]).toEqual([503, full]);
    expect(journalRuns(ws.journal)).toEqual([]);
    expect((await fetch(proxy.url, { method: "DELETE", headers: { ...MCP_HEADERS, "Mcp-Session-Id": first } })).status).toBe(200);
    const served = await modern();
    expect(served.status).toBe(200);
    expect(JSON.parse((await eventData(served))[0]!).result.tools.length).toBeGreaterThan(0);
  });

  test("--http-idle: a session without a request for that long ends, its run complete, and is gone", async () => {
    // (That a call in progress keeps its session from idling is shown in-process, with a clock of the test's own: http-session.test.ts.)
    const ws = crmWorkspace(crmStateText());
    // 0.025 minutes: 1.5 s without a request.
    const proxy = await startHttpProxy(ws, ["--http-idle", "0.025"]);
    const session = { "Mcp-Session-Id": await rawSession(proxy.url, "idle-agent") };
    const call = await postRaw(
      proxy.url,
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"update_customer","arguments":{"id":"c_002","notes":"then idle"}}}',
      session,
    );
    expect(JSON.parse((await eventData(call))[0]!).result.structuredContent.notes).toBe("then idle");
    await until(() => journalRuns(ws.journal)[0]?.status === "complete", "the idle session's run to complete");
    expect(journalRuns(ws.journal)).toMatchObject([{ label: "idle-agent", status: "complete" }]);
    await until(() => proxy.stderr().includes('"msg":"session ended: no request for --http-idle","client":"idle-agent","idleMinutes":0.025}'), "the log line");
    expect((await postRaw(proxy.url, '{"jsonrpc":"2.0","id":2,"method":"ping"}', session)).status).toBe(404);
  });
});
