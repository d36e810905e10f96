// The official MCP conformance suite (server scenarios, --suite all) against
// every column of bench/conformance.ts: the fixture served over HTTP by the
// SDK (the control) and each other way of serving it, the built
// `synartesis proxy` among them. A whole-system check: it needs Node 22, so
// .ci/run installs that first; without it this fails, never skips.
import { beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { compare, COLUMNS, outcome, regressions, renderReport, serve, type Comparison } from "../../bench/conformance.ts";
import { BUN, FIXTURES } from "../fixtures/proxy-kit.ts";
import { BIN, NODE_MODULES } from "../helpers.ts";

let comparison: Comparison;

beforeAll(async () => {
  comparison = await compare({ progress: (line) => console.log(line) });
  console.log(renderReport(comparison));
}, 15 * 60_000);

const control = () => comparison.columns[0]!;

test("the control passes every server scenario of the suite (the fixture offers all that they call)", () => {
  expect(comparison.scenarios.length).toBeGreaterThanOrEqual(32);
  expect(comparison.scenarios).toContain("dns-rebinding-protection");
  expect(comparison.scenarios.filter((scenario) => !outcome(control(), scenario).passed)).toEqual([]);
});

describe("every scenario that passes for the control passes", () => {
  for (const column of COLUMNS.slice(1)) {
    test(column.name, () => {
      const result = comparison.columns.find((candidate) => candidate.name === column.name)!;
      expect(comparison.scenarios.filter((scenario) => outcome(control(), scenario).passed && !outcome(result, scenario).passed)).toEqual([]);
    });
  }
});

test(
  "the comparison fails a column that does not pass what the control passes: server-everything behind the bridge",
  async () => {
    const everything = join(NODE_MODULES, "@modelcontextprotocol", "server-everything", "dist", "index.js");
    const [controlColumn] = COLUMNS;
    const other = await compare({
      only: ["ping", "json-schema-2020-12"],
      columns: [
        controlColumn!,
        { name: "server-everything", start: (ws) => serve(ws, "everything", [BUN, join(FIXTURES, "stdio-over-http.ts"), "node", everything, "stdio"]) },
      ],
    });
    expect(other.columns.map((column) => other.scenarios.map((scenario) => outcome(column, scenario).passed))).toEqual([
      [true, true],
      [true, false],
    ]);
    expect(regressions(other)).toEqual(["server-everything: json-schema-2020-12"]);
  },
  5 * 60_000,
);

test(
  "a server of both eras (the v2 SDK's, over stdio): every 2025 scenario that passes directly passes through the proxy",
  async () => {
    const v2 = join(FIXTURES, "conformance-server-v2.ts");
    const result = await compare({
      columns: [
        { name: "both-era server via bridge", start: (ws) => serve(ws, "both-eras", [BUN, join(FIXTURES, "stdio-over-http.ts"), BUN, v2]) },
        {
          name: "both-era server, proxy via bridge",
          start: (ws) =>
            serve(ws, "both-eras-proxy", [
              BUN,
              join(FIXTURES, "stdio-over-http.ts"),
              BIN,
              "proxy",
              "--manifest",
              join(FIXTURES, "conformance-2026.yaml"),
              "--journal",
              ws.journal,
            ]),
        },
      ],
    });
    console.log(renderReport(result));
    // The suite is a 2025-era client: it gets the server in 2025 (issue 28 item 5), and nothing the server offers is lost on the way.
    expect(regressions(result)).toEqual([]);
    expect(result.scenarios.filter((scenario) => outcome(result.columns[0]!, scenario).passed).length).toBeGreaterThanOrEqual(25);
  },
  15 * 60_000,
);
