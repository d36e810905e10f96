// The review page's HTTP server (R-UI-4): loopback only; a random token in the
// printed URL is exchanged for an HttpOnly SameSite=Strict cookie; every
// request needs that cookie and a Host of ours, every state-changing one also
// the page's own origin. Serves the embedded page and the API.
import type { Server } from "bun";
import { SynartesisError } from "../errors.ts";
import type { DecisionCommand } from "../self.ts";
import { handleApi, jsonResponse, type ApiContext } from "./api.ts";
import { loadAssets, type Asset } from "./assets.ts";
import { ChangeFeed } from "./events.ts";
import { allowedNames, hostAllowed, newToken, tokenMatches } from "../http/guard.ts";
import { cookieValue, sameOrigin } from "./guard.ts";
import { JournalSource } from "./source.ts";

export const UI_ADDRESS = "127.0.0.1";
const UI_NAMES = allowedNames(UI_ADDRESS);

export interface UiServerOptions {
  /** 0: any free port. */
  port: number;
  journalPath: string;
  /** An explicit manifest for undo (absolute), instead of the one each run was recorded with. */
  manifest?: string;
  cwd: string;
  /** The commands that decide a call, for this journal. */
  decisionCommand: DecisionCommand;
  decider: string;
}

export interface UiServer {
  /** The address to open, token included. */
  url: string;
  port: number;
  /** Whether an undo started from the page is still working. */
  busy(): boolean;
  /** Wait for undos in progress, then close everything. */
  stop(): Promise<void>;
}

const SECURITY_HEADERS: Record<string, string> = {
  "Content-Security-Policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "X-Content-Type-Options": "nosniff",
  "X-Frame-Options": "DENY",
  "Referrer-Policy": "no-referrer",
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Resource-Policy": "same-origin",
};

const PAGE_PATH = /^\/(?:|gates|runs\/[^/]+)$/;

function text(status: number, body: string): Response {
  return new Response(`${body}\n`, { status, headers: { "Content-Type": "text/plain; charset=utf-8" } });
}

function serveAsset(asset: Asset, cache: string): Response {
  return new Response(asset.body, { headers: { "Content-Type": asset.type, "Cache-Control": cache } });
}

export async function startUiServer(options: UiServerOptions): Promise<UiServer> {
  const assets = await loadAssets();
  const token = newToken();
  const apiSource = new JournalSource(options.journalPath);
  // The feed polls on a connection of its own, so the page's own writes move its data version too.
  const feed = new ChangeFeed(new JournalSource(options.journalPath));
  const undos = new Set<Promise<void>>();
  let server: Server<undefined>;
  const ctx: ApiContext = {
    source: apiSource,
    ...(options.manifest ? { manifest: options.manifest } : {}),
    cwd: options.cwd,
    now: () => new Date(),
    decisionCommand: options.decisionCommand,
    decider: options.decider,
    undos,
    keepOpen: (request) => server.timeout(request, 0),
  };

  async function route(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const path = url.pathname;
    if (!hostAllowed(request.headers.get("host"), UI_NAMES)) {
      return text(403, `Refused: this page answers only to ${UI_ADDRESS} and localhost.`);
    }
    const cookie = `synartesis_ui_${server.port}`;
    const presented = url.searchParams.get("token");
    if (presented !== null && request.method === "GET") {
      if (!tokenMatches(presented, token)) {
        return text(403, "This link's token is not valid (was synartesis ui restarted?). Open the address it printed last.");
      }
      url.searchParams.delete("token");
      return new Response(null, {
        status: 303,
        headers: { Location: `${path}${url.search}`, "Set-Cookie": `${cookie}=${token}; HttpOnly; SameSite=Strict; Path=/` },
      });
    }
    if (!tokenMatches(cookieValue(request.headers.get("cookie"), cookie), token)) {
      const why = "Not signed in: open the address synartesis ui printed (it carries the token that signs this browser in).";
      return path.startsWith("/api/") ? jsonResponse(401, { error: why }) : text(401, why);
    }
    if (request.method !== "GET" && request.method !== "HEAD") {
      const origin = sameOrigin(request.headers);
      if (!origin.ok) return jsonResponse(403, { error: `refused: ${origin.why}` });
    }
    if (path === "/api/events") {
      if (request.method !== "GET") return jsonResponse(405, { error: "/api/events takes GET" });
      server.timeout(request, 0);
      return feed.subscribe();
    }
    if (path.startsWith("/api/")) return handleApi(ctx, request, path);
    const asset = assets.files.get(path);
    if (asset) return serveAsset(asset, "private, max-age=3600");
    if (PAGE_PATH.test(path)) return serveAsset(assets.html, "no-store");
    return text(404, "Not found.");
  }

  try {
    server = Bun.serve({
      hostname: UI_ADDRESS,
      port: options.port,
      async fetch(request) {
        const response = await route(request);
        for (const [name, value] of Object.entries(SECURITY_HEADERS)) response.headers.set(name, value);
        return response;
      },
      error: (error) => jsonResponse(500, { error: `internal error: ${error.message}` }),
    });
  } catch (error) {
    const message = (error as Error).message ?? String(error);
    if ((error as { code?: string }).code === "EADDRINUSE" || /in use/i.test(message)) {
      throw new SynartesisError("config", `port ${options.port} on ${UI_ADDRESS} is in use`, { hint: "Choose another with --port, or --port 0 for any free port." });
    }
    throw new SynartesisError("config", `cannot serve on ${UI_ADDRESS}:${options.port}: ${message}`);
  }

  return {
    url: `http://${UI_ADDRESS}:${server.port}/?token=${token}`,
    port: server.port!,
    busy: () => undos.size > 0,
    async stop() {
      await Promise.allSettled([...undos]);
      feed.stop();
      await server.stop(true);
      await apiSource.close().catch(() => {});
    },
  };
}
