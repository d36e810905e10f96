// One request of a client, from its arrival until it is answered: the id it
// came with, whether the client cancelled it, and how to cancel it at its
// server once it was forwarded.
import type { MessageId } from "../jsonrpc/frames.ts";
import type { Origin } from "../servers/upstream.ts";
import type { ServerTurn } from "./server-turns.ts";

export class ClientRequest implements Origin {
  /** The client cancelled it (MCP cancellation: it gets no answer), or it was answered at shutdown; nothing more is forwarded for it. */
  cancelled = false;
  private cancelForwarded: ((reason?: string) => void) | undefined;
  /** A tools/call's place in its server's queue, taken as it arrived (given up when it is answered, if not before). */
  turn: ServerTurn | undefined;

  constructor(
    /** The client session it came from (server requests meanwhile are routed back to it). */
    readonly session: object,
    readonly id: MessageId,
    readonly method: string,
  ) {}

  sent(_upstreamId: number, cancel: (reason?: string) => void): void {
    this.cancelForwarded = cancel;
  }

  cancel(reason?: string): void {
    this.cancelled = true;
    this.cancelForwarded?.(reason);
  }
}
