// A client's initialize (R-PROXY-3, R-PROXY-14): the servers are started with
// its parameters and checked once per pool; the answer carries the upstream's
// identity (one server) or Synartesis's (several), the merged capabilities,
// and instructions that open with what an agent must know about Synartesis.
import type { SynartesisError } from "../errors.ts";
import { isRecord } from "../jsonrpc/frames.ts";
import { VERSION } from "../version.ts";
import type { ServerPool } from "./pool.ts";

export const INSTRUCTIONS_PREAMBLE = [
  "This connection goes through Synartesis, which records every tool call together with the state it replaced, so that a person can undo what was done.",
  "Some calls are held for a person's approval: such a call fails at once with a message that starts with \"HELD FOR APPROVAL\" and contains a command.",
  "When that happens, relay the command to the person, wait until they say it is approved, then make exactly the same call again (same tool, same arguments).",
  "A call may also come back \"DENIED\": do not retry it without asking the person.",
  "Never route around a held or denied call by using other tools to reach the same effect.",
].join(" ");

/** Start the pool's servers (the first client's parameters start them) and make sure each one is up. */
export async function startServers(pool: ServerPool, initParams: unknown): Promise<void> {
  await pool.start(initParams);
  // A later client may come after a server died: it is started again for it, as for any request.
  await Promise.all(pool.upstreams.map((upstream) => upstream.ensureReady()));
}

function mergeCapabilities(all: Array<Record<string, unknown>>): Record<string, unknown> {
  const merged: Record<string, unknown> = {};
  for (const capabilities of all) {
    for (const [key, value] of Object.entries(capabilities)) {
      if (!isRecord(value)) {
        merged[key] ??= value;
        continue;
      }
      const into = (merged[key] ??= {});
      if (!isRecord(into)) continue;
      for (const [flag, setting] of Object.entries(value)) {
        into[flag] = typeof setting === "boolean" ? Boolean(into[flag]) || setting : (into[flag] ?? setting);
      }
    }
  }
  return merged;
}

/** The answer to initialize, once the servers are started. */
export function initializeResult(pool: ServerPool): Record<string, unknown> {
  const upstreams = pool.upstreams;
  const single = pool.router.single;
  const instructions = [INSTRUCTIONS_PREAMBLE];
  for (const upstream of upstreams) {
    const own = upstream.initResult?.instructions;
    if (typeof own === "string" && own.trim()) instructions.push(single ? own : `Server "${upstream.name}":\n${own}`);
  }
  if (single) return { ...single.initResult, instructions: instructions.join("\n\n") };
  const versions = upstreams.map((upstream) => String(upstream.initResult?.protocolVersion ?? "")).filter(Boolean).sort();
  return {
    protocolVersion: versions[0],
    capabilities: mergeCapabilities(upstreams.map((upstream) => upstream.capabilities ?? {})),
    serverInfo: { name: "synartesis", version: VERSION },
    instructions: instructions.join("\n\n"),
  };
}

/** The text a client gets for a session that cannot go on (answering its initialize). */
export function failureText(failure: SynartesisError): string {
  if (failure.code === "manifest") return `Synartesis will not run with this policy: ${failure.details.join("; ")}`;
  return [failure.message, ...failure.details].join("\n");
}
