// How undo reaches the manifest's servers: the one place it starts them (on
// first use, as a full client of its own), reads state and sends inverses with
// their idempotency keys (R-UNDO-8), and stops them when the work is done.
// A seam: the worlds see only UndoServers, and tests pass their own.
import { SynartesisError } from "../errors.ts";
import type { Action, Read, ResolvedCall, VerifyCall } from "../journal/types.ts";
import { textOf } from "../manifest/refs.ts";
import type { Manifest } from "../manifest/types.ts";
import type { Logger } from "../proxy/log.ts";
import { readState } from "../proxy/observe.ts";
import { ownInitialize, ownUpstream } from "../proxy/own-client.ts";
import { UpstreamError, startFailure, type Upstream } from "../proxy/upstream.ts";

export const IDEMPOTENCY_KEY = "synartesis/idempotency-key";

/** What became of an inverse sent to its server: it ran, the server refused it, or no answer came (it may have run). */
export type SentInverse = { kind: "ok" } | { kind: "failed"; text: string } | { kind: "unknown"; text: string };

export interface UndoServers {
  /** A verification read. Rejects (a SynartesisError) when its server cannot be started at all. */
  read(verify: VerifyCall): Promise<Read>;
  /** Send an action's inverse, keyed by the action's id. Rejects as `read` does. */
  invert(action: Action, call: ResolvedCall): Promise<SentInverse>;
}

/** Run `work` with the manifest's servers at hand; the servers it started are stopped when it ends. */
export type WithUndoServers = <T>(manifest: Manifest, log: Logger, work: (servers: UndoServers) => Promise<T>) => Promise<T>;

export const withUndoServers: WithUndoServers = async (manifest, log, work) => {
  const pool = new ServerPool(manifest, log);
  try {
    return await work(pool);
  } finally {
    await pool.stopAll();
  }
};

/** Starts servers on first use, with a handshake of our own. */
class ServerPool implements UndoServers {
  private readonly started = new Map<string, Promise<Upstream>>();
  private readonly all: Upstream[] = [];

  constructor(
    private readonly manifest: Manifest,
    private readonly log: Logger,
  ) {}

  async read(verify: VerifyCall): Promise<Read> {
    return (await readState(await this.get(verify.server), verify)).read;
  }

  async invert(action: Action, call: ResolvedCall): Promise<SentInverse> {
    const upstream = await this.get(call.server);
    try {
      const reply = await upstream.ask("tools/call", { name: call.tool, arguments: call.args, _meta: { [IDEMPOTENCY_KEY]: action.id } });
      if (reply.msg.error) return { kind: "failed", text: `${reply.msg.error.message} (JSON-RPC error ${reply.msg.error.code})` };
      if (reply.msg.result?.isError) return { kind: "failed", text: textOf(reply.msg.result) || "the tool reported an error" };
      return { kind: "ok" };
    } catch (error) {
      if (error instanceof UpstreamError) return { kind: error.kind === "not_sent" ? "failed" : "unknown", text: error.message };
      throw error;
    }
  }

  private get(name: string): Promise<Upstream> {
    let upstream = this.started.get(name);
    if (!upstream) {
      const spec = this.manifest.servers[name];
      if (!spec) {
        return Promise.reject(
          new SynartesisError("config", `the run used server "${name}", which is no longer in the manifest ${this.manifest.path}`),
        );
      }
      const created = ownUpstream(spec, this.log);
      this.all.push(created);
      upstream = created.start(ownInitialize("synartesis-undo")).then(
        () => created,
        (error) => {
          throw startFailure(created, error);
        },
      );
      this.started.set(name, upstream);
    }
    return upstream;
  }

  async stopAll(): Promise<void> {
    await Promise.all(this.all.map((u) => u.stop()));
  }
}
