// The toy CRM as an MCP server (the SDK's low-level Server, plain JSON Schemas)
// and its stdio wiring: serve until stdin closes or a signal arrives.
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import {
  CallToolRequestSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  type CallToolResult,
  type JSONRPCMessage,
  type Resource,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import { VERSION } from "../version.ts";
import { replacedVersionsRemoved } from "./state-file.ts";
import { CrmError, PLANS, type CrmStore, type Customer, type SentEmail } from "./store.ts";

/**
 * A tools/call may carry `_meta["synartesis/idempotency-key"]` (undo sends one
 * with every inverse, R-UNDO-8). A mutating call whose key was seen before
 * returns the result it returned then and changes nothing; see CrmStore.
 */
export const IDEMPOTENCY_META_KEY = "synartesis/idempotency-key";

const INSTRUCTIONS =
  "A toy CRM for trying Synartesis: customers c_001 to c_003 with plans free, pro or enterprise, " +
  "and an outbox that send_email appends to. Nothing here is real; no email leaves the machine.";

/** JSON-RPC "resource not found" (MCP). */
const RESOURCE_NOT_FOUND = -32002;

type Args = Record<string, string | undefined>;

interface ToolDef {
  tool: Tool;
  required: string[];
  optional: string[];
  run(store: CrmStore, args: Args, key: string | undefined): Customer | SentEmail;
}

const PROPERTIES: Record<string, Record<string, unknown>> = {
  id: { type: "string", description: "Customer id, e.g. c_001" },
  name: { type: "string", description: "Full name" },
  email: { type: "string", description: "Email address" },
  plan: { type: "string", enum: [...PLANS], description: `Plan: ${PLANS.join(", ")}` },
  notes: { type: "string", description: "Free-form notes" },
  to: { type: "string", description: "Recipient's email address" },
  subject: { type: "string", description: "Subject line" },
  body: { type: "string", description: "Plain-text body" },
  sentAt: { type: "string", description: "When it was sent (ISO 8601)" },
};

function objectSchema(required: string[], optional: string[] = []): Tool["inputSchema"] {
  const properties = Object.fromEntries([...required, ...optional].map((name) => [name, PROPERTIES[name]!]));
  return { type: "object", properties, required, additionalProperties: false };
}

const CUSTOMER_SCHEMA = objectSchema(["id", "name", "email", "plan", "notes"]);
const SENT_EMAIL_SCHEMA = objectSchema(["to", "subject", "body", "sentAt"]);

function define(
  name: string,
  title: string,
  description: string,
  annotations: NonNullable<Tool["annotations"]>,
  required: string[],
  optional: string[],
  outputSchema: Tool["outputSchema"],
  run: ToolDef["run"],
): ToolDef {
  return {
    tool: { name, title, description, inputSchema: objectSchema(required, optional), outputSchema, annotations: { title, ...annotations } },
    required,
    optional,
    run,
  };
}

const TOOLS: ToolDef[] = [
  define(
    "get_customer",
    "Get customer",
    "Read one customer record (id, name, email, plan, notes) by id. Changes nothing.",
    { readOnlyHint: true, openWorldHint: false },
    ["id"],
    [],
    CUSTOMER_SCHEMA,
    (store, a) => store.get(a.id!),
  ),
  define(
    "create_customer",
    "Create customer",
    "Create a customer and return the new record with the id it was given (c_NNN; ids are never reused). " +
      "plan defaults to free, notes to empty.",
    { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    ["name", "email"],
    ["plan", "notes"],
    CUSTOMER_SCHEMA,
    (store, a, key) => store.create({ name: a.name!, email: a.email!, plan: a.plan, notes: a.notes }, key),
  ),
  define(
    "update_customer",
    "Update customer",
    "Change some fields of a customer; fields left out keep their value. Returns the whole record after the change.",
    { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    ["id"],
    ["name", "email", "plan", "notes"],
    CUSTOMER_SCHEMA,
    (store, a, key) => store.update(a.id!, { name: a.name, email: a.email, plan: a.plan, notes: a.notes }, key),
  ),
  define(
    "delete_customer",
    "Delete customer",
    "Delete a customer and return the record as it was just before it was deleted.",
    { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    ["id"],
    [],
    CUSTOMER_SCHEMA,
    (store, a, key) => store.delete(a.id!, key),
  ),
  define(
    "restore_customer",
    "Restore customer",
    "Write a whole customer record under its id, creating it if it does not exist and overwriting it if it does. " +
      "Meant for putting back a record that was deleted or changed. Returns the record.",
    { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    ["id", "name", "email", "plan", "notes"],
    [],
    CUSTOMER_SCHEMA,
    (store, a, key) => store.restore({ id: a.id!, name: a.name!, email: a.email!, plan: a.plan!, notes: a.notes! }, key),
  ),
  define(
    "send_email",
    "Send email",
    "Send an email (in this toy it is appended to the CRM's outbox with the time it was sent) and return what was sent. " +
      "A sent email cannot be taken back.",
    { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    ["to", "subject", "body"],
    [],
    SENT_EMAIL_SCHEMA,
    (store, a, key) => store.sendEmail({ to: a.to!, subject: a.subject!, body: a.body! }, key),
  ),
];

const TOOLS_BY_NAME = new Map(TOOLS.map((t) => [t.tool.name, t]));

function typeName(value: unknown): string {
  return value === null ? "null" : Array.isArray(value) ? "array" : typeof value;
}

/** Every argument of every tool is a string; say exactly which one is wrong. */
function readArgs(def: ToolDef, args: Record<string, unknown>): Args {
  const known = [...def.required, ...def.optional];
  for (const name of Object.keys(args)) {
    if (!known.includes(name)) throw new CrmError(`unknown argument "${name}" (${def.tool.name} takes: ${known.join(", ")})`);
  }
  const out: Args = {};
  for (const name of known) {
    const value = args[name];
    if (value === undefined) {
      if (def.required.includes(name)) throw new CrmError(`missing required argument "${name}"`);
      continue;
    }
    if (typeof value !== "string") throw new CrmError(`argument "${name}" must be a string (got ${typeName(value)})`);
    out[name] = value;
  }
  return out;
}

function success(record: Customer | SentEmail): CallToolResult {
  return {
    content: [{ type: "text", text: JSON.stringify(record, null, 2) }],
    structuredContent: { ...record },
  };
}

function failure(message: string): CallToolResult {
  return { isError: true, content: [{ type: "text", text: message }] };
}

/** An error the SDK sends as a JSON-RPC error with this code and exactly this message. */
function rpcError(code: number, message: string, data?: unknown): Error {
  return Object.assign(new Error(message), { code, data });
}

function json(value: unknown): string {
  return JSON.stringify(value, null, 2);
}

export function createToyCrmServer(store: CrmStore): Server {
  const server = new Server(
    { name: "synartesis-toy-crm", title: "Synartesis toy CRM", version: VERSION },
    { capabilities: { tools: {}, resources: {} }, instructions: INSTRUCTIONS },
  );

  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: TOOLS.map((t) => t.tool) }));

  // Every handler that touches the store queues its work: calls that arrive together share one read and one write of the state file.
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const { name, arguments: args = {}, _meta } = request.params;
    const def = TOOLS_BY_NAME.get(name);
    if (!def) throw rpcError(ErrorCode.InvalidParams, `unknown tool "${name}"`);
    const key = _meta?.[IDEMPOTENCY_META_KEY];
    try {
      if (key !== undefined && typeof key !== "string") {
        throw new CrmError(`_meta "${IDEMPOTENCY_META_KEY}" must be a string (got ${typeName(key)})`);
      }
      const valid = readArgs(def, args);
      return success(await store.queue(() => def.run(store, valid, key)));
    } catch (error) {
      if (error instanceof CrmError) return failure(error.message);
      throw error;
    }
  });

  server.setRequestHandler(ListResourcesRequestSchema, async () => {
    const resources: Resource[] = [
      { uri: "crm://customers", name: "customers", title: "All customers", description: "Every customer, sorted by id", mimeType: "application/json" },
      ...(await store.queue(() => store.list())).map((c) => ({ uri: `crm://customers/${c.id}`, name: c.id, title: c.name, mimeType: "application/json" })),
    ];
    return { resources };
  });

  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
    resourceTemplates: [
      { uriTemplate: "crm://customers/{id}", name: "customer", title: "One customer", description: "One customer record by id", mimeType: "application/json" },
    ],
  }));

  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const { uri } = request.params;
    try {
      if (uri === "crm://customers") return { contents: [{ uri, mimeType: "application/json", text: json(await store.queue(() => store.list())) }] };
      const match = /^crm:\/\/customers\/([^/]+)$/.exec(uri);
      if (!match) throw rpcError(RESOURCE_NOT_FOUND, `unknown resource ${uri}`, { uri });
      const id = decodeURIComponent(match[1]!);
      return { contents: [{ uri, mimeType: "application/json", text: json(await store.queue(() => store.get(id))) }] };
    } catch (error) {
      if (error instanceof CrmError) {
        const missing = error.message.startsWith("no customer with id");
        throw rpcError(missing ? RESOURCE_NOT_FOUND : ErrorCode.InternalError, error.message, { uri });
      }
      throw error;
    }
  });

  server.onerror = (error) => process.stderr.write(`synartesis toy-crm: ${error.message}\n`);
  return server;
}

type Id = string | number;

function isRequest(message: JSONRPCMessage): message is JSONRPCMessage & { id: Id; method: string } {
  return "method" in message && "id" in message;
}

function isResponse(message: JSONRPCMessage): message is JSONRPCMessage & { id: Id } {
  return !("method" in message) && "id" in message;
}

/**
 * Serve over stdin/stdout until stdin closes, SIGTERM or SIGINT, then answer
 * every request that already arrived and close. The SDK's stdio transport does
 * not notice stdin EOF, and closing it aborts in-flight handlers without a
 * reply, so requests are counted here and the close waits for the last reply.
 */
export async function serveStdio(store: CrmStore): Promise<void> {
  const server = createToyCrmServer(store);
  const transport = new StdioServerTransport();
  await server.connect(transport);

  const unanswered = new Map<Id, number>();
  let stopping = false;
  let stopped!: () => void;
  const done = new Promise<void>((resolve) => (stopped = resolve));
  const check = () => {
    if (stopping && unanswered.size === 0) stopped();
  };
  const forget = (id: Id) => {
    const left = (unanswered.get(id) ?? 0) - 1;
    if (left > 0) unanswered.set(id, left);
    else unanswered.delete(id);
    check();
  };

  const receive = transport.onmessage!;
  transport.onmessage = (message) => {
    if (isRequest(message)) unanswered.set(message.id, (unanswered.get(message.id) ?? 0) + 1);
    // A cancelled request is never answered (the SDK aborts its handler).
    if ("method" in message && message.method === "notifications/cancelled") {
      const id = (message.params as { requestId?: Id } | undefined)?.requestId;
      if (id !== undefined && unanswered.has(id)) queueMicrotask(() => forget(id));
    }
    receive(message);
  };
  // The replies of one turn of the event loop (a batch) leave in one write,
  // and one write at a time: the transport would add a 'drain' listener per
  // write that meets a full pipe, and a burst of large replies would pile them up.
  const outgoing: Array<{ message: JSONRPCMessage; sent: () => void }> = [];
  let writing = false;
  const write = async () => {
    writing = true;
    while (outgoing.length > 0) {
      await new Promise((resolve) => setImmediate(resolve));
      const replies = outgoing.splice(0);
      if (!process.stdout.write(replies.map(({ message }) => serializeMessage(message)).join(""))) {
        await new Promise((resolve) => process.stdout.once("drain", resolve));
      }
      for (const { message, sent } of replies) {
        if (isResponse(message)) forget(message.id);
        sent();
      }
    }
    writing = false;
  };
  transport.send = (message) =>
    new Promise((sent) => {
      outgoing.push({ message, sent });
      if (!writing) void write();
    });
  const closed = transport.onclose;
  transport.onclose = () => {
    closed?.();
    stopping = true;
    unanswered.clear();
    check();
  };

  const stop = () => {
    stopping = true;
    check();
  };
  // A second signal means "now", even if a reply is still owed.
  const signalled = () => (stopping ? stopped() : stop());
  process.stdin.on("end", stop);
  process.stdin.on("close", stop);
  process.stdin.on("error", stop);
  process.on("SIGTERM", signalled);
  process.on("SIGINT", signalled);
  try {
    await done;
  } finally {
    process.stdin.off("end", stop);
    process.stdin.off("close", stop);
    process.stdin.off("error", stop);
    process.off("SIGTERM", signalled);
    process.off("SIGINT", signalled);
  }
  await server.close();
  await replacedVersionsRemoved();
  // The caller exits the process next: let every reply reach the pipe first.
  await new Promise<void>((resolve) => process.stdout.write("", () => resolve()));
}
