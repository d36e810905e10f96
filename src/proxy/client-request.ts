// One request of a client, from its arrival until it is answered: the id it
// came with, whether the client cancelled it, how to cancel it at its server
// once it was forwarded, and the channel its answer (and whatever a server
// sends on its behalf meanwhile) goes out on.
import type { MessageId } from "../jsonrpc/frames.ts";
import type { Origin } from "../servers/upstream.ts";
import type { ServerTurn } from "./server-turns.ts";

/**
 * Where the lines for one client request go. Over stdio every line goes to
 * the one output; over HTTP a request's lines ride on the response to the POST
 * that carried it, which ends with its answer.
 */
export interface RequestChannel {
  /** A server's request or notification sent on the request's behalf, before its answer. */
  send(line: string): void;
  /** Its answer (none when the client cancelled it): nothing more follows. Called once. */
  end(answer?: string): void;
}

export class ClientRequest implements Origin {
  /** The client cancelled it (MCP cancellation: it gets no answer), or it was answered at shutdown; nothing more is forwarded for it. */
  cancelled = false;
  private answered = false;
  private cancelForwarded: ((reason?: string) => void) | undefined;
  /** A tools/call's place in its server's queue, taken as it arrived (given up when it is answered, if not before). */
  turn: ServerTurn | undefined;

  constructor(
    /** The client session it came from (server requests meanwhile are routed back to it). */
    readonly session: object,
    readonly id: MessageId,
    readonly method: string,
    private readonly channel: RequestChannel,
  ) {}

  sent(_upstreamId: number, cancel: (reason?: string) => void): void {
    this.cancelForwarded = cancel;
  }

  cancel(reason?: string): void {
    this.cancelled = true;
    this.cancelForwarded?.(reason);
  }

  /** Answer it, once: a request the client cancelled gets no answer (MCP cancellation); anything after the first answer is dropped. */
  answer(line: string): void {
    if (this.answered) return;
    this.answered = true;
    this.channel.end(this.cancelled ? undefined : line);
  }

  /** A server's message on its behalf, while it waits. */
  send(line: string): void {
    this.channel.send(line);
  }

  /** It is done with: one that got no answer (cancelled) still closes its channel. */
  finish(): void {
    if (this.answered) return;
    this.answered = true;
    this.channel.end();
  }
}
