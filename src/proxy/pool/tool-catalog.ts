// Which tools each server offers (and their inputSchemas), so that a call naming a tool its server does
// not have is answered as the server would answer it (-32602) instead of being
// held for approval or journalled (R-PROXY-12). Lists change: a name not seen
// yet is looked up once more before it is called unknown, and a list found to
// differ from the one clients last knew, without its server saying so, is reported.
import { canonicalJson } from "../../canonical.ts";
import { listTools } from "../../servers/tools.ts";
import type { Upstream } from "../../servers/upstream.ts";

/** A tool list as compared: the same tools in any order, their keys in any order, are the same list. */
const canonicalList = (tools: Array<Record<string, unknown>>) => JSON.stringify(tools.map(canonicalJson).sort());

/** A listing of a server's tools: waiting for the one before it, or started after its `announced`th announcement. */
interface Listing {
  announced: number;
  started: boolean;
  done: Promise<void>;
}

export class ToolCatalog {
  /** Each server's tools: name → inputSchema. */
  private readonly known = new Map<Upstream, Map<string, unknown>>();
  /** Each server's list as its clients last knew it (the first seen, or the first after its server said it changed). */
  private readonly told = new Map<Upstream, string>();
  /** How many times each server said its list changed: a listing begun before the last time is stale. */
  private readonly announced = new Map<Upstream, number>();
  private readonly refreshing = new Map<Upstream, Listing>();

  /** `changed`: a server's list differs from the one its clients last knew, and nobody was told (the server did not say so). */
  constructor(private readonly changed: (upstream: Upstream) => void = () => {}) {}

  /** A server's list, as listed after its `announced`th announcement of a change (by default, the last): ignored when stale. */
  remember(upstream: Upstream, tools: Array<Record<string, unknown>>, announced = this.announcedAt(upstream)): void {
    if (announced !== this.announcedAt(upstream)) return;
    this.known.set(upstream, new Map(tools.flatMap((tool) => (typeof tool.name === "string" ? [[tool.name, tool.inputSchema]] : []))));
    const seen = canonicalList(tools);
    const before = this.told.get(upstream);
    this.told.set(upstream, seen);
    if (before !== undefined && before !== seen) this.changed(upstream);
  }

  /** The inputSchema the server last listed for a tool (undefined when not known). */
  inputSchema(upstream: Upstream, name: string): unknown {
    return this.known.get(upstream)?.get(name);
  }

  /**
   * The server said its list changed (its clients were told): what they know
   * now is its next list, listed at once, so that a list seen later (after a
   * restart) is compared with it.
   */
  forget(upstream: Upstream): void {
    this.announced.set(upstream, this.announcedAt(upstream) + 1);
    this.known.delete(upstream);
    this.told.delete(upstream);
    void this.relist(upstream).catch(() => {});
  }

  /** The server restarted: its list may differ, and is listed again before it is relied on. */
  doubt(upstream: Upstream): void {
    this.known.delete(upstream);
  }

  /**
   * Whether the server offers this tool, after one fresh tools/list when the
   * name is not known. When the list cannot be had, true: the call pipeline
   * then reports the server's state as it does for any call.
   */
  async offers(upstream: Upstream, name: string): Promise<boolean> {
    if (this.known.get(upstream)?.has(name)) return true;
    try {
      await this.relist(upstream);
    } catch {
      return true;
    }
    return this.known.get(upstream)?.has(name) ?? true;
  }

  /**
   * List a server's tools again (it restarted, said its list changed, a name
   * was not known): one listing at a time, and at most one more waiting, which
   * covers every announcement made before it starts (a server that announces
   * a thousand changes at once is listed twice, not a thousand times).
   */
  relist(upstream: Upstream): Promise<void> {
    const underway = this.refreshing.get(upstream);
    if (underway && (!underway.started || underway.announced === this.announcedAt(upstream))) return underway.done;
    const listing: Listing = { announced: this.announcedAt(upstream), started: !underway, done: Promise.resolve() };
    listing.done = (async () => {
      if (underway) {
        await underway.done.catch(() => {});
        listing.started = true;
        listing.announced = this.announcedAt(upstream);
      }
      await upstream.ensureReady();
      this.remember(upstream, await listTools(upstream), listing.announced);
    })().finally(() => {
      if (this.refreshing.get(upstream) === listing) this.refreshing.delete(upstream);
    });
    this.refreshing.set(upstream, listing);
    return listing.done;
  }

  private announcedAt(upstream: Upstream): number {
    return this.announced.get(upstream) ?? 0;
  }
}
