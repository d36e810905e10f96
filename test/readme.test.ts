// Keeps the README true: runs every shell block of its walkthrough, in order,
// in an empty folder with `synartesis` on PATH, and checks what the text says.
import { beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { BIN, ROOT, run, tempDir, type RunResult, ACCOUNT } from "./helpers.ts";

// Each file sets its own: the preload's default reaches only the first file bun runs.
setDefaultTimeout(60_000);

const readme = readFileSync(join(ROOT, "README.md"), "utf8");
const walkthrough = readme.slice(readme.indexOf("## Walkthrough"), readme.indexOf("\n## ", readme.indexOf("## Walkthrough") + 3));
const blocks = [...walkthrough.matchAll(/<!-- readme-test: ([a-z-]+) -->\n```sh\n([\s\S]*?)```/g)].map((m) => ({ name: m[1]!, script: m[2]! }));
/** The outputs the walkthrough shows, by name: each is compared with the real one. */
const shown = new Map([...walkthrough.matchAll(/<!-- readme-output: ([a-z-]+) -->\n```\n([\s\S]*?)```/g)].map((m) => [m[1]!, m[2]!]));
const compared = new Set<string>();

let folder: string;
let pathWithSynartesis: string;
/** The link onto PATH the walkthrough runs with (install.sh's, in the README's words ~/.local/bin). */
let linked: string;

beforeAll(() => {
  const root = tempDir("syn-readme-");
  const bin = join(root, "bin");
  mkdirSync(bin);
  linked = join(bin, "synartesis");
  symlinkSync(BIN, linked);
  folder = join(root, "crm-demo");
  mkdirSync(folder);
  pathWithSynartesis = `${bin}:${process.env.PATH}`;
});

async function runBlock(name: string): Promise<RunResult> {
  const block = blocks.find((b) => b.name === name);
  if (!block) throw new Error(`README has no walkthrough block "${name}"`);
  return run(["-c", block.script], { bin: "bash", cwd: folder, env: { PATH: pathWithSynartesis, USER: "you" } });
}

/** What differs from run to run — ids, times, this folder, this binary — written as the README writes it. */
function normalised(text: string): string {
  return (
    text
      .replaceAll(folder, "/home/you/crm-demo")
      .replaceAll(linked, "/home/you/.local/bin/synartesis")
      .replaceAll(BIN, "/home/you/.local/bin/synartesis")
      .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g, "<run id>")
      .replace(/\b[0-9a-f]{8}\b/g, "<id>")
      .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g, "<time>")
      .replace(/\d{4}-\d\d-\d\d \d\d:\d\d:\d\d/g, "<time>")
      // A decision is recorded under the account that makes it: the reader's is "you".
      .replaceAll(`(by ${ACCOUNT})`, "(by you)")
      .replaceAll(`(by ${ACCOUNT}:`, "(by you:")
      .replaceAll(`: ${ACCOUNT} denied it`, ": you denied it")
  );
}

/** The README shows exactly this output (ids, times and paths aside). */
function expectShown(name: string, actual: string): void {
  const text = shown.get(name);
  if (text === undefined) throw new Error(`README shows no output "${name}"`);
  compared.add(name);
  expect(normalised(actual)).toBe(normalised(text));
}

const lastReplyText = () => replies().at(-1).result.content[0].text + "\n";

const state = () => JSON.parse(readFileSync(join(folder, "crm.json"), "utf8"));
const replies = () =>
  readFileSync(join(folder, "replies.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line));
const SEED = {
  c_001: { id: "c_001", name: "Ada Lovelace", email: "ada@example.com", plan: "pro", notes: "founding customer" },
  c_002: { id: "c_002", name: "Grace Hopper", email: "grace@example.com", plan: "enterprise", notes: "renewal in March" },
  c_003: { id: "c_003", name: "Alan Turing", email: "alan@example.com", plan: "free", notes: "" },
};

describe("README walkthrough", () => {
  test("every shell block of the walkthrough is tested", () => {
    const shellBlocks = [...walkthrough.matchAll(/```sh\n/g)].length;
    expect(blocks.map((b) => b.name)).toEqual(["init", "damage", "look", "dry-run", "undo", "drift", "keep", "held", "approve", "deny"]);
    expect(shellBlocks).toBe(blocks.length);
  });

  test("1. init adopts the toy CRM policy", async () => {
    const result = await runBlock("init");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`Wrote ${join(folder, "synartesis.yaml")}: server "crm" (6 tools).`);
    expect(result.stdout).toContain("6 rules adopted from the shipped policy for the toy CRM (manifests/toy-crm.yaml)");
    expect(result.stdout).toContain('"mcpServers"');
    expect(result.stdout).toContain(`"${join(folder, "synartesis.yaml")}"`);
    expectShown("init", result.stdout);
  });

  test("2. the damage goes through the proxy", async () => {
    const result = await runBlock("damage");
    expect(result.code).toBe(0);
    expect(replies().map((r) => r.id)).toEqual([0, 1, 2, 3]);
    const customers = state().customers;
    expect(customers.c_001.plan).toBe("free");
    expect(customers.c_001.notes).toBe("downgraded by mistake");
    expect(customers.c_002).toBeUndefined();
    expect(customers.c_004).toEqual({ id: "c_004", name: "Bogus Person", email: "bogus@example.com", plan: "free", notes: "" });
    // What a person sees on stderr: nothing that reads like a failure.
    expect(result.stderr).not.toMatch(/error|fail|-32601/i);
    expectShown("damage-stderr", result.stderr);
  });

  test("3. list and show", async () => {
    const result = await runBlock("look");
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/careless-agent\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+complete\s+3\s+0\s+0/);
    expect(result.stdout).toContain('↺ reversible    applied       crm.update_customer {"id":"c_001","plan":"free","notes":"downgraded by mistake"}');
    expect(result.stdout).toContain(
      'undo     crm.update_customer {"id":"c_001","name":"Ada Lovelace","email":"ada@example.com","plan":"pro","notes":"founding customer"}',
    );
    expect(result.stdout).toContain(
      'undo     crm.restore_customer {"id":"c_002","name":"Grace Hopper","email":"grace@example.com","plan":"enterprise","notes":"renewal in March"}',
    );
    expect(result.stdout).toContain('undo     crm.delete_customer {"id":"c_004"}');
    expectShown("look", result.stdout);
  });

  test("4. the dry run changes nothing", async () => {
    const before = readFileSync(join(folder, "crm.json"));
    const result = await runBlock("dry-run");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('#3  would revert [unverified]  crm.create_customer {"name":"Bogus Person","email":"bogus@example.com"}');
    expect(result.stdout).toContain(
      'would call: crm.restore_customer {"id":"c_002","name":"Grace Hopper","email":"grace@example.com","plan":"enterprise","notes":"renewal in March"}',
    );
    expect(result.stdout).toContain("3 calls would be reverted. Run without --dry-run to do it.");
    expect(readFileSync(join(folder, "crm.json")).equals(before)).toBe(true);
    expectShown("dry-run", result.stdout);
  });

  test("5. undo puts everything back", async () => {
    const result = await runBlock("undo");
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/Run [0-9a-f]{8} is rolled back: 3 calls reverted\./);
    expect(state().customers).toEqual(SEED);
    expectShown("undo", result.stdout);
  });

  test("6. drift: undo refuses and the colleague's text survives", async () => {
    const result = await runBlock("drift");
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('#1  DRIFT             crm.update_customer {"id":"c_001","notes":"agent was here"}');
    expect(result.stdout).toMatch(/≠\s+"notes": "agent was here"\s+│\s+"notes": "call back on Monday \(Jo\)"/);
    expect(result.stdout).toMatch(/Stopped at #1; nothing older than it was touched\. 0 reverted before stopping\. Run [0-9a-f]{8} is marked partial\./);
    expect(state().customers.c_001.notes).toBe("call back on Monday (Jo)");
    expectShown("drift", result.stdout);
  });

  test("6b. keep: the drifted call stays, the run is finished, show says who kept it and why", async () => {
    const result = await runBlock("keep");
    expect(result.code).toBe(0);
    expect(state().customers.c_001.notes).toBe("call back on Monday (Jo)");
    expectShown("keep", result.stdout);
    const shown = await run(["show"], { cwd: folder, env: { PATH: pathWithSynartesis, USER: "you" } });
    expect(shown.stdout).toMatch(/rolled_back {2}1 action/);
    expect(shown.stdout).toMatch(/#1 +↺ reversible +kept +crm\.update_customer/);
    expect(shown.stdout).toMatch(/kept +by you at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d: Jo's note is right; undo leaves its effect in place/);
  });

  test("7. a send is held, with the command that approves it", async () => {
    const result = await runBlock("held");
    expect(result.code).toBe(0);
    const held = replies().at(-1).result;
    expect(held.isError).toBe(true);
    const text: string = held.content[0].text;
    expect(text).toStartWith("HELD FOR APPROVAL — Synartesis did not run this call. Reason: crm.send_email is irreversible: once it runs it cannot be undone.");
    expect(text).toMatch(new RegExp(`\\n  synartesis approve [0-9a-f]{8} --journal ${join(folder, "synartesis.db").replace(/[.]/g, "\\.")}\\n`));
    expect(result.stdout).toContain('crm.send_email {"to":"ada@example.com","subject":"Your plan","body":"You are on the pro plan."}');
    expect(state().outbox).toEqual([]);
    expectShown("held", result.stdout);
    expectShown("held-reply", lastReplyText());
  });

  test("8. approved, the identical retry runs once", async () => {
    const result = await runBlock("approve");
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Approved [0-9a-f]{8} crm\.send_email/);
    expect(replies().at(-1).result.isError).toBeUndefined();
    expect(state().outbox.map((m: any) => [m.to, m.subject])).toEqual([["ada@example.com", "Your plan"]]);
    expectShown("approve", result.stdout);
  });

  test("9. denied, the retry is told who and why", async () => {
    const result = await runBlock("deny");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`(by ${ACCOUNT}: we do not pressure customers)`);
    const told = replies().at(-1).result;
    expect(told.isError).toBe(true);
    expect(told.content[0].text).toMatch(
      new RegExp(`^DENIED — Synartesis did not run this call: ${ACCOUNT} denied it at \\S+ with the reason: we do not pressure customers\\.`),
    );
    expect(state().outbox.length).toBe(1);
    expectShown("deny", result.stdout);
    expectShown("deny-reply", lastReplyText());
  });

  test("every output the walkthrough shows was compared with the real one", () => {
    expect([...compared].sort()).toEqual([...shown.keys()].sort());
  });
});
