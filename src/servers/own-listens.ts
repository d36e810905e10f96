// The subscriptions Synartesis opens itself at a 2026-era server
// (subscriptions/listen). Each is one request that is answered only when the
// subscription ends, so it waits in no queue of pending requests (it has no
// timeout); the server's acknowledgment and what it sends on it, tagged with
// the request's id, go to whoever opened it.
import { isRecord, paramsOf, type Frame, type NotificationFrame } from "../jsonrpc/frames.ts";
import { messageLine } from "../jsonrpc/messages.ts";
import { ACKNOWLEDGED, filterOf, LISTEN, subscriptionIdOf, type SubscriptionFilter } from "../jsonrpc/subscriptions.ts";

export interface ListenEvents {
  /** The server acknowledged it: what of the filter it honours. */
  acknowledged(honoured: SubscriptionFilter): void;
  /** A notification the server sent on it (still tagged with its id). */
  notified(frame: NotificationFrame): void;
  /** It ended without being cancelled: the server answered it (ended it, or refused it: `refused`), its stream was lost, or the server stopped. */
  ended(why: string, refused: boolean): void;
}

export interface OwnListen {
  readonly id: number;
  readonly filter: SubscriptionFilter;
  /** End it (the server is told); nothing more is heard of it. */
  cancel(): void;
}

/** How the subscriptions reach their server: a request line sent (a promise when the write, or its answer, completes later), a cancellation. */
export interface ListenWire {
  send(line: string): void | Promise<void>;
  cancel(id: number): void;
}

export class OwnListens {
  private readonly open = new Map<number, ListenEvents>();

  constructor(private readonly wire: ListenWire) {}

  start(id: number, filter: SubscriptionFilter, events: ListenEvents): OwnListen {
    this.open.set(id, events);
    let sent: void | Promise<void>;
    try {
      sent = this.wire.send(messageLine(LISTEN, { notifications: filter }, id));
    } catch (error) {
      sent = Promise.reject(error);
    }
    if (sent instanceof Promise) sent.catch((error: Error) => this.end(id, `its stream was lost (${error.message})`));
    return {
      id,
      filter,
      cancel: () => {
        if (this.open.delete(id)) this.wire.cancel(id);
      },
    };
  }

  /** A message from the server: true when it belongs to one of these subscriptions (it was handled here). */
  take(frame: Frame): boolean {
    if (frame.kind === "notification") {
      const params = paramsOf(frame.msg);
      const id = subscriptionIdOf(params);
      if (id === undefined) return false;
      // Tagged for a subscription no longer open (cancelled, its news sent before the server knew): nobody's.
      const events = typeof id === "number" ? this.open.get(id) : undefined;
      if (!events) return true;
      if (frame.msg.method !== ACKNOWLEDGED) events.notified(frame);
      else {
        const honoured = filterOf({ notifications: isRecord(params.notifications) ? params.notifications : {} });
        events.acknowledged(typeof honoured === "string" ? {} : honoured);
      }
      return true;
    }
    if (frame.kind !== "response" || typeof frame.msg.id !== "number" || !this.open.has(frame.msg.id)) return false;
    const refusal = "error" in frame.msg ? frame.msg.error : undefined;
    this.end(frame.msg.id, refusal ? `it refused it: ${refusal.message} (code ${refusal.code})` : "it ended it", refusal !== undefined);
    return true;
  }

  /** The server is gone: so is every subscription at it. */
  closed(reason: string): void {
    for (const id of [...this.open.keys()]) this.end(id, `the server ${reason}`);
  }

  private end(id: number, why: string, refused = false): void {
    const events = this.open.get(id);
    if (!events) return;
    this.open.delete(id);
    events.ended(why, refused);
  }
}
