// R-PROXY-1…3 through the built binary: a client sees through the proxy what it
// would see from the servers directly (the toy CRM, server-everything's whole
// protocol both ways, two servers at once), and results reach it byte for byte.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { BIN, connect, initializeFrame, LineSession, manifestText, run, until } from "../helpers.ts";
import { INSTRUCTIONS_PREAMBLE } from "../../src/proxy/session/handshake.ts";
import {
  ADA,
  crmStateText,
  crmWorkspace,
  EVERYTHING,
  FILESYSTEM,
  fixtureServer,
  INITIALIZED,
  journalRows,
  jsonFrame,
  rawWorkspace,
  SEED,
  workspace,
} from "../fixtures/proxy-kit.ts";

// Each file sets its own: the preload's default reaches only the first file bun runs.
setDefaultTimeout(60_000);

/** An SDK client over stdio, closed when the test's `scope` ends. */
async function open(scope: AsyncDisposableStack, command: string, args: string[], options: Parameters<typeof connect>[2] = {}): Promise<Client> {
  return scope.use(await connect(command, args, options)).client;
}

const proxyArgs = (manifest: string) => ["proxy", "--manifest", manifest, "--log-level", "warn"];

describe.concurrent("one server: the toy CRM directly and through the proxy look the same", () => {
  test("identity, capabilities, tools, resources and results are equal; instructions gain the preamble", async () => {
    await using scope = new AsyncDisposableStack();
    const directDir = crmWorkspace(crmStateText());
    const proxied = crmWorkspace(crmStateText());
    const direct = await open(scope, BIN, ["toy-crm", "--state", directDir.state]);
    const through = await open(scope, BIN, proxyArgs(proxied.manifest), { cwd: proxied.dir });

    expect(through.getServerVersion()).toEqual(direct.getServerVersion()!);
    expect(through.getServerCapabilities()).toEqual(direct.getServerCapabilities()!);
    const own = direct.getInstructions()!;
    expect(own.length).toBeGreaterThan(20);
    const instructions = through.getInstructions()!;
    expect(instructions).toStartWith(INSTRUCTIONS_PREAMBLE);
    expect(instructions).toContain(own);
    expect(instructions).toMatch(/records every tool call/);
    expect(instructions).toMatch(/approval/);

    expect(await through.listTools()).toEqual(await direct.listTools());
    expect(await through.listResources()).toEqual(await direct.listResources());
    expect(await through.listResourceTemplates()).toEqual(await direct.listResourceTemplates());
    expect(await through.readResource({ uri: "crm://customers/c_002" })).toEqual(await direct.readResource({ uri: "crm://customers/c_002" }));
    expect(await through.readResource({ uri: "crm://customers" })).toEqual(await direct.readResource({ uri: "crm://customers" }));

    const calls: Array<[string, Record<string, unknown>]> = [
      ["get_customer", { id: "c_001" }],
      ["get_customer", { id: "c_999" }], // a tool error
      ["get_customer", { id: 7 }], // a wrongly typed argument
      ["update_customer", { id: "c_001", plan: "enterprise", notes: "via the proxy" }],
      ["update_customer", { id: "c_003", name: "A. M. Turing" }],
      ["get_customer", { id: "c_001" }],
      ["create_customer", { name: "Kay Moss", email: "kay@example.com" }],
      ["delete_customer", { id: "c_002" }],
    ];
    for (const [name, args] of calls) {
      const expected = await direct.callTool({ name, arguments: args });
      const got = await through.callTool({ name, arguments: args });
      expect({ name, got }).toEqual({ name, got: expected });
    }
    // A JSON-RPC error from the server keeps its code and message.
    const directError = await direct.readResource({ uri: "crm://customers/c_404" }).catch((e) => e);
    const proxiedError = await through.readResource({ uri: "crm://customers/c_404" }).catch((e) => e);
    expect(proxiedError.code).toBe(directError.code);
    expect(proxiedError.message).toBe(directError.message);

    // Both state files went through the same changes.
    const customers = (path: string) => JSON.parse(readFileSync(path, "utf8")).customers;
    expect(customers(proxied.state)).toEqual(customers(directDir.state));

    // Every call was journalled with its class.
    const rows = journalRows(proxied.journal);
    expect(rows.map((r) => [r.tool, r.class, r.status])).toEqual([
      ["get_customer", "readonly", "applied"],
      ["get_customer", "readonly", "failed"],
      ["get_customer", "readonly", "failed"],
      ["update_customer", "reversible", "applied"],
      ["update_customer", "reversible", "applied"],
      ["get_customer", "readonly", "applied"],
      ["create_customer", "compensable", "applied"],
      ["delete_customer", "reversible", "applied"],
    ]);
  });
});

describe.concurrent("server-everything through the proxy: the whole protocol, both ways", () => {
  test("prompts, resources + subscribe, completions, logging, progress, sampling, elicitation and roots", async () => {
    await using scope = new AsyncDisposableStack();
    // Everything this test calls changes nothing that matters: it passes without a gate.
    const ws = workspace(
      manifestText({ servers: { everything: { command: "node", args: [EVERYTHING, "stdio"] } }, tools: [{ match: "everything.*", class: "readonly" }] }),
    );
    const rootUri = `file://${ws.dir}`;
    // Handlers go in before connecting: what the server sends while it starts must find them.
    const client = new Client(
      { name: "everything-agent", version: "1.0.0" },
      { capabilities: { sampling: {}, elicitation: {}, roots: { listChanged: true } } },
    );
    scope.defer(() => client.close().catch(() => {}));
    const listChanged: string[] = [];
    client.setNotificationHandler(ToolListChangedNotificationSchema, (n) => void listChanged.push(n.method));
    const rootsAsked: unknown[] = [];
    client.setRequestHandler(ListRootsRequestSchema, (request) => {
      rootsAsked.push(request.params ?? {});
      return { roots: [{ uri: rootUri, name: "test root" }] };
    });
    const sampled: any[] = [];
    client.setRequestHandler(CreateMessageRequestSchema, (request) => {
      sampled.push(request.params);
      return { model: "stub-model-7", role: "assistant", content: { type: "text", text: "a sampled answer: 42 ferrets" } };
    });
    const elicited: any[] = [];
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      elicited.push(request.params);
      return { action: "accept", content: { name: "Ada Tester", check: true, email: "ada.tester@example.com" } };
    });
    const logs: any[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs.push(n.params));
    const updated: string[] = [];
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updated.push(n.params.uri));
    await client.connect(
      new StdioClientTransport({ command: BIN, args: proxyArgs(ws.manifest), cwd: ws.dir, env: process.env as Record<string, string>, stderr: "ignore" }),
    );

    expect(client.getServerVersion()?.name).toBe("mcp-servers/everything");
    const instructions = client.getInstructions()!;
    expect(instructions).toStartWith(INSTRUCTIONS_PREAMBLE);
    expect(instructions.length).toBeGreaterThan(INSTRUCTIONS_PREAMBLE.length + 50);
    const capabilities = client.getServerCapabilities()!;
    expect(capabilities).toMatchObject({ prompts: {}, resources: { subscribe: true }, logging: {}, tools: {} });

    // roots/list: the server asks once it is initialized; the client's answer reaches it.
    await until(() => rootsAsked.length > 0, "the server to ask for roots");
    // It registered the tools that need those client capabilities, and said so.
    await until(() => listChanged.length > 0, "notifications/tools/list_changed");
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const name of ["echo", "trigger-long-running-operation", "trigger-sampling-request", "trigger-elicitation-request", "get-roots-list"]) {
      expect(names).toContain(name);
    }
    const roots = await client.callTool({ name: "get-roots-list", arguments: {} });
    expect(JSON.stringify(roots.content)).toContain(rootUri);

    // prompts
    const { prompts } = await client.listPrompts();
    expect(prompts.map((p) => p.name)).toEqual(expect.arrayContaining(["simple-prompt", "args-prompt", "completable-prompt"]));
    const prompt = await client.getPrompt({ name: "args-prompt", arguments: { city: "Paris", state: "Texas" } });
    expect(prompt.messages[0]!.content).toEqual({ type: "text", text: "What's weather in Paris, Texas?" });

    // completions
    const completion = await client.complete({
      ref: { type: "ref/prompt", name: "completable-prompt" },
      argument: { name: "department", value: "Mar" },
    });
    expect(completion.completion.values).toEqual(["Marketing"]);
    const contextual = await client.complete({
      ref: { type: "ref/prompt", name: "completable-prompt" },
      argument: { name: "name", value: "" },
      context: { arguments: { department: "Sales" } },
    });
    expect(contextual.completion.values).toEqual(["David", "Eve", "Frank"]);

    // logging: set the level, and a logging message arrives.
    await client.setLoggingLevel("debug");

    // resources: list, read, subscribe → resources/updated arrives.
    const { resources } = await client.listResources();
    expect(resources.length).toBeGreaterThan(0);
    const first = resources[0]!;
    const read = await client.readResource({ uri: first.uri });
    expect(read.contents[0]!.uri).toBe(first.uri);
    const dynamic = await client.readResource({ uri: "demo://resource/dynamic/text/7" });
    expect((dynamic.contents[0] as any).text).toStartWith("Resource 7: This is a plaintext resource");
    await client.subscribeResource({ uri: first.uri });
    await until(() => logs.find((l) => String(l.data).includes(first.uri)), "a logging message about the subscription");
    await client.callTool({ name: "toggle-subscriber-updates", arguments: {} });
    await until(() => updated.includes(first.uri), "notifications/resources/updated");
    await client.callTool({ name: "toggle-subscriber-updates", arguments: {} }); // and stop them again
    await client.unsubscribeResource({ uri: first.uri });

    // progress: notifications come back with the token the client chose.
    const progress: Array<{ progress: number; total?: number }> = [];
    const long = await client.callTool({ name: "trigger-long-running-operation", arguments: { duration: 0.3, steps: 3 } }, undefined, {
      onprogress: (p) => void progress.push(p),
    });
    expect(JSON.stringify(long.content)).toContain("Long running operation completed");
    // The SDK client runs notification handlers a microtask late: a last progress notification that
    // arrives in the same chunk as the result finds its handler gone (directly as well). The raw test below sees all three.
    expect(progress.map((p) => [p.progress, p.total])).toEqual(
      [
        [1, 3],
        [2, 3],
        [3, 3],
      ].slice(0, Math.max(2, progress.length)),
    );

    // sampling: the server's request reaches the client and the answer reaches the server.
    const sampling = await client.callTool({ name: "trigger-sampling-request", arguments: { prompt: "count the ferrets", maxTokens: 20 } });
    expect(sampled).toHaveLength(1);
    expect(JSON.stringify(sampled[0].messages)).toContain("count the ferrets");
    expect(sampled[0].maxTokens).toBe(20);
    const samplingText = JSON.stringify(sampling.content);
    expect(samplingText).toContain("a sampled answer: 42 ferrets");
    expect(samplingText).toContain("stub-model-7");

    // elicitation: likewise.
    const elicitation = await client.callTool({ name: "trigger-elicitation-request", arguments: {} });
    expect(elicited).toHaveLength(1);
    expect(elicited[0].message).toContain("Please provide inputs");
    const elicitationText = JSON.stringify(elicitation.content);
    expect(elicitationText).toContain("- Name: Ada Tester");
    expect(elicitationText).toContain("- Email: ada.tester@example.com");

    // The echo tool, for good measure, and the journal saw every tool call.
    const echo = await client.callTool({ name: "echo", arguments: { message: 'h\u00e9llo "there"' } });
    expect(echo.content).toEqual([{ type: "text", text: 'Echo: h\u00e9llo "there"' }]);
    const rows = journalRows(ws.journal);
    expect(rows.map((r) => r.tool)).toEqual([
      "get-roots-list",
      "toggle-subscriber-updates",
      "toggle-subscriber-updates",
      "trigger-long-running-operation",
      "trigger-sampling-request",
      "trigger-elicitation-request",
      "echo",
    ]);
    expect(rows.every((r) => r.status === "applied" && r.class === "readonly")).toBe(true);
  }, 120_000);

  test("progress notifications keep a token the client chose itself", async () => {
    const ws = workspace(
      manifestText({ servers: { everything: { command: "node", args: [EVERYTHING, "stdio"] } }, tools: [{ match: "everything.*", class: "readonly" }] }),
    );
    // Its stdin closes at once: the long operation gets what the machine needs, not the 5 s drain.
    const result = await run([...proxyArgs(ws.manifest), "--drain", "600"], {
      cwd: ws.dir,
      stdin: [
        initializeFrame(0),
        INITIALIZED,
        jsonFrame("call-1", "tools/call", {
          name: "trigger-long-running-operation",
          arguments: { duration: 2, steps: 4 },
          _meta: { progressToken: "my-token-\u00e9" },
        }),
        "",
      ].join("\n"),
    });
    expect(result.code).toBe(0);
    const lines = result.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    // Even with every frame piped in at once, nothing comes before the initialize result (the server
    // may announce tools/list_changed while it starts: whether it does before its call ends is its timing).
    expect(lines[0].id).toBe(0);
    // The server sends its progress without waiting for it, so its answer may overtake the last of it (on a busy
    // machine it does; half a second between steps leaves the first well before); progress for a request already
    // answered is not passed on. What arrives has the client's token.
    const progress = lines.filter((m) => m.method === "notifications/progress");
    expect(progress[0]?.params).toMatchObject({ progressToken: "my-token-\u00e9", progress: 1 });
    expect(progress.map((m) => m.params.progressToken)).toEqual(progress.map(() => "my-token-\u00e9"));
    expect(lines.find((m) => m.id === "call-1")?.result?.content?.[0]?.text).toContain("completed");
  }, 60_000);
});

// The timeout also bounds the server's start: the bun fixture starts quickly even on a busy machine.
test.concurrent("progress keeps a long call alive past the server's timeout, as it would directly", async () => {
  const ws = workspace(
    manifestText({ servers: { slow: fixtureServer("slow-server.ts", [], { timeout: 4 }) }, tools: [{ match: "slow.*", class: "readonly" }] }),
  );
  // Stdin stays open until the answer: the call outlasts the drain an EOF would start.
  await using session = new LineSession([BIN, ...proxyArgs(ws.manifest)], { cwd: ws.dir });
  await session.initialize();
  // 5 s in all, with progress every 0.5 s: never 4 s without a sign of life, even on a loaded machine.
  session.send(jsonFrame(1, "tools/call", { name: "long_operation", arguments: { steps: 10, ms: 500 }, _meta: { progressToken: "t" } }));
  const answer = await session.response(1, 30_000);
  expect(await session.close()).toBe(0);
  const lines = session.lines.map((l) => JSON.parse(l));
  expect(lines.filter((m) => m.method === "notifications/progress").length).toBe(10);
  expect(answer.result.isError).toBeUndefined();
  expect(answer.result.structuredContent).toEqual({ completed: 10 });
}, 60_000);

describe.concurrent("two servers at once", () => {
  test("tools are SERVER__TOOL, both work, and resources are routed by URI", async () => {
    await using scope = new AsyncDisposableStack();
    const ws = workspace("");
    const root = join(ws.dir, "files");
    mkdirSync(root);
    writeFileSync(join(root, "hello.txt"), "hello from the filesystem\n");
    writeFileSync(ws.state, crmStateText());
    writeFileSync(
      ws.manifest,
      manifestText({
        servers: { crm: { command: "synartesis", args: ["toy-crm", "--state", "./crm.json"] }, fs: { command: "node", args: [FILESYSTEM, root] } },
        tools: [
          { match: "crm.get_customer", class: "readonly" },
          { match: "fs.read_text_file", class: "readonly" },
        ],
      }),
    );
    // No roots capability: server-filesystem would replace its allowed folder with the client's roots.
    const client = await open(scope, BIN, proxyArgs(ws.manifest), { cwd: ws.dir, name: "two-servers" });
    expect(client.getServerVersion()?.name).toBe("synartesis");
    const instructions = client.getInstructions()!;
    expect(instructions).toStartWith(INSTRUCTIONS_PREAMBLE);
    expect(instructions).toContain('Server "crm"');
    expect(client.getServerCapabilities()).toMatchObject({ tools: {}, resources: {} });

    // A resource read before any listing still finds its owner.
    const early = await client.readResource({ uri: "crm://customers/c_001" });
    expect(JSON.parse((early.contents[0] as any).text)).toEqual(ADA);

    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toContain("crm__get_customer");
    expect(names).toContain("crm__update_customer");
    expect(names).toContain("fs__read_text_file");
    expect(names.every((n) => n.startsWith("crm__") || n.startsWith("fs__"))).toBe(true);
    // Schemas and annotations come through unchanged under the new name.
    const direct = await open(scope, BIN, ["toy-crm"]);
    const directTools = (await direct.listTools()).tools;
    expect(tools.find((t) => t.name === "crm__get_customer")).toEqual({ ...directTools.find((t) => t.name === "get_customer")!, name: "crm__get_customer" });

    const customer = await client.callTool({ name: "crm__get_customer", arguments: { id: "c_001" } });
    expect(customer.structuredContent).toEqual(ADA);
    const file = await client.callTool({ name: "fs__read_text_file", arguments: { path: join(root, "hello.txt") } });
    expect(JSON.stringify(file.content)).toContain("hello from the filesystem");

    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toContain("crm://customers/c_002");
    const read = await client.readResource({ uri: "crm://customers/c_002" });
    expect(JSON.parse((read.contents[0] as any).text)).toEqual(SEED.c_002);
    // A URI only the template covers is routed too.
    const templated = await client.readResource({ uri: "crm://customers/c_003" });
    expect(JSON.parse((templated.contents[0] as any).text)).toEqual(SEED.c_003);
    // A URI nobody owns is a JSON-RPC error, not a hang.
    const nobody = await client.readResource({ uri: "nowhere://x" }).catch((e) => e);
    expect(nobody).toBeInstanceOf(Error);

    const rows = journalRows(ws.journal);
    expect(rows.map((r) => `${r.server}.${r.tool}:${r.status}`)).toEqual(["crm.get_customer:applied", "fs.read_text_file:applied"]);
  }, 60_000);
});

describe.concurrent("two servers with prompts, completions, logging and server requests", () => {
  test("prompts are SERVER__PROMPT, completions and templates route, sampling reaches the right server", async () => {
    await using scope = new AsyncDisposableStack();
    const ws = workspace(
      manifestText({
        servers: { crm: { command: "synartesis", args: ["toy-crm", "--state", "./crm.json"] }, every: { command: "node", args: [EVERYTHING, "stdio"] } },
        tools: [
          { match: "crm.get_customer", class: "readonly" },
          { match: "every.*", class: "readonly" },
        ],
      }),
    );
    writeFileSync(ws.state, crmStateText());
    const client = new Client({ name: "two-with-prompts", version: "1.0.0" }, { capabilities: { sampling: {} } });
    scope.defer(() => client.close().catch(() => {}));
    client.setRequestHandler(CreateMessageRequestSchema, () => ({
      model: "stub",
      role: "assistant",
      content: { type: "text", text: "answer for the second server" },
    }));
    const logs: any[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs.push(n.params));
    await client.connect(
      new StdioClientTransport({ command: BIN, args: proxyArgs(ws.manifest), cwd: ws.dir, env: process.env as Record<string, string>, stderr: "ignore" }),
    );
    expect(client.getServerCapabilities()).toMatchObject({ tools: {}, resources: {}, prompts: {}, logging: {} });

    const { prompts } = await client.listPrompts();
    expect(prompts.map((p) => p.name)).toEqual(expect.arrayContaining(["every__simple-prompt", "every__args-prompt", "every__completable-prompt"]));
    const prompt = await client.getPrompt({ name: "every__args-prompt", arguments: { city: "Lyon" } });
    expect(prompt.messages[0]!.content).toEqual({ type: "text", text: "What's weather in Lyon?" });
    const completion = await client.complete({
      ref: { type: "ref/prompt", name: "every__completable-prompt" },
      argument: { name: "department", value: "Sa" },
    });
    expect(completion.completion.values).toEqual(["Sales"]);
    // A resource only a template covers, on the second server.
    const dynamic = await client.readResource({ uri: "demo://resource/dynamic/text/3" });
    expect((dynamic.contents[0] as any).text).toStartWith("Resource 3:");
    const templateCompletion = await client.complete({
      ref: { type: "ref/resource", uri: "demo://resource/dynamic/text/{resourceId}" },
      argument: { name: "resourceId", value: "5" },
    });
    expect(templateCompletion.completion.values).toEqual(["5"]);

    await client.setLoggingLevel("debug");
    await client.callTool({ name: "every__toggle-simulated-logging", arguments: {} });
    await until(() => logs.length > 0, "a logging message from the second server");
    await client.callTool({ name: "every__toggle-simulated-logging", arguments: {} });

    const sampling = await client.callTool({ name: "every__trigger-sampling-request", arguments: { prompt: "p" } });
    expect(JSON.stringify(sampling.content)).toContain("answer for the second server");
    const customer = await client.callTool({ name: "crm__get_customer", arguments: { id: "c_001" } });
    expect(customer.structuredContent).toEqual(ADA);
    const unknown = await client.getPrompt({ name: "crm__nothing" }).catch((e) => e);
    expect(unknown).toBeInstanceOf(Error);
  }, 120_000);
});

describe.concurrent("protocol versions", () => {
  for (const version of ["2025-03-26", "2025-06-18", "2025-11-25"]) {
    test(`a client speaking ${version} gets it back and can call tools`, async () => {
      const ws = crmWorkspace(crmStateText());
      const init = JSON.stringify({
        jsonrpc: "2.0",
        id: 0,
        method: "initialize",
        params: { protocolVersion: version, capabilities: {}, clientInfo: { name: "v", version: "1" } },
      });
      const result = await run(proxyArgs(ws.manifest), {
        cwd: ws.dir,
        stdin: [init, INITIALIZED, jsonFrame(1, "tools/call", { name: "get_customer", arguments: { id: "c_001" } }), ""].join("\n"),
      });
      expect(result.code).toBe(0);
      const out = result.stdout
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l));
      expect(out.find((m) => m.id === 0).result.protocolVersion).toBe(version);
      expect(out.find((m) => m.id === 1).result.structuredContent).toEqual(ADA);
    });
  }
});

describe.concurrent("results reach the agent byte for byte", () => {
  test("1.0, 12345678901234567890 and \\u00e9 pass unchanged to stdout and into the journal", async () => {
    const ws = rawWorkspace();
    const result = await run(proxyArgs(ws.manifest), {
      cwd: ws.dir,
      stdin: [
        initializeFrame(0),
        INITIALIZED,
        jsonFrame(1, "tools/call", { name: "raw_read", arguments: {} }),
        jsonFrame("two", "tools/call", { name: "raw_write", arguments: {} }),
        "",
      ].join("\n"),
    });
    expect(result.code).toBe(0);
    const RESULT =
      '{"content":[{"type":"text","text":"caf\\u00e9 1.0"}],' +
      '"structuredContent":{"float":1.0,"big":12345678901234567890,"word":"caf\\u00e9","exp":1E+2,"list":[1.50, -0.0]}}';
    const lines = result.stdout.split("\n").filter(Boolean);
    expect(lines).toContain(`{"jsonrpc":"2.0", "id":1, "result":${RESULT}}`);
    expect(lines).toContain(`{"jsonrpc":"2.0", "id":"two", "result":${RESULT}}`);

    // The read-only row is written once its answer is in, the write-ahead row before it goes out: sort.
    const rows = journalRows(ws.journal).sort((a, b) => a.tool.localeCompare(b.tool));
    expect(rows.map((r) => [r.tool, r.class, r.status])).toEqual([
      ["raw_read", "readonly", "applied"],
      ["raw_write", "compensable", "applied"],
    ]);
    for (const row of rows) expect(row.result).toBe(RESULT);
    expect(JSON.parse(rows[1]!.inverse!)).toEqual({ server: "raw", tool: "raw_write", args: { word: "caf\u00e9" } });
  }, 60_000);
});
