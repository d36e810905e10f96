// How undo reaches the manifest's servers: the one place it starts them (on
// first use, as a full client of its own), reads state and sends inverses with
// their idempotency keys (R-UNDO-8), and stops them when the work is done.
// A seam: the worlds see only UndoServers, and tests pass their own.
import { SynartesisError } from "../errors.ts";
import { inverseCalls, type Action, type Inverse, type Read, type ResolvedCall, type VerifyCall } from "../journal/types.ts";
import { errorOf, resultOf } from "../jsonrpc/frames.ts";
import type { Logger } from "../log.ts";
import { textOf } from "../manifest/refs.ts";
import type { Manifest } from "../manifest/types.ts";
import { UpstreamError } from "../servers/upstream.ts";
import { OwnServers } from "../servers/with-servers.ts";

export const IDEMPOTENCY_KEY = "synartesis/idempotency-key";

/**
 * What became of an inverse sent to its server: it ran, the server refused it,
 * no answer came (it may have run), or, of several calls, some ran and one
 * after them failed or went unanswered (the record is partly put back).
 */
export type SentInverse = { kind: "ok" } | { kind: "failed"; text: string } | { kind: "unknown"; text: string } | { kind: "partial"; text: string };

export interface UndoServers {
  /** A verification read. Rejects (a SynartesisError) when its server cannot be started at all. */
  read(verify: VerifyCall): Promise<Read>;
  /**
   * Send an action's inverse, keyed by the action's id (each call after the
   * first by the id and its place). Rejects as `read` does.
   */
  invert(action: Action, inverse: Inverse): Promise<SentInverse>;
}

/** Send one call of an inverse with its idempotency key: what became of it. */
async function sendOne(servers: OwnServers, call: ResolvedCall, key: string): Promise<SentInverse> {
  try {
    const reply = await servers.callTool(call, { [IDEMPOTENCY_KEY]: key });
    const error = errorOf(reply.msg);
    if (error) return { kind: "failed", text: `${error.message} (JSON-RPC error ${error.code})` };
    const result = resultOf(reply.msg);
    if (result?.isError) return { kind: "failed", text: textOf(result) || "the tool reported an error" };
    return { kind: "ok" };
  } catch (error) {
    if (error instanceof UpstreamError) return { kind: error.kind === "not_sent" ? "failed" : "unknown", text: error.message };
    throw error;
  }
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
      async invert(action, inverse) {
        const calls = inverseCalls(inverse);
        for (const call of calls) known(call.server);
        for (const [index, call] of calls.entries()) {
          const sent = await sendOne(servers, call, index === 0 ? action.id : `${action.id}/${index + 1}`);
          if (sent.kind === "ok") continue;
          if (index === 0) return sent;
          // The calls before it ran: the record is partly put back, which only a read (and perhaps a person) can tell.
          const ran = calls
            .slice(0, index)
            .map((done) => `${done.server}.${done.tool}`)
            .join(", ");
          return {
            kind: "partial",
            text: `${ran} ran, then ${call.server}.${call.tool} (call ${index + 1} of ${calls.length}) ${sent.kind === "failed" ? "failed" : "got no answer"}: ${sent.text}`,
          };
        }
        return { kind: "ok" };
      },
    });
  } finally {
    await servers.stop();
  }
};
