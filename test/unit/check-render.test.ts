// check's report (render/check.ts) from a fixed manifest, fixed tool lists and
// fixed start failures: every section, plain and coloured, and the exit code.
import { describe, expect, test } from "bun:test";
import { parseManifest } from "../../src/manifest/load.ts";
import { checkExitCode, renderCheck, type CheckFindings } from "../../src/render/check.ts";
import { colours, plain } from "../../src/render/style.ts";

const FILE = "/home/ada/crm/synartesis.yaml";
const yaml = (...lines: string[]) => lines.join("\n") + "\n";

const MANIFEST = parseManifest(
  yaml(
    "version: 1",
    "servers:",
    "  crm:",
    "    command: synartesis",
    '    args: ["toy-crm", "--state", "./crm.json"]',
    "  notes:",
    "    url: https://notes.example/mcp",
    "    headers:",
    '      Authorization: "Bearer ${NOTES_TOKEN}"',
    "tools:",
    "  - match: crm.get_customer",
    "    class: readonly",
    "  - match: crm.update_customer",
    "    class: reversible",
    "    snapshot: { tool: crm.get_customer, args: { id: $.id } }",
    "    inverse: { tool: crm.update_customer, args: { id: $.id, name: $snapshot.name } }",
    "  - match: crm.send_*",
    "    class: irreversible",
    "  - match: crm.updte_customer",
    "    class: irreversible",
    "  - match: notes.put_note",
    "    class: compensable",
    "    gate: on_write",
    "    inverse: { tool: notes.remove_note, args: { id: $result.id } }",
  ),
  FILE,
  {},
  { unsetVariables: "warn" },
);

const CRM_TOOLS = new Set(["create_customer", "delete_customer", "get_customer", "restore_customer", "send_email", "update_customer"]);

const render = (findings: CheckFindings, style = plain) => renderCheck(findings, style).join("\n");

describe("renderCheck", () => {
  test("both servers up, one tool missing: every section, and exit 2", () => {
    const findings = {
      manifest: MANIFEST,
      tools: new Map([
        ["crm", CRM_TOOLS],
        ["notes", new Set(["get_note", "put_note"])],
      ]),
      failures: [],
    };
    expect(render(findings)).toMatchInlineSnapshot(`
      "Manifest /home/ada/crm/synartesis.yaml

      Servers
        crm    synartesis toy-crm --state ./crm.json  6 tools
        notes  https://notes.example/mcp              2 tools

      Rules  5 in all: 1 readonly, 1 reversible, 1 compensable, 2 irreversible

      Gated (a person approves each call, or each write for on_write)
        crm.send_*  irreversible, gate: always  → crm.send_email
        crm.updte_customer  irreversible, gate: always
        notes.put_note  compensable, gate: on_write  → notes.put_note

      Not covered by any rule (treated as irreversible and gated, like any tool a manifest does not mention): crm.create_customer, crm.delete_customer, crm.restore_customer, notes.get_note

      Rules that match none of their server's tools (a typo? the tools they meant fall to other rules):
        /home/ada/crm/synartesis.yaml:19: crm.updte_customer

      Snapshots without absent_when: any error of the read is taken to mean "does not exist", so a record that could not be read (a timeout, a refused permission) is taken for a missing one, and the call is offered for approval as a creation:
        /home/ada/crm/synartesis.yaml:15:23: crm.get_customer, the snapshot of "crm.update_customer": this server says "no customer with id" when a record does not exist: add absent_when: "no customer with id"

      Variables not set here (the proxy will not start until the environment its client gives it sets them):
        /home/ada/crm/synartesis.yaml:9:22: "Authorization" uses \${NOTES_TOKEN}, which is not set in the environment

      1 problem: the manifest names tools its servers do not have
        /home/ada/crm/synartesis.yaml:24:22: the inverse of "notes.put_note" calls notes.remove_note, but server "notes" has no tool "remove_note" (it has: get_note, put_note)
      Note: check proves that each tool exists. It calls none of them, so it cannot prove that a path such as $snapshot.email resolves; that is only known when a call runs (an unresolved inverse is recorded as a warning)."
    `);
    expect(checkExitCode(findings)).toBe(2);
  });

  test("a server that did not start: its failure and stderr lines at the end, made printable, and exit 1", () => {
    const findings = {
      manifest: MANIFEST,
      tools: new Map([["crm", CRM_TOOLS]]),
      failures: [['server "notes" would not start: it answered 503 Service Unavailable', "its body said:", "down for \x1b[31mmaintenance"]],
    };
    const lines = renderCheck(findings, plain);
    expect(lines.find((l) => l.startsWith("  notes"))).toBe("  notes  https://notes.example/mcp              did not start");
    expect(lines).not.toContain("Every snapshot and inverse tool the manifest names exists.");
    expect(lines.slice(-4)).toEqual([
      'server "notes" would not start: it answered 503 Service Unavailable',
      "  its body said:",
      "  down for \\x1b[31mmaintenance",
      expect.stringMatching(/^Note: check proves/),
    ]);
    expect(checkExitCode(findings)).toBe(1);
  });

  test("everything there: the verdict, exit 0; coloured headings and verdict on a terminal", () => {
    const manifest = parseManifest(
      yaml("version: 1", "servers:", "  crm:", "    command: synartesis", "tools:", "  - match: crm.*", "    class: readonly"),
      FILE,
      {},
    );
    const findings = { manifest, tools: new Map([["crm", CRM_TOOLS]]), failures: [] };
    expect(render(findings)).toMatchInlineSnapshot(`
      "Manifest /home/ada/crm/synartesis.yaml

      Servers
        crm  synartesis  6 tools

      Rules  1 in all: 1 readonly, 0 reversible, 0 compensable, 0 irreversible

      Gated (a person approves each call, or each write for on_write)
        (no rule is gated)

      Not covered by any rule (treated as irreversible and gated, like any tool a manifest does not mention): none

      Every snapshot and inverse tool the manifest names exists.
      Note: check proves that each tool exists. It calls none of them, so it cannot prove that a path such as $snapshot.email resolves; that is only known when a call runs (an unresolved inverse is recorded as a warning)."
    `);
    expect(checkExitCode(findings)).toBe(0);
    const coloured = renderCheck(findings, colours);
    expect(coloured[0]).toBe(`${colours.bold("Manifest")} ${FILE}`);
    expect(coloured).toContain(colours.green("Every snapshot and inverse tool the manifest names exists."));
  });
});
