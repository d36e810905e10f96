// The second-stage check (R-MAN-7): every snapshot and inverse tool the
// manifest names must exist on its server. Pure: the tool lists come in.
import { isMap } from "yaml";
import { adoptShipped } from "./draft.ts";
import { patternToRegExp } from "./match.ts";
import type { ShippedManifest } from "./shipped.ts";
import type { CallSpec, Manifest, Rule } from "./types.ts";

export function missingTools(manifest: Manifest, toolsByServer: Map<string, Set<string>>): string[] {
  const problems: string[] = [];
  for (const rule of manifest.rules) {
    const calls = [
      ...(rule.snapshot ? [["snapshot", rule.snapshot] as const] : []),
      ...(rule.inverse ?? []).map((call) => ["inverse", call] as const),
      ...(rule.whenAbsent ?? []).map((call) => ["when_absent", call] as const),
    ];
    for (const [part, call] of calls) {
      const tools = toolsByServer.get(call.server);
      if (tools && !tools.has(call.tool)) {
        problems.push(
          `${manifest.path}:${call.at.line}:${call.at.col}: the ${part} of "${rule.match}" calls ${call.server}.${call.tool}, but server "${call.server}" has no tool "${call.tool}"` +
            (tools.size ? ` (it has: ${[...tools].sort().join(", ")})` : " (it lists no tools)"),
        );
      }
    }
  }
  return problems;
}

/** Rules that match none of their servers' tools: most likely a typo, and the tool falls to another rule. */
export function unusedRules(manifest: Manifest, toolsByServer: Map<string, Set<string>>): Rule[] {
  return manifest.rules.filter((rule) => {
    const pattern = patternToRegExp(rule.match);
    let known = false;
    for (const [server, tools] of toolsByServer) {
      if (!patternToRegExp(rule.match.split(".")[0]!).test(server)) continue;
      known = true;
      for (const tool of tools) if (pattern.test(`${server}.${tool}`)) return false;
    }
    return known;
  });
}

/** A snapshot without absent_when: every error of its read is taken to mean "does not exist" (R-ABSENT-1). */
export interface AbsenceRisk {
  rule: Rule;
  snapshot: CallSpec;
  /** What this server says when a record does not exist, when its shipped policy tells. */
  phrases?: string[];
}

/** Every snapshot without absent_when, with the phrase its server uses when a shipped policy knows it (R-ABSENT-3). */
export function absenceRisks(manifest: Manifest, toolsByServer: Map<string, Set<string>>, shipped: ShippedManifest[]): AbsenceRisk[] {
  const risks: AbsenceRisk[] = [];
  for (const rule of manifest.rules) {
    const snapshot = rule.snapshot;
    if (!snapshot || snapshot.absentWhen.length > 0 || snapshot.absentText) continue;
    const tools = toolsByServer.get(snapshot.server);
    const known = tools ? adoptShipped(shipped, snapshot.server, [...tools]) : undefined;
    let phrases: string[] | undefined;
    for (const adopted of known?.rules ?? []) {
      const read = adopted.get("snapshot", true);
      if (!isMap(read) || String(read.get("tool")) !== `${snapshot.server}.${snapshot.tool}`) continue;
      const absentWhen = read.toJSON().absent_when as string | string[] | undefined;
      if (absentWhen !== undefined) phrases = [absentWhen].flat();
      break;
    }
    risks.push({ rule, snapshot, ...(phrases ? { phrases } : {}) });
  }
  return risks;
}
