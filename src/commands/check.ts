// `synartesis check`: load the manifest, start each server, and prove every
// snapshot and inverse tool it names exists (R-CLI-3, R-MAN-7).
import { defineCommand } from "citty";
import { findManifest } from "../manifest/discover.ts";
import { loadManifest } from "../manifest/load.ts";
import { createMatcher } from "../manifest/match.ts";
import { TOOL_CLASSES, type Manifest, type ServerSpec } from "../manifest/types.ts";
import { missingTools, unusedRules } from "../manifest/verify.ts";
import { createLogger } from "../proxy/log.ts";
import { startFailure, Upstream } from "../proxy/upstream.ts";
import { callName, printable, styleFor, table } from "../render/style.ts";
import { VERSION } from "../version.ts";
import { manifestArg, writeLines } from "./shared.ts";

function describeServer(spec: ServerSpec): string {
  return spec.kind === "command" ? [spec.command, ...spec.args].join(" ") : spec.url;
}

async function listTools(manifest: Manifest): Promise<{ tools: Map<string, Set<string>>; failures: string[][] }> {
  const tools = new Map<string, Set<string>>();
  // By server, so failures print in manifest order however the starts race.
  const failures = new Map<string, string[]>();
  await Promise.all(
    Object.values(manifest.servers).map(async (spec) => {
      const upstream = new Upstream(spec, { log: createLogger("silent"), onMessage: () => {} });
      try {
        const init = await upstream.start({ protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "synartesis-check", version: VERSION } });
        const listed = init?.capabilities?.tools ? await upstream.listAll("tools/list", "tools") : [];
        tools.set(spec.name, new Set(listed.map((t: { name: string }) => t.name)));
      } catch (error) {
        const failure = startFailure(upstream, error);
        failures.set(spec.name, [failure.message, ...failure.details]);
      } finally {
        await upstream.stop();
      }
    }),
  );
  return { tools, failures: Object.keys(manifest.servers).flatMap((name) => (failures.has(name) ? [failures.get(name)!] : [])) };
}

export default defineCommand({
  meta: {
    name: "check",
    description: "Load the manifest, start each server and verify that every snapshot and inverse tool it names exists.",
  },
  args: { ...manifestArg },
  async run({ args }) {
    const style = styleFor();
    const manifest = loadManifest(findManifest(process.cwd(), args.manifest));
    const { tools, failures } = await listTools(manifest);
    const missing = missingTools(manifest, tools);
    const matcher = createMatcher(manifest);

    const lines = [`${style.bold("Manifest")} ${manifest.path}`, "", style.bold("Servers")];
    const serverRows = Object.values(manifest.servers).map((spec) => {
      const listed = tools.get(spec.name);
      return [`  ${spec.name}`, describeServer(spec), listed ? `${listed.size} tools` : style.red("did not start")];
    });
    lines.push(...table(serverRows));

    const counts = TOOL_CLASSES.map((c) => `${manifest.rules.filter((r) => r.class === c).length} ${c}`);
    lines.push("", `${style.bold("Rules")}  ${manifest.rules.length} in all: ${counts.join(", ")}`);

    const gatedRules = manifest.rules.filter((r) => r.gate !== "never");
    lines.push("", style.bold("Gated (a person approves each call, or each write for on_write)"));
    if (gatedRules.length === 0) lines.push("  (no rule is gated)");
    for (const rule of gatedRules) {
      // Every server's tools: the server part of a match may itself be a pattern.
      const hits = [...tools].flatMap(([server, names]) => [...names].filter((t) => matcher.classify(server, t).rule === rule).map((tool) => callName({ server, tool })));
      lines.push(`  ${rule.match}  ${rule.class}, gate: ${rule.gate}${hits.length ? `  → ${hits.join(", ")}` : ""}`);
    }
    const uncovered = [...tools].flatMap(([server, names]) => [...names].filter((t) => !matcher.classify(server, t).rule).map((tool) => callName({ server, tool })));
    lines.push(
      "",
      `${style.bold("Not covered by any rule")} (treated as irreversible and gated, like any tool a manifest does not mention): ${
        uncovered.length ? uncovered.sort().join(", ") : "none"
      }`,
    );

    const unused = unusedRules(manifest, tools);
    if (unused.length) {
      lines.push("", style.yellow("Rules that match none of their server's tools (a typo? the tools they meant fall to other rules):"));
      lines.push(...unused.map((rule) => `  ${manifest.path}:${rule.line}: ${rule.match}`));
    }

    lines.push("");
    if (missing.length) {
      lines.push(style.red(`${missing.length} problem${missing.length === 1 ? "" : "s"}: the manifest names tools its servers do not have`));
      lines.push(...missing.map((m) => `  ${printable(m)}`));
    } else if (failures.length === 0) {
      lines.push(style.green("Every snapshot and inverse tool the manifest names exists."));
    }
    for (const failure of failures) lines.push(style.red(printable(failure[0]!)), ...failure.slice(1).map((l) => `  ${printable(l)}`));
    lines.push(
      "Note: check proves that each tool exists. It calls none of them, so it cannot prove that a path such as $snapshot.email resolves; that is only known when a call runs (an unresolved inverse is recorded as a warning).",
    );
    writeLines(lines);
    if (missing.length) return 2;
    return failures.length ? 1 : 0;
  },
});
