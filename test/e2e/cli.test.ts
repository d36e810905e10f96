// The CLI surface through the built binary: help, version, strict flags, exit
// codes, and the binary working alone in an empty folder without node on PATH.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { copyFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { BIN, COMMANDS, initializeFrame, ROOT, run, runOnTerminal, tempDir } from "../helpers.ts";
import { VERSION } from "../../src/version.ts";

// The preload's default timeout reaches only the first file bun runs; tests sharing the machine need the room.
setDefaultTimeout(60_000);

describe.concurrent("synartesis CLI", () => {
  test("--help lists every command and exits 0", async () => {
    const result = await run(["--help"]);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe("");
    const listed = result.stdout
      .split("\n")
      .map((line) => /^ {2}(\S+) {2,}\S/.exec(line)?.[1])
      .filter((name) => name !== undefined && !name.startsWith("-"));
    expect(listed).toEqual(COMMANDS);
  });

  test("no command prints the help and exits 2", async () => {
    const result = await run([]);
    expect(result.code).toBe(2);
    for (const name of COMMANDS) expect(result.stdout + result.stderr).toContain(`  ${name} `);
  });

  for (const name of COMMANDS) {
    test(`${name} --help explains the command and exits 0`, async () => {
      const result = await run([name, "--help"]);
      expect(result.code).toBe(0);
      expect(result.stdout).toContain(`synartesis ${name}`);
      expect(result.stderr).toBe("");
    });
  }

  test("--version prints the version and exits 0", async () => {
    for (const flag of ["--version", "-v"]) {
      const result = await run([flag]);
      expect(result.code).toBe(0);
      expect(result.stdout).toStartWith(`synartesis ${VERSION} (`);
      expect(result.stdout.trim().split("\n")).toHaveLength(1);
    }
  });

  test("an unknown flag exits 2 naming the flag, with nothing on stdout", async () => {
    const result = await run(["list", "--bogus"]);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("unknown flag --bogus");
  });

  test("an unknown flag of toy-crm exits 2 before serving", async () => {
    const result = await run(["toy-crm", "--stat", "x.json"], { stdin: "" });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("unknown flag --stat");
  });

  test("an unknown command exits 2 naming it", async () => {
    const result = await run(["frobnicate"]);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain('unknown command "frobnicate"');
  });
});

describe.concurrent("the binary on its own", () => {
  test("copied alone into an empty folder, without node on PATH, it answers --help and serves toy-crm", async () => {
    const dir = tempDir();
    const bin = join(dir, "synartesis");
    copyFileSync(BIN, bin);
    // PATH holds only this folder: no node, no bun.
    const env = { PATH: dir, NODE_PATH: undefined, BUN_INSTALL: undefined };

    const help = await run(["--help"], { bin, cwd: dir, env });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("toy-crm");

    const frames = [
      initializeFrame(0),
      JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
      JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    ];
    const served = await run(["toy-crm"], { bin, cwd: dir, env, stdin: frames.join("\n") + "\n" });
    expect(served.code).toBe(0);
    const replies = served.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(replies).toHaveLength(2);
    expect(replies[0]).toMatchObject({ id: 0, result: { serverInfo: { name: "synartesis-toy-crm", version: VERSION } } });
    expect(replies[1].id).toBe(1);
    expect(replies[1].result.tools.map((t: { name: string }) => t.name).sort()).toEqual([
      "create_customer",
      "delete_customer",
      "get_customer",
      "restore_customer",
      "send_email",
      "update_customer",
    ]);
    // Nothing was written next to it.
    expect(readdirSync(dir)).toEqual(["synartesis"]);
  });
});

// One colour decision (render/style.ts colourEnabled) for help and for every command's output.
describe.concurrent("colour on a terminal", () => {
  const ESC = "\x1b[";

  test("help is coloured on a terminal, plain with NO_COLOR or TERM=dumb, plain when piped", async () => {
    // CI and TEST set: citty alone would drop its colours on a terminal then.
    for (const env of [{}, { CI: "true", TEST: "1" }]) {
      const coloured = await runOnTerminal(["check", "--help"], { env });
      expect(coloured.code).toBe(0);
      expect(coloured.stdout).toContain(`${ESC}1mUsage:${ESC}22m\n  synartesis check [options]`);
      expect(coloured.stdout).toContain(`  ${ESC}36m--manifest PATH${ESC}39m  The manifest`);
    }
    for (const env of [{ NO_COLOR: "1" }, { TERM: "dumb" }]) {
      const plainHelp = await runOnTerminal(["check", "--help"], { env });
      expect(plainHelp.code).toBe(0);
      expect(plainHelp.stdout).toContain("Usage:\n  synartesis check [options]");
      expect(plainHelp.stdout).not.toContain(ESC);
    }
    const piped = await run(["check", "--help"], { env: { NO_COLOR: undefined, TERM: "xterm-256color" } });
    expect(piped.stdout).toContain("Usage:\n  synartesis check [options]");
    expect(piped.stdout).not.toContain(ESC);
  });

  test("a command's output follows the same decision (list on a journal with a run)", async () => {
    const dir = tempDir();
    const frames = [initializeFrame(0), JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })];
    frames.push(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_customer", arguments: { id: "c_001" } } }));
    copyFileSync(join(ROOT, "manifests", "toy-crm.yaml"), join(dir, "synartesis.yaml"));
    expect((await run(["proxy"], { cwd: dir, stdin: frames.join("\n") + "\n" })).code).toBe(0);
    expect((await runOnTerminal(["list"], { cwd: dir })).stdout).toContain(`${ESC}1mRUN`);
    const dumb = await runOnTerminal(["list"], { cwd: dir, env: { TERM: "dumb" } });
    expect(dumb.stdout).toStartWith("RUN ");
    expect(dumb.stdout).not.toContain(ESC);
  });
});
