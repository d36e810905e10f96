// Loading the manifest (R-MAN-1…3, R-MAN-5, R-MAN-6, R-CLASS-2): the schema, every
// cross-field rule, ${VAR} expansion, relative paths, and file:line:col for each problem.
// Manifests are written as arrays of lines so a line number is the index plus one.
import { describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadManifest, ManifestError, parseManifest } from "../../src/manifest/load.ts";
import type { Manifest, ServerSpec } from "../../src/manifest/types.ts";
import { SynartesisError } from "../../src/errors.ts";
import { AuthMapSchema, CallSchema, ManifestSchema, RuleSchema, ServerSchema } from "../../src/manifest/schema.ts";
import { ROOT, tempDir } from "../helpers.ts";

const FILE = "/work/project/synartesis.yaml";
const ENV = { CRM_TOKEN: "s3cret", HOST: "crm.example.com", EMPTY: "" };

const yaml = (...lines: string[]) => lines.join("\n") + "\n";

/** A valid head: servers on lines 1–4, `tools:` on line 5, so the first rule starts on line 6. */
const HEAD = ["version: 1", "servers:", "  crm:", "    command: crm-server", "tools:"];
const withRules = (...lines: string[]) => yaml(...HEAD, ...lines);

function load(text: string, env: Record<string, string | undefined> = ENV): Manifest {
  return parseManifest(text, FILE, env);
}

/** Every problem as `line:col: message`, in the order the error lists them. */
function problems(text: string, env: Record<string, string | undefined> = ENV): string[] {
  try {
    load(text, env);
  } catch (error) {
    if (!(error instanceof ManifestError)) throw error;
    return error.problems.map((p) => `${p.line}:${p.col}: ${p.message}`);
  }
  throw new Error("the manifest loaded; a problem was expected");
}

/** The one problem of a manifest that has exactly one, as the user sees it. */
function onlyProblem(text: string, env: Record<string, string | undefined> = ENV): string {
  try {
    load(text, env);
  } catch (error) {
    if (!(error instanceof ManifestError)) throw error;
    expect(error.problems.map((p) => `${p.line}:${p.col}: ${p.message}`)).toHaveLength(1);
    return error.message;
  }
  throw new Error("the manifest loaded; a problem was expected");
}

function commandServer(manifest: Manifest, name: string): Extract<ServerSpec, { kind: "command" }> {
  const spec = manifest.servers[name];
  if (spec?.kind !== "command") throw new Error(`server ${name} is not a command server`);
  return spec;
}

describe("a valid manifest", () => {
  test("the toy CRM manifest loads into servers and rules", () => {
    const manifest = loadManifest(join(ROOT, "manifests", "toy-crm.yaml"), {});
    expect(manifest.path).toBe(join(ROOT, "manifests", "toy-crm.yaml"));
    expect(manifest.dir).toBe(join(ROOT, "manifests"));
    expect(manifest.servers.crm).toEqual({
      name: "crm",
      kind: "command",
      command: "synartesis",
      args: ["toy-crm", "--state", "./crm.json"],
      env: {},
      cwd: join(ROOT, "manifests"),
      timeoutMs: 60_000,
      inOrder: true,
      line: 16,
    });
    expect(manifest.rules.map((r) => [r.match, r.class, r.gate])).toEqual([
      ["crm.get_customer", "readonly", "never"],
      ["crm.update_customer", "reversible", "never"],
      ["crm.delete_customer", "reversible", "never"],
      ["crm.create_customer", "compensable", "never"],
      ["crm.restore_customer", "compensable", "never"],
      ["crm.send_*", "irreversible", "always"],
    ]);
    expect(manifest.rules.map((r) => r.idempotent)).toEqual([false, true, true, true, true, false]);
    const update = manifest.rules[1]!;
    expect(update.line).toBe(30);
    expect(update.snapshot).toMatchObject({ server: "crm", tool: "get_customer", absentWhen: ["no customer with id"], at: { line: 34, col: 13 } });
    expect(update.inverse).toMatchObject([{ server: "crm", tool: "update_customer", absentWhen: [], at: { line: 38, col: 13 } }]);
  });

  test("the smallest manifest: a version and one server, no tools", () => {
    const manifest = load(yaml("version: 1", "servers:", "  crm:", "    command: crm-server"));
    expect(Object.keys(manifest.servers)).toEqual(["crm"]);
    expect(manifest.rules).toEqual([]);
    expect(load(yaml("version: 1", "servers:", "  crm:", "    command: crm-server", "tools: []")).rules).toEqual([]);
  });

  test("a server's timeout is given in seconds and kept in milliseconds; the default is 60 s", () => {
    const manifest = load(
      yaml(
        "version: 1",
        "servers:",
        "  a:",
        "    command: x",
        "    timeout: 2.5",
        "  b:",
        "    url: https://b.example/mcp",
        "    timeout: 5",
        "  c:",
        "    command: y",
      ),
    );
    expect(manifest.servers.a!.timeoutMs).toBe(2500);
    expect(manifest.servers.b!.timeoutMs).toBe(5000);
    expect(manifest.servers.c!.timeoutMs).toBe(60_000);
  });

  test("absent_when is a string or a list of strings, always kept as a list", () => {
    const manifest = load(
      withRules(
        "  - match: crm.update",
        "    class: reversible",
        "    snapshot: { tool: crm.get, args: { id: $.id }, absent_when: [not found, no such id] }",
        "    inverse: { tool: crm.update, args: { id: $.id, name: $snapshot.name } }",
        "  - match: crm.delete",
        "    class: reversible",
        "    snapshot: { tool: crm.get, args: { id: $.id }, absent_when: not found }",
        "    inverse: { tool: crm.restore, args: { record: $snapshot } }",
      ),
    );
    expect(manifest.rules[0]!.snapshot!.absentWhen).toEqual(["not found", "no such id"]);
    expect(manifest.rules[1]!.snapshot!.absentWhen).toEqual(["not found"]);
  });

  test("a compensable rule may declare a snapshot, and its inverse may then read it", () => {
    const manifest = load(
      withRules(
        "  - match: crm.restore",
        "    class: compensable",
        "    snapshot: { tool: crm.get, args: { id: $.id } }",
        "    inverse: { tool: crm.delete, args: { id: $result.id, was: $snapshot.name } }",
      ),
    );
    expect(manifest.rules[0]!.snapshot!.tool).toBe("get");
    expect(manifest.rules[0]!.inverse![0]!.tool).toBe("delete");
  });

  test("an irreversible rule may take a snapshot (to show what was there), without an inverse", () => {
    const manifest = load(withRules("  - match: crm.purge", "    class: irreversible", "    snapshot: { tool: crm.get, args: { id: $.id } }"));
    expect(manifest.rules[0]!.snapshot!.server).toBe("crm");
    expect(manifest.rules[0]!.inverse).toBeUndefined();
  });

  test("aliases and anchors are expanded like any YAML", () => {
    const manifest = load(yaml("version: 1", "servers:", "  a: &server", "    command: x", "  b: *server"));
    expect(commandServer(manifest, "b").command).toBe("x");
  });
});

describe("schema (R-MAN-1)", () => {
  test("unknown keys are errors at every level, each pointing at the key", () => {
    expect(
      problems(
        yaml(
          "version: 1",
          "colour: blue",
          "servers:",
          "  crm:",
          "    command: x",
          "    restart: always",
          "tools:",
          "  - match: crm.a",
          "    class: reversible",
          "    note: hi",
          "    snapshot:",
          "      tool: crm.get",
          "      retry: 3",
          "    inverse:",
          "      tool: crm.a",
          "      when: always",
        ),
      ),
    ).toEqual([
      '2:1: unknown key "colour" in the manifest (allowed: version, servers, tools, journal, review_page, notify, groups)',
      '6:5: unknown key "restart" in server "crm" (allowed: command, args, env, cwd, url, headers, auth, timeout, timeout_max, in_order)',
      '10:5: unknown key "note" in a tool rule (allowed: match, when, class, gate, snapshot, inverse, when_absent, idempotent, approvers, sql)',
      '13:7: unknown key "retry" in snapshot (allowed: tool, args, absent_when, absent_text, as_text)',
      '16:7: unknown key "when" in inverse (allowed: tool, args, absent_when, absent_text, as_text)',
    ]);
  });

  test("unknown keys beside other shape problems are all found, however deep (typebox stops early inside an object with an unknown key)", () => {
    expect(
      problems(
        yaml(
          "version: 1",
          "servers:",
          "  crm:",
          "    command: x",
          "    timeout: 0",
          "    restart: always",
          "tools:",
          "  - match: crm.a",
          "    class: reversable",
          "    note: hi",
          "    snapshot:",
          "      tool: crm.get",
          "      retry: 3",
          "  - crm.b",
        ),
      ),
    ).toEqual([
      '5:14: "timeout" must be a positive number of seconds',
      '6:5: unknown key "restart" in server "crm" (allowed: command, args, env, cwd, url, headers, auth, timeout, timeout_max, in_order)',
      '9:12: "class" must be one of readonly, reversible, compensable, irreversible (found "reversable")',
      '10:5: unknown key "note" in a tool rule (allowed: match, when, class, gate, snapshot, inverse, when_absent, idempotent, approvers, sql)',
      '13:7: unknown key "retry" in snapshot (allowed: tool, args, absent_when, absent_text, as_text)',
      '14:5: item 2 of "tools" must be a map, found a string',
    ]);
  });

  test("a server written once and reused through an alias has its unknown key reported at the anchor", () => {
    expect(problems(yaml("version: 1", "servers:", "  a: &server", "    command: x", "    retries: 2", "  b: *server"))).toEqual([
      '5:5: unknown key "retries" in server "a" (allowed: command, args, env, cwd, url, headers, auth, timeout, timeout_max, in_order)',
      '5:5: unknown key "retries" in server "b" (allowed: command, args, env, cwd, url, headers, auth, timeout, timeout_max, in_order)',
    ]);
  });

  test("the keys an unknown-key message allows are exactly the schema's own, at every level", () => {
    const allowed = (message: string) => /\(allowed: (.*)\)$/.exec(message)![1]!.split(", ");
    const text = yaml(
      "version: 1",
      "x: 1",
      "servers:",
      "  crm:",
      "    url: https://crm.example/mcp",
      "    x: 1",
      "    auth: { type: oauth, x: 1 }",
      "tools:",
      "  - match: crm.a",
      "    class: reversible",
      "    x: 1",
      "    snapshot: { tool: crm.get, x: 1 }",
      "    inverse: { tool: crm.a, x: 1 }",
    );
    expect(problems(text).map((p) => allowed(p))).toEqual([
      Object.keys(ManifestSchema.properties),
      Object.keys(ServerSchema.properties),
      Object.keys(AuthMapSchema.properties),
      Object.keys(RuleSchema.properties),
      Object.keys(CallSchema.properties),
      Object.keys(CallSchema.properties),
    ]);
  });

  test("an unknown key does not hide the other problems of its rule", () => {
    expect(problems(withRules("  - match: crm.a", "    class: reversible", "    undo: crm.b"))).toEqual([
      '6:5: a reversible rule needs an "inverse" (the call that puts the state back)',
      '6:5: a reversible rule needs a "snapshot" (the read that captures the state it replaces); without one, make it compensable',
      '8:5: unknown key "undo" in a tool rule (allowed: match, when, class, gate, snapshot, inverse, when_absent, idempotent, approvers, sql)',
    ]);
  });

  test("version is required and must be 1", () => {
    expect(problems(yaml("servers:", "  crm:", "    command: x"))).toEqual(['1:1: the manifest is missing "version"']);
    expect(problems(yaml("version: 2", "servers:", "  crm:", "    command: x"))).toEqual(['1:10: "version" must be 1 (found 2)']);
    expect(problems(yaml('version: "1"', "servers:", "  crm:", "    command: x"))).toEqual(['1:10: "version" must be 1 (found "1")']);
    expect(problems(yaml("version:", "servers:", "  crm:", "    command: x"))).toEqual(['1:1: "version" must be 1 (found nothing)']);
    expect(load(yaml("version: 1.0", "servers:", "  crm:", "    command: x")).servers.crm).toBeDefined();
  });

  test("servers is required, is a map, and declares at least one server", () => {
    expect(problems(yaml("version: 1"))).toEqual(['1:1: the manifest is missing "servers"']);
    expect(problems(yaml("version: 1", "servers: {}"))).toEqual(["2:10: servers must declare at least one server"]);
    expect(problems(yaml("version: 1", "servers:", "  - crm"))).toEqual(['3:3: "servers" must be a map, found a list']);
    expect(problems(yaml("version: 1", "servers:"))).toEqual(['2:1: "servers" must be a map, found nothing']);
  });

  test('a server name contains no "." and no "__"', () => {
    const rule = (name: string) => problems(yaml("version: 1", "servers:", `  "${name}":`, "    command: x", "  ok:", "    command: y"));
    const message = (name: string) => `3:3: server name "${name}" must not be empty or contain "." or "__" (they separate server and tool names)`;
    expect(rule("crm.v2")).toEqual([message("crm.v2")]);
    expect(rule("my__crm")).toEqual([message("my__crm")]);
    expect(rule("")).toEqual([message("")]);
    // "a_" would make "a___tool" ambiguous with a server "a" and a tool "_tool".
    const edge = (name: string) => `3:3: server name "${name}" must not start or end with "_" (with several servers, tools are named SERVER__TOOL)`;
    expect(rule("crm_")).toEqual([edge("crm_")]);
    expect(rule("_crm")).toEqual([edge("_crm")]);
    // A single underscore, a dash and digits are fine.
    expect(Object.keys(load(yaml("version: 1", "servers:", "  my_crm-2:", "    command: x")).servers)).toEqual(["my_crm-2"]);
  });

  test("types of server fields", () => {
    const server = (...lines: string[]) => problems(yaml("version: 1", "servers:", "  crm:", ...lines));
    expect(server("    command: 42")).toEqual(['4:14: "command" must be a string, found a number']);
    expect(server('    command: ""')).toEqual(['4:14: "command" must not be empty']);
    expect(server("    command: x", '    args: "--state crm.json"')).toEqual(['5:11: "args" must be a list, found a string']);
    expect(server("    command: x", "    args: [--port, 8080]")).toEqual(['5:20: item 2 of "args" must be a string, found a number']);
    expect(server("    command: x", "    env: [A=1]")).toEqual(['5:10: "env" must be a map, found a list']);
    expect(server("    command: x", "    env: { A: 1 }")).toEqual(['5:15: "A" must be a string, found a number']);
    expect(server("    command: x", "    cwd: [a]")).toEqual(['5:10: "cwd" must be a string, found a list']);
    expect(server("    command: x", "    timeout: soon")).toEqual(['5:14: "timeout" must be a number, found a string']);
    expect(server("    command: x", "    timeout: 0")).toEqual(['5:14: "timeout" must be a positive number of seconds']);
    expect(server("    command: x", "    timeout: -5")).toEqual(['5:14: "timeout" must be a positive number of seconds']);
    expect(server("    url: https://x.example", "    headers: { A: true }")).toEqual(['5:19: "A" must be a string, found a boolean']);
    expect(problems(yaml("version: 1", "servers:", "  crm:"))).toEqual(['3:3: "crm" must be a map, found nothing']);
    expect(problems(yaml("version: 1", "servers:", "  crm: npx crm"))).toEqual(['3:8: "crm" must be a map, found a string']);
  });

  test("tools is a list of maps", () => {
    expect(problems(yaml(...HEAD, "  crm.a: readonly"))).toEqual(['6:3: "tools" must be a list, found a map']);
    expect(problems(yaml(...HEAD, "  - crm.a"))).toEqual(['6:5: item 1 of "tools" must be a map, found a string']);
    // `tools:` with nothing after it is a mistake, not an empty list.
    expect(problems(yaml(...HEAD))).toEqual(['5:1: "tools" must be a list, found nothing']);
  });

  test("a rule needs match and class; class and gate are enums", () => {
    expect(problems(withRules("  - class: readonly"))).toEqual(['6:5: this rule is missing "match"']);
    expect(problems(withRules("  - match: crm.a"))).toEqual(['6:5: this rule is missing "class"']);
    expect(problems(withRules("  - gate: always"))).toEqual(['6:5: this rule is missing "match", "class"']);
    expect(problems(withRules('  - match: ""', "    class: readonly"))).toEqual(['6:12: "match" must not be empty']);
    expect(problems(withRules("  - match: crm.a", "    class: read-only"))).toEqual([
      '7:12: "class" must be one of readonly, reversible, compensable, irreversible (found "read-only")',
    ]);
    expect(problems(withRules("  - match: crm.a", "    class: readonly", "    gate: sometimes"))).toEqual([
      '8:11: "gate" must be one of always, on_write, never (found "sometimes")',
    ]);
    expect(problems(withRules("  - match: crm.a", "    class: readonly", "    gate: true"))).toEqual([
      '8:11: "gate" must be one of always, on_write, never (found true)',
    ]);
  });

  test("snapshot and inverse are {tool, args?, absent_when?}", () => {
    const rule = (...lines: string[]) => problems(withRules("  - match: crm.a", "    class: reversible", ...lines));
    expect(rule("    snapshot: crm.get", "    inverse: { tool: crm.a }")).toEqual(['8:15: "snapshot" must be a map, found a string']);
    expect(rule("    inverse:", "      args: { id: $.id }")).toEqual(['9:7: "inverse" is missing "tool"']);
    expect(rule("    inverse:", "      tool: crm.a", "      args: [1, 2]")).toEqual(['10:13: "args" must be a map, found a list']);
    expect(rule("    inverse:", "      tool: 7")).toEqual(['9:13: "tool" must be a string, found a number']);
    expect(rule("    snapshot: { tool: crm.get, absent_when: [] }", "    inverse: { tool: crm.a }")).toEqual([
      '8:45: "absent_when" must be a string or a non-empty list of strings',
    ]);
    expect(rule("    snapshot: { tool: crm.get, absent_when: 404 }", "    inverse: { tool: crm.a }")).toEqual([
      '8:45: "absent_when" must be a string or a non-empty list of strings',
    ]);
    expect(rule("    snapshot: { tool: crm.get, absent_when: [gone, 404] }", "    inverse: { tool: crm.a }")).toEqual([
      '8:45: "absent_when" must be a string or a non-empty list of strings',
    ]);
    expect(rule("    inverse:")).toEqual(['8:5: "inverse" must be a map (one call) or a list of maps (calls sent in order), found nothing']);
    expect(rule("    inverse:", "      - tool: crm.a", "      - args: { id: $.id }")).toEqual(['10:9: item 2 of "inverse" is missing "tool"']);
    expect(rule("    inverse: []")).toEqual(['8:14: "inverse" must not be empty']);
  });

  test("args values may be any YAML value; strings are parsed as references or text", () => {
    const manifest = load(
      withRules(
        "  - match: crm.a",
        "    class: compensable",
        "    inverse:",
        "      tool: crm.b",
        "      args:",
        "        id: $result.id",
        "        force: true",
        "        count: 3",
        "        nothing: null",
        "        tags: [a, $.tag]",
        "        note: Reverting $.id",
        "        price: $$5",
      ),
    );
    expect(manifest.rules[0]!.inverse![0]!.args).toEqual({
      kind: "object",
      entries: [
        ["id", { kind: "ref", ref: { namespace: "result", path: [{ key: "id" }], text: "$result.id" } }],
        ["force", { kind: "literal", value: true }],
        ["count", { kind: "literal", value: 3 }],
        ["nothing", { kind: "literal", value: null }],
        [
          "tags",
          {
            kind: "array",
            items: [
              { kind: "literal", value: "a" },
              { kind: "ref", ref: { namespace: "args", path: [{ key: "tag" }], text: "$.tag" } },
            ],
          },
        ],
        ["note", { kind: "text", parts: ["Reverting ", { namespace: "args", path: [{ key: "id" }], text: "$.id" }] }],
        ["price", { kind: "literal", value: "$5" }],
      ],
    });
  });
});

describe("cross-field rules (R-MAN-3)", () => {
  const rule = (...lines: string[]) => problems(withRules(...lines));

  test("reversible and compensable need an inverse: the rule is blamed", () => {
    expect(rule("  - match: crm.a", "    class: reversible", "    snapshot: { tool: crm.get }")).toEqual([
      '6:5: a reversible rule needs an "inverse" (the call that puts the state back)',
    ]);
    expect(rule("  - match: crm.a", "    class: compensable")).toEqual(['6:5: a compensable rule needs an "inverse" (the call that puts the state back)']);
  });

  test("a reversible rule needs a snapshot (without one it would be an unchecked compensable)", () => {
    expect(rule("  - match: crm.a", "    class: reversible", "    inverse: { tool: crm.b, args: { id: $.id } }")).toEqual([
      '6:5: a reversible rule needs a "snapshot" (the read that captures the state it replaces); without one, make it compensable',
    ]);
  });

  test("absent_when belongs to a snapshot, not an inverse", () => {
    expect(rule("  - match: crm.a", "    class: compensable", "    inverse: { tool: crm.b, absent_when: gone }")).toEqual([
      '8:29: "absent_when" belongs to a snapshot (the read that may find nothing), not to an inverse',
    ]);
  });

  test("when_absent undoes a reversible call whose snapshot found nothing; absent_text and as_text belong to its snapshot", () => {
    const manifest = load(
      withRules(
        "  - match: crm.set",
        "    class: reversible",
        '    snapshot: { tool: crm.get, args: { key: $.key }, absent_text: "Key not found: $.key", as_text: true }',
        '    inverse: { tool: crm.set, args: { key: $.key, value: "$snapshot" } }',
        "    when_absent: { tool: crm.delete, args: { key: $.key } }",
      ),
    );
    const set = manifest.rules[0]!;
    expect(set.whenAbsent).toMatchObject([{ server: "crm", tool: "delete" }]);
    expect(set.snapshot).toMatchObject({ asText: true, absentText: { kind: "text" } });
    expect(rule("  - match: crm.a", "    class: compensable", "    inverse: { tool: crm.b }", "    when_absent: { tool: crm.c }")).toEqual([
      '9:5: "when_absent" undoes a reversible call whose snapshot found nothing; a compensable rule has no snapshot to find nothing',
    ]);
    expect(
      rule(
        "  - match: crm.a",
        "    class: reversible",
        "    snapshot: { tool: crm.get }",
        "    inverse: { tool: crm.b }",
        "    when_absent: { tool: crm.c, args: { v: $snapshot } }",
      ),
    ).toEqual(["10:44: $snapshot cannot be used in when_absent args (allowed here: $., $result)"]);
    expect(
      rule("  - match: crm.a", "    class: reversible", '    snapshot: { tool: crm.get, absent_text: "gone $result" }', "    inverse: { tool: crm.b }"),
    ).toEqual(["8:45: $result cannot be used in absent_text (allowed here: $.)"]);
    expect(rule("  - match: crm.a", "    class: compensable", "    inverse: { tool: crm.b, as_text: true }")).toEqual([
      '8:29: "as_text" belongs to a snapshot (the read of the state), not to an inverse',
    ]);
  });

  test("when: a rule for some calls of a tool, by argument values; the same match twice only with different whens", () => {
    const manifest = load(
      withRules("  - match: crm.a", "    when: { mode: [create, add], dry: null }", "    class: readonly", "  - match: crm.a", "    class: irreversible"),
    );
    expect(manifest.rules[0]!.when).toEqual([
      ["mode", ["create", "add"]],
      ["dry", [null]],
    ]);
    expect(manifest.rules[1]!.when).toBeUndefined();
    expect(
      rule("  - match: crm.a", "    when: { mode: x }", "    class: readonly", "  - match: crm.a", "    when: { mode: x }", "    class: readonly"),
    ).toEqual(['9:12: duplicate match "crm.a" with the same when (already used by the rule at line 6)']);
    expect(rule("  - match: crm.a", "    when: { mode: { deep: 1 } }", "    class: readonly")).toEqual([
      '7:19: "when" gives each argument a value or a list of values (a string, a number, true or false, or null for "not given"); found {"deep":1}',
    ]);
  });

  test("notify: webhooks (signed with a secret from the environment) and Slack hooks, each an http(s) URL", () => {
    const head = yaml("version: 1", "servers:", "  crm:", "    command: crm-server");
    const manifest = load(`${head}notify:\n  - webhook: "https://hooks.example.com/x"\n    secret: "\${HOOK}"\n  - slack: "\${SLACK}"\n`, {
      HOOK: "k",
      SLACK: "https://hooks.slack.com/services/T/B/X",
    });
    expect(manifest.notify).toEqual([
      { kind: "webhook", url: "https://hooks.example.com/x", secret: "k" },
      { kind: "slack", url: "https://hooks.slack.com/services/T/B/X" },
    ]);
    expect(
      problems(`${head}notify:\n  - webhook: "ftp://x"\n  - slack: "https://x"\n    secret: y\n  - { webhook: "https://a", slack: "https://b" }\n`),
    ).toEqual([
      '6:14: "webhook" must be an http(s) URL, found "ftp://x"',
      '8:5: "secret" signs a webhook\'s body; a Slack hook takes none',
      '9:5: each item of "notify" is a webhook: URL (with an optional secret:) or a slack: URL',
    ]);
  });

  test("review_page: the page's address (${VAR} expanded, a trailing slash dropped), nothing after its host", () => {
    const head = yaml("version: 1", "servers:", "  crm:", "    command: crm-server");
    expect(load(`${head}review_page: "http://127.0.0.1:\${PORT}/"\n`, { PORT: "8111" }).reviewPage).toBe("http://127.0.0.1:8111");
    expect(problems(`${head}review_page: "http://127.0.0.1:8111/runs"\n`)).toEqual([
      '5:14: "review_page" is the page\'s address, such as http://127.0.0.1:8111 (found "http://127.0.0.1:8111/runs")',
    ]);
  });

  test("idempotent is true or false, and only on a rule with an inverse to resend", () => {
    expect(load(withRules("  - match: crm.a", "    class: compensable", "    idempotent: true", "    inverse: { tool: crm.b }")).rules[0]!.idempotent).toBe(
      true,
    );
    expect(rule("  - match: crm.a", "    class: compensable", "    idempotent: yes please", "    inverse: { tool: crm.b }")).toEqual([
      '8:17: "idempotent" must be true or false, found a string',
    ]);
    expect(rule("  - match: crm.a", "    class: irreversible", "    idempotent: true")).toEqual([
      '8:5: "idempotent" says undo may resend this rule\'s inverse, and an irreversible rule has none',
    ]);
  });

  test("readonly and irreversible have no inverse: the inverse key is blamed", () => {
    expect(rule("  - match: crm.a", "    class: readonly", "    inverse: { tool: crm.b }")).toEqual([
      "8:5: a readonly rule has no inverse; remove it or change the class",
    ]);
    expect(rule("  - match: crm.a", "    class: irreversible", "    inverse: { tool: crm.b }")).toEqual([
      "8:5: an irreversible rule has no inverse; remove it or change the class",
    ]);
  });

  test("readonly has no snapshot", () => {
    expect(rule("  - match: crm.a", "    class: readonly", "    snapshot: { tool: crm.get }")).toEqual([
      "8:5: a readonly rule changes nothing, so it takes no snapshot",
    ]);
  });

  test("an inverse that reads $snapshot needs a snapshot: each such reference is blamed", () => {
    expect(
      rule(
        "  - match: crm.a",
        "    class: compensable",
        "    inverse:",
        "      tool: crm.b",
        "      args:",
        "        name: $snapshot.name",
        "        all: [$snapshot]",
        "        note: was $snapshot.email before",
      ),
    ).toEqual([
      '11:15: $snapshot.name reads the snapshot, but this rule declares no "snapshot"',
      '12:15: $snapshot reads the snapshot, but this rule declares no "snapshot"',
      '13:15: $snapshot.email reads the snapshot, but this rule declares no "snapshot"',
    ]);
  });

  test("a match names a declared server", () => {
    expect(rule("  - match: mail.send", "    class: irreversible")).toEqual(['6:12: match "mail.send" names no declared server (declared: crm)']);
    expect(rule("  - match: CRM.get", "    class: readonly")).toEqual(['6:12: match "CRM.get" names no declared server (declared: crm)']);
  });

  test("the server segment of a match may itself be a pattern, if it matches a declared server", () => {
    const manifest = load(
      withRules(
        "  - match: '*.get_*'",
        "    class: readonly",
        "  - match: 'c*.list'",
        "    class: readonly",
        "  - match: '*rm.delete'",
        "    class: irreversible",
      ),
    );
    expect(manifest.rules.map((r) => r.match)).toEqual(["*.get_*", "c*.list", "*rm.delete"]);
    expect(rule("  - match: 'z*.get'", "    class: readonly")).toEqual(['6:12: match "z*.get" names no declared server (declared: crm)']);
  });

  test('a match looks like "server.tool"', () => {
    const message = (m: string) => `6:12: match "${m}" must look like "server.tool" (a "*" matches within one part)`;
    expect(rule("  - match: get_customer", "    class: readonly")).toEqual([message("get_customer")]);
    expect(rule("  - match: crm.", "    class: readonly")).toEqual([message("crm.")]);
    expect(rule("  - match: .get", "    class: readonly")).toEqual([message(".get")]);
  });

  test("a snapshot or inverse tool is one concrete server.tool on a declared server", () => {
    const call = (part: "snapshot" | "inverse", tool: string) =>
      part === "inverse"
        ? rule("  - match: crm.a", "    class: compensable", "    inverse:", `      tool: "${tool}"`)
        : rule("  - match: crm.a", "    class: reversible", "    snapshot:", `      tool: "${tool}"`, "    inverse: { tool: crm.b }");
    expect(call("inverse", "crm.undo_*")).toEqual(['9:13: inverse tool "crm.undo_*" must name one tool as "server.tool" (no "*")']);
    expect(call("inverse", "*.delete")).toEqual(['9:13: inverse tool "*.delete" must name one tool as "server.tool" (no "*")']);
    expect(call("inverse", "delete_customer")).toEqual(['9:13: inverse tool "delete_customer" must name one tool as "server.tool" (no "*")']);
    expect(call("inverse", "mail.unsend")).toEqual(['9:13: inverse tool "mail.unsend" names an undeclared server "mail" (declared: crm)']);
    expect(call("snapshot", "crm.get_*")).toEqual(['9:13: snapshot tool "crm.get_*" must name one tool as "server.tool" (no "*")']);
    expect(call("snapshot", "db.get")).toEqual(['9:13: snapshot tool "db.get" names an undeclared server "db" (declared: crm)']);
  });

  test("a tool name may contain dots: the server is the part before the first dot", () => {
    const manifest = load(
      withRules("  - match: crm.v2.get", "    class: readonly", "  - match: crm.v2.set", "    class: compensable", "    inverse: { tool: crm.v2.unset }"),
    );
    expect(manifest.rules[1]!.inverse).toMatchObject([{ server: "crm", tool: "v2.unset" }]);
  });

  test("duplicate match strings are errors at the second one, naming the first", () => {
    expect(rule("  - match: crm.a", "    class: readonly", "  - match: crm.b", "    class: readonly", "  - match: crm.a", "    class: irreversible")).toEqual([
      '10:12: duplicate match "crm.a" (already used by the rule at line 6)',
    ]);
    // Two patterns that overlap are not duplicates: the most specific wins at call time.
    expect(load(withRules("  - match: crm.*", "    class: readonly", "  - match: crm.get_*", "    class: readonly")).rules).toHaveLength(2);
  });

  test("snapshot args may use only $ (the call's arguments)", () => {
    expect(
      rule(
        "  - match: crm.a",
        "    class: reversible",
        "    snapshot:",
        "      tool: crm.get",
        "      args:",
        "        id: $result.id",
        "        prev: $snapshot.id",
        "        ok: $.id",
        "        all: $",
        "    inverse: { tool: crm.b }",
      ),
    ).toEqual([
      "11:13: $result.id cannot be used in snapshot args (allowed here: $.)",
      "12:15: $snapshot.id cannot be used in snapshot args (allowed here: $.)",
    ]);
  });

  test("inverse args may use $, $result, and $snapshot when a snapshot is declared", () => {
    const manifest = load(
      withRules(
        "  - match: crm.a",
        "    class: reversible",
        "    snapshot: { tool: crm.get, args: { id: $.id } }",
        "    inverse:",
        "      tool: crm.b",
        "      args: { id: $.id, created: $result.id, name: $snapshot.name, args: $, result: $result, before: $snapshot }",
      ),
    );
    expect(manifest.rules[0]!.inverse![0]!.args.kind).toBe("object");
  });

  test('a reference that is not valid ("$5") is an error at the string, wherever it sits in args', () => {
    expect(
      rule(
        "  - match: crm.a",
        "    class: compensable",
        "    inverse:",
        "      tool: crm.b",
        "      args:",
        '        price: "$5"',
        "        nested: { list: [ok, $id] }",
        "        index: $.items[-1]",
      ),
    ).toEqual([
      '11:16: "$5" is not a reference (use $, $.path, $snapshot.path, $result.path, or $item.path inside $as; write $$ for a literal dollar sign)',
      '12:30: "$id" is not a reference (use $, $.path, $snapshot.path, $result.path, or $item.path inside $as; write $$ for a literal dollar sign)',
      '13:16: "$.items[-1]": [-1] is not a path step (use [n] for one item, counting from 0, or [] for every item)',
    ]);
  });

  test("cross-field rules skip a rule whose shape is wrong (its shape problem is the one reported)", () => {
    expect(rule("  - match: crm.a", "    class: reversable", "    inverse: { tool: mail.x, args: { a: $snapshot.b } }")).toEqual([
      '7:12: "class" must be one of readonly, reversible, compensable, irreversible (found "reversable")',
    ]);
  });

  test("with no usable servers, rules are not also blamed for naming an undeclared one", () => {
    expect(problems(yaml("version: 1", "servers: {}", "tools:", "  - match: crm.a", "    class: compensable", "    inverse: { tool: crm.b }"))).toEqual([
      "2:10: servers must declare at least one server",
    ]);
    expect(problems(yaml("version: 1", "tools:", "  - match: crm.a", "    class: readonly"))).toEqual(['1:1: the manifest is missing "servers"']);
  });
});

describe("command and url servers (R-MAN-1)", () => {
  const server = (...lines: string[]) => problems(yaml("version: 1", "servers:", "  crm:", ...lines));

  test("a server has a command or a url, not both and not neither", () => {
    expect(server("    command: crm-server", "    url: https://crm.example/mcp")).toEqual(['5:5: server "crm" has both "command" and "url"; choose one']);
    expect(server("    timeout: 5")).toEqual(['3:3: server "crm" needs "command" (a program to start) or "url" (a Streamable HTTP endpoint)']);
    expect(problems(yaml("version: 1", "servers:", "  crm: {}"))).toEqual([
      '3:3: server "crm" needs "command" (a program to start) or "url" (a Streamable HTTP endpoint)',
    ]);
  });

  test("headers belong to url servers; args, env, cwd and in_order to command servers", () => {
    expect(server("    command: x", "    headers: { A: b }")).toEqual(['5:5: "headers" only applies to a "url" server']);
    expect(server("    url: https://crm.example/mcp", "    args: [a]", "    env: { A: b }", "    cwd: ./data", "    in_order: true")).toEqual([
      '5:5: "args" only applies to a "command" server',
      '6:5: "env" only applies to a "command" server',
      '7:5: "cwd" only applies to a "command" server',
      '8:5: "in_order" only applies to a "command" server',
    ]);
  });

  test("in_order is true or false; only true is kept", () => {
    const parsed = (...lines: string[]) =>
      load(yaml("version: 1", "servers:", "  crm:", "    command: x", ...lines, "tools:", "  - match: crm.a", "    class: readonly")).servers.crm;
    expect(parsed("    in_order: true")).toMatchObject({ inOrder: true });
    expect(parsed("    in_order: false")).not.toHaveProperty("inOrder");
    expect(parsed()).not.toHaveProperty("inOrder");
    expect(server("    command: x", "    in_order: yes please")).toEqual([expect.stringContaining("5:15:")]);
  });

  test("a url must be an http(s) URL", () => {
    expect(server("    url: crm.example/mcp")).toEqual(['4:10: "crm.example/mcp" is not a valid URL']);
    expect(server("    url: ftp://crm.example/mcp")).toEqual(["4:10: url must start with http:// or https:// (found ftp:)"]);
  });

  test("a url server keeps its url and headers", () => {
    const manifest = load(yaml("version: 1", "servers:", "  remote:", "    url: https://crm.example/mcp", "    headers: { X-Team: core }"));
    expect(manifest.servers.remote).toEqual({
      name: "remote",
      kind: "url",
      url: "https://crm.example/mcp",
      headers: { "X-Team": "core" },
      timeoutMs: 60_000,
      line: 3,
    });
  });
});

describe("${VAR} expansion in env and headers (R-MAN-6)", () => {
  test("set variables are expanded, several per value, empty ones to nothing", () => {
    const manifest = load(
      yaml(
        "version: 1",
        "servers:",
        "  crm:",
        "    command: x",
        "    env:",
        '      TOKEN: "${CRM_TOKEN}"',
        '      URL: "https://${HOST}/api?t=${CRM_TOKEN}"',
        '      BLANK: "[${EMPTY}]"',
        '      PLAIN: "no $VARS or $(here), ${not closed"',
        "  remote:",
        "    url: https://crm.example/mcp",
        "    headers:",
        '      Authorization: "Bearer ${CRM_TOKEN}"',
      ),
    );
    expect(commandServer(manifest, "crm").env).toEqual({
      TOKEN: "s3cret",
      URL: "https://crm.example.com/api?t=s3cret",
      BLANK: "[]",
      PLAIN: "no $VARS or $(here), ${not closed",
    });
    expect(manifest.servers.remote).toMatchObject({ headers: { Authorization: "Bearer s3cret" } });
  });

  test("the manifest's env holds only its own variables (the proxy adds its environment at spawn time)", () => {
    expect(commandServer(load(yaml("version: 1", "servers:", "  crm:", "    command: x")), "crm").env).toEqual({});
  });

  test("an unset variable is an error at that key's value, one per variable", () => {
    expect(
      problems(
        yaml(
          "version: 1",
          "servers:",
          "  crm:",
          "    command: x",
          "    env:",
          '      TOKEN: "${CRM_TOKEN}"',
          '      DB: "postgres://${DB_USER}:${DB_PASS}@localhost"',
          "  remote:",
          "    url: https://crm.example/mcp",
          "    headers:",
          '      Authorization: "Bearer ${REMOTE_TOKEN}"',
        ),
      ),
    ).toEqual([
      '7:11: "DB" uses ${DB_USER}, which is not set in the environment',
      '7:11: "DB" uses ${DB_PASS}, which is not set in the environment',
      '11:22: "Authorization" uses ${REMOTE_TOKEN}, which is not set in the environment',
    ]);
  });

  test("the environment is the one passed in, not the process's", () => {
    const text = yaml("version: 1", "servers:", "  crm:", "    command: x", "    env:", '      P: "${PATH}"');
    expect(problems(text, {})).toEqual(['6:10: "P" uses ${PATH}, which is not set in the environment']);
    expect(commandServer(load(text, { PATH: "/bin" }), "crm").env).toEqual({ P: "/bin" });
  });
});

describe("relative paths (R-MAN-5)", () => {
  const server = (...lines: string[]) => commandServer(load(yaml("version: 1", "servers:", "  s:", ...lines)), "s");

  test("the working directory defaults to the manifest's folder", () => {
    expect(server("    command: crm-server").cwd).toBe("/work/project");
  });

  test("a relative cwd is resolved against the manifest's folder; an absolute one is kept", () => {
    expect(server("    command: x", "    cwd: ./data").cwd).toBe("/work/project/data");
    expect(server("    command: x", "    cwd: ../shared").cwd).toBe("/work/shared");
    expect(server("    command: x", "    cwd: /var/lib/crm").cwd).toBe("/var/lib/crm");
  });

  test("a command with a slash is resolved against the manifest's folder; a bare name is looked up on PATH", () => {
    expect(server("    command: ./bin/server").command).toBe("/work/project/bin/server");
    expect(server("    command: tools/server.sh").command).toBe("/work/project/tools/server.sh");
    expect(server("    command: ../bin/server", "    cwd: ./data").command).toBe("/work/bin/server");
    expect(server("    command: /usr/bin/env").command).toBe("/usr/bin/env");
    expect(server("    command: npx").command).toBe("npx");
  });

  test("args are passed as written: they are relative to the working directory", () => {
    expect(server("    command: x", "    args: [--state, ./crm.json]").args).toEqual(["--state", "./crm.json"]);
  });

  test("loadManifest resolves against the file's real folder, whatever the current folder", () => {
    const dir = tempDir();
    mkdirSync(join(dir, "proj"));
    writeFileSync(join(dir, "proj", "synartesis.yaml"), yaml("version: 1", "servers:", "  s:", "    command: ./server.sh", "    cwd: data"));
    const manifest = loadManifest(join(dir, "proj", "..", "proj", "synartesis.yaml"), {});
    expect(manifest.path).toBe(join(dir, "proj", "synartesis.yaml"));
    expect(manifest.dir).toBe(join(dir, "proj"));
    expect(commandServer(manifest, "s")).toMatchObject({ command: join(dir, "proj", "server.sh"), cwd: join(dir, "proj", "data") });
  });
});

describe("gate defaults (R-CLASS-2)", () => {
  test("irreversible defaults to always, every other class to never; an explicit gate wins", () => {
    const manifest = load(
      withRules(
        "  - match: crm.get",
        "    class: readonly",
        "  - match: crm.update",
        "    class: reversible",
        "    snapshot: { tool: crm.get }",
        "    inverse: { tool: crm.update }",
        "  - match: crm.create",
        "    class: compensable",
        "    inverse: { tool: crm.delete }",
        "  - match: crm.send",
        "    class: irreversible",
        "  - match: crm.query",
        "    class: readonly",
        "    gate: on_write",
        "  - match: crm.purge",
        "    class: irreversible",
        "    gate: never",
        "  - match: crm.rename",
        "    class: reversible",
        "    gate: always",
        "    snapshot: { tool: crm.get }",
        "    inverse: { tool: crm.rename }",
      ),
    );
    expect(manifest.rules.map((r) => [r.match, r.gate])).toEqual([
      ["crm.get", "never"],
      ["crm.update", "never"],
      ["crm.create", "never"],
      ["crm.send", "always"],
      ["crm.query", "on_write"],
      ["crm.purge", "never"],
      ["crm.rename", "always"],
    ]);
  });

  test("each rule remembers its line", () => {
    const manifest = load(withRules("  - match: crm.a", "    class: readonly", "", "  # a comment", "  - match: crm.b", "    class: readonly"));
    expect(manifest.rules.map((r) => r.line)).toEqual([6, 10]);
  });
});

describe("YAML and the file as a whole (R-MAN-2)", () => {
  test("a YAML syntax error is reported with its position", () => {
    expect(problems(yaml("version: 1", "servers:", "  crm:", "    command: x", "   args: []"))).toEqual([
      "5:1: YAML syntax error: All mapping items must start at the same column",
    ]);
    expect(problems(yaml("version: 1", "servers:", "\tcrm:", "    command: x"))).toEqual(["3:1: YAML syntax error: Tabs are not allowed as indentation"]);
    expect(problems(yaml("version: 1", "servers:", "  crm:", "    command: a: b"))).toEqual([
      "4:14: YAML syntax error: Nested mappings are not allowed in compact mappings",
    ]);
  });

  test("a repeated key is a YAML error at the second one", () => {
    expect(problems(yaml("version: 1", "servers:", "  crm:", "    command: x", "  crm:", "    command: y"))).toEqual([
      "5:3: YAML syntax error: Map keys must be unique",
    ]);
  });

  test("several YAML documents in one file are refused", () => {
    expect(problems(yaml("version: 1", "servers:", "  crm:", "    command: x", "---", "version: 1"))).toEqual([
      "5:1: YAML syntax error: Source contains multiple documents; please use YAML.parseAllDocuments()",
    ]);
  });

  test("an alias to an anchor that was never set is an error at the alias", () => {
    expect(problems(yaml("version: 1", "servers:", "  crm: *base"))).toEqual([
      "3:8: YAML error: Unresolved alias (the anchor must be set before the alias): base",
    ]);
  });

  test("an empty file, or one with only comments, says what it needs", () => {
    const message = '1:1: the manifest is empty; it needs at least "version: 1" and "servers"';
    expect(problems("")).toEqual([message]);
    expect(problems(yaml("# nothing yet", ""))).toEqual([message]);
    expect(problems(yaml("~"))).toEqual([message]);
  });

  test("a file that is a list or a scalar is not a manifest", () => {
    expect(problems(yaml("- version: 1", "- servers: {}"))).toEqual(['1:1: the manifest must be a map with "version", "servers" and "tools", found a list']);
    expect(problems(yaml("synartesis"))).toEqual(['1:1: the manifest must be a map with "version", "servers" and "tools", found a string']);
  });

  test("all problems of one file are reported together, sorted by position, in one error", () => {
    let caught: unknown;
    try {
      load(
        yaml(
          "version: 1",
          "servers:",
          "  crm:",
          "    command: x",
          '    env: { TOKEN: "${NOPE}" }',
          "  mail.out:",
          "    url: https://mail.example/mcp",
          "tools:",
          "  - match: crm.send_*",
          "    class: irreversible",
          "    colour: red",
          "  - match: crm.update",
          "    class: reversible",
          "    snapshot: { tool: crm.get, args: { id: $result.id } }",
          "    inverse: { tool: crm.update, args: { price: $5 } }",
          "  - match: crm.create",
          "    class: compensable",
          "  - match: crm.send_*",
          "    class: irreversible",
          "  - match: files.write",
          "    class: readonly",
        ),
      );
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ManifestError);
    expect(caught).toBeInstanceOf(SynartesisError);
    const error = caught as ManifestError;
    expect(error.code).toBe("manifest");
    expect(error.message).toBe(`${FILE}: 8 problems`);
    expect(error.details).toEqual([
      `${FILE}:5:19: "TOKEN" uses \${NOPE}, which is not set in the environment`,
      `${FILE}:6:3: server name "mail.out" must not be empty or contain "." or "__" (they separate server and tool names)`,
      `${FILE}:11:5: unknown key "colour" in a tool rule (allowed: match, when, class, gate, snapshot, inverse, when_absent, idempotent, approvers, sql)`,
      `${FILE}:14:44: $result.id cannot be used in snapshot args (allowed here: $.)`,
      `${FILE}:15:49: "$5" is not a reference (use $, $.path, $snapshot.path, $result.path, or $item.path inside $as; write $$ for a literal dollar sign)`,
      `${FILE}:16:5: a compensable rule needs an "inverse" (the call that puts the state back)`,
      `${FILE}:18:12: duplicate match "crm.send_*" (already used by the rule at line 9)`,
      `${FILE}:20:12: match "files.write" names no declared server (declared: crm, mail.out)`,
    ]);
    expect(error.problems.map((p) => [p.line, p.col])).toEqual([...error.problems.map((p) => [p.line, p.col])].sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!));
  });

  test("one problem is the whole message, with no extra lines", () => {
    let caught: unknown;
    try {
      load(yaml("version: 3", "servers:", "  crm:", "    command: x"));
    } catch (error) {
      caught = error;
    }
    expect((caught as ManifestError).message).toBe(`${FILE}:1:10: "version" must be 1 (found 3)`);
    expect((caught as ManifestError).details).toEqual([]);
  });

  test("a file that does not exist is a manifest error with a hint", () => {
    const dir = tempDir();
    let caught: unknown;
    try {
      loadManifest(join(dir, "synartesis.yaml"));
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(SynartesisError);
    expect((caught as SynartesisError).code).toBe("manifest");
    expect((caught as SynartesisError).message).toBe(`there is no manifest at ${join(dir, "synartesis.yaml")}`);
    expect((caught as SynartesisError).hint).toContain("synartesis init");
  });
});

// Each row: a manifest with exactly one problem, the position a person should be
// sent to, and the whole message. The deepest node that exists is blamed: the key
// for an unknown or misplaced key, the value for a bad value, the map for a missing
// key, the string itself for a reference.
type Row = { name: string; text: string; at: string; message: string; env?: Record<string, string> };

const SERVER = ["version: 1", "servers:", "  crm:"];
const RULE = (...lines: string[]) => withRules("  - match: crm.update", ...lines);

const malformed: Row[] = [
  {
    name: "unknown top-level key",
    text: yaml("version: 1", "servers:", "  crm:", "    command: x", "policy: strict"),
    at: "5:1",
    message: 'unknown key "policy" in the manifest (allowed: version, servers, tools, journal, review_page, notify, groups)',
  },
  {
    name: "unknown server key (a typo of args)",
    text: yaml(...SERVER, "    command: x", "    arguments: [a]"),
    at: "5:5",
    message: 'unknown key "arguments" in server "crm" (allowed: command, args, env, cwd, url, headers, auth, timeout, timeout_max, in_order)',
  },
  {
    name: "unknown rule key",
    text: RULE("    class: readonly", "    reason: safe"),
    at: "8:5",
    message: 'unknown key "reason" in a tool rule (allowed: match, when, class, gate, snapshot, inverse, when_absent, idempotent, approvers, sql)',
  },
  {
    name: "unknown snapshot key",
    text: RULE("    class: reversible", "    snapshot:", "      tool: crm.get", "      arguments: {}", "    inverse: { tool: crm.update }"),
    at: "10:7",
    message: 'unknown key "arguments" in snapshot (allowed: tool, args, absent_when, absent_text, as_text)',
  },
  {
    name: "unknown inverse key",
    text: RULE("    class: compensable", "    inverse:", "      tool: crm.delete", "      absentWhen: gone"),
    at: "10:7",
    message: 'unknown key "absentWhen" in inverse (allowed: tool, args, absent_when, absent_text, as_text)',
  },
  { name: "missing version", text: yaml("servers:", "  crm:", "    command: x"), at: "1:1", message: 'the manifest is missing "version"' },
  { name: "wrong version", text: yaml("version: 2", "servers:", "  crm:", "    command: x"), at: "1:10", message: '"version" must be 1 (found 2)' },
  { name: "version as a string", text: yaml('version: "1"', "servers:", "  crm:", "    command: x"), at: "1:10", message: '"version" must be 1 (found "1")' },
  { name: "no servers", text: yaml("version: 1", "servers: {}"), at: "2:10", message: "servers must declare at least one server" },
  { name: "servers as a list", text: yaml("version: 1", "servers:", "  - command: x"), at: "3:3", message: '"servers" must be a map, found a list' },
  {
    name: "server name with a dot",
    text: yaml("version: 1", "servers:", "  crm.prod:", "    command: x"),
    at: "3:3",
    message: 'server name "crm.prod" must not be empty or contain "." or "__" (they separate server and tool names)',
  },
  {
    name: "server name with a double underscore",
    text: yaml("version: 1", "servers:", "  crm__prod:", "    command: x"),
    at: "3:3",
    message: 'server name "crm__prod" must not be empty or contain "." or "__" (they separate server and tool names)',
  },
  {
    name: "command and url",
    text: yaml(...SERVER, "    command: x", "    url: http://localhost:3000/mcp"),
    at: "5:5",
    message: 'server "crm" has both "command" and "url"; choose one',
  },
  {
    name: "neither command nor url",
    text: yaml(...SERVER, "    args: [serve]"),
    at: "3:3",
    message: 'server "crm" needs "command" (a program to start) or "url" (a Streamable HTTP endpoint)',
  },
  {
    name: "headers on a command server",
    text: yaml(...SERVER, "    command: x", "    headers:", "      X-Key: k"),
    at: "5:5",
    message: '"headers" only applies to a "url" server',
  },
  {
    name: "args on a url server",
    text: yaml(...SERVER, "    url: http://localhost:3000/mcp", "    args: [--verbose]"),
    at: "5:5",
    message: '"args" only applies to a "command" server',
  },
  {
    name: "url that is not a URL",
    text: yaml(...SERVER, "    url: localhost:3000/mcp"),
    at: "4:10",
    message: "url must start with http:// or https:// (found localhost:)",
  },
  {
    name: "args item not a string",
    text: yaml(...SERVER, "    command: x", "    args:", "      - --port", "      - 8080"),
    at: "7:9",
    message: 'item 2 of "args" must be a string, found a number',
  },
  {
    name: "timeout not positive",
    text: yaml(...SERVER, "    command: x", "    timeout: 0"),
    at: "5:14",
    message: '"timeout" must be a positive number of seconds',
  },
  {
    name: "unset variable in env",
    text: yaml(...SERVER, "    command: x", "    env:", "      API_KEY: ${CRM_API_KEY}"),
    at: "6:16",
    message: '"API_KEY" uses ${CRM_API_KEY}, which is not set in the environment',
  },
  {
    name: "unset variable in headers",
    text: yaml(...SERVER, "    url: https://crm.example/mcp", "    headers:", "      Authorization: Bearer ${CRM_API_KEY}"),
    at: "6:22",
    message: '"Authorization" uses ${CRM_API_KEY}, which is not set in the environment',
  },
  { name: "tools as a map", text: yaml(...HEAD, "  crm.update: reversible"), at: "6:3", message: '"tools" must be a list, found a map' },
  { name: "rule without class", text: withRules("  - match: crm.update"), at: "6:5", message: 'this rule is missing "class"' },
  { name: "rule without match", text: withRules("  - class: readonly"), at: "6:5", message: 'this rule is missing "match"' },
  {
    name: "unknown class",
    text: RULE("    class: undoable"),
    at: "7:12",
    message: '"class" must be one of readonly, reversible, compensable, irreversible (found "undoable")',
  },
  {
    name: "unknown gate",
    text: RULE("    class: irreversible", "    gate: ask"),
    at: "8:11",
    message: '"gate" must be one of always, on_write, never (found "ask")',
  },
  {
    name: "reversible without inverse",
    text: RULE("    class: reversible", "    snapshot: { tool: crm.get }"),
    at: "6:5",
    message: 'a reversible rule needs an "inverse" (the call that puts the state back)',
  },
  {
    name: "compensable without inverse",
    text: RULE("    class: compensable"),
    at: "6:5",
    message: 'a compensable rule needs an "inverse" (the call that puts the state back)',
  },
  {
    name: "readonly with inverse",
    text: RULE("    class: readonly", "    inverse:", "      tool: crm.update"),
    at: "8:5",
    message: "a readonly rule has no inverse; remove it or change the class",
  },
  {
    name: "irreversible with inverse",
    text: RULE("    class: irreversible", "    inverse:", "      tool: crm.update"),
    at: "8:5",
    message: "an irreversible rule has no inverse; remove it or change the class",
  },
  {
    name: "readonly with snapshot",
    text: RULE("    class: readonly", "    snapshot:", "      tool: crm.get"),
    at: "8:5",
    message: "a readonly rule changes nothing, so it takes no snapshot",
  },
  {
    name: "inverse reads $snapshot without a snapshot",
    text: RULE("    class: compensable", "    inverse:", "      tool: crm.update", "      args:", "        name: $snapshot.name"),
    at: "11:15",
    message: '$snapshot.name reads the snapshot, but this rule declares no "snapshot"',
  },
  {
    name: "embedded $snapshot without a snapshot",
    text: RULE("    class: compensable", "    inverse:", "      tool: crm.update", "      args:", '        note: "undo of $snapshot.id by agent"'),
    at: "11:15",
    message: '$snapshot.id reads the snapshot, but this rule declares no "snapshot"',
  },
  {
    name: "match on an undeclared server",
    text: withRules("  - match: github.create_issue", "    class: compensable", "    inverse: { tool: crm.delete }"),
    at: "6:12",
    message: 'match "github.create_issue" names no declared server (declared: crm)',
  },
  {
    name: "match without a server part",
    text: withRules("  - match: update_customer", "    class: readonly"),
    at: "6:12",
    message: 'match "update_customer" must look like "server.tool" (a "*" matches within one part)',
  },
  {
    name: "snapshot tool with a wildcard",
    text: RULE("    class: reversible", "    snapshot:", "      tool: crm.get_*", "    inverse: { tool: crm.update }"),
    at: "9:13",
    message: 'snapshot tool "crm.get_*" must name one tool as "server.tool" (no "*")',
  },
  {
    name: "inverse tool on an undeclared server",
    text: RULE("    class: compensable", "    inverse:", "      tool: billing.refund"),
    at: "9:13",
    message: 'inverse tool "billing.refund" names an undeclared server "billing" (declared: crm)',
  },
  {
    name: "inverse tool without a server",
    text: RULE("    class: compensable", "    inverse:", "      tool: delete_customer"),
    at: "9:13",
    message: 'inverse tool "delete_customer" must name one tool as "server.tool" (no "*")',
  },
  {
    name: "inverse without tool",
    text: RULE("    class: compensable", "    inverse:", "      args: { id: $result.id }"),
    at: "9:7",
    message: '"inverse" is missing "tool"',
  },
  {
    name: "duplicate match",
    text: withRules("  - match: crm.update", "    class: irreversible", "  - match: crm.update", "    class: irreversible"),
    at: "8:12",
    message: 'duplicate match "crm.update" (already used by the rule at line 6)',
  },
  {
    name: '"$5" in args',
    text: RULE("    class: compensable", "    inverse:", "      tool: crm.update", "      args:", '        amount: "$5"'),
    at: "11:17",
    message: '"$5" is not a reference (use $, $.path, $snapshot.path, $result.path, or $item.path inside $as; write $$ for a literal dollar sign)',
  },
  {
    name: "$result in snapshot args",
    text: RULE("    class: reversible", "    snapshot:", "      tool: crm.get", "      args:", "        id: $result.id", "    inverse: { tool: crm.update }"),
    at: "11:13",
    message: "$result.id cannot be used in snapshot args (allowed here: $.)",
  },
  {
    name: "$snapshot in snapshot args",
    text: RULE("    class: reversible", "    snapshot:", "      tool: crm.get", "      args: { id: $snapshot.id }", "    inverse: { tool: crm.update }"),
    at: "10:19",
    message: "$snapshot.id cannot be used in snapshot args (allowed here: $.)",
  },
  {
    name: "a negative index",
    text: RULE("    class: compensable", "    inverse:", "      tool: crm.update", "      args:", "        id: $result.items[-1].id"),
    at: "11:13",
    message: '"$result.items[-1]": [-1] is not a path step (use [n] for one item, counting from 0, or [] for every item)',
  },
  {
    name: "absent_when empty list",
    text: RULE("    class: reversible", "    snapshot:", "      tool: crm.get", "      absent_when: []", "    inverse: { tool: crm.update }"),
    at: "10:20",
    message: '"absent_when" must be a string or a non-empty list of strings',
  },
  {
    name: "YAML syntax error",
    text: yaml("version: 1", "servers:", "  crm:", '    command: "crm-server', "tools: []"),
    at: "6:1",
    message: 'YAML syntax error: Missing closing "quote',
  },
  { name: "empty file", text: "", at: "1:1", message: 'the manifest is empty; it needs at least "version: 1" and "servers"' },
  {
    name: "a file that is a list",
    text: yaml("- crm.get_customer", "- crm.update_customer"),
    at: "1:1",
    message: 'the manifest must be a map with "version", "servers" and "tools", found a list',
  },
  {
    name: "unresolved alias",
    text: yaml("version: 1", "servers:", "  crm:", "    command: x", "tools:", "  - *readonly"),
    at: "6:5",
    message: "YAML error: Unresolved alias (the anchor must be set before the alias): readonly",
  },
];

describe(`malformed manifests: file:line:col and the whole message (${malformed.length} cases)`, () => {
  test("the table is large enough and every name is unique", () => {
    expect(malformed.length).toBeGreaterThanOrEqual(25);
    expect(new Set(malformed.map((row) => row.name)).size).toBe(malformed.length);
  });

  for (const row of malformed) {
    test(row.name, () => {
      expect(onlyProblem(row.text, row.env ?? ENV)).toBe(`${FILE}:${row.at}: ${row.message}`);
    });
  }
});
