// The conformance test bed without the suite (which needs Node 22; see
// test/system/conformance.system.ts): the fixture offers what the scenarios
// call, the stdio→HTTP bridge carries a session through the built
// `synartesis proxy` onto the right HTTP streams, every front refuses a
// foreign Host or Origin, and the bearer forwarder passes requests on as if
// the client had come straight to the target.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
  type ElicitRequest,
} from "@modelcontextprotocol/sdk/types.js";
import { serve, type Target } from "../../bench/conformance.ts";
import { forwardWithBearer } from "../fixtures/bearer-forwarder.ts";
import { BUN, FIXTURES, journalRows, journalRuns, processExists } from "../fixtures/proxy-kit.ts";
import { BIN, tempDir, until } from "../helpers.ts";

// The preload's default timeout reaches only the first file bun runs: this one runs after others.
setDefaultTimeout(60_000);

const FIXTURE = join(FIXTURES, "conformance-server.ts");
const BRIDGE = join(FIXTURES, "stdio-over-http.ts");
const MANIFEST = join(FIXTURES, "conformance.yaml");
const PNG_SIGNATURE = "89504e470d0a1a0a";

const stops: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const stop of stops.splice(0).reverse()) await stop().catch(() => {});
});

/** Starts a target the way bench/conformance.ts does; `argv` may use the temp folder's journal path. */
async function start(argv: (journal: string) => string[]): Promise<Target & { journal: string }> {
  const dir = tempDir("syn-conf-");
  const journal = join(dir, "synartesis.db");
  const target = await serve({ dir, journal }, "target", argv(journal));
  stops.push(() => target.stop());
  return { ...target, journal };
}

const bridgedProxy = (journal: string) => [BUN, BRIDGE, BIN, "proxy", "--manifest", MANIFEST, "--journal", journal];

/** An SDK client that answers sampling and elicitation, records what it was asked, and hears logs and resource updates. */
function recordingClient(name: string) {
  const client = new Client({ name, version: "1.0.0" }, { capabilities: { sampling: {}, elicitation: {} } });
  const heard = { logs: [] as string[], updated: [] as string[], elicitations: [] as ElicitRequest["params"][], prompts: [] as string[] };
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void heard.logs.push(String(n.params.data)));
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void heard.updated.push(n.params.uri));
  client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
    heard.prompts.push(JSON.stringify(request.params.messages));
    return { role: "assistant", content: { type: "text", text: "forty-two" }, model: "test-model", stopReason: "endTurn" };
  });
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    heard.elicitations.push(request.params);
    return { action: "accept", content: { username: "ada", email: "ada@example.com" } };
  });
  return { client, heard };
}

const texts = (result: unknown) => (result as { content: Array<{ type: string; text?: string }> }).content.map((block) => block.text ?? block.type);

describe("the fixture over stdio", () => {
  let client: Client;
  let heard: ReturnType<typeof recordingClient>["heard"];
  /** Progress notifications as they arrive on the wire. (The SDK client runs notification handlers a microtask
   *  late, so a progress notification that arrives in one read with its call's answer never reaches onprogress.) */
  const progress: unknown[] = [];
  beforeAll(async () => {
    ({ client, heard } = recordingClient("fixture-test"));
    const transport = new StdioClientTransport({ command: BUN, args: [FIXTURE], env: process.env as Record<string, string> });
    await client.connect(transport);
    const receive = transport.onmessage!;
    transport.onmessage = (message) => {
      if ("method" in message && message.method === "notifications/progress") progress.push(message.params);
      receive(message);
    };
    stops.push(() => client.close());
  });

  test("tools: the ones the scenarios call, the 2020-12 schema verbatim, and the content each returns", async () => {
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(
      [
        "json_schema_2020_12_tool",
        "test_audio_content",
        "test_elicitation",
        "test_elicitation_sep1034_defaults",
        "test_elicitation_sep1330_enums",
        "test_embedded_resource",
        "test_error_handling",
        "test_image_content",
        "test_multiple_content_types",
        "test_reconnection",
        "test_sampling",
        "test_simple_text",
        "test_tool_with_logging",
        "test_tool_with_progress",
        "update_watched_resource",
      ].sort(),
    );
    expect(tools.every((tool) => typeof tool.description === "string" && tool.description.length > 0)).toBe(true);
    expect(tools.find((tool) => tool.name === "json_schema_2020_12_tool")!.inputSchema).toEqual({
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      $defs: { address: { type: "object", properties: { street: { type: "string" }, city: { type: "string" } } } },
      properties: { name: { type: "string" }, address: { $ref: "#/$defs/address" } },
      additionalProperties: false,
    });

    expect((await client.callTool({ name: "test_simple_text" })).content).toEqual([{ type: "text", text: "This is a simple text response for testing." }]);
    const [image] = (await client.callTool({ name: "test_image_content" })).content as Array<{ mimeType: string; data: string }>;
    expect([image!.mimeType, Buffer.from(image!.data, "base64").subarray(0, 8).toString("hex")]).toEqual(["image/png", PNG_SIGNATURE]);
    const [audio] = (await client.callTool({ name: "test_audio_content" })).content as Array<{ mimeType: string; data: string }>;
    const wav = Buffer.from(audio!.data, "base64");
    expect([audio!.mimeType, wav.toString("ascii", 0, 4), wav.toString("ascii", 8, 12), wav.readUInt32LE(4) + 8]).toEqual([
      "audio/wav",
      "RIFF",
      "WAVE",
      wav.length,
    ]);
    expect((await client.callTool({ name: "test_embedded_resource" })).content).toEqual([
      { type: "resource", resource: { uri: "test://embedded-resource", mimeType: "text/plain", text: "This is an embedded resource content." } },
    ]);
    expect(texts(await client.callTool({ name: "test_multiple_content_types" }))).toEqual(["Multiple content types test:", "image", "resource"]);
    expect(await client.callTool({ name: "test_error_handling" })).toEqual({
      isError: true,
      content: [{ type: "text", text: "This tool intentionally returns an error for testing" }],
    });
    await expect(client.callTool({ name: "no_such_tool" })).rejects.toThrow("Tool no_such_tool not found");
  });

  test("logging honours logging/setLevel; progress counts 0, 50, 100 of 100", async () => {
    await client.setLoggingLevel("warning");
    await client.callTool({ name: "test_tool_with_logging" });
    expect(heard.logs).toEqual([]);
    await client.setLoggingLevel("debug");
    await client.callTool({ name: "test_tool_with_logging" });
    expect(heard.logs).toEqual(["Tool execution started", "Tool processing data", "Tool execution completed"]);

    await client.callTool({ name: "test_tool_with_progress" });
    expect(progress).toEqual([]); // no progressToken, no progress
    await client.request(
      { method: "tools/call", params: { name: "test_tool_with_progress", arguments: {}, _meta: { progressToken: "p1" } } },
      CallToolResultSchema,
    );
    expect(progress).toEqual([0, 50, 100].map((value) => ({ progressToken: "p1", progress: value, total: 100 })));
  });

  test("sampling and the three elicitations ask the client, with the schemas the scenarios check", async () => {
    expect(texts(await client.callTool({ name: "test_sampling", arguments: { prompt: "what is six times seven?" } }))).toEqual(["LLM response: forty-two"]);
    expect(heard.prompts).toEqual([JSON.stringify([{ role: "user", content: { type: "text", text: "what is six times seven?" } }])]);
    expect((await client.callTool({ name: "test_sampling", arguments: {} })).isError).toBe(true);

    expect(texts(await client.callTool({ name: "test_elicitation", arguments: { message: "Who are you?" } }))).toEqual([
      'Elicitation completed: action=accept, content={"username":"ada","email":"ada@example.com"}',
    ]);
    await client.callTool({ name: "test_elicitation_sep1034_defaults" });
    await client.callTool({ name: "test_elicitation_sep1330_enums" });
    const [plain, defaults, enums] = heard.elicitations.map((params) => params as { message: string; requestedSchema: any });
    expect(plain!.message).toBe("Who are you?");
    expect(plain!.requestedSchema.required).toEqual(["username", "email"]);
    const defaultOf = (field: string) => defaults!.requestedSchema.properties[field].default;
    expect(["name", "age", "score", "status", "verified"].map(defaultOf)).toEqual(["John Doe", 30, 95.5, "active", true]);
    const fields = enums!.requestedSchema.properties;
    expect([fields.untitledSingle.enum, fields.titledSingle.oneOf[0], fields.legacyEnum.enumNames.length, fields.untitledMulti.items.enum.length]).toEqual([
      ["option1", "option2", "option3"],
      { const: "value1", title: "First Option" },
      3,
      3,
    ]);
    expect(fields.titledMulti.items.anyOf.map((choice: { const: string }) => choice.const)).toEqual(["value1", "value2", "value3"]);
  });

  test("resources: list, text, binary, template; a subscriber hears of an update, an unsubscribed one does not", async () => {
    expect((await client.listResources()).resources.map((resource) => resource.uri)).toEqual([
      "test://static-text",
      "test://static-binary",
      "test://watched-resource",
    ]);
    expect((await client.readResource({ uri: "test://static-text" })).contents).toEqual([
      { uri: "test://static-text", mimeType: "text/plain", text: "This is the content of the static text resource." },
    ]);
    const [binary] = (await client.readResource({ uri: "test://static-binary" })).contents as Array<{ blob: string }>;
    expect(Buffer.from(binary!.blob, "base64").subarray(0, 8).toString("hex")).toBe(PNG_SIGNATURE);
    expect((await client.readResource({ uri: "test://template/123/data" })).contents).toEqual([
      { uri: "test://template/123/data", mimeType: "application/json", text: '{"id":"123","templateTest":true,"data":"Data for ID: 123"}' },
    ]);

    await client.subscribeResource({ uri: "test://watched-resource" });
    await client.callTool({ name: "update_watched_resource", arguments: { text: "second version" } });
    expect(heard.updated).toEqual(["test://watched-resource"]); // sent before the call's answer
    expect((await client.readResource({ uri: "test://watched-resource" })).contents).toEqual([
      { uri: "test://watched-resource", mimeType: "text/plain", text: "second version" },
    ]);
    await client.unsubscribeResource({ uri: "test://watched-resource" });
    await client.callTool({ name: "update_watched_resource", arguments: { text: "third version" } });
    expect(heard.updated).toEqual(["test://watched-resource"]);
    await expect(client.subscribeResource({ uri: "test://nowhere" })).rejects.toThrow("Resource not found: test://nowhere");
  });

  test("prompts: simple, with arguments (and their completion), embedded resource, image", async () => {
    expect((await client.listPrompts()).prompts.map((prompt) => prompt.name)).toEqual([
      "test_simple_prompt",
      "test_prompt_with_arguments",
      "test_prompt_with_embedded_resource",
      "test_prompt_with_image",
    ]);
    expect((await client.getPrompt({ name: "test_simple_prompt" })).messages).toEqual([
      { role: "user", content: { type: "text", text: "This is a simple prompt for testing." } },
    ]);
    expect((await client.getPrompt({ name: "test_prompt_with_arguments", arguments: { arg1: "hello", arg2: "world" } })).messages).toEqual([
      { role: "user", content: { type: "text", text: "Prompt with arguments: arg1='hello', arg2='world'" } },
    ]);
    const completion = await client.complete({ ref: { type: "ref/prompt", name: "test_prompt_with_arguments" }, argument: { name: "arg1", value: "te" } });
    expect(completion.completion.values).toEqual(["test", "testing", "testValue1"]);
    const embedded = await client.getPrompt({ name: "test_prompt_with_embedded_resource", arguments: { resourceUri: "test://example-resource" } });
    expect(embedded.messages[0]!.content).toEqual({
      type: "resource",
      resource: { uri: "test://example-resource", mimeType: "text/plain", text: "Embedded resource content for testing." },
    });
    const image = await client.getPrompt({ name: "test_prompt_with_image" });
    expect(image.messages.map((message) => message.content.type)).toEqual(["image", "text"]);
  });
});

/** A POST initialize with these Host and Origin headers, as the dns-rebinding scenario sends it. */
async function initializeWith(url: string, host: string, origin: string): Promise<number> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", host, origin },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "rebinding-probe", version: "1.0.0" } },
    }),
  });
  await response.body?.cancel();
  return response.status;
}

test.concurrent("the bridge and the fixture's own HTTP refuse a foreign Host or Origin with 403, before any session starts", async () => {
  const bridged = await start(bridgedProxy);
  const direct = await start(() => [BUN, FIXTURE, "--http", "0"]);
  for (const target of [bridged, direct]) {
    const own = new URL(target.url).host;
    expect(await initializeWith(target.url, "evil.example.com", "http://evil.example.com")).toBe(403);
    expect(await initializeWith(target.url, own, "http://evil.example.com")).toBe(403);
    expect(await initializeWith(target.url, `evil.example.com:${new URL(target.url).port}`, `http://${own}`)).toBe(403);
    expect((await fetch(target.url, { headers: { accept: "text/event-stream" } })).status).toBe(400); // no session
    expect((await fetch(target.url, { method: "DELETE", headers: { "mcp-session-id": "nope" } })).status).toBe(404);
  }
  expect(existsSync(bridged.journal)).toBe(false); // no proxy was started, so no run was recorded
  expect(await initializeWith(bridged.url, `localhost:${new URL(bridged.url).port}`, `http://localhost:${new URL(bridged.url).port}`)).toBe(200);
  // The accepted session started a proxy (its journal appears); a session that made no tool call leaves no run (R-PROXY-16).
  expect(await until(() => existsSync(bridged.journal), "the accepted session's proxy")).toBe(true);
  expect(journalRuns(bridged.journal)).toEqual([]);
});

test.concurrent("through the bridge, a session is one run of the built proxy; what a call asks and logs rides on the call's own stream; DELETE ends the run complete", async () => {
  const target = await start(bridgedProxy);
  const { client, heard } = recordingClient("bed-client");
  // No GET stream: a server message the bridge failed to relate to the call
  // would have nowhere to go (and the call would time out).
  const refuseGet: typeof fetch = Object.assign(
    async (input: string | URL | Request, init?: RequestInit) => (init?.method === "GET" ? new Response(null, { status: 405 }) : fetch(input, init)),
    { preconnect: fetch.preconnect },
  );
  const transport = new StreamableHTTPClientTransport(new URL(target.url), { fetch: refuseGet });
  await client.connect(transport);
  await client.setLoggingLevel("info");
  const call = (name: string, args: Record<string, unknown> = {}) => client.callTool({ name, arguments: args }, undefined, { timeout: 20_000 });
  expect(texts(await call("test_elicitation", { message: "Who are you?" }))).toEqual([
    'Elicitation completed: action=accept, content={"username":"ada","email":"ada@example.com"}',
  ]);
  await call("test_tool_with_logging");
  expect(heard.logs).toEqual(["Tool execution started", "Tool processing data", "Tool execution completed"]);
  const progress: number[] = [];
  await client.request(
    { method: "tools/call", params: { name: "test_tool_with_progress", arguments: {}, _meta: { progressToken: 9 } } },
    CallToolResultSchema,
    { onprogress: (p) => void progress.push(p.progress) },
  );
  expect(progress).toEqual([0, 50, 100]);

  const [run] = journalRuns(target.journal) as unknown as Array<{ label: string; status: string; pid: number }>;
  expect([run!.label, run!.status]).toEqual(["bed-client", "active"]);
  expect(journalRows(target.journal).map((row) => [row.tool, row.class, row.status])).toEqual([
    ["test_elicitation", "readonly", "applied"],
    ["test_tool_with_logging", "readonly", "applied"],
    ["test_tool_with_progress", "readonly", "applied"],
  ]);
  await transport.terminateSession();
  await until(() => journalRuns(target.journal)[0]!.status === "complete", "the run to end complete");
  await until(() => !processExists(run!.pid), "the session's proxy to exit");
  await client.close();
});

test.concurrent("the bearer forwarder adds the token, names the target in its own Host and Origin, passes a foreign one unchanged, and streams", async () => {
  const seen: Array<Record<string, string | null>> = [];
  const echo = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (request) => {
      seen.push({ host: request.headers.get("host"), origin: request.headers.get("origin"), authorization: request.headers.get("authorization") });
      return new Response("ok");
    },
  });
  stops.push(async () => echo.stop(true));
  const forwarder = forwardWithBearer(`http://127.0.0.1:${echo.port}/mcp`, "a-token-of-sixteen-chars");
  stops.push(() => forwarder.stop());
  const port = new URL(forwarder.url).port;
  expect(forwarder.url).toBe(`http://127.0.0.1:${port}/mcp`);
  for (const [host, origin] of [
    [`127.0.0.1:${port}`, `http://127.0.0.1:${port}`],
    [`localhost:${port}`, `http://localhost:${port}`],
    ["evil.example.com", "http://evil.example.com"],
  ]) {
    expect(await (await fetch(forwarder.url, { method: "POST", headers: { host: host!, origin: origin! }, body: "{}" })).text()).toBe("ok");
  }
  expect(seen).toEqual([
    { host: `127.0.0.1:${echo.port}`, origin: `http://127.0.0.1:${echo.port}`, authorization: "Bearer a-token-of-sixteen-chars" },
    { host: `localhost:${echo.port}`, origin: `http://localhost:${echo.port}`, authorization: "Bearer a-token-of-sixteen-chars" },
    { host: "evil.example.com", origin: "http://evil.example.com", authorization: "Bearer a-token-of-sixteen-chars" },
  ]);

  // In front of a real endpoint: SSE replies and server requests pass, a foreign Host is still refused there.
  const direct = await start(() => [BUN, FIXTURE, "--http", "0"]);
  const fronted = forwardWithBearer(direct.url, "a-token-of-sixteen-chars");
  stops.push(() => fronted.stop());
  const { client, heard } = recordingClient("forwarded");
  await client.connect(new StreamableHTTPClientTransport(new URL(fronted.url)));
  stops.push(() => client.close());
  expect(texts(await client.callTool({ name: "test_sampling", arguments: { prompt: "via the forwarder" } }))).toEqual(["LLM response: forty-two"]);
  expect(heard.prompts).toEqual([JSON.stringify([{ role: "user", content: { type: "text", text: "via the forwarder" } }])]);
  expect(await initializeWith(fronted.url, "evil.example.com", "http://evil.example.com")).toBe(403);
});
