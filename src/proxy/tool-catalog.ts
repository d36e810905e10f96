// Which tools each server offers, so that a call naming a tool its server does
// not have is answered as the server would answer it (-32602) instead of being
// held for approval or journalled (R-PROXY-12). Lists change: a name not seen
// yet is looked up once more before it is called unknown. It also keeps which
// arguments of each tool its calls repeat in Mcp-Param-* headers (SEP-2243),
// which `proxy --http` checks on a 2026-07-28 client's call.
import { mirroredArguments } from "../jsonrpc/header-values.ts";
import { listTools, toolNames } from "../servers/tools.ts";
import type { Upstream } from "../servers/upstream.ts";

export class ToolCatalog {
  private readonly known = new Map<Upstream, Set<string>>();
  /** By server, by tool: argument name → Mcp-Param-* header suffix (tools that mirror none are absent). */
  private readonly mirrored = new Map<Upstream, Map<string, Map<string, string>>>();
  private readonly refreshing = new Map<Upstream, Promise<void>>();

  /** The server's tools, as its tools/list gave them. */
  remember(upstream: Upstream, tools: Array<Record<string, unknown>>): void {
    this.known.set(upstream, toolNames(tools));
    const mirrored = new Map<string, Map<string, string>>();
    for (const tool of tools) {
      const args = mirroredArguments(tool);
      if (typeof tool.name === "string" && args.size > 0) mirrored.set(tool.name, args);
    }
    this.mirrored.set(upstream, mirrored);
  }

  /**
   * The arguments of the server's tool that a call repeats in Mcp-Param-*
   * headers (empty: none, or a tool it does not offer, or a list that cannot be had).
   */
  async mirroredArguments(upstream: Upstream, name: string): Promise<ReadonlyMap<string, string>> {
    if (!(await this.offers(upstream, name))) return new Map();
    return this.mirrored.get(upstream)?.get(name) ?? new Map();
  }

  /** The server's list may have changed (it said so, or it restarted): ask again before relying on it. */
  forget(upstream: Upstream): void {
    this.known.delete(upstream);
    this.mirrored.delete(upstream);
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
