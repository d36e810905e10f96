// What a hostile or careless client writes is taken exactly as written, or
// refused (issue 13 items 6, 7 and 12): ids come back as the bytes that were
// sent, one id is one call, arguments a double would change or that name a key
// twice are refused before any journal row, and nesting too deep gets a clear
// error instead of a stack overflow.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { rawMember } from "../../src/jsonrpc/raw-json.ts";
import { BIN, initializeFrame, LineSession, run, until } from "../helpers.ts";
import { crmStateText, crmWorkspace, INITIALIZED, journalRows, jsonFrame, rawWorkspace, slowWorkspace } from "../fixtures/proxy-kit.ts";

// Each file sets its own: the preload's default reaches only the first file bun runs.
setDefaultTimeout(60_000);

/** A raw tools/call line whose id and arguments are written exactly as given. */
const callLine = (idText: string, name: string, argumentsText: string) =>
  `{"jsonrpc":"2.0","id":${idText},"method":"tools/call","params":{"name":${JSON.stringify(name)},"arguments":${argumentsText}}}`;

describe.concurrent("one id, one call", () => {
  test("a second request under an id still in flight gets -32600, is never forwarded and leaves no row; the first gets its own answer", async () => {
    const ws = slowWorkspace();
    await using session = new LineSession([BIN, "proxy", "--manifest", ws.manifest, "--log-level", "warn"], { cwd: ws.dir });
    await session.initialize();
    session.send(jsonFrame(7, "tools/call", { name: "slow_write", arguments: { key: "a", value: "A1", wait_for: ws.release } }));
    await until(() => journalRows(ws.journal).find((r) => r.tool === "slow_write"), "the first call's write-ahead row");
    session.send(jsonFrame(7, "tools/call", { name: "slow_write", arguments: { key: "b", value: "B1", ms: 0 } }));
    const duplicate = await session.response(7);
    expect(duplicate.error).toEqual({ code: -32600, message: "Invalid Request: id 7 is already used by a request still in progress" });
    writeFileSync(ws.release, "");
    const first = await session.response(7);
    expect(first.result.structuredContent).toEqual({ key: "a", value: "A1" });
    // The second call never reached the server.
    const b = await session.request(8, "tools/call", { name: "read_value", arguments: { key: "b" } });
    expect(b.result.structuredContent).toEqual({ key: "b", value: "B0" });
    // Once the first is answered, its id is free again.
    const again = await session.request(7, "tools/call", { name: "read_value", arguments: { key: "a" } });
    expect(again.result.structuredContent).toEqual({ key: "a", value: "A1" });
    expect(await session.close()).toBe(0);
    const rows = journalRows(ws.journal);
    expect(rows.map((r) => `${r.tool}:${JSON.parse(r.args).key}:${r.status}`)).toEqual([
      "slow_write:a:applied",
      "read_value:b:applied",
      "read_value:a:applied",
    ]);
  }, 60_000);

  test('a message that gives "id" or "params" twice is refused before anything is routed: no reply can be taken for another call\'s, no row is written', async () => {
    const ws = slowWorkspace();
    await using session = new LineSession([BIN, "proxy", "--manifest", ws.manifest, "--log-level", "warn"], { cwd: ws.dir });
    await session.initialize();
    session.send(jsonFrame(4, "tools/call", { name: "slow_write", arguments: { key: "a", value: "A1", wait_for: ws.release } }));
    await until(() => journalRows(ws.journal).find((r) => r.tool === "slow_write"), "the slow write's write-ahead row");
    // The attack: a read whose second "id" is the id the proxy gave the slow write upstream.
    session.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_value","arguments":{"key":"b"}},"id":4}`);
    session.send(
      `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_value","arguments":{"key":"b"}},"params":{"name":"slow_write","arguments":{"key":"b","value":"X","ms":0}}}`,
    );
    const refused = [
      await session.next((m) => m.error?.message?.includes('"id" twice')),
      await session.next((m) => m.error?.message?.includes('"params" twice')),
    ];
    expect(refused).toEqual([
      { jsonrpc: "2.0", id: null, error: { code: -32600, message: 'Invalid Request: the message gives "id" twice; nothing was run' } },
      { jsonrpc: "2.0", id: null, error: { code: -32600, message: 'Invalid Request: the message gives "params" twice; nothing was run' } },
    ]);
    writeFileSync(ws.release, "");
    const write = await session.response(4);
    expect(write.result.structuredContent).toEqual({ key: "a", value: "A1" });
    expect(await session.close()).toBe(0);
    // The slow write is recorded with its own result, and its post-state is the state it left.
    const rows = journalRows(ws.journal);
    expect(rows.map((r) => `${r.tool}:${r.status}`)).toEqual(["slow_write:applied"]);
    expect(JSON.parse(rows[0]!.post_state!)).toEqual({ key: "a", value: "A1" });
  }, 60_000);

  test("ids come back as the exact bytes the client sent: 2^53+1, 1e400, 1.0 and an escaped string", async () => {
    const ws = crmWorkspace(crmStateText());
    const ids = ["9007199254740993", "1e400", "1.0", '"caf\\u00e9"', "-0"];
    const lines = [initializeFrame(0), INITIALIZED];
    for (const id of ids) {
      lines.push(callLine(id, "get_customer", '{"id":"c_001"}'));
      lines.push(`{"jsonrpc":"2.0","id":${id},"method":"ping"}`);
      lines.push(`{"jsonrpc":"2.0","id":${id},"method":"no/such/method"}`);
    }
    // Answered one after the other (the same id twice in flight would rightly be refused).
    await using session = new LineSession([BIN, "proxy", "--manifest", ws.manifest, "--log-level", "warn"], { cwd: ws.dir });
    session.send(lines[0]!);
    await session.response(0);
    session.send(lines[1]!);
    for (let i = 2; i < lines.length; i++) {
      const before = session.lines.length;
      session.send(lines[i]!);
      await until(() => session.lines.length > before, "an answer");
    }
    const out = session.lines.splice(0);
    expect(await session.close()).toBe(0);
    expect(out).toHaveLength(ids.length * 3);
    ids.forEach((id, i) => {
      for (const line of out.slice(i * 3, i * 3 + 3)) expect(rawMember(line, "id")).toBe(id);
    });
    expect(out[0]).toContain('"structuredContent"');
  }, 60_000);
});

describe.concurrent("arguments that would not reach the server as they were approved and recorded", () => {
  test("duplicate keys and numbers a double changes are refused with -32602 before any journal row; exact forms pass", async () => {
    const ws = crmWorkspace(crmStateText());
    const refused: Array<[string, string]> = [
      [callLine("1", "update_customer", '{"id":"c_001","notes":"approved","notes":"actually run"}'), "params.arguments.notes is given twice (a duplicate key)"],
      [
        `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_customer","name":"send_email","arguments":{"id":"c_001"}}}`,
        "params.name is given twice",
      ],
      [
        callLine("3", "update_customer", '{"id":"c_001","notes":"x","n":9007199254740993}'),
        "params.arguments.n is 9007199254740993: it cannot be carried exactly (it would become 9007199254740992)",
      ],
      [
        callLine("4", "update_customer", '{"id":"c_001","notes":"x","n":1e400}'),
        "params.arguments.n is 1e400: it is too large for a JSON number (it would become null)",
      ],
      [callLine("5", "update_customer", '{"id":"c_001","notes":"x","n":-0}'), "params.arguments.n is -0: it is a negative zero (it would become 0)"],
      [
        callLine("6", "update_customer", '{"id":"c_001","notes":"x","list":[1,{"deep":0.10000000000000001}]}'),
        "params.arguments.list[1].deep is 0.10000000000000001",
      ],
    ];
    const lines = [
      initializeFrame(0),
      INITIALIZED,
      ...refused.map(([line]) => line),
      callLine("7", "get_customer", '{"id":"c_001","n":1.0,"m":1e2,"z":0.0}'),
      "",
    ];
    const result = await run(["proxy", "--manifest", ws.manifest, "--log-level", "warn"], { cwd: ws.dir, stdin: lines.join("\n") });
    expect(result.code).toBe(0);
    const out = result.stdout
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    refused.forEach(([, says], i) => {
      const reply = out.find((m) => m.id === i + 1);
      expect(reply.error.code).toBe(-32602);
      expect(reply.error.message).toContain(says);
      expect(reply.error.message).toContain("Synartesis did not run this call");
    });
    // Written differently but carried exactly, these reach the server (which answers for itself).
    expect(out.find((m) => m.id === 7).result).toBeDefined();
    // Only that call ran and was recorded; the CRM is untouched.
    const rows = journalRows(ws.journal);
    expect(rows.map((r) => [r.tool, JSON.parse(r.args)])).toEqual([["get_customer", { id: "c_001", n: 1, m: 100, z: 0 }]]);
    expect(JSON.parse(await Bun.file(ws.state).text())).toEqual(JSON.parse(crmStateText()));
  }, 60_000);
});

describe.concurrent("what the approver sees is what runs", () => {
  test("an approved call is forwarded as the canonical form that was approved; an ungated one byte for byte", async () => {
    const { received, ...ws } = rawWorkspace([
      { match: "raw.raw_read", class: "readonly" },
      { match: "raw.raw_write", class: "irreversible" },
    ]);
    const args = '{ "to" : "caf\\u00e9@example.com", "amount" : 1.50, "n": 1E2, "nested": {"b": 2, "a": [0.0]} }';
    await using session = new LineSession([BIN, "proxy", "--manifest", ws.manifest, "--log-level", "warn"], { cwd: ws.dir });
    await session.initialize();
    session.send(callLine("1", "raw_read", args));
    await session.response(1);
    session.send(callLine("2", "raw_write", args));
    const held = await session.response(2);
    const action = /Action id: ([0-9a-f]{8})/.exec(held.result.content[0].text)![1]!;
    expect((await run(["approve", action, "--journal", ws.journal], { cwd: ws.dir })).code).toBe(0);
    session.send(callLine("3", "raw_write", args));
    expect((await session.response(3)).result.structuredContent.word).toBe("café");
    expect(await session.close()).toBe(0);

    const calls = (await Bun.file(received).text()).split("\n").filter((line) => line.includes('"tools/call"'));
    const argumentsOf = (line: string) => rawMember(rawMember(line, "params")!, "arguments");
    expect(calls.map(argumentsOf)).toEqual([
      args, // the read: the agent's bytes
      '{"amount":1.5,"n":100,"nested":{"a":[0],"b":2},"to":"café@example.com"}', // the approved write: what alice saw
    ]);
  }, 60_000);
});

describe.concurrent("nesting too deep", () => {
  test("100,000 levels of arrays in the arguments get a clear -32600 (not a stack overflow), nothing is journalled, and the proxy keeps serving", async () => {
    const ws = crmWorkspace(crmStateText());
    const deep = "[".repeat(100_000) + "]".repeat(100_000);
    const lines = [
      initializeFrame(0),
      INITIALIZED,
      callLine("1", "update_customer", `{"id":"c_001","notes":${deep}}`),
      jsonFrame(2, "tools/call", { name: "get_customer", arguments: { id: "c_001" } }),
      "",
    ];
    const result = await run(["proxy", "--manifest", ws.manifest, "--log-level", "warn"], { cwd: ws.dir, stdin: lines.join("\n") });
    expect(result.code).toBe(0);
    expect(result.stderr).toBe("");
    const out = result.stdout
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    expect(out.find((m) => m.id === 1).error).toEqual({
      code: -32600,
      message: "Invalid Request: nesting too deep (more than 1000 levels of objects and arrays)",
    });
    expect(out.find((m) => m.id === 2).result.structuredContent.id).toBe("c_001");
    expect(journalRows(ws.journal).map((r) => r.tool)).toEqual(["get_customer"]);
  }, 60_000);
});
