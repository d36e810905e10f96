// A 2026-era client's subscriptions/listen streams, on one client connection.
// Each is acknowledged with what Synartesis follows of its filter when the
// acknowledgment goes out (list changes of the tools it offers, always; other
// list changes some server tells of; each resource its server follows by then:
// each server is waited for ackWaitAt() at most), then carries every server
// notification its filter lets through — list changes of any server, and of
// the tools Synartesis itself offers (see the pool), updates of the resources
// it names, those followed only later included — tagged with its id, until the
// client cancels it (notifications/cancelled on stdio, closing the response
// over HTTP) or the connection ends, which answers it gracefully first.
import { paramsOf, type NotificationFrame } from "../../jsonrpc/frames.ts";
import { ErrorCode, errorLine } from "../../jsonrpc/messages.ts";
import { MODERN_VERSION } from "../../jsonrpc/eras.ts";
import {
  acknowledgedLine,
  completedLine,
  filterOf,
  isEmptyFilter,
  LIST_CHANGES,
  LISTEN,
  matchOf,
  withSubscriptionId,
  type SubscriptionFilter,
} from "../../jsonrpc/subscriptions.ts";
import type { Logger } from "../../log.ts";
import type { ClientRequest } from "./client-request.ts";
import type { ServerPool } from "../pool/pool.ts";
import { ackWaitAt } from "../pool/server-subscriptions.ts";

/** How many subscriptions one client connection may have open (over HTTP, one run: clients of one name share it, unless they name their runs). */
const MAX_SUBSCRIPTIONS = 100;

const NOT_OPENED_AT_SHUTDOWN = "Synartesis is shutting down; the subscription was not opened";

/** `promise`'s value, or undefined once `ms` have passed without it. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)));
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

interface Subscription {
  readonly request: ClientRequest;
  /** Its id, as the client wrote the listen request's. */
  readonly idText: string;
  readonly asked: SubscriptionFilter;
  acknowledged: boolean;
  /** What its filter let through before its acknowledgment: one per list change and per resource it names (a later one of the same is the same news). */
  readonly early: Map<string, NotificationFrame>;
  /** Resolves when it ended. */
  readonly over: Promise<void>;
  readonly ended: () => void;
}

export class ClientSubscriptions {
  private readonly open = new Set<Subscription>();
  /** The connection is ending: no subscription opens any more. */
  private closed = false;

  constructor(
    private readonly pool: ServerPool,
    private readonly log: Logger,
    /** Answer a request (in the client's era). */
    private readonly answer: (request: ClientRequest, line: string) => void,
  ) {}

  /** A subscriptions/listen: acknowledged, then served until it ends (resolves then). A 2025-era connection has none. */
  async listen(request: ClientRequest, params: Record<string, unknown>, modern: boolean): Promise<void> {
    if (!modern)
      return this.answer(
        request,
        errorLine(
          request.id,
          ErrorCode.MethodNotFound,
          `Method not found: ${LISTEN} is of ${MODERN_VERSION}; this connection opened with initialize (resources/subscribe serves it)`,
        ),
      );
    const asked = filterOf(params);
    if (typeof asked === "string") return this.answer(request, errorLine(request.id, ErrorCode.InvalidParams, `Invalid params: ${asked}`));
    if (this.closed) return this.answer(request, errorLine(request.id, ErrorCode.InternalError, NOT_OPENED_AT_SHUTDOWN));
    if (this.open.size >= MAX_SUBSCRIPTIONS) {
      return this.answer(
        request,
        errorLine(request.id, ErrorCode.InternalError, `Subscription limit reached: ${MAX_SUBSCRIPTIONS} subscriptions are open on this connection`),
      );
    }
    let ended!: () => void;
    const over = new Promise<void>((resolve) => (ended = resolve));
    const subscription: Subscription = { request, idText: request.clientIdText, asked, acknowledged: false, early: new Map(), over, ended };
    this.open.add(subscription);
    // A cancellation that came while the request waited for the servers to start ends it here, before anything is held.
    request.whenCancelled(() => this.close(subscription));
    request.whenOverwhelmed(() => this.complete(subscription));
    try {
      if (!this.open.has(subscription)) return;
      const honoured = await this.honour(subscription);
      // Cancelled meanwhile, or the connection is ending (it was answered then).
      if (!this.open.has(subscription)) return;
      subscription.acknowledged = true;
      request.send(acknowledgedLine(subscription.idText, honoured));
      this.log.debug("a client subscribed", { subscription: subscription.idText, honoured });
      for (const frame of subscription.early.values()) this.offer(subscription, frame);
      subscription.early.clear();
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
    const match = matchOf(subscription.asked, frame.msg.method, paramsOf(frame.msg));
    if (match === undefined) return;
    const key = `${frame.msg.method} ${match}`;
    if (subscription.acknowledged) subscription.request.send(withSubscriptionId(frame.raw, subscription.idText));
    else if (!subscription.early.has(key)) subscription.early.set(key, frame);
  }

  /** The connection is ending: each subscription gets its graceful end (one not acknowledged yet, an error: it never opened), and none opens any more. */
  endAll(): void {
    this.closed = true;
    for (const subscription of [...this.open]) {
      if (subscription.acknowledged) this.complete(subscription);
      else {
        this.answer(subscription.request, errorLine(subscription.request.id, ErrorCode.InternalError, NOT_OPENED_AT_SHUTDOWN));
        this.close(subscription);
      }
    }
  }

  /**
   * What of a filter is honoured, once its resources are followed or their
   * servers' wait is over (or it ended): a tools list change (Synartesis tells of
   * the tools it offers itself), another list change some server tells
   * Synartesis of, each resource whose server now follows it for Synartesis.
   */
  private async honour(subscription: Subscription): Promise<SubscriptionFilter> {
    const { asked } = subscription;
    const uris = asked.resourceSubscriptions ?? [];
    if (uris.length) await Promise.race([this.follow(subscription, uris), subscription.over]);
    const told = this.pool.subscriptions.listChangesFrom(this.pool.upstreams);
    const honoured: SubscriptionFilter = {};
    for (const { field } of LIST_CHANGES) if (asked[field] && (field === "toolsListChanged" || told.has(field))) honoured[field] = true;
    const followed = this.pool.subscriptions.followedFor(subscription);
    const kept = uris.filter((uri) => followed.has(uri));
    if (kept.length) honoured.resourceSubscriptions = kept;
    return honoured;
  }

  /**
   * Its resources, held at the servers that own them; resolves once they are
   * followed, or when the slowest owner's wait (ackWaitAt) is over: a server
   * still being asked then goes on being asked.
   */
  private async follow(subscription: Subscription, uris: string[]): Promise<void> {
    // Finding the owners (servers list their resources) is waited for as long as any server's wait at most.
    const ownersKnown = await within(this.pool.ownersOf(uris), Math.max(0, ...this.pool.upstreams.map(ackWaitAt)));
    // Ended while its resources were looked up (nothing to hold), or they were not found in time.
    if (!ownersKnown || !this.open.has(subscription)) return;
    const holding = this.pool.subscriptions.hold(subscription, ownersKnown);
    // It may go on after the acknowledgment: a failure then is no one's to hear (the subscription just lacks what failed).
    holding.catch((error: Error) =>
      this.log.debug("a subscription's resources could not all be followed", { subscription: subscription.idText, error: error.message }),
    );
    await within(
      holding.catch(() => {}),
      Math.max(0, ...[...ownersKnown.values()].map(ackWaitAt)),
    );
  }

  private complete(subscription: Subscription): void {
    if (!this.open.has(subscription)) return;
    this.answer(subscription.request, completedLine(subscription.request.id, subscription.idText));
    this.close(subscription);
  }

  private close(subscription: Subscription): void {
    this.pool.subscriptions.release(subscription);
    if (!this.open.delete(subscription)) return;
    subscription.ended();
  }
}
