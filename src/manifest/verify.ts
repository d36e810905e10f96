// The second-stage check (R-MAN-7): every snapshot and inverse tool the
// manifest names must exist on its server. Pure: the tool lists come in.
import type { Manifest } from "./types.ts";

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
