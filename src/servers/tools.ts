// The tools a started server offers, and what the manifest asks of them
// (R-MAN-7): tools its rules name that a server lacks, and rules that match
// none of a server's tools. Shared by the proxy's start and `check`.
import type { Manifest, Rule, ServerSpec, ToolInfo } from "../manifest/types.ts";
import { missingTools, unusedRules } from "../manifest/verify.ts";
import type { OwnClientName } from "./own-client.ts";
import type { Upstream } from "./upstream.ts";
import { signInRefusal, withServers } from "./with-servers.ts";

/** Every tool the server lists (none when it does not offer tools). */
export function listTools(upstream: Upstream): Promise<Array<Record<string, unknown>>> {
  return upstream.capabilities?.tools ? upstream.listAll("tools/list", "tools") : Promise.resolve([]);
}

/** Start one server on its own, as a full client would ask (init, wrap), and list its tools; a sign-in it asks for is a refusal to show. */
export async function discoverTools(spec: ServerSpec, client: OwnClientName = "synartesis-init"): Promise<ToolInfo[]> {
  try {
    const tools = await withServers({ [spec.name]: spec }, { client }, (servers) => servers.startAnd(spec.name, listTools));
    return tools.flatMap((tool) => (typeof tool.name === "string" ? [{ ...tool, name: tool.name } as ToolInfo] : []));
  } catch (error) {
    // A sign-in a person can give now is not a failure yet.
    throw signInRefusal(error) ?? error;
  }
}

export function toolNames(tools: Array<Record<string, unknown>>): Set<string> {
  return new Set(tools.flatMap((tool) => (typeof tool.name === "string" ? [tool.name] : [])));
}

export interface PolicyFit {
  /** One line per snapshot or inverse tool a server does not have: the proxy will not run with these. */
  missing: string[];
  /** Rules that match none of their server's tools (a typo? the tools they meant fall to other rules). */
  unused: Rule[];
}

/** How the manifest fits the tools the servers offer (servers that did not start are left out). */
export function policyFit(manifest: Manifest, toolsByServer: Map<string, Set<string>>): PolicyFit {
  return { missing: missingTools(manifest, toolsByServer), unused: unusedRules(manifest, toolsByServer) };
}
