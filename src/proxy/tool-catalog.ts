// Which tools each server offers (and their inputSchemas), so that a call naming a tool its server does
// not have is answered as the server would answer it (-32602) instead of being
// held for approval or journalled (R-PROXY-12). Lists change: a name not seen
// yet is looked up once more before it is called unknown.
import { listTools } from "../servers/tools.ts";
import type { Upstream } from "../servers/upstream.ts";

export class ToolCatalog {
  /** Each server's tools: name → inputSchema. */
  private readonly known = new Map<Upstream, Map<string, unknown>>();
  private readonly refreshing = new Map<Upstream, Promise<void>>();

  remember(upstream: Upstream, tools: Array<Record<string, unknown>>): void {
    this.known.set(upstream, new Map(tools.flatMap((tool) => (typeof tool.name === "string" ? [[tool.name, tool.inputSchema]] : []))));
  }

  /** The inputSchema the server last listed for a tool (undefined when not known). */
  inputSchema(upstream: Upstream, name: string): unknown {
    return this.known.get(upstream)?.get(name);
  }

  /** The server's list may have changed (it said so, or it restarted): ask again before relying on it. */
  forget(upstream: Upstream): void {
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
      await this.refresh(upstream);
    } catch {
      return true;
    }
    return this.known.get(upstream)?.has(name) ?? true;
  }

  private refresh(upstream: Upstream): Promise<void> {
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
