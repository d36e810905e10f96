// A Streamable HTTP upstream (`url:` in the manifest): calls go through the
// proxy to it, are journalled with their snapshot, and `undo` puts them back
// over HTTP too.
import { afterAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { connect, BIN, run, tempDir } from "../helpers.ts";

const settings = new Map<string, string>([["theme", "light"]]);
const seenAuthorization = new Set<string>();

const http = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    seenAuthorization.add(request.headers.get("authorization") ?? "");
    const mcp = new Server({ name: "settings", version: "1.0.0" }, { capabilities: { tools: {} } });
    mcp.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: [
        { name: "get_setting", inputSchema: { type: "object" as const, properties: { key: { type: "string" } } }, annotations: { readOnlyHint: true } },
        { name: "set_setting", inputSchema: { type: "object" as const, properties: { key: { type: "string" }, value: { type: "string" } } } },
      ],
    }));
    mcp.setRequestHandler(CallToolRequestSchema, async ({ params }) => {
      const args = params.arguments as { key: string; value?: string };
      if (params.name === "set_setting") settings.set(args.key, args.value!);
      const value = settings.get(args.key);
      if (value === undefined) return { isError: true, content: [{ type: "text" as const, text: `no setting ${args.key}` }] };
      return { content: [{ type: "text" as const, text: JSON.stringify({ key: args.key, value }) }], structuredContent: { key: args.key, value } };
    });
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    await mcp.connect(transport);
    return transport.handleRequest(request);
  },
});
afterAll(() => http.stop(true));

test("a url server: proxied, journalled with its snapshot, undone over HTTP", async () => {
  const dir = tempDir();
  writeFileSync(
    join(dir, "synartesis.yaml"),
    [
      "version: 1",
      "servers:",
      "  settings:",
      `    url: http://127.0.0.1:${http.port}/mcp`,
      '    headers: { Authorization: "Bearer ${SETTINGS_TOKEN}" }',
      "tools:",
      '  - match: "settings.get_setting"',
      "    class: readonly",
      '  - match: "settings.set_setting"',
      "    class: reversible",
      "    snapshot:",
      '      tool: "settings.get_setting"',
      '      args: { key: "$.key" }',
      '      absent_when: "no setting"',
      "    inverse:",
      '      tool: "settings.set_setting"',
      '      args: { key: "$.key", value: "$snapshot.value" }',
      "",
    ].join("\n"),
  );
  const env = { SETTINGS_TOKEN: "s3cret" };
  const { client } = await connect(BIN, ["proxy"], { cwd: dir, env, name: "http-agent" });
  expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["get_setting", "set_setting"]);
  const result = await client.callTool({ name: "set_setting", arguments: { key: "theme", value: "dark" } });
  expect(result.structuredContent).toEqual({ key: "theme", value: "dark" });
  const held = await client.callTool({ name: "set_setting", arguments: { key: "font", value: "serif" } });
  expect(held.isError).toBe(true);
  expect((held.content as Array<{ text: string }>)[0]!.text).toContain("found nothing to restore (no setting font)");
  await client.close();
  expect(settings.get("theme")).toBe("dark");
  expect(seenAuthorization).toEqual(new Set(["Bearer s3cret"]));

  const shown = JSON.parse((await run(["show", "--json"], { cwd: dir })).stdout);
  expect(shown.actions[0]).toMatchObject({
    tool: "set_setting",
    status: "applied",
    snapshot: { key: "theme", value: "light" },
    postState: { key: "theme", value: "dark" },
    inverse: { server: "settings", tool: "set_setting", args: { key: "theme", value: "light" } },
  });

  const undone = await run(["undo"], { cwd: dir, env });
  expect(undone.code).toBe(0);
  expect(settings.get("theme")).toBe("light");
});

test("an HTTP server that restarts (forgetting the session) is initialized again; the call is not lost", async () => {
  const sessions = new Map<string, WebStandardStreamableHTTPServerTransport>();
  let counter = 0;
  const stateful = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const sessionId = request.headers.get("mcp-session-id");
      if (sessionId) {
        const known = sessions.get(sessionId);
        if (!known) return Response.json({ jsonrpc: "2.0", id: null, error: { code: -32001, message: "Session not found" } }, { status: 404 });
        return known.handleRequest(request);
      }
      const mcp = new Server({ name: "counter", version: "1.0.0" }, { capabilities: { tools: {} } });
      mcp.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [{ name: "bump", inputSchema: { type: "object" as const } }] }));
      mcp.setRequestHandler(CallToolRequestSchema, async () => ({ content: [{ type: "text" as const, text: String(++counter) }] }));
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => crypto.randomUUID(),
        enableJsonResponse: true,
        onsessioninitialized: (id) => void sessions.set(id, transport),
      });
      await mcp.connect(transport);
      return transport.handleRequest(request);
    },
  });
  try {
    const dir = tempDir();
    writeFileSync(
      join(dir, "synartesis.yaml"),
      ["version: 1", "servers:", "  counter:", `    url: http://127.0.0.1:${stateful.port}/mcp`, "tools:", '  - match: "counter.bump"', "    class: compensable", "    inverse:", '      tool: "counter.bump"', "      args: {}", ""].join("\n"),
    );
    const { client } = await connect(BIN, ["proxy"], { cwd: dir });
    expect((await client.callTool({ name: "bump", arguments: {} })).content).toEqual([{ type: "text", text: "1" }]);
    sessions.clear(); // the server restarted and forgot every session
    expect((await client.callTool({ name: "bump", arguments: {} })).content).toEqual([{ type: "text", text: "2" }]);
    await client.close();
    const shown = JSON.parse((await run(["show", "--json"], { cwd: dir })).stdout);
    expect(shown.actions.map((a: { status: string }) => a.status)).toEqual(["applied", "applied"]);
    expect(counter).toBe(2);
  } finally {
    stateful.stop(true);
  }
});

test("an HTTP 5xx after the server ran the call is an unknown outcome: never sent again, recorded pending", async () => {
  let charges = 0;
  const flaky = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const body = request.method === "POST" ? ((await request.clone().json()) as { method?: string }) : undefined;
      if (body?.method === "tools/call") {
        charges++;
        return new Response("upstream timed out", { status: 504 });
      }
      const mcp = new Server({ name: "billing", version: "1.0.0" }, { capabilities: { tools: {} } });
      mcp.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [{ name: "charge", inputSchema: { type: "object" as const } }] }));
      const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      await mcp.connect(transport);
      return transport.handleRequest(request);
    },
  });
  try {
    const dir = tempDir();
    writeFileSync(
      join(dir, "synartesis.yaml"),
      ["version: 1", "servers:", "  billing:", `    url: http://127.0.0.1:${flaky.port}/mcp`, "tools:", '  - match: "billing.charge"', "    class: compensable", "    inverse:", '      tool: "billing.charge"', "      args: {}", ""].join("\n"),
    );
    const { client } = await connect(BIN, ["proxy"], { cwd: dir });
    const result = await client.callTool({ name: "charge", arguments: { amount: 100 } });
    await client.close();
    expect(result.isError).toBe(true);
    expect((result.content as Array<{ text: string }>)[0]!.text).toContain("Its outcome is unknown and is recorded as pending");
    expect(charges).toBe(1);
    const shown = JSON.parse((await run(["show", "--json"], { cwd: dir })).stdout);
    expect(shown.actions.map((a: { status: string }) => a.status)).toEqual(["pending"]);
  } finally {
    flaky.stop(true);
  }
});
