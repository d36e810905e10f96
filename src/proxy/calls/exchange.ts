// A client's request sent to its server, and what the server's answer asks
// for (R-ERA-2, R-ERA-3): a 2026-era server that answers input_required gets
// the request again with the client's answers (asked in the client's own era)
// and its own requestState, until it gives a final answer. The client never
// sees the server's requestState; each retry is a fresh request to the server.
import { inputRequiredOf, withParams } from "../../jsonrpc/eras.ts";
import type { Reply, Upstream } from "../../servers/upstream.ts";
import type { Asked, ClientRequest } from "../session/client-request.ts";

/** Rounds of input one request may take before Synartesis stops asking (a server that never has enough). */
export const MAX_INPUT_ROUNDS = 8;

export interface ExchangeOptions {
  /** The client's request this is for: its envelope goes to the server, and the client is asked through it. */
  origin: ClientRequest;
  progressToken?: unknown;
  /** Right before a retry leaves (the call's pre-read is taken again): a reason stops the exchange there. */
  beforeRetry?(): Promise<string | undefined>;
  /** While the client is being asked: the server's turn may be given up meanwhile. */
  whileAsking?(asking: Promise<Asked>): Promise<Asked>;
  /** The server asked for input (once per round). */
  onInputRequired?(): Promise<void>;
  /** The request (or a resend of it, or a retry) has left for the server: what is sent to it next arrives after it. */
  onSent?(): void;
}

/** The server's final answer, or why Synartesis stopped asking it (nothing more was sent). */
export type Exchanged = { reply: Reply } | { stopped: string };

export async function exchange(upstream: Upstream, line: string, method: string, options: ExchangeOptions): Promise<Exchanged> {
  const { origin } = options;
  let attempt = line;
  for (let round = 1; ; round++) {
    const reply = await upstream.deliver(attempt, method, { origin, progressToken: options.progressToken, envelope: origin.envelope, onSent: options.onSent });
    const needed = inputRequiredOf(reply.msg);
    if (!needed) return { reply };
    if (round > MAX_INPUT_ROUNDS) return { stopped: `server "${upstream.name}" asked for input ${MAX_INPUT_ROUNDS} times without finishing` };
    await options.onInputRequired?.();
    let asked: Asked = { responses: {} };
    // Only state to echo (the server sheds load): the retry needs nothing of the client.
    if (Object.keys(needed.inputRequests).length) {
      try {
        const asking = origin.ask(needed.inputRequests);
        asked = await (options.whileAsking ? options.whileAsking(asking) : asking);
      } catch (error) {
        return { stopped: `the server asked for input and ${(error as Error).message}` };
      }
    }
    if (asked.refused) return { stopped: `the server asked for input and ${asked.refused}` };
    const stop = await options.beforeRetry?.();
    if (stop) return { stopped: stop };
    attempt = withParams(line, {
      inputResponses: JSON.stringify(asked.responses),
      requestState: needed.requestState === undefined ? undefined : JSON.stringify(needed.requestState),
    });
  }
}
