// A 2026-era client's subscriptions/listen streams, on one client connection.
// Each is acknowledged with what Synartesis honours of its filter (a list
// change some server tells of, a resource its server follows for Synartesis),
// then carries every server notification the filter lets through — list
// changes of any server, and of the tools Synartesis itself offers (see the
// pool), updates of the resources it names — tagged with its id, until the
// client cancels it (notifications/cancelled on stdio, closing the response
// over HTTP) or the connection ends, which answers it gracefully first.
import { paramsOf, type NotificationFrame } from "../jsonrpc/frames.ts";
import { ErrorCode, errorLine } from "../jsonrpc/messages.ts";
import { MODERN_VERSION } from "../jsonrpc/eras.ts";
import { accepts, acknowledgedLine, completedLine, filterOf, isEmptyFilter, LIST_CHANGES, LISTEN, withSubscriptionId, type SubscriptionFilter } from "../jsonrpc/subscriptions.ts";
import type { Logger } from "../log.ts";
import type { ClientRequest } from "./client-request.ts";
import type { ServerPool } from "./pool.ts";

/** How many subscriptions one client connection may have open (a sessionless HTTP run counts as one). */
export const MAX_SUBSCRIPTIONS = 100;

interface Subscription {
  readonly request: ClientRequest;
  /** Its id, as the client wrote the listen request's. */
  readonly idText: string;
  readonly asked: SubscriptionFilter;
  /** What is honoured, once acknowledged; until then, what matches the filter waits in `early`. */
  honoured?: SubscriptionFilter;
  readonly early: NotificationFrame[];
  /** It ended: its listen request is done with. */
  readonly ended: () => void;
}

export class ClientSubscriptions {
  private readonly open = new Set<Subscription>();

  constructor(
    private readonly pool: ServerPool,
    private readonly log: Logger,
    /** Answer a request (in the client's era). */
    private readonly answer: (request: ClientRequest, line: string) => void,
  ) {}

  /** A subscriptions/listen: acknowledged, then served until it ends (resolves then). A 2025-era connection has none. */
  async listen(request: ClientRequest, params: Record<string, unknown>, modern: boolean): Promise<void> {
    if (!modern) return this.answer(request, errorLine(request.id, ErrorCode.MethodNotFound, `Method not found: ${LISTEN} is of ${MODERN_VERSION}; this connection opened with initialize (resources/subscribe serves it)`));
    const asked = filterOf(params);
    if (typeof asked === "string") return this.answer(request, errorLine(request.id, ErrorCode.InvalidParams, `Invalid params: ${asked}`));
    if (this.open.size >= MAX_SUBSCRIPTIONS) {
      return this.answer(request, errorLine(request.id, ErrorCode.InternalError, `Subscription limit reached: ${MAX_SUBSCRIPTIONS} subscriptions are open on this connection`));
    }
    let ended!: () => void;
    const over = new Promise<void>((resolve) => (ended = resolve));
    const subscription: Subscription = { request, idText: request.clientIdText, asked, early: [], ended };
    this.open.add(subscription);
    request.whenCancelled(() => this.close(subscription));
    try {
      const honoured = await this.honour(subscription);
      // Cancelled meanwhile, or the connection is ending (it was answered then).
      if (!this.open.has(subscription)) return;
      subscription.honoured = honoured;
      request.send(acknowledgedLine(subscription.idText, honoured));
      this.log.debug("a client subscribed", { subscription: subscription.idText, honoured });
      for (const frame of subscription.early.splice(0)) this.offer(subscription, frame);
      // Nothing to wait for: ended at once, as a server that honours none of it does.
      if (isEmptyFilter(honoured)) return this.complete(subscription);
      await over;
    } finally {
      this.close(subscription);
    }
  }

  /** A server's notification: to each subscription that asked for it (one still being opened gets it after its acknowledgment). */
  deliver(frame: NotificationFrame): void {
    for (const subscription of this.open) this.offer(subscription, frame);
  }

  private offer(subscription: Subscription, frame: NotificationFrame): void {
    const { honoured } = subscription;
    if (!accepts(honoured ?? subscription.asked, frame.msg.method, paramsOf(frame.msg))) return;
    if (honoured) subscription.request.send(withSubscriptionId(frame.raw, subscription.idText));
    else subscription.early.push(frame);
  }

  /** The connection is ending: each subscription gets its graceful end (one not acknowledged yet, an error: it never opened). */
  endAll(): void {
    for (const subscription of [...this.open]) {
      if (subscription.honoured) this.complete(subscription);
      else {
        this.answer(subscription.request, errorLine(subscription.request.id, ErrorCode.InternalError, "Synartesis is shutting down; the subscription was not opened"));
        this.close(subscription);
      }
    }
  }

  /**
   * What of a filter is honoured: a list change some server tells Synartesis
   * of (tools: also a server that starts once someone signs in), each resource
   * whose server now follows it for Synartesis.
   */
  private async honour(subscription: Subscription): Promise<SubscriptionFilter> {
    const { asked } = subscription;
    const uris = asked.resourceSubscriptions ?? [];
    const owners = uris.length ? await this.pool.ownersOf(uris) : new Map();
    const followed = await this.pool.subscriptions.hold(subscription, owners);
    const told = this.pool.subscriptions.listChangesFrom(this.pool.upstreams);
    if (this.pool.awaitingSignIn.size) told.add("toolsListChanged");
    const honoured: SubscriptionFilter = {};
    for (const { field } of LIST_CHANGES) if (asked[field] && told.has(field)) honoured[field] = true;
    const kept = uris.filter((uri) => followed.has(uri));
    if (kept.length) honoured.resourceSubscriptions = kept;
    return honoured;
  }

  private complete(subscription: Subscription): void {
    this.answer(subscription.request, completedLine(subscription.request.id, subscription.idText));
    this.close(subscription);
  }

  private close(subscription: Subscription): void {
    // Released again when it ends for good: one cancelled while its resources were being looked up held them after its first end.
    this.pool.subscriptions.release(subscription);
    if (!this.open.delete(subscription)) return;
    subscription.ended();
  }
}
