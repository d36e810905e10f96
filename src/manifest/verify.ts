// The second-stage check (R-MAN-7): every snapshot and inverse tool the
// manifest names must exist on its server. Pure: the tool lists come in.
import { patternToRegExp } from "./match.ts";
import type { Manifest, Rule } from "./types.ts";

export function missingTools(manifest: Manifest, toolsByServer: Map<string, Set<string>>): string[] {
  const problems: string[] = [];
  for (const rule of manifest.rules) {
    for (const part of ["snapshot", "inverse"] as const) {
      const call = rule[part];
      if (!call) continue;
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
