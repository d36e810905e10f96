// The toy CRM as an MCP server (2025 revisions: initialize, ping, tools,
// resources; plain JSON Schemas) and its stdio wiring: serve until stdin
// closes or a signal arrives. Messages are read and checked by jsonrpc/frames.ts
// rather than the SDK's Server, whose zod schemas cost each message three
// parses and each start tens of milliseconds (issue 20); an SDK transport can
// still be connected (ToyCrmServer.connect), as the tests' HTTP front does.
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { CallToolResult, JSONRPCMessage, Resource, Tool } from "@modelcontextprotocol/sdk/types.js";
import { ACCEPTED_LEGACY_VERSIONS, LEGACY_VERSIONS } from "../jsonrpc/eras.ts";
import { deservesAnswer, isId, isRecord, paramsOf, readMessages, type Frame, type MessageId } from "../jsonrpc/frames.ts";
import { idKey } from "../jsonrpc/json-check.ts";
import { readLines } from "../jsonrpc/lines.ts";
import { rawMember } from "../jsonrpc/raw-json.ts";
import { ErrorCode, errorLine, resultLine } from "../jsonrpc/messages.ts";
import { VERSION } from "../version.ts";
import { replacedVersionsRemoved } from "./state-io.ts";
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
    "Create a customer and return the new record with the id it was given (c_NNN; ids are never reused). " + "plan defaults to free, notes to empty.",
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

/** A request's answer when it is a JSON-RPC error: exactly this code, message and data. */
class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

function json(value: unknown): string {
  return JSON.stringify(value, null, 2);
}

const SERVER_INFO = { name: "synartesis-toy-crm", title: "Synartesis toy CRM", version: VERSION };
const CAPABILITIES = { tools: {}, resources: {} };

/** What a request is answered with: its result, or a JSON-RPC error. */
export type Answer = { result: Record<string, unknown> } | { error: { code: number; message: string; data?: unknown } };

/** The toy CRM's answers to MCP requests, over any transport. */
export class ToyCrmServer {
  constructor(private readonly store: CrmStore) {}

  async answer(method: string, params: Record<string, unknown>): Promise<Answer> {
    try {
      return { result: await this.result(method, params) };
    } catch (error) {
      if (error instanceof RpcError) return { error: { code: error.code, message: error.message, ...(error.data === undefined ? {} : { data: error.data }) } };
      return { error: { code: ErrorCode.InternalError, message: (error as Error).message ?? String(error) } };
    }
  }

  private async result(method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
    switch (method) {
      case "initialize": {
        // As the SDK's servers do: the client's revision when it is one we speak, else the newest.
        const asked = params.protocolVersion;
        const protocolVersion = typeof asked === "string" && ACCEPTED_LEGACY_VERSIONS.includes(asked) ? asked : LEGACY_VERSIONS[0]!;
        return { protocolVersion, capabilities: CAPABILITIES, serverInfo: SERVER_INFO, instructions: INSTRUCTIONS };
      }
      case "ping":
        return {};
      case "tools/list":
        return { tools: TOOLS.map((t) => t.tool) };
      case "tools/call":
        return this.call(params);
      case "resources/list": {
        const resources: Resource[] = [
          { uri: "crm://customers", name: "customers", title: "All customers", description: "Every customer, sorted by id", mimeType: "application/json" },
          ...(await this.store.queue(() => this.store.list())).map((c) => ({
            uri: `crm://customers/${c.id}`,
            name: c.id,
            title: c.name,
            mimeType: "application/json",
          })),
        ];
        return { resources };
      }
      case "resources/templates/list":
        return {
          resourceTemplates: [
            {
              uriTemplate: "crm://customers/{id}",
              name: "customer",
              title: "One customer",
              description: "One customer record by id",
              mimeType: "application/json",
            },
          ],
        };
      case "resources/read":
        return this.read(params.uri);
      default:
        throw new RpcError(ErrorCode.MethodNotFound, "Method not found");
    }
  }

  // Every call that touches the store queues its work: calls that arrive together share one read and one write of the state file.
  private async call(params: Record<string, unknown>): Promise<CallToolResult> {
    const { name, arguments: args = {}, _meta } = params;
    if (typeof name !== "string") throw new RpcError(ErrorCode.InvalidParams, `tools/call needs "name", a tool name (got ${typeName(name)})`);
    if (!isRecord(args)) throw new RpcError(ErrorCode.InvalidParams, `the arguments of tools/call must be an object (got ${typeName(args)})`);
    const def = TOOLS_BY_NAME.get(name);
    if (!def) throw new RpcError(ErrorCode.InvalidParams, `unknown tool "${name}"`);
    const key = isRecord(_meta) ? _meta[IDEMPOTENCY_META_KEY] : undefined;
    try {
      if (key !== undefined && typeof key !== "string") {
        throw new CrmError(`_meta "${IDEMPOTENCY_META_KEY}" must be a string (got ${typeName(key)})`);
      }
      const valid = readArgs(def, args);
      return success(await this.store.queue(() => def.run(this.store, valid, key)));
    } catch (error) {
      if (error instanceof CrmError) return failure(error.message);
      throw error;
    }
  }

  private async read(uri: unknown): Promise<Record<string, unknown>> {
    if (typeof uri !== "string") throw new RpcError(ErrorCode.InvalidParams, `resources/read needs "uri", a string (got ${typeName(uri)})`);
    try {
      if (uri === "crm://customers") return { contents: [{ uri, mimeType: "application/json", text: json(await this.store.queue(() => this.store.list())) }] };
      const match = /^crm:\/\/customers\/([^/]+)$/.exec(uri);
      if (!match) throw new RpcError(RESOURCE_NOT_FOUND, `unknown resource ${uri}`, { uri });
      const id = decodeURIComponent(match[1]!);
      return { contents: [{ uri, mimeType: "application/json", text: json(await this.store.queue(() => this.store.get(id))) }] };
    } catch (error) {
      if (error instanceof CrmError) {
        const missing = error.message.startsWith("no customer with id");
        throw new RpcError(missing ? RESOURCE_NOT_FOUND : ErrorCode.InternalError, error.message, { uri });
      }
      throw error;
    }
  }

  /** Serve an SDK transport (the tests' HTTP front): answer each request it delivers. */
  async connect(transport: Transport): Promise<void> {
    transport.onmessage = (message: JSONRPCMessage) => {
      if (!("method" in message && "id" in message)) return;
      void this.answer(message.method, message.params ?? {}).then((answer) =>
        transport.send({ jsonrpc: "2.0", id: message.id, ...answer } as JSONRPCMessage).catch((error: Error) => transport.onerror?.(error)),
      );
    };
    await transport.start();
  }
}

export function createToyCrmServer(store: CrmStore): ToyCrmServer {
  return new ToyCrmServer(store);
}

/**
 * Serve over stdin/stdout until stdin closes, SIGTERM or SIGINT, then answer
 * every request that already arrived and close. A second signal stops at once.
 */
/** How often the toy looks whether the process that started it is still its parent. */
const ORPHAN_CHECK_MS = 250;

export async function serveStdio(store: CrmStore): Promise<void> {
  const session = new StdioSession(new ToyCrmServer(store));
  // Nobody is left to answer when the client's end of stdout is gone (EPIPE), or when the
  // process that started this one died without closing its pipes (kill -9 of synartesis undo):
  // then it exits, instead of waiting on a write that never drains.
  const gone = () => process.exit(0);
  process.stdout.on("error", gone);
  const parent = process.ppid;
  const orphaned = setInterval(() => process.ppid !== parent && gone(), ORPHAN_CHECK_MS);
  orphaned.unref();
  // A second signal means "now", even if an answer is still owed.
  const signalled = () => session.stop();
  process.on("SIGTERM", signalled);
  process.on("SIGINT", signalled);
  void readLines(Bun.stdin.stream(), (line) => session.onLine(line))
    .catch(() => {})
    .finally(() => session.stop(false));
  try {
    await session.done;
  } finally {
    process.off("SIGTERM", signalled);
    process.off("SIGINT", signalled);
    clearInterval(orphaned);
  }
  await replacedVersionsRemoved();
  // The caller exits the process next: let every answer reach the pipe first.
  await new Promise<void>((resolve) => process.stdout.write("", () => resolve()));
}

/**
 * One client over stdio: its lines read, each request answered, a cancelled
 * one's answer never sent; done once asked to stop and every request is
 * answered (or given up) and every answer written.
 */
class StdioSession {
  /** Requests read and not yet answered (or given up), by id. */
  private readonly unanswered = new Map<string, number>();
  /** Ids the client cancelled: their answers are never sent (the work may still be done). */
  private readonly cancelled = new Set<string>();
  /** The answers of one turn of the event loop (a batch) leave in one write, and one write at a time. */
  private readonly outgoing: Array<{ line: string; key?: string }> = [];
  private writing = false;
  private stopping = false;
  private stopped!: () => void;
  readonly done = new Promise<void>((resolve) => (this.stopped = resolve));

  constructor(private readonly crm: ToyCrmServer) {}

  onLine(line: string): void {
    if (line.trim() === "") return;
    const read = readMessages(line, "line");
    if ("refused" in read) this.send(read.refused);
    else read.frames.forEach((frame) => this.receive(frame));
  }

  /** Stop once what is owed is written; asked again (`now`, a second signal), stop at once. */
  stop(now = true): void {
    if (this.stopping && now) return this.stopped();
    this.stopping = true;
    this.check();
  }

  private receive(frame: Frame): void {
    if (frame.kind === "request") void this.answer(frame.id, frame.msg.method, paramsOf(frame.msg));
    else if (frame.kind === "invalid") {
      if (deservesAnswer(frame)) this.send(errorLine(frame.id, frame.code, frame.message));
    } else if (frame.kind === "notification" && frame.msg.method === "notifications/cancelled") {
      // The id as written: 9007199254740993 names that request, not …992.
      const idText = isId(paramsOf(frame.msg).requestId) ? rawMember(rawMember(frame.raw, "params") ?? "", "requestId") : undefined;
      const key = idText === undefined ? undefined : idKey(idText);
      if (key !== undefined && this.unanswered.has(key)) this.cancelled.add(key);
    }
  }

  private async answer(id: MessageId, method: string, params: Record<string, unknown>): Promise<void> {
    this.unanswered.set(id.key, (this.unanswered.get(id.key) ?? 0) + 1);
    const reply = await this.crm.answer(method, params);
    if (this.cancelled.has(id.key)) return this.forget(id.key);
    this.send("result" in reply ? resultLine(id, reply.result) : errorLine(id, reply.error.code as ErrorCode, reply.error.message, reply.error.data), id.key);
  }

  private send(line: string, key?: string): void {
    this.outgoing.push({ line, key });
    if (!this.writing) void this.write();
  }

  private async write(): Promise<void> {
    this.writing = true;
    while (this.outgoing.length > 0) {
      await new Promise((resolve) => setImmediate(resolve));
      const lines = this.outgoing.splice(0);
      if (!process.stdout.write(lines.map(({ line }) => line + "\n").join(""))) {
        await new Promise((resolve) => process.stdout.once("drain", resolve));
      }
      for (const { key } of lines) if (key !== undefined) this.forget(key);
    }
    this.writing = false;
    this.check();
  }

  private forget(key: string): void {
    const left = (this.unanswered.get(key) ?? 0) - 1;
    if (left > 0) this.unanswered.set(key, left);
    else {
      this.unanswered.delete(key);
      this.cancelled.delete(key);
    }
    this.check();
  }

  // Done once every request is answered (or given up) and every answer, an error's too, is written.
  private check(): void {
    if (this.stopping && this.unanswered.size === 0 && this.outgoing.length === 0 && !this.writing) this.stopped();
  }
}
