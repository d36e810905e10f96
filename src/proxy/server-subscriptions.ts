// What Synartesis follows at each server on its clients' behalf. A resource
// is held by whoever wants its updates (a 2026-era client's subscription, a
// 2025-era client session that sent resources/subscribe) and subscribed to at
// the server that owns it: with resources/subscribe at a 2025-era server, on
// the one subscriptions/listen of Synartesis's own at a 2026-era server
// (which follows that server's list changes too, for every client). It is
// given up there when nobody holds it any more, and put back when the server
// is started again. What a server sends on Synartesis's own subscription
// reaches the clients as that server's other notifications do.
import { frameOf, isRecord, type NotificationFrame } from "../jsonrpc/frames.ts";
import { filterKey, isEmptyFilter, LIST_CHANGES, withSubscriptionId, type SubscriptionFilter } from "../jsonrpc/subscriptions.ts";
import type { Logger } from "../log.ts";
import type { OwnListen } from "../servers/own-listens.ts";
import type { Upstream } from "../servers/upstream.ts";

/** After Synartesis's own subscription at a server was lost, how long before it is opened again (doubling up to the most). */
const RELISTEN_FIRST_MS = 1000;
const RELISTEN_MOST_MS = 60_000;

export interface ServerSubscriptionsOptions {
  log: Logger;
  /** A notification a server sent on Synartesis's own subscription (untagged): for the clients. */
  notify(upstream: Upstream, frame: NotificationFrame): void;
}

export class ServerSubscriptions {
  /** At each server, the resources held there and who holds each. */
  private readonly held = new Map<Upstream, Map<string, Set<object>>>();
  /** At each 2025-era server, the resources subscribed to since it (re)started. */
  private readonly subscribed = new Map<Upstream, Set<string>>();
  /** At each 2026-era server, Synartesis's own subscription (the one whose notifications count) and what the server honours of it. */
  private readonly listening = new Map<Upstream, { listen: OwnListen; honoured: SubscriptionFilter }>();
  /** Each server's changes are made one at a time. */
  private readonly queues = new Map<Upstream, Promise<void>>();
  private readonly relistenMs = new Map<Upstream, number>();

  constructor(private readonly options: ServerSubscriptionsOptions) {}

  /**
   * `holder` wants updates of these resources, each from the server that
   * owns it; resolves once every server was asked (and every subscription of
   * Synartesis's own is settled), with the resources now followed.
   */
  async hold(holder: object, owners: Map<string, Upstream>): Promise<Set<string>> {
    for (const [uri, owner] of owners) this.note(holder, uri, owner);
    for (const owner of new Set(owners.values())) void this.enqueue(owner);
    await Promise.all(this.queues.values());
    return new Set([...owners].filter(([uri, owner]) => this.follows(owner, uri)).map(([uri]) => uri));
  }

  /** `holder` wants a resource that its own request (a 2025 client's resources/subscribe) is about to subscribe to. */
  note(holder: object, uri: string, owner: Upstream): void {
    let holders = this.holdersAt(owner).get(uri);
    if (!holders) this.holdersAt(owner).set(uri, (holders = new Set()));
    holders.add(holder);
  }

  /**
   * `holder` no longer wants a resource: true when somebody else still does
   * (the server stays subscribed). Otherwise a 2026-era server stops telling
   * of it; a 2025-era one is left to the client's own resources/unsubscribe.
   */
  drop(holder: object, uri: string, owner: Upstream): boolean {
    const holders = this.holdersAt(owner).get(uri);
    holders?.delete(holder);
    if (holders?.size) return true;
    this.holdersAt(owner).delete(uri);
    if (owner.era === "modern") void this.enqueue(owner);
    return false;
  }

  /** `holder` wants none of what it held (it ended): the servers nobody else needs them from are unsubscribed. */
  release(holder: object): void {
    for (const [owner, uris] of this.held) {
      let changed = false;
      for (const [uri, holders] of uris) {
        if (!holders.delete(holder)) continue;
        changed = true;
        if (holders.size === 0) uris.delete(uri);
      }
      if (changed) void this.enqueue(owner);
    }
  }

  /** A 2025 client's own resources/subscribe (or unsubscribe) was answered by its server: what the server now follows. */
  confirmed(owner: Upstream, uri: string, subscribed: boolean): void {
    if (subscribed) this.subscribedAt(owner).add(uri);
    else this.subscribedAt(owner).delete(uri);
    void this.enqueue(owner);
  }

  /** A server was started (for the first time, or again): what is held there is subscribed to afresh. */
  started(upstream: Upstream): void {
    this.subscribed.delete(upstream);
    this.listening.get(upstream)?.listen.cancel();
    this.listening.delete(upstream);
    void this.enqueue(upstream);
  }

  /** Which list changes reach Synartesis from these servers: a 2025-era server's that it offers, a 2026-era server's that Synartesis's subscription there honours. */
  listChangesFrom(upstreams: Upstream[]): Set<string> {
    const fields = new Set<string>();
    for (const upstream of upstreams) {
      const honoured = this.listening.get(upstream)?.honoured;
      for (const { field, capability } of LIST_CHANGES) {
        const offered = upstream.capabilities?.[capability];
        if (upstream.era === "modern" ? honoured?.[field] : isRecord(offered) && offered.listChanged === true) fields.add(field);
      }
    }
    return fields;
  }

  /** Whether a server follows a resource for Synartesis now. */
  private follows(owner: Upstream, uri: string): boolean {
    if (owner.era !== "modern") return this.subscribedAt(owner).has(uri);
    return this.listening.get(owner)?.honoured.resourceSubscriptions?.includes(uri) ?? false;
  }

  private holdersAt(owner: Upstream): Map<string, Set<object>> {
    let uris = this.held.get(owner);
    if (!uris) this.held.set(owner, (uris = new Map()));
    return uris;
  }

  private subscribedAt(owner: Upstream): Set<string> {
    let uris = this.subscribed.get(owner);
    if (!uris) this.subscribed.set(owner, (uris = new Set()));
    return uris;
  }

  private enqueue(upstream: Upstream): Promise<void> {
    const next = (this.queues.get(upstream) ?? Promise.resolve())
      .then(() => (upstream.era === "modern" ? this.listenAt(upstream) : this.subscribeAt(upstream)))
      .catch((error: Error) => this.options.log.warn("could not follow what clients asked for at a server", { server: upstream.name, error: error.message }));
    this.queues.set(upstream, next);
    return next;
  }

  /** A 2025-era server: resources/subscribe for what is held there and not yet subscribed, resources/unsubscribe for what nobody holds. */
  private async subscribeAt(upstream: Upstream): Promise<void> {
    const wanted = [...this.holdersAt(upstream).keys()];
    const subscribed = this.subscribedAt(upstream);
    const resources = upstream.capabilities?.resources;
    for (const uri of isRecord(resources) && resources.subscribe === true ? wanted : []) {
      if (subscribed.has(uri)) continue;
      const error = await this.ask(upstream, "resources/subscribe", uri);
      if (error === undefined) subscribed.add(uri);
      else this.options.log.warn("a server refused to subscribe to a resource a client asked to follow", { server: upstream.name, uri, error });
    }
    for (const uri of [...subscribed]) {
      if (this.holdersAt(upstream).has(uri)) continue;
      subscribed.delete(uri);
      const error = await this.ask(upstream, "resources/unsubscribe", uri);
      if (error !== undefined) this.options.log.debug("a server did not unsubscribe from a resource nobody follows any more", { server: upstream.name, uri, error });
    }
  }

  /** What a request's answer says went wrong, if anything did. */
  private async ask(upstream: Upstream, method: string, uri: string): Promise<string | undefined> {
    try {
      const reply = await upstream.ask(method, { uri });
      return "error" in reply.msg ? reply.msg.error.message : undefined;
    } catch (error) {
      return (error as Error).message;
    }
  }

  /** What Synartesis asks a 2026-era server to tell it: the list changes it offers, and the resources held there (when it offers their updates). */
  private wantedAt(upstream: Upstream): SubscriptionFilter {
    const capabilities = upstream.capabilities ?? {};
    const wanted: SubscriptionFilter = {};
    for (const { field, capability } of LIST_CHANGES) {
      const offered = capabilities[capability];
      if (isRecord(offered) && offered.listChanged === true) wanted[field] = true;
    }
    const resources = capabilities.resources;
    const uris = [...this.holdersAt(upstream).keys()].sort();
    if (uris.length && isRecord(resources) && resources.subscribe === true) wanted.resourceSubscriptions = uris;
    return wanted;
  }

  /**
   * A 2026-era server: Synartesis's own subscription there asks for what is
   * wanted now. A new one is opened when that changed; it counts from its
   * acknowledgment on, and the one before it is cancelled then (so nothing
   * falls between the two).
   */
  private async listenAt(upstream: Upstream): Promise<void> {
    const wanted = this.wantedAt(upstream);
    const current = this.listening.get(upstream);
    if (current && filterKey(current.listen.filter) === filterKey(wanted)) return;
    if (isEmptyFilter(wanted) || !upstream.alive) {
      current?.listen.cancel();
      if (this.listening.delete(upstream)) this.options.log.debug("Synartesis's subscription at a server is closed: nothing is followed there", { server: upstream.name });
      return;
    }
    await new Promise<void>((settled) => {
      let acknowledged = false;
      const timeoutMs = upstream.spec.timeoutMs;
      const failed = (why: string, refused: boolean) => {
        clearTimeout(timer);
        listen?.cancel();
        settled();
        this.retry(upstream, why, refused);
      };
      const timer = timeoutMs > 0 ? setTimeout(() => failed(`it did not acknowledge it within ${timeoutMs / 1000} s`, false), timeoutMs) : undefined;
      const listen = upstream.listen(wanted, {
        acknowledged: (honoured) => {
          clearTimeout(timer);
          acknowledged = true;
          this.relistenMs.delete(upstream);
          this.listening.get(upstream)?.listen.cancel();
          this.listening.set(upstream, { listen: listen!, honoured });
          this.options.log.debug("Synartesis's subscription at a server is open", { server: upstream.name, honoured });
          settled();
        },
        notified: (frame) => {
          if (this.listening.get(upstream)?.listen === listen) this.options.notify(upstream, untagged(frame));
        },
        ended: (why, refused) => (acknowledged ? this.ended(upstream, listen, why, refused) : failed(why, refused)),
      });
      if (!listen) failed("it is not running", false);
    });
  }

  /** Synartesis's own subscription at a server ended (the server ended it, its stream was lost, the server stopped). */
  private ended(upstream: Upstream, listen: OwnListen | undefined, why: string, refused: boolean): void {
    if (this.listening.get(upstream)?.listen !== listen) return;
    this.listening.delete(upstream);
    this.retry(upstream, why, refused);
  }

  /** Synartesis's subscription at a server is not what it should be: while the server runs (and did not refuse it), it is opened again, later. */
  private retry(upstream: Upstream, why: string, refused: boolean): void {
    // A server that stopped is subscribed to again when it is started again.
    if (!upstream.alive) return this.options.log.debug("Synartesis's subscription at a server ended with it", { server: upstream.name, why });
    const delay = this.relistenMs.get(upstream) ?? RELISTEN_FIRST_MS;
    this.options.log.warn(`Synartesis's subscription at a server is not open: its list changes and resource updates are not followed${refused ? "" : " until it is"}`, {
      server: upstream.name,
      why,
      ...(refused ? {} : { retryInSeconds: delay / 1000 }),
    });
    if (refused) return;
    this.relistenMs.set(upstream, Math.min(delay * 2, RELISTEN_MOST_MS));
    setTimeout(() => void this.enqueue(upstream), delay).unref();
  }
}

/** A notification as a server sent it on Synartesis's own subscription, without that subscription's id (each client's goes on). */
function untagged(frame: NotificationFrame): NotificationFrame {
  const raw = withSubscriptionId(frame.raw, undefined);
  return frameOf(JSON.parse(raw), raw) as NotificationFrame;
}
