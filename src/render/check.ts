// What `synartesis check` prints (R-CLI-3, R-MAN-7): the servers and how many
// tools each lists, the rules per class, what is gated, what no rule covers,
// rules that match nothing, snapshots without absent_when, unset variables,
// then the verdict. Pure: the manifest, each server's tools and each start
// failure in, lines and an exit code out.
import { createMatcher } from "../manifest/match.ts";
import { SHIPPED_MANIFESTS } from "../manifest/shipped.ts";
import { DRAFT_MARK, TOOL_CLASSES, type Manifest, type ServerSpec } from "../manifest/types.ts";
import { absenceRisks, missingTools, unusedRules } from "../manifest/verify.ts";
import { callName, printable, table, type Style } from "./style.ts";

export interface CheckFindings {
  manifest: Manifest;
  /** The tools of each server that started, by server name. */
  tools: Map<string, Set<string>>;
  /** Each server that did not start: the failure, then its detail lines; in manifest order. */
  failures: string[][];
}

/** 2 when the manifest names tools its servers lack, 1 when a server did not start, else 0. */
export function checkExitCode(findings: CheckFindings): 0 | 1 | 2 {
  if (missingTools(findings.manifest, findings.tools).length) return 2;
  return findings.failures.length ? 1 : 0;
}

function describeServer(spec: ServerSpec): string {
  return spec.kind === "command" ? [spec.command, ...spec.args].join(" ") : spec.url;
}

const NOTE =
  "Note: check proves that each tool exists. It calls none of them, so it cannot prove that a path such as $snapshot.email resolves; that is only known when a call runs (an unresolved inverse is recorded as a warning).";

export function renderCheck(findings: CheckFindings, style: Style): string[] {
  const { manifest, tools, failures } = findings;
  const lines = [`${style.bold("Manifest")} ${manifest.path}`, "", style.bold("Servers")];
  const serverRows = Object.values(manifest.servers).map((spec) => {
    const listed = tools.get(spec.name);
    return [`  ${spec.name}`, describeServer(spec), listed ? `${listed.size} tools` : style.red("did not start")];
  });
  lines.push(...table(serverRows));

  const counts = TOOL_CLASSES.map((c) => `${manifest.rules.filter((r) => r.class === c).length} ${c}`);
  lines.push("", `${style.bold("Rules")}  ${manifest.rules.length} in all: ${counts.join(", ")}`);
  lines.push(...gatedLines(findings, style));
  lines.push(...draftLines(findings.manifest, style));
  lines.push(...warningLines(findings, style));

  lines.push("");
  const missing = missingTools(manifest, tools);
  if (missing.length) {
    lines.push(style.red(`${missing.length} problem${missing.length === 1 ? "" : "s"}: the manifest names tools its servers do not have`));
    lines.push(...missing.map((m) => `  ${printable(m)}`));
  } else if (failures.length === 0) {
    lines.push(style.green("Every snapshot and inverse tool the manifest names exists."));
  }
  for (const failure of failures) lines.push(style.red(printable(failure[0]!)), ...failure.slice(1).map((l) => `  ${printable(l)}`));
  lines.push(NOTE);
  return lines;
}

/** The rules init proposed that nobody has confirmed: each holds every call until its mark is removed. */
function draftLines(manifest: Manifest, style: Style): string[] {
  const drafts = manifest.rules.filter((rule) => rule.draft);
  if (drafts.length === 0) return [];
  return [
    "",
    style.bold(`Drafts to confirm (proposed by init; each call waits for a person until you remove the "# ${DRAFT_MARK}" line above the rule)`),
    ...drafts.map((rule) => `  ${manifest.path}:${rule.line}  ${rule.match}  ${rule.class}`),
  ];
}

/** What is gated (and which tools that catches), and what no rule covers. */
function gatedLines({ manifest, tools }: CheckFindings, style: Style): string[] {
  const matcher = createMatcher(manifest);
  const lines = ["", style.bold("Gated (a person approves each call, or each write for on_write)")];
  const gatedRules = manifest.rules.filter((r) => r.gate !== "never");
  if (gatedRules.length === 0) lines.push("  (no rule is gated)");
  for (const rule of gatedRules) {
    // Every server's tools: the server part of a match may itself be a pattern.
    const hits = [...tools].flatMap(([server, names]) =>
      [...names].filter((t) => matcher.classify(server, t).rule === rule).map((tool) => callName({ server, tool })),
    );
    lines.push(`  ${rule.match}  ${rule.class}, gate: ${rule.gate}${hits.length ? `  → ${hits.join(", ")}` : ""}`);
  }
  const uncovered = [...tools].flatMap(([server, names]) =>
    [...names].filter((t) => !matcher.classify(server, t).rule).map((tool) => callName({ server, tool })),
  );
  lines.push(
    "",
    `${style.bold("Not covered by any rule")} (treated as irreversible and gated, like any tool a manifest does not mention): ${
      uncovered.length ? uncovered.sort().join(", ") : "none"
    }`,
  );
  return lines;
}

/** Rules that match nothing, snapshots without absent_when, variables not set here. */
function warningLines({ manifest, tools }: CheckFindings, style: Style): string[] {
  const lines: string[] = [];
  const unused = unusedRules(manifest, tools);
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
  return lines;
}
