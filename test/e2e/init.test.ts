// `synartesis init` through the built binary: adopt a shipped policy, draft
// TODOs, extend an existing manifest keeping its comments, refuse cleanly.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { BIN, connect, ROOT, run, tempDir } from "../helpers.ts";
import { sameAsShipped } from "../fixtures/shipped-rules.ts";

// The preload's default timeout reaches only the first file bun runs; tests sharing the machine need the room.
setDefaultTimeout(60_000);

const manifestOf = (dir: string) => parse(readFileSync(join(dir, "synartesis.yaml"), "utf8"));
const clientBlock = (stdout: string) => JSON.parse(stdout.slice(stdout.indexOf("{"), stdout.lastIndexOf("}") + 1));
const matches = (doc: any) => doc.tools.map((r: any) => `${r.match} ${r.class}${r.gate ? ` ${r.gate}` : ""}`);

describe.concurrent("init", () => {
  test("the toy CRM adopts the shipped policy and prints the client block", async () => {
    const dir = tempDir();
    // A link on PATH to the binary (what install.sh makes), in a folder a desktop client may not have on its PATH.
    const bin = tempDir();
    symlinkSync(BIN, join(bin, "synartesis"));
    const result = await run(["init", "crm", "--", "synartesis", "toy-crm", "--state", "./crm.json"], {
      cwd: dir,
      env: { PATH: `${bin}:/usr/bin:/bin`, HOME: dir },
    });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`Wrote ${join(dir, "synartesis.yaml")}: server "crm" (6 tools).`);
    expect(result.stdout).toContain("6 rules adopted from the shipped policy for the toy CRM (manifests/toy-crm.yaml)");
    expect(result.stdout).toContain("TODOs left in the manifest: 0");
    expect(clientBlock(result.stdout)).toEqual({
      mcpServers: { synartesis: { command: join(bin, "synartesis"), args: ["proxy", "--manifest", join(dir, "synartesis.yaml")] } },
    });
    expect(result.stdout).not.toContain("breaks if");

    const doc = manifestOf(dir);
    // The server block is self-contained and lasts: the program by its name (the proxy starts itself for it), an absolute state file.
    expect(doc.servers.crm).toEqual({ command: "synartesis", args: ["toy-crm", "--state", join(dir, "crm.json")] });
    expect(matches(doc)).toEqual([
      "crm.get_customer readonly",
      "crm.update_customer reversible",
      "crm.delete_customer reversible",
      "crm.create_customer compensable",
      "crm.restore_customer compensable",
      "crm.send_* irreversible always",
    ]);
    expect(readFileSync(join(dir, "synartesis.yaml"), "utf8")).toContain("# Where this server's abilities end");

    const check = await run(["check"], { cwd: dir });
    expect(check.code).toBe(0);
  });

  test("server-filesystem adopts the shipped policy: write_file reversible, no TODO left", async () => {
    const dir = tempDir();
    const root = tempDir("syn-fsroot-");
    const server = join(ROOT, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    const result = await run(["init", "files", "--", "node", server, root], { cwd: dir });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("rules adopted from the shipped policy for @modelcontextprotocol/server-filesystem (manifests/filesystem.yaml)");
    expect(result.stdout).toContain("0 gated with a TODO");
    expect(result.stdout).toContain("TODOs left in the manifest: 0");
    const doc = manifestOf(dir);
    expect(doc.servers.files).toEqual({ command: "node", args: [server, root] });
    const writeFile = doc.tools.find((r: any) => r.match === "files.write_file");
    expect(writeFile.class).toBe("reversible");
    expect(writeFile.snapshot.tool).toBe("files.read_text_file");
    expect(writeFile.inverse.tool).toBe("files.write_file");
    expect(doc.tools.find((r: any) => r.match === "files.move_file").class).toBe("compensable");
    expect(doc.tools.find((r: any) => r.match === "files.create_directory").class).toBe("irreversible");
    expect(doc.tools.find((r: any) => r.match === "files.read_text_file").class).toBe("readonly");
    expect((await run(["check"], { cwd: dir })).code).toBe(0);
  });

  test("asks as a full client: server-everything's tools for capable clients get rules too, and check agrees", async () => {
    const dir = tempDir();
    const everything = join(ROOT, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    const result = await run(["init", "ev", "--", "node", everything, "stdio"], { cwd: dir });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const rules: string[] = manifestOf(dir).tools.map((r: any) => r.match);
    for (const tool of ["trigger-sampling-request", "trigger-elicitation-request", "get-roots-list", "echo"]) expect(rules).toContain(`ev.${tool}`);
    expect(result.stdout).toContain(`server "ev" (${rules.length} tools)`);
    const check = await run(["check"], { cwd: dir });
    expect(check.code).toBe(0);
    expect(check.stdout).toContain(`ev  node ${everything} stdio  ${rules.length} tools`);
    expect(check.stdout).toContain("Not covered by any rule (treated as irreversible and gated, like any tool a manifest does not mention): none");
    expect(check.stdout).toMatch(/ev\.trigger-sampling-request\s+irreversible, gate: always/);
  });

  test("adopting the memory policy keeps MEMORY_FILE_PATH as a placeholder and warns while it is unset; check warns too", async () => {
    const dir = tempDir();
    const memory = join(ROOT, "node_modules/@modelcontextprotocol/server-memory/dist/index.js");
    const unset = await run(["init", "mem", "--", "node", memory], { cwd: dir, env: { MEMORY_FILE_PATH: undefined } });
    expect(unset.code).toBe(0);
    expect(unset.stdout).toContain("rules adopted from the shipped policy for @modelcontextprotocol/server-memory (manifests/memory.yaml)");
    expect(manifestOf(dir).servers.mem).toEqual({ command: "node", args: [memory], env: { MEMORY_FILE_PATH: "${MEMORY_FILE_PATH}" } });
    const at = `${join(dir, "synartesis.yaml")}:${
      readFileSync(join(dir, "synartesis.yaml"), "utf8")
        .split("\n")
        .findIndex((l) => l.includes("MEMORY_FILE_PATH:")) + 1
    }`;
    expect(unset.stderr).toBe(
      `synartesis: warning: MEMORY_FILE_PATH is not set. The manifest keeps \${MEMORY_FILE_PATH} (${at}:25); the proxy will not start until the environment your client starts it with sets MEMORY_FILE_PATH (for example an "env" entry beside "command" in the client's configuration).\n`,
    );

    const check = await run(["check"], { cwd: dir, env: { MEMORY_FILE_PATH: undefined } });
    expect(check.code).toBe(0);
    expect(check.stdout).toContain("Variables not set here (the proxy will not start until the environment its client gives it sets them):");
    expect(check.stdout).toContain(`  ${at}:25: "MEMORY_FILE_PATH" uses \${MEMORY_FILE_PATH}, which is not set in the environment`);
    const proxy = await run(["proxy"], { cwd: dir, env: { MEMORY_FILE_PATH: undefined }, stdin: "" });
    expect(proxy.code).toBe(2);
    expect(proxy.stderr).toContain(`${at}:25: "MEMORY_FILE_PATH" uses \${MEMORY_FILE_PATH}, which is not set in the environment`);

    // Set, nothing to warn about; and a value given on the command line wins over the placeholder.
    const set = await run(["init", "mem", "--force", "--", "node", memory], { cwd: dir, env: { MEMORY_FILE_PATH: join(dir, "graph.jsonl") } });
    expect(set.code).toBe(0);
    expect(set.stderr).toBe("");
    const given = await run(["init", "mem", "--force", "--", "env", `MEMORY_FILE_PATH=${join(dir, "g.jsonl")}`, "node", memory], {
      cwd: dir,
      env: { MEMORY_FILE_PATH: undefined },
    });
    expect(given.stderr).toBe("");
    expect(manifestOf(dir).servers.mem.env).toEqual({ MEMORY_FILE_PATH: join(dir, "g.jsonl") });
  });

  test("--draft on the toy CRM: readOnlyHint tools readonly, the writes proposed from the server's own tools, equal to the shipped rules", async () => {
    const dir = tempDir();
    const result = await run(["init", "crm", "--draft", "--", "synartesis", "toy-crm", "--state", "./crm.json"], { cwd: dir });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("1 readonly (the server's readOnlyHint, trusted)");
    expect(result.stdout).toContain('4 proposed from the server\'s tools, marked "# draft: confirm"');
    expect(result.stdout).toContain("1 gated with a TODO");
    const text = readFileSync(join(dir, "synartesis.yaml"), "utf8");
    expect(text).toContain("# crm.get_customer: readonly because the server's own readOnlyHint says so (trusted, not verified).");
    expect(text).toContain('# draft: confirm — proposed by init, because crm.get_customer reads "customer" first and update_customer writes it back.');
    expect(text).toContain("# TODO crm.send_email: gated until you decide. Send an email");
    expect(text).toContain("#   No inverse proposed: its name (send…) belongs to no family Synartesis knows");
    expect(matches(manifestOf(dir))).toEqual([
      "crm.get_customer readonly",
      "crm.create_customer compensable",
      "crm.update_customer reversible",
      "crm.delete_customer reversible",
      "crm.restore_customer compensable",
      "crm.send_email irreversible always",
    ]);
    // Confirmed unchanged, every mutating tool's rule is the shipped one (absent_when and idempotent are for a person to add).
    expect(sameAsShipped(manifestOf(dir), "toy-crm.yaml", "crm")).toEqual({ same: 5, of: 5, differ: [] });

    // check lists each mark; a marked rule holds every call, whatever its class.
    const checked = await run(["check"], { cwd: dir });
    expect(checked.stdout).toContain(
      `Drafts to confirm (proposed by init; each call waits for a person until you remove the "# draft: confirm" line above the rule)\n  ${join(dir, "synartesis.yaml")}:21  crm.create_customer  compensable\n  ${join(dir, "synartesis.yaml")}:31  crm.update_customer  reversible\n`,
    );
    const call = async () => {
      await using proxy = await connect(BIN, ["proxy"], { cwd: dir });
      return (await proxy.client.callTool({ name: "update_customer", arguments: { id: "c_001", plan: "free" } })) as any;
    };
    const held = await call();
    expect(held.content[0].text).toContain(
      'the rule for crm.update_customer is a draft Synartesis proposed, not yet confirmed by a person (its "# draft: confirm" mark)',
    );

    // Confirmed (the mark removed, the rule unchanged): recorded as reversible, and undone.
    writeFileSync(
      join(dir, "synartesis.yaml"),
      text.replace(/ {2}# draft: confirm — proposed by init, because crm.get_customer reads "customer" first and update_customer.*\n/, ""),
    );
    const confirmed = (await run(["check"], { cwd: dir })).stdout;
    expect(confirmed).toContain("crm.create_customer  compensable\n");
    expect(confirmed).not.toMatch(/:\d+ {2}crm\.update_customer {2}reversible\n/);
    const ran = await call();
    expect(ran.isError).toBeFalsy();
    expect(ran.structuredContent ?? JSON.parse(ran.content[0].text)).toMatchObject({ id: "c_001", plan: "free" });
    const undone = await run(["undo"], { cwd: dir });
    expect(undone.stdout).toContain("1 call reverted");
    expect(undone.code).toBe(0);
  });

  test("--draft on the memory server: 5 of its 6 writes proposed as shipped (lists read by names, answers reshaped); the other says why not", async () => {
    const dir = tempDir();
    const memory = join(ROOT, "node_modules/@modelcontextprotocol/server-memory/dist/index.js");
    const result = await run(["init", "memory", "--draft", "--", "node", memory], { cwd: dir, env: { MEMORY_FILE_PATH: join(dir, "m.jsonl") } });
    expect(result.code).toBe(0);
    expect(sameAsShipped(manifestOf(dir), "memory.yaml", "memory")).toEqual({
      same: 5,
      of: 6,
      differ: ["memory.delete_observations"],
    });
    const text = readFileSync(join(dir, "synartesis.yaml"), "utf8");
    expect(text).toContain(
      '#   No inverse proposed: no read of "observations" (get_…) takes arguments that delete_observations also takes, and no create_… takes exactly what it deletes.',
    );
  });

  test("with no synartesis on PATH nor in ~/.local/bin, the client block names the build and says it breaks if it moves", async () => {
    const dir = tempDir();
    const result = await run(["init", "crm", "--", "synartesis", "toy-crm", "--state", "./crm.json"], { cwd: dir, env: { PATH: "/usr/bin:/bin", HOME: dir } });
    expect(result.code).toBe(0);
    expect(clientBlock(result.stdout).mcpServers.synartesis.command).toBe(BIN);
    expect(result.stdout).toContain(
      `${BIN} is the only synartesis found: the entry breaks if that file moves or is deleted (./install.sh in a clone links synartesis onto your PATH).`,
    );
    // The release install location counts though PATH lacks it.
    const local = join(dir, ".local", "bin");
    mkdirSync(local, { recursive: true });
    symlinkSync(BIN, join(local, "synartesis"));
    const again = await run(["init", "crm2", "--", "synartesis", "toy-crm", "--state", "./crm2.json"], { cwd: dir, env: { PATH: "/usr/bin:/bin", HOME: dir } });
    expect(again.code).toBe(0);
    expect(clientBlock(again.stdout).mcpServers.synartesis.command).toBe(join(local, "synartesis"));
    expect(again.stdout).not.toContain("breaks if");
  });

  test("extends an existing manifest: both servers present, comments and rules kept", async () => {
    const dir = tempDir();
    const original = [
      "# Our team's policy. Do not remove this line.",
      "version: 1",
      "servers:",
      "  crm:",
      `    command: ${BIN}   # the binary`,
      '    args: ["toy-crm", "--state", "./crm.json"]',
      "tools:",
      "  # Reads are fine.",
      '  - match: "crm.get_customer"',
      "    class: readonly",
      "",
    ].join("\n");
    writeFileSync(join(dir, "synartesis.yaml"), original);
    const result = await run(["init", "crm2", "--draft", "--", "synartesis", "toy-crm", "--state", "./crm2.json"], { cwd: dir });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`Extended ${join(dir, "synartesis.yaml")}: server "crm2"`);
    const text = readFileSync(join(dir, "synartesis.yaml"), "utf8");
    expect(text).toContain("# Our team's policy. Do not remove this line.");
    expect(text).toContain("# the binary");
    expect(text).toContain("# Reads are fine.");
    const doc = manifestOf(dir);
    expect(Object.keys(doc.servers)).toEqual(["crm", "crm2"]);
    expect(matches(doc)[0]).toBe("crm.get_customer readonly");
    expect(matches(doc)).toContain("crm2.get_customer readonly");
    expect(matches(doc)).toContain("crm2.send_email irreversible always");

    // The same name again is refused, and nothing changes; --force replaces that server only.
    const again = await run(["init", "crm2", "--", "synartesis", "toy-crm"], { cwd: dir });
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('the manifest already has a server named "crm2"');
    expect(readFileSync(join(dir, "synartesis.yaml"), "utf8")).toBe(text);
    const forced = await run(["init", "crm2", "--force", "--", "synartesis", "toy-crm"], { cwd: dir });
    expect(forced.code).toBe(0);
    const after = manifestOf(dir);
    expect(matches(after).filter((m: string) => m.startsWith("crm2."))).toEqual([
      "crm2.get_customer readonly",
      "crm2.update_customer reversible",
      "crm2.delete_customer reversible",
      "crm2.create_customer compensable",
      "crm2.restore_customer compensable",
      "crm2.send_* irreversible always",
    ]);
    expect(matches(after)[0]).toBe("crm.get_customer readonly");
    expect(readFileSync(join(dir, "synartesis.yaml"), "utf8")).toContain("# Our team's policy. Do not remove this line.");
  });

  test("an existing file with `tools: []` and a different key order", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "synartesis.yaml"), `tools: []\nservers:\n  other: { command: ${BIN}, args: [toy-crm] }\nversion: 1\n`);
    const result = await run(["init", "crm", "--", "synartesis", "toy-crm"], { cwd: dir });
    expect(result.code).toBe(0);
    const doc = manifestOf(dir);
    expect(Object.keys(doc)).toEqual(["tools", "servers", "version"]);
    expect(Object.keys(doc.servers)).toEqual(["other", "crm"]);
    expect(doc.tools.length).toBe(6);
  });

  test("a command that cannot start: exit 1, the server named, nothing written", async () => {
    const dir = tempDir();
    const missing = await run(["init", "x", "--", "/no/such/server"], { cwd: dir });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe('synartesis: server "x" would not start: command not found: /no/such/server\n');
    const crashing = await run(["init", "y", "--", "bash", "-c", "echo 'cannot open database: permission denied' >&2; exit 3"], { cwd: dir });
    expect(crashing.code).toBe(1);
    expect(crashing.stderr).toContain('synartesis: server "y" would not start: it exited with code 3 before answering');
    expect(crashing.stderr).toContain("cannot open database: permission denied");
    expect(existsSync(join(dir, "synartesis.yaml"))).toBe(false);
  });

  test("a server with no tools: a clear error, nothing written", async () => {
    const dir = tempDir();
    const result = await run(["init", "empty", "--", "bun", join(ROOT, "test/fixtures/init-no-tools.ts")], { cwd: dir });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('server "empty" exposes no tools; there is nothing to write a policy for');
    expect(existsSync(join(dir, "synartesis.yaml"))).toBe(false);
  });

  test("flags after -- belong to the server command", async () => {
    const dir = tempDir();
    const script = `printf '%s\\n' "$@" > args.txt; exec ${BIN} toy-crm`;
    const result = await run(["init", "wrapped", "--", "bash", "-c", script, "_", "-h", "--weird"], { cwd: dir });
    expect(result.code).toBe(0);
    expect(readFileSync(join(dir, "args.txt"), "utf8")).toBe("-h\n--weird\n");
    expect(manifestOf(dir).servers.wrapped.args).toEqual(["-c", script, "_", "-h", "--weird"]);
  });

  test("refuses to write a manifest that would not load; bad names and usage exit 2", async () => {
    const dir = tempDir();
    const broken = `version: 1\nservers:\n  crm:\n    command: ${BIN}\ntools:\n  - match: crm.update_customer\n    class: reversible\n`;
    writeFileSync(join(dir, "synartesis.yaml"), broken);
    const result = await run(["init", "crm2", "--", "synartesis", "toy-crm"], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("nothing was written: the manifest init would write does not load");
    expect(result.stderr).toMatch(
      new RegExp(`  ${join(dir, "synartesis.yaml")}:\\d+:5: a reversible rule needs an "inverse" \\(the call that puts the state back\\)\\n`),
    );
    expect(readFileSync(join(dir, "synartesis.yaml"), "utf8")).toBe(broken);

    expect((await run(["init", "a.b", "--", "synartesis", "toy-crm"], { cwd: dir })).code).toBe(2);
    const noCommand = await run(["init", "crm3"], { cwd: dir });
    expect(noCommand.code).toBe(2);
    expect(noCommand.stderr).toContain("give the server's command after --");
  });
});
