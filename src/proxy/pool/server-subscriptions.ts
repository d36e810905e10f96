// What Synartesis follows at each server on its clients' behalf. A resource
// is held by whoever wants its updates (a 2026-era client's subscription, a
// 2025-era client session that sent resources/subscribe) and subscribed to at
// the server that owns it: with resources/subscribe at a 2025-era server, on
// the one subscriptions/listen of Synartesis's own at a 2026-era server
// (which follows that server's list changes too, for every client). It is
// given up there when nobody holds it any more, and put back when the server
// is started again. What a server sends on Synartesis's own subscription
// reaches the clients as that server's other notifications do. A server that
// is slow or silent holds up only what is followed at it, and only so long.
import { frameOf, isRecord, type NotificationFrame } from "../../jsonrpc/frames.ts";
import { filterKey, isEmptyFilter, LIST_CHANGES, withSubscriptionId, type SubscriptionFilter } from "../../jsonrpc/subscriptions.ts";
import { clipped, type Logger } from "../../log.ts";
import type { OwnListen } from "../../servers/own-listens.ts";
import { UpstreamError, type Upstream } from "../../servers/upstream.ts";

/** After what is followed at a server could not be set up, how long before it is tried again (doubling up to the most). */
const RETRY_FIRST_MS = 1000;
const RETRY_MOST_MS = 60_000;
/** How long a server is waited for to follow a subscription (at most its own timeout): a 2026-era server's acknowledgment of Synartesis's, a client's acknowledgment for the resources it owns. */
const ACK_WAIT_MS = 5000;

export function ackWaitAt(upstream: Upstream): number {
  return Math.min(ACK_WAIT_MS, upstream.spec.timeoutMs > 0 ? upstream.spec.timeoutMs : ACK_WAIT_MS);
}
/** How many resources/subscribe (or unsubscribe) a 2025-era server is asked at once. */
const ASKED_AT_ONCE = 8;
/** How many resources Synartesis follows at one server for subscriptions: one more is not followed (left out of its acknowledgment). */
const MAX_FOLLOWED_PER_SERVER = 1000;

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
  /** At each 2025-era server, the resources it refused to subscribe to: not asked again (nor held) until it restarts. */
  private readonly refused = new Map<Upstream, Set<string>>();
  /** At each 2026-era server, Synartesis's own subscription (the one whose notifications count) and what the server honours of it. */
  private readonly listening = new Map<Upstream, { listen: OwnListen; honoured: SubscriptionFilter }>();
  /** 2026-era servers that refused Synartesis's subscription: not asked again until they restart. */
  private readonly listenRefused = new Set<Upstream>();
  /** Each server's changes are made one turn at a time. */
  private readonly queues = new Map<Upstream, Promise<void>>();
  /** Servers whose next turn is queued and not begun: it takes up every change made meanwhile. */
  private readonly queued = new Set<Upstream>();
  private readonly retryMs = new Map<Upstream, number>();

  constructor(private readonly options: ServerSubscriptionsOptions) {}

  /**
   * `holder` wants updates of these resources, each from the server that
   * owns it; resolves once those servers were asked (and Synartesis's own
   * subscriptions there are settled), with the resources now followed. A
   * resource refused before, or one more than a server's limit, is not held.
   */
  async hold(holder: object, owners: Map<string, Upstream>): Promise<Set<string>> {
    const asked = new Set<Upstream>();
    for (const [uri, owner] of owners) if (this.take(holder, uri, owner)) asked.add(owner);
    await Promise.all([...asked].map((owner) => this.enqueue(owner)));
    return new Set([...owners].filter(([uri, owner]) => this.follows(owner, uri)).map(([uri]) => uri));
  }

  /** `holder` wants a resource that its own request (a 2025 client's resources/subscribe) is about to subscribe to. */
  note(holder: object, uri: string, owner: Upstream): void {
    let holders = this.holdersAt(owner).get(uri);
    if (!holders) this.holdersAt(owner).set(uri, (holders = new Set()));
    holders.add(holder);
  }

  private take(holder: object, uri: string, owner: Upstream): boolean {
    const uris = this.holdersAt(owner);
    if (!uris.has(uri) && (uris.size >= MAX_FOLLOWED_PER_SERVER || this.refusedAt(owner).has(uri))) return false;
    this.note(holder, uri, owner);
    return true;
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

  /** The resources `holder` holds that their servers follow for Synartesis now. */
  followedFor(holder: object): Set<string> {
    const followed = new Set<string>();
    for (const [owner, uris] of this.held) for (const [uri, holders] of uris) if (holders.has(holder) && this.follows(owner, uri)) followed.add(uri);
    return followed;
  }

  /** A 2025 client's own resources/subscribe (or unsubscribe) was answered by its server: what the server now follows. */
  confirmed(owner: Upstream, uri: string, subscribed: boolean): void {
    if (subscribed) this.subscribedAt(owner).add(uri);
    else this.subscribedAt(owner).delete(uri);
    void this.enqueue(owner);
  }

  /** A server was started (for the first time, or again): what is held there is subscribed to afresh, refusals forgotten. */
  started(upstream: Upstream): void {
    this.subscribed.delete(upstream);
    this.refused.delete(upstream);
    this.listenRefused.delete(upstream);
    this.listening.get(upstream)?.listen.cancel();
    this.listening.delete(upstream);
    void this.enqueue(upstream);
  }

  /**
   * Which list changes reach Synartesis from these servers: a 2025-era
   * server's that it declares; a 2026-era server's that Synartesis's
   * subscription there honours, or, while that is being opened, that it
   * declares (unless it refused the subscription).
   */
  listChangesFrom(upstreams: Upstream[]): Set<string> {
    const fields = new Set<string>();
    for (const upstream of upstreams) {
      const honoured = this.listening.get(upstream)?.honoured;
      for (const { field, capability } of LIST_CHANGES) {
        const offered = upstream.capabilities?.[capability];
        const declared = isRecord(offered) && offered.listChanged === true;
        if (upstream.era !== "modern" ? declared : honoured ? honoured[field] === true : declared && !this.listenRefused.has(upstream)) fields.add(field);
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

  private refusedAt(owner: Upstream): Set<string> {
    let uris = this.refused.get(owner);
    if (!uris) this.refused.set(owner, (uris = new Set()));
    return uris;
  }

  /** A turn at the server that brings what it follows up to date; one still waiting to begin takes up every change made meanwhile. */
  private enqueue(upstream: Upstream): Promise<void> {
    if (this.queued.has(upstream)) return this.queues.get(upstream)!;
    this.queued.add(upstream);
    const next = (this.queues.get(upstream) ?? Promise.resolve())
      .then(() => {
        this.queued.delete(upstream);
        return upstream.era === "modern" ? this.listenAt(upstream) : this.subscribeAt(upstream);
      })
      .catch((error: Error) =>
        this.options.log.warn("could not follow what clients asked for at a server", { server: upstream.name, error: clipped(error.message) }),
      );
    this.queues.set(upstream, next);
    return next;
  }

  /** A 2025-era server: resources/subscribe for what is held there and not yet subscribed, resources/unsubscribe for what nobody holds. */
  private async subscribeAt(upstream: Upstream): Promise<void> {
    const subscribed = this.subscribedAt(upstream);
    const refused = this.refusedAt(upstream);
    const resources = upstream.capabilities?.resources;
    const offered = isRecord(resources) && resources.subscribe === true;
    const wanted = offered ? [...this.holdersAt(upstream).keys()].filter((uri) => !subscribed.has(uri) && !refused.has(uri)) : [];
    const refusals: Array<{ uri: string; error: string }> = [];
    const silent = await this.askEach(upstream, "resources/subscribe", wanted, (uri, error) => {
      if (error === undefined) return subscribed.add(uri);
      refused.add(uri);
      this.holdersAt(upstream).delete(uri);
      refusals.push({ uri, error });
    });
    if (refusals.length) {
      this.options.log.warn("a server refused to subscribe to resources clients asked to follow; they are not asked again until it restarts", {
        server: upstream.name,
        refused: refusals.length,
        uris: refusals.slice(0, 3).map(({ uri }) => clipped(uri)),
        error: clipped(refusals[0]!.error),
      });
    }
    if (silent) return this.retry(upstream, silent, false, "some resources clients follow there are not subscribed to");
    this.retryMs.delete(upstream);
    const unwanted = [...subscribed].filter((uri) => !this.holdersAt(upstream).has(uri));
    for (const uri of unwanted) subscribed.delete(uri);
    await this.askEach(upstream, "resources/unsubscribe", unwanted, (uri, error) => {
      if (error !== undefined)
        this.options.log.debug("a server did not unsubscribe from a resource nobody follows any more", {
          server: upstream.name,
          uri: clipped(uri),
          error: clipped(error),
        });
    });
  }

  /**
   * Ask a server `method` about each resource, a few at a time; `answered`
   * gets each one's error, if it had one. A request the server does not
   * answer in time ends the turn (the rest are not asked): returns why.
   */
  private async askEach(upstream: Upstream, method: string, uris: string[], answered: (uri: string, error?: string) => void): Promise<string | undefined> {
    let next = 0;
    let silent: string | undefined;
    const asker = async () => {
      while (next < uris.length && silent === undefined) {
        const uri = uris[next++]!;
        try {
          const reply = await upstream.ask(method, { uri });
          answered(uri, "error" in reply.msg ? reply.msg.error.message : undefined);
        } catch (error) {
          if (error instanceof UpstreamError && error.kind === "timeout") silent = error.message;
          else this.options.log.debug(`${method} could not be sent`, { server: upstream.name, uri: clipped(uri), error: clipped((error as Error).message) });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(ASKED_AT_ONCE, uris.length) }, asker));
    return silent;
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
   * falls between the two). One not acknowledged within ackWaitAt() is
   * given up, and opened again later.
   */
  private async listenAt(upstream: Upstream): Promise<void> {
    const wanted = this.wantedAt(upstream);
    const current = this.listening.get(upstream);
    if (current && filterKey(current.listen.filter) === filterKey(wanted)) return;
    if (isEmptyFilter(wanted) || !upstream.alive || this.listenRefused.has(upstream)) {
      current?.listen.cancel();
      if (this.listening.delete(upstream))
        this.options.log.debug("Synartesis's subscription at a server is closed: nothing is followed there", { server: upstream.name });
      return;
    }
    const notFollowed = "its list changes and resource updates are not followed";
    await new Promise<void>((settled) => {
      let acknowledged = false;
      const ackMs = ackWaitAt(upstream);
      const failed = (why: string, refused: boolean) => {
        clearTimeout(timer);
        listen?.cancel();
        settled();
        if (refused) this.listenRefused.add(upstream);
        this.retry(upstream, why, refused, notFollowed);
      };
      const timer = setTimeout(() => failed(`it did not acknowledge it within ${ackMs / 1000} s`, false), ackMs);
      timer.unref();
      const listen = upstream.listen(wanted, {
        acknowledged: (honoured) => {
          clearTimeout(timer);
          acknowledged = true;
          this.retryMs.delete(upstream);
          this.listening.get(upstream)?.listen.cancel();
          this.listening.set(upstream, { listen: listen!, honoured });
          this.options.log.debug("Synartesis's subscription at a server is open", { server: upstream.name, honoured });
          settled();
        },
        notified: (frame) => {
          if (this.listening.get(upstream)?.listen === listen) this.options.notify(upstream, untagged(frame));
        },
        ended: (why, refused) => {
          // Once acknowledged, only the subscription in use is followed up (the rest of failed() is done by then).
          if (acknowledged) {
            if (this.listening.get(upstream)?.listen !== listen) return;
            this.listening.delete(upstream);
          }
          failed(why, refused);
        },
      });
      if (!listen) failed("it is not running", false);
    });
  }

  /** What is followed at a server is not what it should be (`what` is missing): while the server runs (and did not refuse), it is tried again, later, less and less often. */
  private retry(upstream: Upstream, why: string, refused: boolean, what: string): void {
    // A server that stopped is subscribed to again when it is started again.
    if (!upstream.alive) return this.options.log.debug("what is followed at a server ended with it", { server: upstream.name, why: clipped(why) });
    const delay = this.retryMs.get(upstream) ?? RETRY_FIRST_MS;
    // Warned of once, until it works again: each try after that is logged at debug level.
    this.options.log[this.retryMs.has(upstream) ? "debug" : "warn"](
      `a server does not follow what clients asked for: ${what}${refused ? "" : " until it is tried again"}`,
      {
        server: upstream.name,
        why: clipped(why),
        ...(refused ? {} : { retryInSeconds: delay / 1000 }),
      },
    );
    if (refused) return;
    this.retryMs.set(upstream, Math.min(delay * 2, RETRY_MOST_MS));
    setTimeout(() => void this.enqueue(upstream), delay).unref();
  }
}

/** A notification as a server sent it on Synartesis's own subscription, without that subscription's id (each client's goes on). */
function untagged(frame: NotificationFrame): NotificationFrame {
  const raw = withSubscriptionId(frame.raw, undefined);
  return frameOf(JSON.parse(raw), raw) as NotificationFrame;
}
