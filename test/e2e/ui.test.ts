// The review page's server through the built binary, without a browser
// (R-UI-1…5): the code traded for a bearer token (no cookie), Host/Origin/token refusals,
// the embedded page, the API's answers, approve/deny as the CLI records them,
// undo planned and done as the CLI does it, live change events, and the flags.
// test/system/ui.system.ts drives the same page in Chromium.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { run, tempDir, until, ACCOUNT } from "../helpers.ts";
import { agent, cli, crmFolder, editState, json, journalRows, SEED, state, stateText, type Call } from "../fixtures/counting-support.ts";
import { UiProcess } from "../fixtures/ui-kit.ts";
import { buildReviewJournal } from "../fixtures/review-journal.ts";
import { openJournal } from "../../src/journal/journal.ts";

// Each file sets its own: the preload's default reaches only the first file bun runs.
setDefaultTimeout(60_000);

const EMAIL = { to: "ada@example.com", subject: "Your plan changed", body: "You are now on the free plan." };
const DAMAGE: Call[] = [
  ["update_customer", { id: "c_001", plan: "free", notes: "wrong notes" }],
  ["delete_customer", { id: "c_002" }],
  ["create_customer", { name: "Bogus Customer", email: "bogus@example.com" }],
];

/** `synartesis ui` in `cwd`; with `await using`, stopped when the test's scope ends. */
const ui = (cwd: string, args: string[] = [], env: Record<string, string | undefined> = {}) => UiProcess.start(cwd, args, env);

const collapse = (text: string) => text.replace(/\s+/g, " ").trim();

describe.concurrent("signing in and the embedded page", () => {
  test("the printed address's code is traded for a token the page sends itself; the page and its files come from the binary in an empty folder", async () => {
    const dir = crmFolder();
    await agent(dir, [["get_customer", { id: "c_001" }]]);
    const empty = tempDir("syn-ui-empty-");
    await using server = await ui(empty, ["--journal", join(dir, "synartesis.db")]);
    expect(server.stdout).toBe(`Review page for the journal ${join(dir, "synartesis.db")}:\n  ${server.url}\nCtrl-C stops it.\n`);
    // The code is in the fragment: a browser never sends it in a request.
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/#code=[A-Za-z0-9_-]{43}$/);

    const auth = await server.signIn();
    expect(auth).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(auth).not.toBe(server.code);
    // The printed code signs in any number of tabs, to the same session.
    expect(await server.signIn()).toBe(auth);

    const page = await server.request("/");
    expect(page.status).toBe(200);
    // No cookie, ever: a browser would send it to every other service on another port of this host (R-UI-5).
    expect(page.headers.get("set-cookie")).toBeNull();
    expect(page.headers.get("content-security-policy")).toContain("default-src 'none'; script-src 'self'");
    expect(page.headers.get("x-frame-options")).toBe("DENY");
    const html = await page.text();
    const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!).filter((ref) => ref !== "#main");
    expect(refs.length).toBe(5); // the icon, the script, the style sheet, and the two navigation links
    for (const ref of refs) expect(ref.startsWith("/")).toBe(true);
    const icon = refs.find((ref) => ref.endsWith(".svg"))!;
    const served = await server.request(icon);
    expect(served.status).toBe(200);
    expect(served.headers.get("content-type")).toContain("image/svg+xml");
    const files = refs.filter((ref) => ref.startsWith("/chunk-"));
    expect(files.map((f) => f.split(".").pop()).sort()).toEqual(["css", "js"]);
    for (const file of files) {
      const response = await server.request(file);
      expect(response.status).toBe(200);
      const body = await response.text();
      expect(body).not.toMatch(/https?:\/\//);
      // Nothing is ever parsed as HTML on the page: the script builds every node with text.
      if (file.endsWith(".js")) for (const sink of ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write"]) expect(body).not.toContain(sink);
    }
    for (const path of ["/gates", `/runs/${(await json(dir, ["list"]))[0].id}`]) expect((await server.request(path)).status).toBe(200);
    expect((await server.request("/nowhere")).status).toBe(404);
    expect((await server.request("/api/runs", { auth })).status).toBe(200);
  });

  test("refused: no token, a wrong token or code, a used one-time code, another Host, and state changes without the page's own origin", async () => {
    const dir = crmFolder();
    await agent(dir, [["send_email", EMAIL]]);
    const [held] = await json(dir, ["gates"]);
    await using server = await ui(dir);
    const auth = await server.signIn();
    const approve = `/api/actions/${held.id}/approve`;

    // The page holds no data; every API request needs the token.
    for (const path of ["/api/runs", "/api/gates", "/api/events"]) expect((await server.request(path)).status).toBe(401);
    expect((await server.request("/api/runs", { auth: "x".repeat(43) })).status).toBe(401);
    // A cookie carrying the token is no credential at all.
    expect((await server.request("/api/runs", { headers: { Cookie: `synartesis_ui_${server.port}=${auth}` } })).status).toBe(401);
    const wrong = await server.request("/api/session", { method: "POST", body: { code: "x".repeat(43) } });
    expect([wrong.status, (await wrong.json()).error]).toEqual([403, expect.stringContaining("This link's code is not valid, or was used already")]);
    expect((await server.request("/api/session", { method: "POST", body: { code: server.code }, headers: { Origin: "http://127.0.0.1:1" } })).status).toBe(403);

    // DNS rebinding: a name that is not ours is refused even with the token.
    const rebound = await server.request("/api/runs", { auth, headers: { Host: `attacker.example:${server.port}` } });
    expect(rebound.status).toBe(403);
    // A Host that is no host name at all is refused the same way, not a server error.
    expect((await server.request("/api/runs", { auth, headers: { Host: "localhost:abc" } })).status).toBe(403);
    expect((await server.request("/api/runs", { auth, headers: { Host: `localhost:${server.port}` } })).status).toBe(200);

    const refusals: Array<{ headers: Record<string, string>; why: string }> = [
      { headers: { Origin: "" }, why: "the request carries no Origin header" },
      { headers: { Origin: "http://attacker.example" }, why: "the request comes from another origin (http://attacker.example)" },
      { headers: { Origin: `http://localhost:${server.port}` }, why: `the request comes from another origin (http://localhost:${server.port})` },
      { headers: { "Sec-Fetch-Site": "cross-site" }, why: "the browser says the request is cross-site" },
    ];
    for (const { headers, why } of refusals) {
      const response = await server.request(approve, { auth, method: "POST", body: { by: "mallory" }, headers });
      expect(response.status).toBe(403);
      expect(await response.json()).toEqual({ error: `refused: ${why}` });
    }
    expect((await server.request(approve, { method: "POST", body: { by: "mallory" } })).status).toBe(401);
    const form = await server.request(approve, { auth, method: "POST", body: "by=mallory", headers: { "Content-Type": "application/x-www-form-urlencoded" } });
    expect(form.status).toBe(400);
    expect(journalRows(dir, "SELECT status, approved_by FROM actions")).toEqual([{ status: "gated", approved_by: null }]);

    const ok = await server.request(approve, { auth, method: "POST", body: { by: "alice" } });
    expect(ok.status).toBe(200);
    // A name in the request is not taken: the decision is the page's account's.
    expect(journalRows(dir, "SELECT status, approved_by FROM actions")).toEqual([{ status: "approved", approved_by: ACCOUNT }]);
  });
});

describe.concurrent("the API", () => {
  test("a client's name with control and bidi characters reaches the page shown, never obeyed: runs, the run, the gates", async () => {
    const dir = crmFolder();
    const name = "agent\x1b[2J\u202Efdp.exe";
    await agent(dir, [["send_email", EMAIL]], { name });
    await using server = await ui(dir);
    const auth = await server.signIn();
    const runs = (await (await server.request("/api/runs", { auth })).json()).view.runs;
    const run = (await (await server.request(`/api/runs/${runs[0].id}`, { auth })).json()).view.run;
    const gate = (await (await server.request("/api/gates", { auth })).json()).view.gates[0];
    for (const label of [runs[0].label, run.label, gate.run.label]) expect(label).toBe("agent\\x1b[2J\\u202efdp.exe");
  });

  test("runs newest first, a run's calls with the exact undo call and the states side by side, and the gates", async () => {
    const dir = crmFolder();
    await agent(dir, [["get_customer", { id: "c_003" }]], { name: "first-agent" });
    await agent(dir, [...DAMAGE, ["send_email", EMAIL]], { name: "<img src=x onerror=alert(1)>" });
    await using server = await ui(dir);
    const auth = await server.signIn();

    const runs = await (await server.request("/api/runs", { auth })).json();
    expect(runs.journal).toBe(join(dir, "synartesis.db"));
    expect(runs.waiting).toBe(1);
    expect(runs.view.runs.map((r: any) => [r.label, r.status, r.actions, r.waiting])).toEqual([
      ["<img src=x onerror=alert(1)>", "complete", 4, 1],
      ["first-agent", "complete", 1, 0],
    ]);

    const shown = await (await server.request(`/api/runs/${runs.view.runs[0].id}`, { auth })).json();
    expect(shown.view.run).toMatchObject({ label: "<img src=x onerror=alert(1)>", ref: runs.view.runs[0].ref, manifest: join(dir, "synartesis.yaml") });
    const update = shown.view.calls.find((c: any) => c.name === "crm.update_customer");
    expect(update).toMatchObject({ class: "reversible", classLabel: "↺ reversible", status: "applied" });
    expect(JSON.parse(update.args)).toEqual(DAMAGE[0]![1]);
    // The notes are the lines `show` prints under the call.
    const show = (await cli(dir, ["show", runs.view.runs[0].id])).stdout;
    for (const note of update.notes) expect(show).toContain(`${note.label.padEnd(9)}${note.text}`);
    expect(update.notes).toContainEqual({ label: "undo", text: `crm.update_customer ${JSON.stringify(SEED.c_001)}` });
    expect(update.states.labels).toEqual(["before the call", "after the call"]);
    expect(update.states.rows.filter((r: any) => !r.same)).toEqual([
      { left: '  "plan": "pro",', right: '  "plan": "free",', same: false },
      { left: '  "notes": "founding customer"', right: '  "notes": "wrong notes"', same: false },
    ]);
    const deleted = shown.view.calls.find((c: any) => c.name === "crm.delete_customer");
    expect(deleted.states.rows[0]).toEqual({ left: "{", right: "(does not exist)", same: false });

    const gates = await (await server.request("/api/gates", { auth })).json();
    expect(gates.view.decider).toBeString();
    expect(gates.view.gates).toHaveLength(1);
    expect(gates.view.gates[0]).toMatchObject({ name: "crm.send_email", reason: "crm.send_email is irreversible: once it runs it cannot be undone" });
    expect(JSON.parse(gates.view.gates[0].args)).toEqual(EMAIL);
    expect(gates.view.gates[0].approveCommand).toEndWith(`approve ${gates.view.gates[0].ref} --journal ${join(dir, "synartesis.db")}`);

    expect((await server.request("/api/runs/no-such-run", { auth })).status).toBe(404);
    expect((await server.request("/api/runs", { auth, method: "POST", body: {} })).status).toBe(405);
  });

  test("approve and deny record the decider and say what the CLI says; the agent's retries behave as after the CLI", async () => {
    const dir = crmFolder();
    const other = { ...EMAIL, to: "grace@example.com" };
    await agent(dir, [
      ["send_email", EMAIL],
      ["send_email", other],
    ]);
    await using server = await ui(dir);
    const auth = await server.signIn();
    const held = (await (await server.request("/api/gates", { auth })).json()).view.gates;
    const [first, second] = [held.find((g: any) => g.args.includes("ada@")), held.find((g: any) => g.args.includes("grace@"))];
    const post = (id: string, verb: string, body: unknown) => server.request(`/api/actions/${id}/${verb}`, { auth, method: "POST", body });

    for (const [body, error] of [
      [{ reason: "al\u001bice" }, '"reason" contains control characters'],
      [{ reason: "x".repeat(2001) }, '"reason" is longer than 2000 characters'],
      [{ reason: 7 }, '"reason" must be text'],
    ] as const) {
      const response = await post(first.id, "deny", body);
      expect(response.status).toBe(400);
      expect((await response.json()).error).toBe(error);
    }
    expect((await post("0000", "approve", { by: "alice" })).status).toBe(404);

    const approved = await post(first.id, "approve", { by: " alice " });
    expect(await approved.json()).toEqual({
      message: `Approved ${first.ref} crm.send_email ${JSON.stringify(EMAIL)} (by ${ACCOUNT}). It runs once when the agent makes the same call again, within the next hour.`,
    });
    const again = await post(first.id, "deny", { by: "bob" });
    expect(again.status).toBe(409);
    expect(await again.json()).toEqual({ error: `${first.ref} is no longer awaiting approval (it is approved)` });
    const denied = await post(second.id, "deny", { by: "bob", reason: "not to Grace" });
    expect((await denied.json()).message).toBe(
      `Denied ${second.ref} crm.send_email ${JSON.stringify(other)} (by ${ACCOUNT}: not to Grace). The agent is told on its next try.`,
    );

    const retries = await agent(dir, [
      ["send_email", EMAIL],
      ["send_email", other],
    ]);
    expect(retries.get(1).result.isError).toBeUndefined();
    expect(retries.get(2).result.isError).toBe(true);
    expect(retries.get(2).result.content[0].text).toContain(`${ACCOUNT} denied it at`);
    expect(retries.get(2).result.content[0].text).toContain("with the reason: not to Grace.");
    expect(state(dir).outbox.map((m: any) => m.to)).toEqual(["ada@example.com"]);
    expect(journalRows(dir, "SELECT approved_by, reason FROM actions WHERE status = 'denied'")).toEqual([{ approved_by: ACCOUNT, reason: "not to Grace" }]);
  });
});

describe.concurrent("the run list of a big journal", () => {
  // 120 runs of 5 calls (test/fixtures/review-journal.ts): run r is agent AGENTS[r % 5] "#r", touches c_(7r)…c_(7r+4);
  // runs 7, 57, 107 hold a call; 3, 43, 83 have one of unknown outcome; 5, 25, … are rolled back, 15, 35, … partial.
  const page = async (server: UiProcess, auth: string, query: string) => {
    const response = await server.request(`/api/runs${query}`, { auth });
    return { status: response.status, body: (await response.json()) as any };
  };
  const labels = (body: any) => body.view.runs.map((run: any) => run.label);

  test("search (agent, record, text in arguments), filters and paging; the search index follows new runs; bad queries are named", async () => {
    const dir = tempDir("syn-ui-list-");
    const journal = join(dir, "synartesis.db");
    await buildReviewJournal(journal, 120, 5);
    await using server = await ui(dir);
    const auth = await server.signIn();

    const first = (await page(server, auth, "")).body.view;
    expect([first.total, first.all, first.page, first.pages, first.pageSize, first.runs.length]).toEqual([120, 120, 1, 3, 50, 50]);
    expect(first.runs[0].label).toBe("renewals #119");
    const last = (await page(server, auth, "?page=3")).body.view;
    expect([last.page, last.runs.length, last.runs.at(-1).label]).toEqual([3, 20, "billing-agent #0"]);
    // A page past the end shows the last one.
    expect((await page(server, auth, "?page=9")).body.view.page).toBe(3);

    // A record in the arguments: the one run that touched it, with the call to open.
    const record = (await page(server, auth, "?q=C_0042")).body.view;
    const call = (await page(server, auth, `/${record.runs[0].id}`)).body.view.calls[0];
    expect(record.runs.map((run: any) => [run.label, run.match])).toEqual([["support-bot #6", { calls: 1, first: { seq: 1, ref: call.ref } }]]);
    // Every word must be found: in the agent, or in one call.
    expect((await page(server, auth, "?q=support-bot%20c_0043")).body.view.runs.map((run: any) => [run.label, run.match])).toEqual([
      ["support-bot #6", { calls: 1, first: { seq: 2, ref: expect.any(String) } }],
    ]);
    expect((await page(server, auth, "?q=renewals%20c_0043")).body.view.total).toBe(0);
    expect((await page(server, auth, "?q=renewals")).body.view).toMatchObject({ total: 24, all: 120 });
    expect((await page(server, auth, "?q=step%203:")).body.view.total).toBe(120);
    expect((await page(server, auth, "?q=crm.get_customer")).body.view.runs[0].match).toEqual({ calls: 1, first: { seq: 5, ref: expect.any(String) } });

    expect(labels((await page(server, auth, "?held=1")).body)).toEqual(["crm-cleanup #107", "crm-cleanup #57", "crm-cleanup #7"]);
    expect(labels((await page(server, auth, "?unknown=1")).body)).toEqual(["onboarding #83", "onboarding #43", "onboarding #3"]);
    expect((await page(server, auth, "?status=rolled_back")).body.view.total).toBe(6);
    expect(labels((await page(server, auth, "?status=partial&q=%2355")).body)).toEqual(["billing-agent #55"]);
    expect((await page(server, auth, "?status=active")).body.view.total).toBe(3);

    // A run recorded after the page's server read the journal is searched too.
    const writer = await openJournal(journal, { create: false });
    const runId = crypto.randomUUID();
    await writer.startRun({ id: runId, label: "late-agent", startedAt: new Date().toISOString() });
    await writer.insertAction({
      id: crypto.randomUUID(),
      runId,
      server: "crm",
      tool: "get_customer",
      args: { id: "c_9999" },
      class: "readonly",
      status: "applied",
      ts: new Date().toISOString(),
    });
    await writer.close();
    expect(labels((await page(server, auth, "?q=c_9999")).body)).toEqual(["late-agent"]);

    for (const [query, error] of [
      ["?status=bogus", '"status" must be one of active, complete, partial, rolled_back (got "bogus")'],
      ["?page=0", '"page" must be a whole number from 1 (got "0")'],
      ["?held=yes", '"held" is 1 or absent (got "yes")'],
      [`?q=${"x".repeat(201)}`, "the search is 201 characters long; at most 200 are searched"],
    ]) {
      expect(await page(server, auth, query!)).toEqual({ status: 400, body: { error, details: [] } });
    }
  });
});

describe.concurrent("undo from the page", () => {
  test("the plan is the CLI's dry run word for word; without confirm nothing runs; with it the CRM is back to the seed", async () => {
    const dir = crmFolder();
    await agent(dir, DAMAGE);
    const runId = (await json(dir, ["list"]))[0].id;
    await using server = await ui(dir);
    const auth = await server.signIn();

    const plan = await server.undo(auth, runId, { dryRun: true });
    const dry = (await cli(dir, ["undo", "--dry-run"])).stdout.trimEnd().split("\n");
    expect(plan[0]).toEqual({ kind: "start", heading: dry[0] });
    const stepLines = plan
      .filter((e) => e.kind === "step")
      .flatMap(({ step }) => [`#${step.seq} ${step.label} ${step.name} ${step.args}`, step.call, step.why, step.caution, step.read, step.hint].filter(Boolean));
    expect(stepLines.map(collapse)).toEqual(dry.slice(2, -2).map(collapse));
    expect(plan.at(-1)).toEqual({ kind: "end", tone: "plain", summary: "3 calls would be reverted.", halted: false });
    expect(dry.at(-1)).toBe("3 calls would be reverted. Run without --dry-run to do it.");

    const unconfirmed = await server.request(`/api/runs/${runId}/undo`, { auth, method: "POST", body: { dryRun: false } });
    expect(unconfirmed.status).toBe(400);
    expect((await server.request(`/api/runs/${runId}/undo`, { auth, method: "POST", body: { dryRun: true, fromSeq: 9 } })).status).toBe(400);
    expect(Object.keys(state(dir).customers)).toEqual(["c_001", "c_003", "c_004"]);

    const done = await server.undo(auth, runId, { dryRun: false, confirm: true });
    expect(done.filter((e) => e.kind === "step").map((e) => [e.step.seq, e.step.label])).toEqual([
      [3, "reverted [unverified]"],
      [2, "reverted"],
      [1, "reverted"],
    ]);
    expect(done.at(-1)).toEqual({
      kind: "end",
      tone: "good",
      summary: `Run ${runId.slice(0, 8)} is rolled back: 3 calls reverted.`,
      halted: false,
      runStatus: "rolled_back",
    });
    expect(state(dir).customers).toEqual(SEED);

    const nothing = await server.undo(auth, runId, { dryRun: true });
    // The same words as the CLI: undoing it again says it was already rolled back, when and by whom.
    expect(nothing).toEqual([
      {
        kind: "nothing",
        heading: expect.stringContaining("rolled_back"),
        text: expect.stringMatching(/^Nothing to undo: run [0-9a-f]{8} was already rolled back at \S+ \S+ by \S+\.$/),
      },
    ]);
  });

  test("drift: the plan stops with both states side by side, and the real undo changes nothing", async () => {
    const dir = crmFolder();
    await agent(dir, [["update_customer", { id: "c_003", plan: "pro" }]]);
    editState(dir, (s) => (s.customers.c_003.notes = "a person's note"));
    const before = stateText(dir);
    const runId = (await json(dir, ["list"]))[0].id;
    await using server = await ui(dir);
    const auth = await server.signIn();

    const plan = await server.undo(auth, runId, { dryRun: true });
    const drift = plan.find((e) => e.kind === "step").step;
    expect(drift).toMatchObject({ seq: 1, label: "DRIFT", tone: "stop", labels: ["expected (as the agent left it)", "actual (now)"] });
    expect(drift.diff.filter((r: any) => !r.same)).toEqual([{ left: '  "notes": ""', right: `  "notes": "a person's note"`, same: false }]);
    expect(plan.at(-1)).toMatchObject({
      kind: "end",
      tone: "stop",
      halted: true,
      summary: "A real undo would stop at #1. 0 steps before it would be reverted.",
    });

    const done = await server.undo(auth, runId, { dryRun: false, confirm: true });
    expect(done.find((e) => e.kind === "step").step).toMatchObject({ label: "DRIFT", diff: drift.diff });
    const end = done.at(-1);
    expect(end).toMatchObject({
      kind: "end",
      halted: true,
      summary: `Stopped at #1; nothing older than it was touched. 0 reverted before stopping. Run ${runId.slice(0, 8)} is marked partial.`,
    });
    expect(end.continueWith).toBe(`When the cause is dealt with, continue with: synartesis undo ${runId.slice(0, 8)} --journal ${join(dir, "synartesis.db")}`);
    expect(stateText(dir)).toBe(before);
  });
});

describe.concurrent("live updates and the command", () => {
  test("waits for a journal that does not exist yet; the event stream says when the journal changes, the page's own decisions included", async () => {
    const dir = crmFolder();
    await using server = await ui(dir);
    expect(server.stdout).toContain("(none yet: runs appear once an agent connects through the proxy)");
    const auth = await server.signIn();
    expect(await (await server.request("/api/runs", { auth })).json()).toEqual({ journal: join(dir, "synartesis.db"), missing: true, waiting: 0 });

    const events = await server.request("/api/events", { auth });
    expect(events.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    const reader = events.body!.pipeThrough(new TextDecoderStream()).getReader();
    const nextChange = async () => {
      let seen = "";
      while (!seen.includes("event: change\n")) seen += (await reader.read()).value ?? "";
    };
    await agent(dir, [["send_email", EMAIL]]);
    await nextChange();
    const gates = (await (await server.request("/api/gates", { auth })).json()).view.gates;
    expect(gates).toHaveLength(1);
    await server.request(`/api/actions/${gates[0].id}/approve`, { auth, method: "POST", body: { by: "alice" } });
    await nextChange();
    await reader.cancel();
    expect(await server.stop()).toBe(0);
  });

  test("opens the address with $BROWSER; refuses bad flags and a port in use", async () => {
    const dir = crmFolder();
    const opened = join(dir, "opened.txt");
    const browser = join(dir, "browser.sh");
    writeFileSync(browser, `#!/bin/sh\nprintf '%s\\n' "$@" > ${JSON.stringify(opened)}\n`);
    chmodSync(browser, 0o755);
    await using server = await ui(dir, ["--open"], { BROWSER: browser });
    // The opener is given its own code, which works once: its argv is readable by every user of the machine (R-UI-5).
    const address = await until(() => readFileSync(opened, "utf8"), "the browser to be started");
    const code = /^http:\/\/127\.0\.0\.1:\d+\/#code=([A-Za-z0-9_-]{43})\n$/.exec(address)![1]!;
    expect(code).not.toBe(server.code);
    const auth = await server.signIn(code);
    expect(address).not.toContain(auth);
    expect((await server.request("/api/session", { method: "POST", body: { code } })).status).toBe(403);
    expect(await server.signIn()).toBe(auth);

    const busy = await run(["ui", "--no-open", "--port", String(server.port)], { cwd: dir });
    expect(busy).toMatchObject({ code: 2, stdout: "" });
    expect(busy.stderr).toBe(`synartesis: port ${server.port} on 127.0.0.1 is in use\nChoose another with --port, or --port 0 for any free port.\n`);
    const badPort = await run(["ui", "--port", "http"], { cwd: dir });
    expect(badPort).toMatchObject({ code: 2, stderr: 'synartesis: --port needs a port number from 0 to 65535 (got "http") (see synartesis ui --help)\n' });
    expect((await run(["ui", "--bogus"], { cwd: dir })).stderr).toBe("synartesis: unknown flag --bogus (see synartesis ui --help)\n");
    expect((await run(["--help"])).stdout).toContain("  ui       Serve the review page");
  });
});
