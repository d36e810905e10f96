// withServers (servers/with-servers.ts), in-process: check, init and undo
// start servers through it as a full client (R-CLI-10), and every server it
// started is stopped whatever the work did; a server that will not start is
// reported the one way, naming it.
import { describe, expect, test } from "bun:test";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema, ElicitResultSchema, ListRootsResultSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { SynartesisError } from "../../src/errors.ts";
import type { ServerSpec } from "../../src/manifest/types.ts";
import { transportLink, type Connector } from "../../src/servers/link.ts";
import { listTools, toolNames } from "../../src/servers/tools.ts";
import { withServers } from "../../src/servers/with-servers.ts";

const spec = (name: string): ServerSpec => ({ name, kind: "command", command: "in-memory", args: [], env: {}, cwd: "/", timeoutMs: 5000, line: 1 });

/** A server that asks its client for roots and an elicitation while answering `probe`, and tells whether it was closed. */
function probingServers(): { connector: Connector; clientNames: string[]; closed: string[] } {
  const clientNames: string[] = [];
  const closed: string[] = [];
  const connector: Connector = async (serverSpec, events) => {
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const server = new Server({ name: serverSpec.name, version: "1" }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [{ name: "probe", inputSchema: { type: "object" as const } }] }));
    server.setRequestHandler(CallToolRequestSchema, async (_request, extra) => {
      const roots = await extra.sendRequest({ method: "roots/list" }, ListRootsResultSchema);
      const elicited = await extra.sendRequest(
        { method: "elicitation/create", params: { message: "name?", requestedSchema: { type: "object", properties: {} } } },
        ElicitResultSchema,
      );
      return { content: [{ type: "text" as const, text: "probed" }], structuredContent: { roots: roots.roots, elicitation: elicited.action } };
    });
    server.oninitialized = () => clientNames.push(server.getClientVersion()?.name ?? "?");
    serverSide.onclose = () => closed.push(serverSpec.name);
    await server.connect(serverSide);
    return transportLink(clientSide, events);
  };
  return { connector, clientNames, closed };
}

describe("withServers", () => {
  test("starts a server once, as Synartesis's own full client, answers its requests, and stops it after the work", async () => {
    const { connector, clientNames, closed } = probingServers();
    const result = await withServers({ one: spec("one"), two: spec("two") }, { client: "synartesis-check", connector }, async (servers) => {
      expect(toolNames(await servers.startAnd("one", listTools))).toEqual(new Set(["probe"]));
      await servers.get("one");
      const reply = await servers.callTool({ server: "one", tool: "probe", args: {} }, { "synartesis/idempotency-key": "k" });
      return "result" in reply.msg ? reply.msg.result.structuredContent : undefined;
    });
    // No roots, a declined elicitation (R-CLI-10); "two" was never needed, so never started.
    expect(result).toEqual({ roots: [], elicitation: "decline" });
    expect(clientNames).toEqual(["synartesis-check"]);
    expect(closed).toEqual(["one"]);
  });

  test("a server that will not start is one SynartesisError naming it, and the others are stopped all the same", async () => {
    const { connector, closed } = probingServers();
    const failing: Connector = (serverSpec, events, log) =>
      serverSpec.name === "bad" ? Promise.reject(new Error("command not found: nope")) : connector(serverSpec, events, log);
    const attempt = withServers({ good: spec("good"), bad: spec("bad") }, { client: "synartesis-undo", connector: failing }, async (servers) => {
      await servers.get("good");
      await servers.get("bad");
    });
    const error = await attempt.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SynartesisError);
    expect((error as SynartesisError).code).toBe("server");
    expect((error as SynartesisError).message).toBe('server "bad" would not start: command not found: nope');
    expect(closed).toEqual(["good"]);
  });
});
