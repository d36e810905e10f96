// `synartesis check`: load the manifest, start each server, and prove every
// snapshot and inverse tool it names exists (R-CLI-3, R-MAN-7).
import { defineCommand } from "citty";
import { SynartesisError } from "../errors.ts";
import { findManifest } from "../manifest/discover.ts";
import { loadManifest } from "../manifest/load.ts";
import { createMatcher } from "../manifest/match.ts";
import { TOOL_CLASSES, type Manifest, type ServerSpec } from "../manifest/types.ts";
import { SHIPPED_MANIFESTS } from "../manifest/shipped.ts";
import { absenceRisks } from "../manifest/verify.ts";
import { listTools, policyFit, toolNames } from "../servers/tools.ts";
import { withServers } from "../servers/with-servers.ts";
import { callName, printable, styleFor, table } from "../render/style.ts";
import { manifestArg, writeLines } from "./shared.ts";

function describeServer(spec: ServerSpec): string {
  return spec.kind === "command" ? [spec.command, ...spec.args].join(" ") : spec.url;
}

async function serverTools(manifest: Manifest): Promise<{ tools: Map<string, Set<string>>; failures: string[][] }> {
  const tools = new Map<string, Set<string>>();
  // By server, so failures print in manifest order however the starts race.
  const failures = new Map<string, string[]>();
  await withServers(manifest.servers, { client: "synartesis-check" }, (servers) =>
    Promise.all(
      Object.keys(manifest.servers).map(async (name) => {
        try {
          tools.set(name, toolNames(await servers.startAnd(name, listTools)));
        } catch (error) {
          if (!(error instanceof SynartesisError)) throw error;
          failures.set(name, [error.message, ...error.details]);
        }
      }),
    ),
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
    // The client may set what this shell does not: an unset ${VAR} is a warning here, not a stop.
    const manifest = loadManifest(findManifest(process.cwd(), args.manifest), process.env, { unsetVariables: "warn" });
    const { tools, failures } = await serverTools(manifest);
    const { missing, unused } = policyFit(manifest, tools);
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

    if (unused.length) {
      lines.push("", style.yellow("Rules that match none of their server's tools (a typo? the tools they meant fall to other rules):"));
      lines.push(...unused.map((rule) => `  ${manifest.path}:${rule.line}: ${rule.match}`));
    }

    const risks = absenceRisks(manifest, tools, SHIPPED_MANIFESTS);
    if (risks.length) {
      lines.push(
        "",
        style.yellow(
          'Snapshots without absent_when: any error of the read is taken to mean "does not exist", so a record that could not be read (a timeout, a refused permission) is taken for a missing one, and the call is offered for approval as a creation:',
        ),
      );
      for (const { rule, snapshot, phrases } of risks) {
        const advice = phrases
          ? `this server says ${phrases.map((p) => JSON.stringify(p)).join(" or ")} when a record does not exist: add absent_when: ${JSON.stringify(phrases.length === 1 ? phrases[0] : phrases)}`
          : "add absent_when with the words its errors use for a record that does not exist";
        lines.push(`  ${manifest.path}:${snapshot.at.line}:${snapshot.at.col}: ${callName(snapshot)}, the snapshot of "${rule.match}": ${printable(advice)}`);
      }
    }
    if (manifest.unsetVariables.length) {
      lines.push("", style.yellow("Variables not set here (the proxy will not start until the environment its client gives it sets them):"));
      lines.push(...manifest.unsetVariables.map((u) => `  ${manifest.path}:${u.line}:${u.col}: ${u.message}`));
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
