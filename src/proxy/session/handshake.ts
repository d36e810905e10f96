// A client's opening (R-PROXY-3, R-PROXY-14, R-ERA-1): a 2025-era client's
// initialize or a 2026-era client's first request starts the servers (once
// per pool) and checks them; initialize and server/discover are answered with
// the upstream's identity (one server) or Synartesis's (several), the merged
// capabilities, and instructions that open with what an agent must know
// about Synartesis.
import type { SynartesisError } from "../../errors.ts";
import { LEGACY_VERSIONS, MODERN_VERSIONS, SERVER_INFO_KEY, type Era } from "../../jsonrpc/eras.ts";
import { isRecord } from "../../jsonrpc/frames.ts";
import { VERSION } from "../../version.ts";
import type { ServerPool } from "../pool/pool.ts";

export const INSTRUCTIONS_PREAMBLE = [
  "This connection goes through Synartesis, which records every tool call together with the state it replaced, so that a person can undo what was done.",
  'Some calls are held for a person\'s approval: such a call fails at once with a message that starts with "HELD FOR APPROVAL" and contains a command.',
  "When that happens, relay the command to the person, wait until they say it is approved, then make exactly the same call again (same tool, same arguments).",
  'A call may also come back "DENIED": do not retry it without asking the person.',
  "Never route around a held or denied call by using other tools to reach the same effect.",
].join(" ");

/** Start the pool's servers (the first client's parameters start them) and make sure each one is up. */
export async function startServers(pool: ServerPool, initParams: unknown, clientEra: Era): Promise<void> {
  await pool.start(initParams, clientEra);
  // A later client may come after a server died: it is started again for it, as for any request.
  // One waiting for a sign-in is started by the first request that brings one.
  await Promise.all(pool.upstreams.filter((upstream) => !pool.awaitingSignIn.has(upstream)).map((upstream) => upstream.ensureReady()));
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

/** The instructions a client gets: what an agent must know about Synartesis first, then each server's own. */
function instructionsOf(pool: ServerPool): string {
  const instructions = [INSTRUCTIONS_PREAMBLE];
  for (const upstream of pool.upstreams) {
    const own = upstream.hello?.instructions;
    if (own?.trim()) instructions.push(pool.router.single ? own : `Server "${upstream.name}":\n${own}`);
  }
  return instructions.join("\n\n");
}

/** The identity a client sees: the server's (one server) or Synartesis's (several). */
function identityOf(pool: ServerPool): Record<string, unknown> {
  const single = pool.router.single;
  return single?.hello ? single.hello.serverInfo : { name: "synartesis", version: VERSION };
}

/** What the servers can do; one waiting for a sign-in is taken to offer tools, which it lists once someone signs in. */
function mergedCapabilities(pool: ServerPool): Record<string, unknown> {
  const waiting = { tools: { listChanged: true } };
  return mergeCapabilities(pool.upstreams.map((upstream) => upstream.capabilities ?? (pool.awaitingSignIn.has(upstream) ? waiting : {})));
}

/**
 * The answer to a 2025-era client's initialize, once the servers are started:
 * a single 2025-era server's own answer (its version, identity and
 * capabilities), else one built for the version the client asked for.
 */
export function initializeResult(pool: ServerPool, requested: unknown): Record<string, unknown> {
  const single = pool.router.single?.hello;
  const instructions = instructionsOf(pool);
  if (single?.initResult) return { ...single.initResult, instructions };
  const legacy = pool.upstreams.map((upstream) => upstream.hello).filter((hello) => hello?.era === "legacy");
  // The lowest version any 2025-era server speaks; with 2026-era servers only, the client's own if it is one we know.
  const versions = legacy
    .map((hello) => hello!.protocolVersion)
    .filter(Boolean)
    .sort();
  const asked = typeof requested === "string" && LEGACY_VERSIONS.includes(requested) ? requested : LEGACY_VERSIONS[0]!;
  return {
    protocolVersion: versions[0] ?? asked,
    capabilities: mergedCapabilities(pool),
    serverInfo: identityOf(pool),
    instructions,
  };
}

/** The answer to a 2026-era client's server/discover (R-ERA-1): the same identity, capabilities and note. */
export function discoverResult(pool: ServerPool): Record<string, unknown> {
  return {
    resultType: "complete",
    supportedVersions: MODERN_VERSIONS,
    capabilities: mergedCapabilities(pool),
    instructions: instructionsOf(pool),
    ttlMs: 0,
    cacheScope: "private",
    _meta: { [SERVER_INFO_KEY]: identityOf(pool) },
  };
}

/** The text a client gets for a session that cannot go on (answering its initialize). */
export function failureText(failure: SynartesisError): string {
  if (failure.code === "manifest") return `Synartesis will not run with this policy: ${failure.details.join("; ")}`;
  return [failure.message, ...failure.details].join("\n");
}
