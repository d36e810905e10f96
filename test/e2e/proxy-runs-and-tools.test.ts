// When a run exists and which calls can exist (R-PROXY-12, R-PROXY-16): a
// session that only lists leaves no run; a call to a tool its server does not
// list (after one fresh look) is answered -32602 and journals nothing.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { BIN, connect, initializeFrame, manifestText, run } from "../helpers.ts";
import { crmStateText, crmWorkspace, fixtureServer, INITIALIZED, journalRows, journalRuns, jsonFrame, workspace } from "../fixtures/proxy-kit.ts";

// Each file sets its own: the preload's default reaches only the first file bun runs.
setDefaultTimeout(60_000);

describe.concurrent("a run is created by the first tools/call (R-PROXY-16)", () => {
  test("sessions that only list tools leave no run; the first call creates one, labelled with the client", async () => {
    const ws = crmWorkspace(crmStateText());
    for (let i = 0; i < 3; i++) {
      const { client } = await connect(BIN, ["proxy", "--manifest", ws.manifest], { cwd: ws.dir, name: `lister-${i}` });
      expect((await client.listTools()).tools.map((t) => t.name)).toContain("update_customer");
      await client.close();
    }
    expect(journalRuns(ws.journal)).toEqual([]);
    // `undo` then finds nothing to undo instead of an empty run.
    const undo = await run(["undo", "--journal", ws.journal], { cwd: ws.dir });
    expect(undo.code).toBe(1);
    expect(undo.stderr).toContain("has no runs yet");

    await using worker = await connect(BIN, ["proxy", "--manifest", ws.manifest], { cwd: ws.dir, name: "worker" });
    const client = worker.client;
    await client.listTools();
    await client.callTool({ name: "get_customer", arguments: { id: "c_001" } });
    await client.callTool({ name: "update_customer", arguments: { id: "c_001", notes: "x" } });
    await client.close();
    const runs = journalRuns(ws.journal);
    expect(runs.map((r) => [r.label, r.status])).toEqual([["worker", "complete"]]);
    expect(journalRows(ws.journal).map((r) => r.tool)).toEqual(["get_customer", "update_customer"]);
  }, 60_000);
});

describe.concurrent("unknown tools (R-PROXY-12)", () => {
  test("a tool the server does not list gets -32602 'Unknown tool: NAME', is never held, and journals nothing", async () => {
    const ws = crmWorkspace(crmStateText());
    const result = await run(["proxy", "--manifest", ws.manifest, "--log-level", "warn"], {
      cwd: ws.dir,
      stdin: [
        initializeFrame(0),
        INITIALIZED,
        jsonFrame(1, "tools/call", { name: "drop_all_customers", arguments: {} }),
        jsonFrame(2, "tools/call", { name: "send_emails_to_everyone", arguments: { subject: "hi" } }),
        "",
      ].join("\n"),
    });
    expect(result.code).toBe(0);
    const out = result.stdout
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    expect(out.find((m) => m.id === 1).error).toEqual({ code: -32602, message: "Unknown tool: drop_all_customers" });
    expect(out.find((m) => m.id === 2).error).toEqual({ code: -32602, message: "Unknown tool: send_emails_to_everyone" });
    // Nothing recorded, not even a run, and nobody is asked to approve anything.
    expect(journalRuns(ws.journal)).toEqual([]);
    const gates = await run(["gates", "--json", "--journal", ws.journal], { cwd: ws.dir });
    expect([gates.code, JSON.parse(gates.stdout)]).toEqual([0, []]);
  }, 60_000);

  test("a tool the server lists only now (its list changed) is found by one fresh tools/list and called", async () => {
    const ws = workspace(manifestText({ servers: { raw: fixtureServer("raw-server.ts", ["--late-tool"]) }, tools: [{ match: "raw.*", class: "readonly" }] }));
    const result = await run(["proxy", "--manifest", ws.manifest, "--log-level", "warn"], {
      cwd: ws.dir,
      stdin: [
        initializeFrame(0),
        INITIALIZED,
        jsonFrame(1, "tools/call", { name: "late_read", arguments: {} }),
        jsonFrame(2, "tools/call", { name: "never_listed", arguments: {} }),
        "",
      ].join("\n"),
    });
    expect(result.code).toBe(0);
    const out = result.stdout
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    expect(out.find((m) => m.id === 1).result.structuredContent.word).toBe("café");
    expect(out.find((m) => m.id === 2).error).toEqual({ code: -32602, message: "Unknown tool: never_listed" });
    expect(journalRows(ws.journal).map((r) => `${r.tool}:${r.status}`)).toEqual(["late_read:applied"]);
  }, 60_000);

  test("with several servers, an unknown server prefix or tool is -32602 too", async () => {
    const ws = workspace(
      manifestText({
        servers: { crm: { command: "synartesis", args: ["toy-crm"] }, raw: fixtureServer("raw-server.ts") },
        tools: [{ match: "*.*", class: "readonly" }],
      }),
    );
    const result = await run(["proxy", "--manifest", ws.manifest, "--log-level", "warn"], {
      cwd: ws.dir,
      stdin: [
        initializeFrame(0),
        INITIALIZED,
        jsonFrame(1, "tools/call", { name: "crm__nope", arguments: {} }),
        jsonFrame(2, "tools/call", { name: "ghost__get_customer", arguments: {} }),
        "",
      ].join("\n"),
    });
    const out = result.stdout
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    expect(out.find((m) => m.id === 1).error).toEqual({ code: -32602, message: "Unknown tool: crm__nope" });
    expect(out.find((m) => m.id === 2).error).toEqual({ code: -32602, message: "Unknown tool: ghost__get_customer (tool names here are SERVER__TOOL)" });
    expect(journalRuns(ws.journal)).toEqual([]);
  }, 60_000);
});

describe.concurrent("numbering", () => {
  test("calls piped in together are numbered in the order they arrived: a held send sent sixth is #6, not #1", async () => {
    const ws = crmWorkspace(crmStateText());
    const updates = [1, 2, 3, 4, 5].map((n) => jsonFrame(n, "tools/call", { name: "update_customer", arguments: { id: "c_001", notes: `note ${n}` } }));
    const send = jsonFrame(6, "tools/call", { name: "send_email", arguments: { to: "ada@example.com", subject: "Hi", body: "Hello" } });
    const read = jsonFrame(7, "tools/call", { name: "get_customer", arguments: { id: "c_002" } });
    const result = await run(["proxy", "--manifest", ws.manifest, "--log-level", "warn"], {
      cwd: ws.dir,
      stdin: [initializeFrame(0), INITIALIZED, ...updates, send, read, ""].join("\n"),
    });
    expect(result.code).toBe(0);
    expect(journalRows(ws.journal).map((r) => [r.seq, r.tool, r.status])).toEqual([
      [1, "update_customer", "applied"],
      [2, "update_customer", "applied"],
      [3, "update_customer", "applied"],
      [4, "update_customer", "applied"],
      [5, "update_customer", "applied"],
      [6, "send_email", "gated"],
      [7, "get_customer", "applied"],
    ]);
    const shown = await run(["show", "--journal", ws.journal], { cwd: ws.dir });
    expect(shown.stdout).toMatch(/#6 +⚠ irreversible +gated +crm\.send_email/);
  });
});
