// The era matrix (R-ERA-1, R-ERA-2), through the built binary:
// {2025 client (v1 SDK), 2026 client (v2 SDK, pinned to 2026-07-28)} ×
// {2025 servers (the toy CRM and server-everything), 2026 server (the v2-SDK
// notes fixture, refusing initialize)} × {stdio, `proxy --http` (the 2025
// client in a session, the 2026 client sessionless)}. In every cell: the
// tools are listed, a read, a reversible write undone exactly, a gated call
// held then approved, and an elicitation exchange completed across eras or
// within one; the journal holds exactly one action per logical call, in one
// run that ends complete.
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { BIN, connect, run } from "../helpers.ts";
import { httpClient, modernHttpClient, startHttpProxy, stopHttpProxiesAfterAll, type HttpProxy } from "../fixtures/http-kit.ts";
import {
  connectModern,
  CRM_RULES,
  CRM_SERVER,
  eraWorkspace,
  EVERYTHING_RULES,
  EVERYTHING_SERVER,
  notesRules,
  notesServer,
  readNotes,
  writeNotes,
} from "../fixtures/era-kit.ts";
import { crmStateText, journalRows, journalRuns, type Workspace } from "../fixtures/proxy-kit.ts";

// Each file sets its own: the preload's default reaches only the first file bun runs.
setDefaultTimeout(60_000);

/** A client of either era, as the matrix drives it. */
interface Agent {
  call(name: string, args: Record<string, unknown>): Promise<any>;
  names(): Promise<string[]>;
  /** Elicitation requests the client was asked (each answered with `answer`). */
  asked: string[];
  close(): Promise<void>;
}

stopHttpProxiesAfterAll();

// Cells run side by side: a client a failed cell left open is closed once they all end.
const open: Agent[] = [];
afterAll(async () => {
  for (const agent of open.splice(0)) await agent.close().catch(() => {});
});

/** What a client answers a server's elicitation with. */
type Answer = Record<string, string | number | boolean | string[]>;

/** What both SDKs' clients offer the matrix. */
interface SdkClient {
  callTool(params: { name: string; arguments: Record<string, unknown> }): Promise<unknown>;
  listTools(): Promise<{ tools: Array<{ name: string }> }>;
  close(): Promise<void>;
}

function agentOf(client: SdkClient, asked: string[]): Agent {
  const agent: Agent = {
    call: (name, args) => client.callTool({ name, arguments: args }),
    names: async () => (await client.listTools()).tools.map((tool) => tool.name),
    asked,
    close: () => client.close(),
  };
  open.push(agent);
  return agent;
}

/** The proxy --http a cell's client talks to, when the cell is over HTTP (undefined: over stdio). */
type Http = HttpProxy | undefined;

async function legacyAgent(ws: Workspace, answer: Answer, http: Http): Promise<Agent> {
  const capabilities = { elicitation: {} };
  const { client } = http
    ? await httpClient(http.url, "agent-2025", { capabilities })
    : await connect(BIN, ["proxy", "--manifest", ws.manifest], { cwd: ws.dir, name: "agent-2025", capabilities });
  const asked: string[] = [];
  client.setRequestHandler(ElicitRequestSchema, async (request) => (asked.push(request.params.message), { action: "accept", content: answer }));
  return agentOf(client, asked);
}

async function modernAgent(ws: Workspace, answer: Answer, http: Http): Promise<Agent> {
  const capabilities = { elicitation: { form: {} } };
  const { client } = http ? await modernHttpClient(http.url, "agent-2026", { capabilities }) : await connectModern(ws, { name: "agent-2026", capabilities });
  expect(client.getProtocolEra()).toBe("modern");
  const asked: string[] = [];
  client.setRequestHandler("elicitation/create", async (request) => (asked.push(request.params.message), { action: "accept", content: answer }));
  return agentOf(client, asked);
}

const CLIENTS = [
  { era: "2025 client", connect: legacyAgent, label: "agent-2025" },
  { era: "2026 client", connect: modernAgent, label: "agent-2026" },
] as const;

/** One kind of server for the matrix: its workspace, its tools, and what the state is before and after. */
interface ServerKind {
  era: string;
  setUp(): Workspace;
  read: [string, Record<string, unknown>, string];
  write: [string, Record<string, unknown>];
  gated: [string, Record<string, unknown>, string];
  asking: [string, Record<string, unknown>, string];
  /** The answer the client gives to the server's elicitation. */
  answer: Answer;
  /** A tool's name as the journal has it (server.tool). */
  journalName(exposed: string): string;
  state(ws: Workspace): string;
  /** The state after the calls, and after undo (what undo puts back; the approved irreversible call stays). */
  changed(ws: Workspace): void;
  undone(ws: Workspace, before: string): void;
}

const SERVERS_2025: ServerKind = {
  era: "2025 servers (toy CRM, server-everything)",
  setUp() {
    const ws = eraWorkspace({ ...CRM_SERVER, ...EVERYTHING_SERVER }, [...CRM_RULES, ...EVERYTHING_RULES]);
    writeFileSync(ws.state, crmStateText());
    return ws;
  },
  read: ["crm__get_customer", { id: "c_001" }, '"name": "Ada Lovelace"'],
  write: ["crm__update_customer", { id: "c_001", plan: "free", notes: "downgraded by mistake" }],
  gated: ["crm__send_email", { to: "ada@example.com", subject: "Plan", body: "You are on free now." }, "sent"],
  asking: ["everything__trigger-elicitation-request", {}, "User provided the requested information"],
  answer: { name: "Ada", check: true, email: "ada@example.com", integer: 3, number: 2.5, enum: "option1" },
  journalName: (exposed) => exposed.replace("__", "."),
  state: (ws) => readFileSync(ws.state, "utf8"),
  changed(ws) {
    const state = JSON.parse(readFileSync(ws.state, "utf8"));
    expect(state.customers.c_001).toMatchObject({ plan: "free", notes: "downgraded by mistake" });
    expect(state.outbox.map((mail: { to: string }) => mail.to)).toEqual(["ada@example.com"]);
  },
  undone(ws, before) {
    const state = JSON.parse(readFileSync(ws.state, "utf8"));
    expect(state.customers).toEqual(JSON.parse(before).customers);
    expect(state.outbox).toHaveLength(1);
  },
};

const SERVER_2026: ServerKind = {
  era: "2026 server (v2 SDK notes, refusing initialize)",
  setUp() {
    const ws = eraWorkspace(notesServer("notes"), notesRules("notes"));
    writeNotes(ws, "notes", { notes: { plan: "ship on Friday" }, outbox: [] });
    return ws;
  },
  read: ["get_note", { key: "plan" }, '"text":"ship on Friday"'],
  write: ["put_note", { key: "plan", text: "ship on Monday" }],
  gated: ["send_note", { to: "team", text: "plan changed" }, "sent to team"],
  asking: ["confirm_put", { key: "plan", text: "ship never" }, '"text":"ship never"'],
  answer: { confirm: true },
  journalName: (exposed) => `notes.${exposed}`,
  state: (ws) => readFileSync(join(ws.dir, "notes.json"), "utf8"),
  changed(ws) {
    expect(readNotes(ws, "notes")).toEqual({ notes: { plan: "ship never" }, outbox: [{ to: "team", text: "plan changed" }] });
  },
  undone(ws) {
    expect(readNotes(ws, "notes")).toEqual({ notes: { plan: "ship on Friday" }, outbox: [{ to: "team", text: "plan changed" }] });
  },
};

const text = (result: any) => result.content.map((block: any) => block.text).join("\n") as string;

describe.each(["stdio", "--http"] as const)("the era matrix over %s", (transport) => {
  for (const client of CLIENTS) {
    for (const server of [SERVERS_2025, SERVER_2026]) {
      // Each cell has its own folder, journal and processes: they run side by side.
      test.concurrent(`${client.era} × ${server.era}`, async () => {
        const ws = server.setUp();
        const before = server.state(ws);
        const http = transport === "--http" ? await startHttpProxy(ws) : undefined;
        const agent = await client.connect(ws, server.answer, http);

        expect(await agent.names()).toEqual(expect.arrayContaining([server.read[0], server.write[0], server.gated[0], server.asking[0]]));
        expect(text(await agent.call(server.read[0], server.read[1]))).toContain(server.read[2]);
        expect((await agent.call(server.write[0], server.write[1])).isError).toBeFalsy();

        const held = await agent.call(server.gated[0], server.gated[1]);
        expect(held.isError).toBe(true);
        expect(text(held)).toStartWith("HELD FOR APPROVAL");
        const action = /Action id: ([0-9a-f]{8})/.exec(text(held))![1]!;
        expect((await run(["approve", action, "--journal", ws.journal], { cwd: ws.dir })).code).toBe(0);
        expect(text(await agent.call(server.gated[0], server.gated[1]))).toContain(server.gated[2]);

        const asking = await agent.call(server.asking[0], server.asking[1]);
        expect(asking.isError).toBeFalsy();
        expect(text(asking)).toContain(server.asking[2]);
        expect(agent.asked).toHaveLength(1);
        await agent.close();
        if (http) {
          // Over HTTP the run ends with the proxy (a 2026 client has no session to end).
          http.proc.kill("SIGTERM");
          expect(await http.proc.exited).toBe(0);
        }
        server.changed(ws);

        // One action per logical call: the held call's request, and the approved call that ran, are two calls.
        const rows = journalRows(ws.journal);
        const named = server.journalName;
        expect(rows.map((row) => [`${row.server}.${row.tool}`, row.status])).toEqual([
          [named(server.read[0]), "applied"],
          [named(server.write[0]), "applied"],
          [named(server.gated[0]), "approved"],
          [named(server.gated[0]), "applied"],
          [named(server.asking[0]), "applied"],
        ]);
        expect(journalRuns(ws.journal).map((r) => [r.label, r.status])).toEqual([[client.label, "complete"]]);

        const undo = await run(["undo", "--journal", ws.journal, "--manifest", ws.manifest], { cwd: ws.dir });
        expect(undo.stderr).not.toContain("drift");
        server.undone(ws, before);
        expect(journalRuns(ws.journal)[0]!.status).toBe("partial");
      }, 60_000);
    }
  }
});
