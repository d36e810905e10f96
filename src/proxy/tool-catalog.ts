// Which tools each server offers (and their inputSchemas), so that a call naming a tool its server does
// not have is answered as the server would answer it (-32602) instead of being
// held for approval or journalled (R-PROXY-12). Lists change: a name not seen
// yet is looked up once more before it is called unknown, and a list found to
// differ from the one known before, without its server saying so, is reported.
import { listTools } from "../servers/tools.ts";
import type { Upstream } from "../servers/upstream.ts";

export class ToolCatalog {
  /** Each server's tools: name → inputSchema. */
  private readonly known = new Map<Upstream, Map<string, unknown>>();
  /** Each server's list as it was last seen (to tell whether the next one differs), until its server says it changed. */
  private readonly lastSeen = new Map<Upstream, string>();
  private readonly refreshing = new Map<Upstream, Promise<void>>();

  /** `changed`: a server's list differs from the one seen before, and nobody was told (the server did not say so). */
  constructor(private readonly changed: (upstream: Upstream) => void = () => {}) {}

  remember(upstream: Upstream, tools: Array<Record<string, unknown>>): void {
    this.known.set(upstream, new Map(tools.flatMap((tool) => (typeof tool.name === "string" ? [[tool.name, tool.inputSchema]] : []))));
    const seen = JSON.stringify(tools);
    const before = this.lastSeen.get(upstream);
    this.lastSeen.set(upstream, seen);
    if (before !== undefined && before !== seen) this.changed(upstream);
  }

  /** The inputSchema the server last listed for a tool (undefined when not known). */
  inputSchema(upstream: Upstream, name: string): unknown {
    return this.known.get(upstream)?.get(name);
  }

  /** The server said its list changed (its clients were told): ask again before relying on it. */
  forget(upstream: Upstream): void {
    this.known.delete(upstream);
    this.lastSeen.delete(upstream);
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

  /** List a server's tools again (it restarted, a name was not known): once at a time. */
  relist(upstream: Upstream): Promise<void> {
    let pending = this.refreshing.get(upstream);
    if (!pending) {
      pending = (async () => {
        await upstream.ensureReady();
        this.remember(upstream, await listTools(upstream));
      })().finally(() => this.refreshing.delete(upstream));
      this.refreshing.set(upstream, pending);
    }
    return pending;
  }
}
