// Names and ownership when one proxy fronts several servers: tools and prompts
// become `server__name`; resource URIs keep their names and are routed by owner.
import type { Upstream } from "../../servers/upstream.ts";

export const NAME_SEPARATOR = "__";

function templateToRegExp(template: string): RegExp {
  const body = template
    .split(/\{[^}]*\}/)
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
    .join("(.+?)");
  return new RegExp(`^${body}$`);
}

export class Router {
  readonly upstreams: Upstream[];
  private readonly byName: Map<string, Upstream>;
  private readonly resourceOwners = new Map<string, Upstream>();
  private readonly templates: Array<{ template: string; regexp: RegExp; upstream: Upstream }> = [];

  constructor(upstreams: Upstream[]) {
    this.upstreams = upstreams;
    this.byName = new Map(upstreams.map((u) => [u.name, u]));
  }

  get single(): Upstream | undefined {
    return this.upstreams.length === 1 ? this.upstreams[0] : undefined;
  }

  server(name: string): Upstream | undefined {
    return this.byName.get(name);
  }

  /** The name the client sees for a server's tool or prompt. */
  exposed(upstream: Upstream, name: string): string {
    return this.single ? name : `${upstream.name}${NAME_SEPARATOR}${name}`;
  }

  /** Which server a client-visible tool or prompt name belongs to, and its own name there. */
  resolve(exposedName: string): { upstream: Upstream; name: string } | undefined {
    const single = this.single;
    if (single) return { upstream: single, name: exposedName };
    const split = exposedName.indexOf(NAME_SEPARATOR);
    if (split <= 0) return undefined;
    const upstream = this.byName.get(exposedName.slice(0, split));
    const name = exposedName.slice(split + NAME_SEPARATOR.length);
    return upstream && name ? { upstream, name } : undefined;
  }

  rememberResources(upstream: Upstream, resources: Array<{ uri?: unknown }>): void {
    for (const resource of resources) if (typeof resource.uri === "string") this.resourceOwners.set(resource.uri, upstream);
  }

  rememberTemplates(upstream: Upstream, templates: Array<{ uriTemplate?: unknown }>): void {
    for (const t of templates) {
      if (typeof t.uriTemplate !== "string" || this.templates.some((k) => k.template === t.uriTemplate && k.upstream === upstream)) continue;
      this.templates.push({ template: t.uriTemplate, regexp: templateToRegExp(t.uriTemplate), upstream });
    }
  }

  /** The server that offers a resource URI (or a URI template, for completions). */
  ownerOf(uri: string): Upstream | undefined {
    const single = this.single;
    if (single) return single;
    return this.resourceOwners.get(uri) ?? this.templates.find((t) => t.template === uri)?.upstream ?? this.templates.find((t) => t.regexp.test(uri))?.upstream;
  }
}
