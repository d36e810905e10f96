// What the call benches share: the toy CRM's seed state, an SDK client over
// stdio to the built binary (or over Streamable HTTP to a URL), the two calls
// they time, and percentiles.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

export const ROOT = join(import.meta.dir, "..");
export const BINARY = join(ROOT, "dist", "synartesis");

/** The toy CRM's state file as it starts, with its three customers. */
export const SEED_STATE = {
  customers: {
    c_001: { id: "c_001", name: "Ada Lovelace", email: "ada@example.com", plan: "pro", notes: "founding customer" },
    c_002: { id: "c_002", name: "Grace Hopper", email: "grace@example.com", plan: "enterprise", notes: "renewal in March" },
    c_003: { id: "c_003", name: "Alan Turing", email: "alan@example.com", plan: "free", notes: "" },
  },
  outbox: [],
  lastId: 3,
};

/** An SDK client connected to `synartesis ARGS` (this build, or `binary`) started in `cwd`, with `env` added to this process's. */
export async function open(args: string[], cwd: string, binary = BINARY, env: Record<string, string> = {}): Promise<Client> {
  const transport = new StdioClientTransport({ command: binary, args, cwd, env: { ...(process.env as Record<string, string>), ...env }, stderr: "inherit" });
  const client = new Client({ name: "bench", version: "1.0.0" }, { capabilities: {} });
  await client.connect(transport);
  return client;
}

/** An SDK client connected over Streamable HTTP to `url`, sending `headers` (a bearer token) with every request. */
export async function openHttp(url: string, headers: Record<string, string> = {}): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  const client = new Client({ name: "bench", version: "1.0.0" }, { capabilities: {} });
  await client.connect(transport);
  return client;
}

export type Call = (i: number) => { name: string; arguments: Record<string, unknown> };
export const read: Call = (i) => ({ name: "get_customer", arguments: { id: `c_00${(i % 3) + 1}` } });
export const write: Call = (i) => ({ name: "update_customer", arguments: { id: `c_00${(i % 3) + 1}`, notes: `bench note ${i}` } });

/** The milliseconds each of `count` sequential calls took, in order; a call that fails stops the bench. */
export async function timed(client: Client, call: Call, count: number): Promise<number[]> {
  const taken: number[] = [];
  for (let i = 0; i < count; i++) {
    const start = Bun.nanoseconds();
    const result = await client.callTool(call(i));
    taken.push((Bun.nanoseconds() - start) / 1e6);
    if (result.isError) throw new Error(`${call(i).name} failed: ${JSON.stringify(result.content)}`);
  }
  return taken;
}

/**
 * The CPU time, in ms, that the process `client` started (and talks to over stdio)
 * has used so far, over all its threads (the JIT's and the collector's too):
 * Linux's per-thread schedstat. Undefined elsewhere, or for a client over HTTP.
 * On a machine whose speed swings minute to minute, CPU per call moves far
 * less than time per call.
 */
export function childCpuMs(client: Client): number | undefined {
  const pid = client.transport instanceof StdioClientTransport ? client.transport.pid : null;
  if (pid === null) return undefined;
  try {
    let ns = 0;
    for (const thread of readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(readFileSync(`/proc/${pid}/task/${thread}/schedstat`, "utf8").split(" ")[0]);
      } catch {
        // A thread that ended meanwhile: its time is counted no more (the JIT's and the collector's threads last).
      }
    }
    return ns / 1e6;
  } catch {
    return undefined;
  }
}

/** The value at quantile `q` of sorted times. */
export const at = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
export const ms = (n: number) => n.toFixed(3);
