// Agent-chosen text cannot forge the terminal (issue 13 item 8): escape
// sequences in a client name, a tool name, arguments, results and reasons are
// shown with their control characters visible in every command that prints
// them — list, show, gates, approve, deny, undo, check (watch has its own test).
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { agent, cli, crmFolder, editState, resultText, state } from "../fixtures/counting-support.ts";
import { HOSTILE_TOOL } from "../fixtures/hostile-server.ts";
import { fixtureServer, workspace } from "../fixtures/proxy-kit.ts";
import { initializeFrame, manifestText, run, type RunResult, ACCOUNT } from "../helpers.ts";

// The preload's default timeout reaches only the first file bun runs; tests sharing the machine need the room.
setDefaultTimeout(60_000);

/** Any control character but the newlines that end our own lines, any C1 code, any bidi override. */
const RAW_CONTROL = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/;

function expectPrintable(result: RunResult, what: string): void {
  for (const [stream, text] of [
    ["stdout", result.stdout],
    ["stderr", result.stderr],
  ] as const) {
    const found = RAW_CONTROL.exec(text);
    if (found) throw new Error(`${what} wrote ${JSON.stringify(found[0])} raw on ${stream}:\n${JSON.stringify(text)}`);
  }
}

const heldId = (reply: any) => /^Action id: ([0-9a-f]{8})\.$/m.exec(resultText(reply))![1]!;

const AGENT = "helper\x1b]0;pwned\x07\x1b[2K";
const AGENT_SHOWN = "helper\\x1b]0;pwned\\x07\\x1b[2K";

describe.concurrent("the toy CRM, driven by an agent that writes escape sequences", () => {
  test("list, show, gates, approve, deny and undo (with its drift report) show them as escapes", async () => {
    const dir = crmFolder();
    const replies = await agent(
      dir,
      [
        ["update_customer", { id: "c_001", notes: "line one\n\x1b[2Jline two\u202e" }],
        ["send_email", { to: "all@example.com\u009b2K", subject: "Renewal\u202e", body: "x" }],
        ["send_email", { to: "grace@example.com", subject: "\x1b[8mhidden", body: "y" }],
      ],
      { name: AGENT },
    );
    const [mass, second] = [heldId(replies.get(2)), heldId(replies.get(3))];

    const list = await cli(dir, ["list"]);
    expectPrintable(list, "list");
    expect(list.stdout).toContain(AGENT_SHOWN);

    const show = await cli(dir, ["show"]);
    expectPrintable(show, "show");
    expect(show.stdout).toContain(AGENT_SHOWN);
    expect(show.stdout).toContain('crm.send_email {"to":"all@example.com\\x9b2K","subject":"Renewal\\u202e","body":"x"}');

    const gates = await cli(dir, ["gates"]);
    expectPrintable(gates, "gates");
    expect(gates.stdout).toContain("all@example.com\\x9b2K");

    const approve = await cli(dir, ["approve", mass]);
    expect(approve.code).toBe(0);
    expectPrintable(approve, "approve");
    expect(approve.stdout).toContain(`(by ${ACCOUNT})`);
    const deny = await cli(dir, ["deny", second, "--reason", "no\x1b[2J"]);
    expect(deny.code).toBe(0);
    expectPrintable(deny, "deny");
    expect(deny.stdout).toContain('"subject":"\\u001b[8mhidden"');
    expect(deny.stdout).toContain(": no\\x1b[2J)");
    const again = await cli(dir, ["approve", mass]);
    expect(again.code).toBe(1);
    expectPrintable(again, "approve of a settled call");

    // A colleague's edit makes undo stop on drift and print both texts side by side.
    editState(dir, (s) => (s.customers.c_001.notes = "by hand\n\x1b[31mred\u0085"));
    const undo = await cli(dir, ["undo"]);
    expect(undo.code).toBe(1);
    expectPrintable(undo, "undo");
    expect(undo.stdout).toContain("DRIFT");
    expect(undo.stdout).toContain("\\x1b[2Jline two\\u202e");
    expect(undo.stdout).toContain("\\x1b[31mred\\x85");
    expect(undo.stdout).toContain(AGENT_SHOWN);
    expect(state(dir).customers.c_001.notes).toBe("by hand\n\x1b[31mred\u0085");
  });
});

describe.concurrent("a server whose tool name carries escape sequences", () => {
  const SHOWN = "evil.notify\\x1b[2K\\r\\x1b[32mharmless_read\\x1b[0m";
  const manifest = manifestText({ servers: { evil: fixtureServer("hostile-server.ts") }, tools: [{ match: "evil.peek", class: "readonly" }] });

  test("check, gates, approve, show and undo show the name with its control characters visible", async () => {
    const ws = workspace(manifest, "syn-hostile-");
    const call = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: HOSTILE_TOOL, arguments: {} } });
    const frames = (name: string) => [initializeFrame(0, name), JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }), call, ""].join("\n");

    const check = await run(["check"], { cwd: ws.dir });
    expectPrintable(check, "check");
    expect(check.stdout).toContain(`Not covered by any rule (treated as irreversible and gated, like any tool a manifest does not mention): ${SHOWN}`);

    const held = await run(["proxy"], { cwd: ws.dir, stdin: frames("first") });
    expect(held.code).toBe(0);
    const id = /Action id: ([0-9a-f]{8})\./.exec(held.stdout)![1]!;
    const gates = await run(["gates"], { cwd: ws.dir });
    expectPrintable(gates, "gates");
    expect(gates.stdout).toContain(SHOWN);
    expect(gates.stdout).toContain(`why      no rule in the manifest covers ${SHOWN}, so it is treated as irreversible`);

    const approve = await run(["approve", id], { cwd: ws.dir });
    expectPrintable(approve, "approve");
    expect(approve.stdout).toContain(`Approved ${id} ${SHOWN} {}`);
    const ran = await run(["proxy"], { cwd: ws.dir, stdin: frames("second") });
    expect(JSON.parse(ran.stdout.trim().split("\n").at(-1)!).result.content[0].text).toBe("done\x1b[2J\u009b31m\u202e");

    const show = await run(["show"], { cwd: ws.dir });
    expectPrintable(show, "show");
    expect(show.stdout).toContain(SHOWN);
    const undo = await run(["undo"], { cwd: ws.dir });
    expect(undo.code).toBe(0);
    expectPrintable(undo, "undo");
    expect(undo.stdout).toContain(`left in place     ${SHOWN} {}`);
  });
});
