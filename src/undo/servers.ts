// How undo reaches the manifest's servers: the one place it starts them (on
// first use, as a full client of its own), reads state and sends inverses with
// their idempotency keys (R-UNDO-8), and stops them when the work is done.
// A seam: the worlds see only UndoServers, and tests pass their own.
import { SynartesisError } from "../errors.ts";
import type { Action, Read, ResolvedCall, VerifyCall } from "../journal/types.ts";
import { errorOf, resultOf } from "../jsonrpc/frames.ts";
import type { Logger } from "../log.ts";
import { textOf } from "../manifest/refs.ts";
import type { Manifest } from "../manifest/types.ts";
import { UpstreamError } from "../servers/upstream.ts";
import { OwnServers } from "../servers/with-servers.ts";

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
  const servers = new OwnServers(manifest.servers, { client: "synartesis-undo", log });
  const known = (name: string) => {
    if (!Object.hasOwn(manifest.servers, name)) {
      throw new SynartesisError("config", `the run used server "${name}", which is no longer in the manifest ${manifest.path}`);
    }
  };
  try {
    return await work({
      async read(verify) {
        known(verify.server);
        return servers.read(verify);
      },
      async invert(action, call) {
        known(call.server);
        try {
          const reply = await servers.callTool(call, { [IDEMPOTENCY_KEY]: action.id });
          const error = errorOf(reply.msg);
          if (error) return { kind: "failed", text: `${error.message} (JSON-RPC error ${error.code})` };
          const result = resultOf(reply.msg);
          if (result?.isError) return { kind: "failed", text: textOf(result) || "the tool reported an error" };
          return { kind: "ok" };
        } catch (error) {
          if (error instanceof UpstreamError) return { kind: error.kind === "not_sent" ? "failed" : "unknown", text: error.message };
          throw error;
        }
      },
    });
  } finally {
    await servers.stop();
  }
};
