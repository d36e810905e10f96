// 2026-era clients, frame by frame (R-ERA-1, R-ERA-3, R-ERA-5): the proxy
// answers server/discover itself, serves per-request _meta, refuses a
// version it does not serve with -32022; a 2026-era server's input_required
// round trip passes through as one journal action whose snapshot is the state
// right before the attempt that executed; a gated call stays gated across the
// round trip; one stdio connection is one run, named by the client.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { BIN, LineSession, ROOT, run, tempDir } from "../helpers.ts";
import { eraWorkspace, EVERYTHING_RULES, EVERYTHING_SERVER, notesRules, notesServer, writeNotes } from "../fixtures/era-kit.ts";
import { crmStateText, crmWorkspace, journalRows, journalRuns, rawWorkspace, type Workspace } from "../fixtures/proxy-kit.ts";
import { rawMember } from "../../src/jsonrpc/raw-json.ts";

// Each file sets its own: the preload's default reaches only the first file bun runs.
setDefaultTimeout(60_000);

const meta = (name = "raw-2026", more: Record<string, unknown> = {}, capabilities: Record<string, unknown> = {}) => ({
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": capabilities,
  "io.modelcontextprotocol/clientInfo": { name, version: "1.0.0" },
  ...more,
});
/** A 2026-era request's params: `params` with the envelope. */
const modern = (params: Record<string, unknown> = {}, envelope = meta()) => ({ ...params, _meta: envelope });
const ELICITING = meta("raw-2026", {}, { elicitation: { form: {} } });

function proxy(manifest: string, dir: string): LineSession {
  return new LineSession([BIN, "proxy", "--manifest", manifest, "--log-level", "warn"], { cwd: dir });
}

// Each test has its own folder, journal and proxy: they run side by side.
describe.concurrent("the proxy as a 2026-07-28 server", () => {
  test("server/discover is answered by the proxy: its version, the server's identity and capabilities, the note first; results carry resultType and cache fields", async () => {
    const ws = crmWorkspace(crmStateText());
    await using session = proxy(ws.manifest, ws.dir);
    const discovered = (await session.request(1, "server/discover", modern())).result;
    expect(discovered).toMatchObject({
      resultType: "complete",
      supportedVersions: ["2026-07-28"],
      capabilities: { tools: {} },
      ttlMs: 0,
      cacheScope: "private",
      _meta: { "io.modelcontextprotocol/serverInfo": { name: "synartesis-toy-crm" } },
    });
    expect(discovered.instructions).toStartWith("This connection goes through Synartesis, which records every tool call");
    const listed = (await session.request(2, "tools/list", modern())).result;
    expect(listed).toMatchObject({ resultType: "complete", ttlMs: 0, cacheScope: "private" });
    expect(listed.tools.map((tool: { name: string }) => tool.name)).toContain("update_customer");
    const read = (await session.request(3, "tools/call", modern({ name: "get_customer", arguments: { id: "c_001" } }))).result;
    expect(read).toMatchObject({ resultType: "complete", structuredContent: { name: "Ada Lovelace" } });
    // The toy CRM tells of no prompt list change: a subscription to one is acknowledged with nothing honoured and ended at once, not left open with nothing ever coming.
    const listen = await session.request(4, "subscriptions/listen", modern({ notifications: { promptsListChanged: true } }));
    expect(listen.result).toEqual({ resultType: "complete", _meta: { "io.modelcontextprotocol/subscriptionId": 4 } });
    expect(await session.next((m) => m.method === "notifications/subscriptions/acknowledged")).toMatchObject({ params: { notifications: {} } });
    expect(await session.close()).toBe(0);
  }, 30_000);

  test("a version not served gets -32022 naming the ones that are; a 2026-era connection refuses requests without the envelope, and initialize; nothing is journalled", async () => {
    const ws = crmWorkspace(crmStateText());
    await using session = proxy(ws.manifest, ws.dir);
    const future = await session.request(1, "tools/list", modern({}, { ...meta(), "io.modelcontextprotocol/protocolVersion": "2099-01-01" }));
    expect(future.error).toMatchObject({ code: -32022, data: { supported: ["2026-07-28"], requested: "2099-01-01" } });
    const bare = await session.request(2, "tools/list", { _meta: { "io.modelcontextprotocol/protocolVersion": "2026-07-28" } });
    expect(bare.error.code).toBe(-32602);
    expect(bare.error.message).toContain("clientCapabilities");
    // The first request served decides: this connection is of the 2026 era from here on.
    expect((await session.request(3, "tools/list", modern())).result.tools.length).toBeGreaterThan(0);
    expect((await session.request(4, "tools/call", { name: "get_customer", arguments: { id: "c_001" } })).error.code).toBe(-32602);
    const initialize = await session.request(5, "initialize", { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "late", version: "1" } });
    expect(initialize.error).toMatchObject({ code: -32600, message: expect.stringContaining("has no initialize") });
    expect(await session.close()).toBe(0);
    expect(journalRuns(ws.journal)).toEqual([]);
  }, 30_000);

  test("one stdio connection is one run, named by the client (io.synartesis/run, else clientInfo.name); a 2025-era server gets neither the envelope nor that key, and the arguments' exact bytes", async () => {
    const { received, ...ws } = rawWorkspace([{ match: "raw.*", class: "readonly" }], "syn-era-");
    await using session = proxy(ws.manifest, ws.dir);
    const args = '{ "amount" : 1.50, "n": 1E2 }';
    const call = (id: number, name: string, envelope: Record<string, unknown>) =>
      `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"raw_read","arguments":${args},"_meta":${JSON.stringify({ ...envelope, progressToken: `p${id}` })}}}`;
    session.send(call(1, "first", meta("agent-one", { "io.synartesis/run": "nightly cleanup" })));
    expect((await session.response(1)).result.resultType).toBe("complete");
    session.send(call(2, "second", meta("agent-two")));
    await session.response(2);
    expect(await session.close()).toBe(0);

    expect(journalRuns(ws.journal).map((r) => [r.label, r.status])).toEqual([["nightly cleanup", "complete"]]);
    expect(journalRows(ws.journal)).toHaveLength(2);
    const calls = (await Bun.file(received).text()).split("\n").filter((line) => line.includes('"tools/call"'));
    expect(calls).toHaveLength(2);
    for (const [index, line] of calls.entries()) {
      expect(rawMember(rawMember(line, "params")!, "arguments")).toBe(args);
      expect(JSON.parse(line).params._meta).toEqual({ progressToken: `p${index + 1}` });
    }
  }, 30_000);
});

describe.concurrent("docs/eras.md's 2026-era run (R-ERA-5)", () => {
  test("its example runs as shown: the run is named by io.synartesis/run, and the call is recorded", async () => {
    const readme = readFileSync(join(ROOT, "docs", "eras.md"), "utf8");
    const script = /<!-- readme-era-example -->\n```sh\n([\s\S]*?)```/.exec(readme)![1]!;
    const shown = /<!-- readme-era-output -->\n```\n([\s\S]*?)```/.exec(readme)![1]!;
    const ws = crmWorkspace(crmStateText());
    const bin = join(tempDir(), "bin");
    mkdirSync(bin);
    symlinkSync(BIN, join(bin, "synartesis"));
    const result = await run(["-c", script], { bin: "bash", cwd: ws.dir, env: { PATH: `${bin}:${process.env.PATH}` } });
    expect(result.code).toBe(0);
    const normalised = (text: string) => text.replace(/\b[0-9a-f]{8}\b/g, "<id>").replace(/\d{4}-\d\d-\d\d \d\d:\d\d:\d\d/g, "<time>");
    expect(normalised(result.stdout)).toBe(normalised(shown));
    const replies = readFileSync(join(ws.dir, "replies.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(replies.map((reply) => reply.result.resultType)).toEqual(["complete", "complete"]);
    expect(replies[1].result.structuredContent.plan).toBe("pro");
    expect(journalRuns(ws.journal).map((r) => r.label)).toEqual(["nightly cleanup"]);
  }, 30_000);
});

describe.concurrent("a 2025-era server's request during a 2026-era client's call (R-ERA-2)", () => {
  test("becomes input_required while the server's call stays open; the retry's answer reaches the server; asked without the capability, the server is refused; one action each", async () => {
    const ws = eraWorkspace(EVERYTHING_SERVER, EVERYTHING_RULES);
    await using session = proxy(ws.manifest, ws.dir);
    // The first request opens the 2025-era server with the capabilities it declares.
    expect((await session.request(1, "tools/list", modern({}, ELICITING))).result.tools.length).toBeGreaterThan(0);
    const trigger = { name: "trigger-elicitation-request", arguments: {} };
    const asked = (await session.request(2, "tools/call", modern(trigger, ELICITING))).result;
    expect(asked).toMatchObject({ resultType: "input_required", inputRequests: { elicitation_create_1: { method: "elicitation/create" } } });
    expect(asked.requestState).toStartWith("synartesis.");
    const answer = { elicitation_create_1: { action: "decline" } };
    const done = (await session.request(3, "tools/call", modern({ ...trigger, inputResponses: answer, requestState: asked.requestState }, ELICITING))).result;
    expect(done.resultType).toBe("complete");
    expect(JSON.stringify(done.content)).toContain("declined");
    // Another call of the same client without the capability: the server's request is refused, not asked.
    const refused = await session.request(4, "tools/call", modern(trigger));
    expect(refused.result).toMatchObject({ resultType: "complete", isError: true });
    expect(refused.result.content[0].text).toContain(
      "Synartesis: the server asked for elicitation/create, but the client did not declare the elicitation capability",
    );
    expect(await session.close()).toBe(0);
    expect(journalRows(ws.journal).map((row) => [row.tool, row.status])).toEqual([
      ["trigger-elicitation-request", "applied"],
      ["trigger-elicitation-request", "failed"],
    ]);
  }, 30_000);
});

const confirm = { name: "confirm_put", arguments: { key: "plan", text: "ship never" } };

/** The notes server with confirm_put gated (gate: always), a proxy on it, and confirm_put held once and approved by alice. */
async function approvedConfirmation(): Promise<{ ws: Workspace; session: LineSession }> {
  const rules = notesRules("notes").map((rule) => (rule.match === "notes.confirm_put" ? { ...rule, gate: "always" as const } : rule));
  const ws = eraWorkspace(notesServer("notes"), rules);
  writeNotes(ws, "notes", { notes: { plan: "ship on Friday" }, outbox: [] });
  // Handed to the test, which stops it (await using there).
  const session = proxy(ws.manifest, ws.dir);
  const held = (await session.request(1, "tools/call", modern(confirm, ELICITING))).result;
  expect(held.content[0].text).toStartWith("HELD FOR APPROVAL");
  const action = /Action id: ([0-9a-f]{8})/.exec(held.content[0].text)![1]!;
  expect((await run(["approve", action, "--journal", ws.journal], { cwd: ws.dir })).code).toBe(0);
  return { ws, session };
}

describe.concurrent("an input_required round trip is one call (R-ERA-3)", () => {
  test("passed through from a 2026-era server: the client sees Synartesis's requestState; the snapshot is the state right before the attempt that executed; a retry of another call, or with a state not issued, is refused", async () => {
    const ws = eraWorkspace(notesServer("notes"), notesRules("notes"));
    writeNotes(ws, "notes", { notes: { plan: "ship on Friday" }, outbox: [] });
    await using session = proxy(ws.manifest, ws.dir);
    const first = (await session.request(1, "tools/call", modern(confirm, ELICITING))).result;
    expect(first).toMatchObject({ resultType: "input_required", inputRequests: { confirm: { method: "elicitation/create" } } });
    expect(first.requestState).toStartWith("synartesis.");
    // Meanwhile someone else changes the note: the call that runs replaces that, not what was there at first.
    writeNotes(ws, "notes", { notes: { plan: "ship on Monday" }, outbox: [] });

    const answer = { confirm: { action: "accept", content: { confirm: true } } };
    const other = await session.request(
      2,
      "tools/call",
      modern({ ...confirm, arguments: { key: "plan", text: "other" }, inputResponses: answer, requestState: first.requestState }, ELICITING),
    );
    expect(other.error).toMatchObject({ code: -32602, message: expect.stringContaining("belongs to another call") });
    const forged = await session.request(3, "tools/call", modern({ ...confirm, inputResponses: answer, requestState: "synartesis.not-issued" }, ELICITING));
    expect(forged.error).toMatchObject({ code: -32602, message: expect.stringContaining("invalid or expired requestState") });
    const done = (await session.request(4, "tools/call", modern({ ...confirm, inputResponses: answer, requestState: first.requestState }, ELICITING))).result;
    // The server got its own requestState back (it says so if not), and wrote the note.
    expect(done).toMatchObject({ resultType: "complete", structuredContent: { key: "plan", text: "ship never" } });
    expect(done.isError).toBeUndefined();
    expect(await session.close()).toBe(0);

    const rows = journalRows(ws.journal);
    expect(rows.map((row) => [row.tool, row.status])).toEqual([["confirm_put", "applied"]]);
    expect(JSON.parse(rows[0]!.snapshot!)).toEqual({ key: "plan", text: "ship on Monday" });
    expect(JSON.parse(rows[0]!.inverse!)).toEqual({ server: "notes", tool: "put_note", args: { key: "plan", text: "ship on Monday" } });
    expect(JSON.parse(rows[0]!.post_state!)).toEqual({ key: "plan", text: "ship never" });
  }, 30_000);

  test("a gated call stays gated across the round trip: held, approved once, then its input round trip runs under that one approval", async () => {
    const { ws, session: opened } = await approvedConfirmation();
    await using session = opened;
    const asked = (await session.request(2, "tools/call", modern(confirm, ELICITING))).result;
    expect(asked.resultType).toBe("input_required");
    const answer = { confirm: { action: "accept", content: { confirm: true } } };
    const done = (await session.request(3, "tools/call", modern({ ...confirm, inputResponses: answer, requestState: asked.requestState }, ELICITING))).result;
    expect(done.structuredContent).toEqual({ key: "plan", text: "ship never" });
    // A fresh call of the same thing is held again: the one approval was spent by the call above.
    const again = (await session.request(4, "tools/call", modern(confirm, ELICITING))).result;
    expect(again.content[0].text).toStartWith("HELD FOR APPROVAL");
    expect(await session.close()).toBe(0);
    expect(journalRows(ws.journal).map((row) => [row.tool, row.status])).toEqual([
      ["confirm_put", "approved"],
      ["confirm_put", "applied"],
      ["confirm_put", "gated"],
    ]);
  }, 30_000);

  test("a round trip the client never finishes: the call is recorded as not completed, and the approval it spent is given back", async () => {
    const { ws, session: opened } = await approvedConfirmation();
    await using session = opened;
    expect((await session.request(2, "tools/call", modern(confirm, ELICITING))).result.resultType).toBe("input_required");
    // The client leaves instead of retrying.
    expect(await session.close()).toBe(0);
    const rows = journalRows(ws.journal);
    expect(rows.map((row) => [row.tool, row.status])).toEqual([
      ["confirm_put", "approved"],
      ["confirm_put", "failed"],
    ]);
    expect(rows[1]!.error).toBe("not completed: the server asked for input and the client left before it retried with the input it was asked for");
    // Not run, so the person's approval still stands for the agent's next try.
    await using next = new LineSession([BIN, "proxy", "--manifest", ws.manifest, "--log-level", "warn"], { cwd: ws.dir });
    expect((await next.request(1, "tools/call", modern(confirm, ELICITING))).result.resultType).toBe("input_required");
    await next.close();
  }, 30_000);

  test("a client that did not declare elicitation: the server's -32021 reaches it as the server sent it, and the call is recorded failed", async () => {
    const ws = eraWorkspace(notesServer("notes"), notesRules("notes"));
    writeNotes(ws, "notes", { notes: { plan: "ship on Friday" }, outbox: [] });
    await using session = proxy(ws.manifest, ws.dir);
    const refused = await session.request(1, "tools/call", modern({ name: "confirm_put", arguments: { key: "plan", text: "ship never" } }));
    expect(refused.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { elicitation: { form: {} } } } });
    expect(await session.close()).toBe(0);
    expect(journalRows(ws.journal).map((row) => [row.tool, row.status])).toEqual([["confirm_put", "failed"]]);
  }, 30_000);
});
