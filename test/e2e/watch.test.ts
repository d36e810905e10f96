// `synartesis watch` through the built binary (R-CLI-5): piped it prints one
// frame and exits; in a real terminal (tmux) it redraws as an agent works
// through the proxy, shows the gated call with its approve command, and gives
// the terminal back on Ctrl-C and SIGTERM. It never creates a journal.
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { copyFileSync, existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { BIN, LineSession, ROOT, run, tempDir } from "../helpers.ts";
import { shellWord, Tmux } from "../fixtures/tmux.ts";

// Each file sets its own: the preload's default reaches only the first file bun runs.
setDefaultTimeout(60_000);

const MANIFEST = join(ROOT, "manifests", "toy-crm.yaml");

/** A frame with decision commands that wrapped (shell continuation) joined back onto one line. */
const unwrap = (text: string) => text.replace(/ \\\n +/g, " ");

/** A folder holding the toy CRM manifest as synartesis.yaml (no journal yet). */
function project(): string {
  const dir = tempDir("syn-watch-");
  copyFileSync(MANIFEST, join(dir, "synartesis.yaml"));
  return dir;
}

/** Drive the proxy like an agent: two changes and a gated email. Returns the session (still open) and the held id. */
async function damage(dir: string, agent = "agent-watch"): Promise<{ session: LineSession; heldId: string }> {
  const session = new LineSession([BIN, "proxy"], { cwd: dir });
  await session.initialize(agent);
  const update = await session.request(1, "tools/call", { name: "update_customer", arguments: { id: "c_001", plan: "free" } });
  expect(update.result.isError).toBeFalsy();
  const remove = await session.request(2, "tools/call", { name: "delete_customer", arguments: { id: "c_002" } });
  expect(remove.result.isError).toBeFalsy();
  const send = await session.request(3, "tools/call", {
    name: "send_email",
    arguments: { to: "ada@example.com", subject: "Plan change", body: "Your plan is now free." },
  });
  expect(send.result.isError).toBe(true);
  const heldId = /Action id: ([0-9a-f]{8})\./.exec(send.result.content[0].text)?.[1];
  expect(heldId).toBeDefined();
  return { session, heldId: heldId! };
}

describe.concurrent("watch, piped", () => {
  test("with no journal yet: prints the waiting frame, exits 0, creates nothing", async () => {
    const dir = project();
    for (const args of [["watch"], ["watch", "--once"]]) {
      const result = await run(args, { cwd: dir });
      expect(result.code).toBe(0);
      expect(result.stderr).toBe("");
      expect(result.stdout).toContain(`Waiting for the first run at ${dir}/synartesis.db`);
      expect(existsSync(join(dir, "synartesis.db"))).toBe(false);
    }
    const elsewhere = join(tempDir(), "sub", "journal.db");
    const result = await run(["watch", "--journal", elsewhere], { cwd: dir });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`Waiting for the first run at ${elsewhere}`);
    expect(existsSync(join(elsewhere, ".."))).toBe(false);
  }, 60_000);

  test("prints one frame of what happened, fitted to 100 columns, without colour, and exits 0", async () => {
    const dir = project();
    const { session, heldId } = await damage(dir);
    expect(await session.close()).toBe(0);

    const result = await run(["watch"], { cwd: dir, env: { NO_COLOR: undefined } });
    expect(result.code).toBe(0);
    expect(result.stderr).toBe("");
    const out = unwrap(result.stdout);
    expect(out).not.toContain("\x1b");
    expect(out).toContain("Waiting for a decision (1)");
    expect(out).toContain(`approve ${heldId} --journal ${dir}/synartesis.db`);
    expect(out).toContain(`deny ${heldId} --journal ${dir}/synartesis.db`);
    expect(out).toContain("crm.send_email is irreversible");
    expect(out).toContain("Live runs (0)");
    expect(out).toMatch(/↺ +applied +crm\.update_customer \{"id":"c_001","plan":"free"\}/);
    expect(out).toMatch(/↺ +applied +crm\.delete_customer \{"id":"c_002"\}/);
    expect(out).toMatch(/⚠ +gated +crm\.send_email/);
    for (const line of result.stdout.trimEnd().split("\n")) expect(Bun.stringWidth(line)).toBeLessThanOrEqual(100);

    const gates = await run(["gates"], { cwd: dir });
    expect(gates.stdout).toContain(heldId);
  }, 60_000);

  test("refuses unknown flags", async () => {
    const result = await run(["watch", "--bogus"], { cwd: project() });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("unknown flag --bogus");
  });
});

const tmux = new Tmux();
afterAll(() => tmux.stop());

/**
 * Start `synartesis watch` in a fresh 120×40 terminal in `dir`, from a shell
 * that prints a line before it and its exit code after it.
 */
function startWatch(dir: string): Promise<string> {
  return tmux.start(`cd ${shellWord(dir)} && echo before-watch && ${shellWord(BIN)} watch; echo "watch-exited-$?"; sleep 600`);
}

/** The watch process: the one child of the pane's shell. */
async function watchPid(name: string): Promise<number> {
  const shell = Number(await paneInfo(name, "#{pane_pid}"));
  const children = readFileSync(`/proc/${shell}/task/${shell}/children`, "utf8").trim().split(/\s+/).map(Number);
  expect(children).toHaveLength(1);
  return children[0]!;
}

/** After watch ended: the shell printed its exit code on a normal screen with a visible cursor. */
async function expectRestored(name: string): Promise<void> {
  const after = await onScreen(name, "watch ending", (text) => text.includes("watch-exited-"));
  expect(after).toContain("before-watch\nwatch-exited-0\n");
  expect(after).not.toContain("Recent calls");
  expect(await paneInfo(name, "#{alternate_on} #{cursor_flag}")).toBe("0 1");
}

const paneInfo = (name: string, format: string) => tmux.paneInfo(name, format);
/** The screen, once it shows `what` (the last screen is in the error when it never does). */
const onScreen = (name: string, what: string, predicate: (text: string) => boolean) => tmux.until(name, what, predicate);
/** The title's clock (live, it shows the time to the second). */
const clock = (text: string) => /(\d\d:\d\d:\d\d) {2}Ctrl-C quits/.exec(text)?.[1];

describe.concurrent("watch, in a terminal (tmux)", () => {
  test("redraws as an agent works, shows the held call with its approve command, and Ctrl-C restores the terminal", async () => {
    const dir = project();
    const db = join(dir, "synartesis.db");
    const name = await startWatch(dir);

    const waiting = await onScreen(name, "the waiting frame", (text) => text.includes(`Waiting for the first run at ${db}`));
    expect(await paneInfo(name, "#{alternate_on} #{cursor_flag}")).toBe("1 0");
    // Each frame follows a look at the journal: once the clock has moved on, watch has looked again and still created nothing.
    await onScreen(name, "the clock moving on", (text) => clock(text) !== clock(waiting));
    expect(existsSync(db)).toBe(false);

    const { session, heldId } = await damage(dir);
    const live = await onScreen(
      name,
      "the calls, the live run and the held call",
      (text) =>
        text.includes("crm.update_customer") &&
        text.includes("crm.delete_customer") &&
        text.includes(`approve ${heldId} --journal ${db}`) &&
        text.includes("agent-watch"),
    );
    expect(live).toContain("Live runs (1)");
    expect(live).toContain(`deny ${heldId} --journal ${db}`);
    expect(live).toContain("Waiting for a decision (1)");
    expect(live).toMatch(/⚠ +gated +crm\.send_email/);
    expect(live).not.toContain("before-watch");
    for (const line of live.split("\n")) expect(Bun.stringWidth(line)).toBeLessThanOrEqual(120);

    // The agent disconnects: its run is no longer live. A person approves: nothing waits.
    expect(await session.close()).toBe(0);
    expect((await run(["approve", heldId], { cwd: dir })).code).toBe(0);
    await onScreen(name, "the run ending and the approval", (text) => text.includes("Live runs (0)") && text.includes("Nothing is waiting."));

    const pid = await watchPid(name);
    await tmux.run("send-keys", "-t", name, "C-c");
    await expectRestored(name);
    expect(existsSync(`/proc/${pid}`)).toBe(false);
  }, 60_000);

  test("SIGTERM restores the terminal and exits 0", async () => {
    const dir = project();
    const { session } = await damage(dir, "agent-idle");
    expect(await session.close()).toBe(0);
    const name = await startWatch(dir);
    await onScreen(name, "the frame", (text) => text.includes("crm.delete_customer"));
    const pid = await watchPid(name);

    process.kill(pid, "SIGTERM");
    await expectRestored(name);
  }, 60_000);
});
