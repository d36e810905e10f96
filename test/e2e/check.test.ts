// `synartesis check` through the built binary (R-CLI-3, R-MAN-2, R-MAN-5, R-MAN-7):
// the summary for a good manifest, missing tools (exit 2), servers that will not
// start (exit 1, their stderr quoted), malformed manifests (exit 2, file:line:col),
// and a Streamable HTTP server started inside the test.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, copyFileSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { BIN, manifestText, ROOT, run, serveMcp, tempDir, toolServer } from "../helpers.ts";

// The preload's default timeout reaches only the first file bun runs; tests sharing the machine need the room.
setDefaultTimeout(60_000);

const yaml = (...lines: string[]) => lines.join("\n") + "\n";

const CRM_TOOLS = "create_customer, delete_customer, get_customer, restore_customer, send_email, update_customer";
const NOTE =
  "Note: check proves that each tool exists. It calls none of them, so it cannot prove that a path such as $snapshot.email resolves; that is only known when a call runs (an unresolved inverse is recorded as a warning).";

/**
 * A folder holding synartesis.yaml with this text (written with yaml(...lines)
 * where a test checks positions in it); returns the folder and the manifest's path.
 */
function project(text = ""): { dir: string; manifest: string } {
  const dir = tempDir("syn-check-");
  const manifest = join(dir, "synartesis.yaml");
  writeFileSync(manifest, text);
  return { dir, manifest };
}

/** A Streamable HTTP MCP server on 127.0.0.1 with these tool names, and the Authorization header of each request it got. */
function httpServer(toolNames: string[]): { url: string; authorizations: string[] } {
  const authorizations: string[] = [];
  const server = serveMcp(
    () =>
      toolServer(
        "notes",
        toolNames.map((name) => ({ name, description: `the ${name} tool` })),
      ),
    {
      before: (request) => void authorizations.push(request.headers.get("authorization") ?? ""),
    },
  );
  return { url: server.url, authorizations };
}

/** Whether some folder above `dir` holds a synartesis.yaml (then walking up would find it). */
function manifestAbove(dir: string): boolean {
  for (let current = dirname(dir); ; current = dirname(current)) {
    if (existsSync(join(current, "synartesis.yaml"))) return true;
    if (dirname(current) === current) return false;
  }
}

/** A port nothing listens on: bound, then released. */
function closedPort(): number {
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
  const port = server.port!;
  server.stop(true);
  return port;
}

describe.concurrent("synartesis check: a manifest whose tools all exist", () => {
  test("the toy CRM manifest: exit 0, with servers, rules per class, gated tools and both notes", async () => {
    const { dir, manifest } = project();
    copyFileSync(join(ROOT, "manifests", "toy-crm.yaml"), manifest);
    // Found by walking up from a folder below the manifest (R-CLI-1).
    mkdirSync(join(dir, "src", "deep"), { recursive: true });
    const result = await run(["check"], { cwd: join(dir, "src", "deep") });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(
      yaml(
        `Manifest ${manifest}`,
        "",
        "Servers",
        "  crm  synartesis toy-crm --state ./crm.json  6 tools",
        "",
        "Rules  6 in all: 1 readonly, 2 reversible, 2 compensable, 1 irreversible",
        "",
        "Gated (a person approves each call, or each write for on_write)",
        "  crm.send_*  irreversible, gate: always  → crm.send_email",
        "",
        "Not covered by any rule (treated as irreversible and gated, like any tool a manifest does not mention): none",
        "",
        "Every snapshot and inverse tool the manifest names exists.",
        NOTE,
      ),
    );
  });

  test("tools no rule mentions are listed as treated like irreversible; --manifest may be relative", async () => {
    const { dir } = project();
    writeFileSync(
      join(dir, "policy.yaml"),
      manifestText({
        servers: { crm: { command: "synartesis", args: ["toy-crm", "--state", "./crm.json"] } },
        tools: [
          { match: "crm.get_customer", class: "readonly" },
          { match: "crm.create_customer", class: "compensable", gate: "on_write", inverse: { tool: "crm.delete_customer", args: { id: "$result.id" } } },
        ],
      }),
    );
    const result = await run(["check", "--manifest", "policy.yaml"], { cwd: dir });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("Rules  2 in all: 1 readonly, 0 reversible, 1 compensable, 0 irreversible\n");
    expect(result.stdout).toContain(
      "Gated (a person approves each call, or each write for on_write)\n  crm.create_customer  compensable, gate: on_write  → crm.create_customer\n",
    );
    expect(result.stdout).toContain(
      "Not covered by any rule (treated as irreversible and gated, like any tool a manifest does not mention): crm.delete_customer, crm.restore_customer, crm.send_email, crm.update_customer\n",
    );
    expect(result.stdout).toContain(NOTE);
  });

  test("relative command and working directory resolve against the manifest's folder, from anywhere (R-MAN-5)", async () => {
    const { dir, manifest } = project(manifestText({ servers: { crm: { command: "./bin/crm", cwd: "data", env: { CRM_BIN: "${SYN_TEST_BIN}" } } } }));
    mkdirSync(join(dir, "bin"));
    mkdirSync(join(dir, "data"));
    writeFileSync(join(dir, "data", "marker"), "");
    const script = join(dir, "bin", "crm");
    writeFileSync(
      script,
      ["#!/bin/sh", '[ -f ./marker ] || { echo "started in the wrong folder: $(pwd)" >&2; exit 1; }', 'exec "$CRM_BIN" toy-crm --state ./crm.json', ""].join(
        "\n",
      ),
    );
    chmodSync(script, 0o755);
    const elsewhere = tempDir("syn-elsewhere-");
    const result = await run(["check", "--manifest", manifest], { cwd: elsewhere, env: { SYN_TEST_BIN: BIN } });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`  crm  ${join(dir, "bin", "crm")}  6 tools\n`);
    expect(result.stdout).toContain(
      "Not covered by any rule (treated as irreversible and gated, like any tool a manifest does not mention): crm.create_customer,",
    );
  });
});

test.concurrent("a rule that matches none of its server's tools is pointed out (its tool falls to another rule)", async () => {
  const { dir, manifest } = project(
    yaml(
      "version: 1",
      "servers:",
      "  crm:",
      "    command: synartesis",
      '    args: ["toy-crm"]',
      "tools:",
      "  - match: crm.updte_customer",
      "    class: irreversible",
      "  - match: crm.*",
      "    class: readonly",
    ),
  );
  const result = await run(["check"], { cwd: dir });
  expect(result.code).toBe(0);
  expect(result.stdout).toContain(
    `Rules that match none of their server's tools (a typo? the tools they meant fall to other rules):\n  ${manifest}:7: crm.updte_customer\n`,
  );
});

describe.concurrent("synartesis check: a tool the server does not have", () => {
  test("an inverse naming a missing tool: exit 2, the tool named at file:line:col", async () => {
    const { dir, manifest } = project(
      yaml(
        "version: 1",
        "servers:",
        "  crm:",
        "    command: synartesis",
        '    args: ["toy-crm", "--state", "./crm.json"]',
        "tools:",
        "  - match: crm.update_customer",
        "    class: reversible",
        "    snapshot:",
        "      tool: crm.get_customer",
        "      args: { id: $.id }",
        "    inverse:",
        "      tool: crm.revert_customer",
        "      args: { id: $.id, name: $snapshot.name }",
        "  - match: crm.create_customer",
        "    class: compensable",
        "    inverse: { tool: crm.remove_customer, args: { id: $result.id } }",
      ),
    );
    const result = await run(["check"], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stdout).toContain(
      [
        "2 problems: the manifest names tools its servers do not have",
        `  ${manifest}:13:13: the inverse of "crm.update_customer" calls crm.revert_customer, but server "crm" has no tool "revert_customer" (it has: ${CRM_TOOLS})`,
        `  ${manifest}:17:22: the inverse of "crm.create_customer" calls crm.remove_customer, but server "crm" has no tool "remove_customer" (it has: ${CRM_TOOLS})`,
        NOTE,
      ].join("\n") + "\n",
    );
    expect(result.stdout).not.toContain("Every snapshot and inverse tool the manifest names exists.");
  });

  test("a snapshot naming a missing tool is reported the same way", async () => {
    const { dir, manifest } = project(
      yaml(
        "version: 1",
        "servers:",
        "  crm:",
        "    command: synartesis",
        '    args: ["toy-crm", "--state", "./crm.json"]',
        "tools:",
        "  - match: crm.delete_customer",
        "    class: reversible",
        "    snapshot:",
        "      tool: crm.fetch_customer",
        "    inverse:",
        "      tool: crm.restore_customer",
        "      args: { id: $snapshot.id }",
      ),
    );
    const result = await run(["check"], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stdout).toContain(
      `1 problem: the manifest names tools its servers do not have\n  ${manifest}:10:13: the snapshot of "crm.delete_customer" calls crm.fetch_customer, but server "crm" has no tool "fetch_customer" (it has: ${CRM_TOOLS})\n`,
    );
  });
});

describe.concurrent("synartesis check: servers that will not start (exit 1)", () => {
  test("a command that does not exist: the server is named", async () => {
    const { dir } = project(manifestText({ servers: { ledger: { command: "synartesis-no-such-server-xyz", args: ["--db", "ledger.db"] } } }));
    const result = await run(["check"], { cwd: dir });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain("  ledger  synartesis-no-such-server-xyz --db ledger.db  did not start\n");
    expect(result.stdout).toContain('server "ledger" would not start: command not found: synartesis-no-such-server-xyz\n');
    expect(result.stdout).not.toContain("Every snapshot and inverse tool the manifest names exists.");
  });

  test("a server that crashes at once: its stderr line is quoted", async () => {
    const { dir } = project(manifestText({ servers: { db: { command: "bash", args: ["-c", "echo 'cannot open database: permission denied' >&2; exit 3"] } } }));
    const result = await run(["check"], { cwd: dir });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('server "db" would not start: ');
    expect(result.stdout).toContain("exited with code 3");
    expect(result.stdout).toContain("  its stderr said:\n    cannot open database: permission denied\n");
  });

  test("a working directory that does not exist is named", async () => {
    const { dir } = project(manifestText({ servers: { crm: { command: "synartesis", args: ["toy-crm"], cwd: "./missing" } } }));
    const result = await run(["check"], { cwd: dir });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`server "crm" would not start: its working directory ${join(dir, "missing")} does not exist\n`);
  });

  test("every failing server is reported, in manifest order, beside the ones that started", async () => {
    const { dir } = project(
      manifestText({
        servers: {
          zeta: { command: "synartesis-missing-zeta" },
          crm: { command: "synartesis", args: ["toy-crm", "--state", "./crm.json"] },
          alpha: { command: "bash", args: ["-c", "echo alpha is broken >&2; exit 1"] },
        },
      }),
    );
    const result = await run(["check"], { cwd: dir });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain("  crm    synartesis toy-crm --state ./crm.json");
    expect(result.stdout).toMatch(/ {2}crm .* 6 tools\n/);
    const zeta = result.stdout.indexOf('server "zeta" would not start: command not found: synartesis-missing-zeta');
    const alpha = result.stdout.indexOf('server "alpha" would not start:');
    expect(zeta).toBeGreaterThan(-1);
    expect(alpha).toBeGreaterThan(zeta);
    expect(result.stdout).toContain("    alpha is broken\n");
  });
});

describe.concurrent("synartesis check: a malformed manifest (exit 2, nothing started)", () => {
  test("one problem: the file:line:col line on stderr, nothing on stdout", async () => {
    const marker = join(tempDir("syn-marker-"), "started");
    const { dir, manifest } = project(
      yaml(
        "version: 1",
        "servers:",
        "  crm:",
        "    command: bash",
        `    args: ["-c", "touch ${marker}"]`,
        "tools:",
        "  - match: crm.update_customer",
        "    class: compensable",
        "    inverse:",
        "      tool: crm.update_customer",
        "      args: { name: $snapshot.name }",
      ),
    );
    const result = await run(["check"], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toBe(`synartesis: ${manifest}:11:21: $snapshot.name reads the snapshot, but this rule declares no "snapshot"\n`);
    expect(await Bun.file(marker).exists()).toBe(false);
  });

  test("several problems: all of them, one per line, sorted by position", async () => {
    const { dir, manifest } = project(
      yaml(
        "version: 2",
        "servers:",
        "  crm:",
        "    command: synartesis",
        "    env:",
        '      TOKEN: "${SYN_TEST_UNSET_TOKEN}"',
        "tools:",
        '  - match: "crm.send_*"',
        "    class: irreversable",
        '  - match: "crm.update"',
        "    class: compensable",
        '    inverse: { tool: crm.update, args: { price: "$5" } }',
      ),
    );
    const result = await run(["check"], { cwd: dir, env: { SYN_TEST_UNSET_TOKEN: undefined } });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toBe(
      yaml(
        `synartesis: ${manifest}: 4 problems`,
        `  ${manifest}:1:10: "version" must be 1 (found 2)`,
        `  ${manifest}:6:14: "TOKEN" uses \${SYN_TEST_UNSET_TOKEN}, which is not set in the environment`,
        `  ${manifest}:9:12: "class" must be one of readonly, reversible, compensable, irreversible (found "irreversable")`,
        `  ${manifest}:12:49: "$5" is not a reference (use $, $.path, $snapshot.path, $result.path, or $item.path inside $as; write $$ for a literal dollar sign)`,
      ),
    );
  });

  test("a YAML syntax error is reported with its position", async () => {
    const { dir, manifest } = project(yaml("version: 1", "servers:", "  crm:", "    command: synartesis", "   args: [toy-crm]"));
    const result = await run(["check"], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`synartesis: ${manifest}:5:1: YAML syntax error: All mapping items must start at the same column\n`);
  });

  test("no manifest anywhere above, or none at --manifest: exit 2 with a hint", async () => {
    const dir = tempDir("syn-empty-");
    // Folders above the temp folder are not ours; only assert "none above" when that is so.
    if (!manifestAbove(dir)) {
      const none = await run(["check"], { cwd: dir });
      expect(none.code).toBe(2);
      expect(none.stderr).toBe(
        `synartesis: no synartesis.yaml in ${dir} or any folder above it\nCreate one with \`synartesis init NAME -- COMMAND ARGS…\`, or pass --manifest PATH.\n`,
      );
    }
    const missing = await run(["check", "--manifest", "nope.yaml"], { cwd: dir });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toStartWith(`synartesis: there is no manifest at ${join(dir, "nope.yaml")}\n`);
  });
});

describe.concurrent("synartesis check: a Streamable HTTP server", () => {
  test("its tools are listed over HTTP, headers carry expanded ${VAR}s, and a * server segment finds its tools", async () => {
    const notes = httpServer(["get_note", "put_note", "delete_note", "archive_note"]);
    const { dir } = project(
      manifestText({
        servers: { notes: { url: notes.url, headers: { Authorization: "Bearer ${SYN_TEST_NOTES_TOKEN}" } } },
        tools: [
          { match: "notes.get_note", class: "readonly" },
          { match: "notes.put_note", class: "compensable", inverse: { tool: "notes.delete_note", args: { id: "$result.id" } } },
          { match: "*.delete_*", class: "irreversible" },
        ],
      }),
    );
    const result = await run(["check"], { cwd: dir, env: { SYN_TEST_NOTES_TOKEN: "t0ken" } });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`  notes  ${notes.url}  4 tools\n`);
    expect(result.stdout).toContain("  *.delete_*  irreversible, gate: always  → notes.delete_note\n");
    expect(result.stdout).toContain(
      "Not covered by any rule (treated as irreversible and gated, like any tool a manifest does not mention): notes.archive_note\n",
    );
    expect(result.stdout).toContain("Every snapshot and inverse tool the manifest names exists.\n");
    expect(notes.authorizations.length).toBeGreaterThan(0);
    expect(new Set(notes.authorizations)).toEqual(new Set(["Bearer t0ken"]));
  });

  test("a missing tool on an HTTP server: exit 2", async () => {
    const notes = httpServer(["get_note", "put_note"]);
    const { dir, manifest } = project(
      yaml(
        "version: 1",
        "servers:",
        "  notes:",
        `    url: ${notes.url}`,
        "tools:",
        "  - match: notes.put_note",
        "    class: compensable",
        "    inverse:",
        "      tool: notes.delete_note",
      ),
    );
    const result = await run(["check"], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stdout).toContain(
      `  ${manifest}:9:13: the inverse of "notes.put_note" calls notes.delete_note, but server "notes" has no tool "delete_note" (it has: get_note, put_note)\n`,
    );
  });

  test("nothing listening at the url: exit 1, the server named", async () => {
    const url = `http://127.0.0.1:${closedPort()}/mcp`;
    const { dir } = project(manifestText({ servers: { remote: { url } } }));
    const result = await run(["check"], { cwd: dir });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`  remote  ${url}  did not start\n`);
    expect(result.stdout).toContain('server "remote" would not start: ');
  });
});
