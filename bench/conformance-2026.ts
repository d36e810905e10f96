// The 2026-07-28 server scenarios of the official MCP conformance suite,
// version 0.2.0-alpha.12 (the `conformance-2026` dev dependency, beside the
// 0.1.16 one that bench/conformance.ts runs): `server --spec-version 2026-07-28
// --suite all`, the suite speaking the 2026-07-28 wire (sessionless, no
// initialize). The upstream is test/fixtures/conformance-server-v2.ts, built on
// the v2 SDK. Columns, side by side as in bench/conformance.ts:
//   control                        the fixture served over HTTP by the v2 SDK itself
//                                  (createMcpHandler, 2026-07-28 only)
//   control via bearer forwarder   the same, behind the forwarder that adds a bearer token
//   proxy --http, command: server  dist/synartesis proxy --http 0 with the fixture as a stdio
//                                  upstream (test/fixtures/conformance-2026.yaml), through the
//                                  bearer forwarder (the suite cannot send a token)
//   proxy --http, url: server      dist/synartesis proxy --http 0 with the control's URL as a
//                                  `url:` upstream, through the bearer forwarder
// (The stdio columns of bench/conformance.ts go through test/fixtures/stdio-over-http.ts,
// which the v1 SDK serves in the 2025 era only; they have no 2026-07-28 counterpart here.)
//
//   bun bench/conformance-2026.ts [--scenario NAME]…
// Exit 0 when every scenario that passes for the control passes for every
// other column, 1 when one does not, 2 when it could not run (no Node 22…).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { behindBearer, compare, comparisonMain, ROOT, serve, type Column, type Suite, type Target, type Workspace } from "./conformance.ts";

const BUN = process.execPath;
const BIN = join(ROOT, "dist", "synartesis");
const FIXTURES = join(ROOT, "test", "fixtures");
const FIXTURE = join(FIXTURES, "conformance-server-v2.ts");
const MANIFEST = join(FIXTURES, "conformance-2026.yaml");
const FORWARDER_TOKEN = "conformance-2026-bench-token-0123456789";
export const SPEC_VERSION = "2026-07-28";

/** conformance 0.2.0-alpha.12, its server scenarios that apply to 2026-07-28 (pending ones too: `--suite all`). */
export const SUITE_2026: Suite = {
  path: join(ROOT, "node_modules", "conformance-2026", "dist", "index.js"),
  list: ["list", "--server", "--spec-version", SPEC_VERSION],
  all: ["--spec-version", SPEC_VERSION, "--suite", "all"],
  each: ["--spec-version", SPEC_VERSION],
  title: `MCP conformance suite 0.2.0-alpha.12, server scenarios of ${SPEC_VERSION} (%d), upstream test/fixtures/conformance-server-v2.ts`,
};

const control = (ws: Workspace, name: string) => serve(ws, name, [BUN, FIXTURE, "--http"]);

function proxyHttp(ws: Workspace, name: string, manifest: string): Promise<Target> {
  return serve(ws, name, [BIN, "proxy", "--http", "0", "--manifest", manifest, "--journal", join(ws.dir, `${name}.db`)], { SYNARTESIS_TOKEN: FORWARDER_TOKEN });
}

/** The control, and the proxy with the control's URL as its `url:` server "conformance" (same rules as the command: manifest). */
async function proxyOfUrl(ws: Workspace): Promise<Target> {
  const upstream = await control(ws, "url-upstream");
  try {
    const manifest = join(ws.dir, "conformance-2026-url.yaml");
    writeFileSync(
      manifest,
      [
        "version: 1",
        "servers:",
        "  conformance:",
        `    url: ${upstream.url}`,
        "tools:",
        '  - match: "conformance.test_*"',
        "    class: readonly",
        '  - match: "conformance.json_schema_2020_12_tool"',
        "    class: readonly",
        "",
      ].join("\n"),
    );
    const proxy = behindBearer(FORWARDER_TOKEN, await proxyHttp(ws, "proxy-http-url", manifest));
    return {
      url: proxy.url,
      async stop() {
        await proxy.stop();
        await upstream.stop();
      },
    };
  } catch (error) {
    await upstream.stop();
    throw error;
  }
}

export const COLUMNS_2026: Column[] = [
  { name: "control", start: (ws) => control(ws, "control") },
  { name: "control via bearer forwarder", start: async (ws) => behindBearer(FORWARDER_TOKEN, await control(ws, "control-fwd")) },
  { name: "proxy --http, command: server", start: async (ws) => behindBearer(FORWARDER_TOKEN, await proxyHttp(ws, "proxy-http-command", MANIFEST)) },
  { name: "proxy --http, url: server", start: proxyOfUrl },
];

export function compare2026(options: { columns?: Column[]; only?: string[]; progress?: (line: string) => void } = {}) {
  return compare({ suite: SUITE_2026, columns: COLUMNS_2026, ...options });
}

if (import.meta.main) await comparisonMain("conformance-2026", (only) => compare2026({ only, progress: (line) => console.error(line) }));
