// The review page's HTTP server (R-UI-4, R-UI-5): loopback only. The address
// printed, and the one handed to a browser opener, carry a code in their
// fragment (never sent in a request, nor kept in a server's log); the page
// trades it for the session's token (POST /api/session) and sends that token
// itself, as a bearer token, with every API request. No cookie: a browser
// would send it to any other service on another port of this host. The
// opener's code works once (the opener's argv is readable by other users);
// the printed one as long as the server runs. Every request needs a Host of
// ours, every state-changing one the page's own origin too.
import type { Server } from "bun";
import { SynartesisError } from "../errors.ts";
import type { DecisionCommand } from "../self.ts";
import { handleApi, jsonResponse, readBody, type ApiContext } from "./api.ts";
import { loadAssets, type Asset } from "./assets.ts";
import { ChangeFeed } from "./events.ts";
import { allowedNames, hostAllowed, newToken, tokenMatches } from "../http/guard.ts";
import { bearerToken, sameOrigin } from "./guard.ts";
import { RunList } from "./run-list.ts";
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
  /** The address to print: its code signs in any number of browser tabs. */
  url: string;
  /** An address for a browser opener: its code signs in once, so a copy read from the opener's argv is of no use after. */
  oneTimeUrl(): string;
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

/**
 * The session's credentials (R-UI-5): the token the page sends as a bearer
 * token, the printed code that trades for it in any number of tabs, and the
 * codes handed to a browser opener, each good once.
 */
class PageSignIn {
  readonly token = newToken();
  readonly printedCode = newToken();
  private readonly oneTimeCodes = new Set<string>();

  /** A code for a browser opener (its argv is readable by other users): it trades for the token once. */
  oneTimeCode(): string {
    const code = newToken();
    this.oneTimeCodes.add(code);
    return code;
  }

  /** The token for a code, or undefined for one that is not valid or was used. */
  trade(code: unknown): string | undefined {
    return typeof code === "string" && (tokenMatches(code, this.printedCode) || this.oneTimeCodes.delete(code)) ? this.token : undefined;
  }

  /** Whether a request presents the token. */
  admits(request: Request): boolean {
    return tokenMatches(bearerToken(request.headers.get("authorization")), this.token);
  }
}

/** The page and its files, which hold no data: served to anyone who may reach this address. */
function pageOrAsset(assets: Awaited<ReturnType<typeof loadAssets>>, path: string): Response {
  const asset = assets.files.get(path);
  if (asset) return serveAsset(asset, "private, max-age=3600");
  if (PAGE_PATH.test(path)) return serveAsset(assets.html, "no-store");
  return text(404, "Not found.");
}

/** POST /api/session: the page trades the code in its address for the session's token. */
async function tradeCode(request: Request, signIn: PageSignIn): Promise<Response> {
  if (request.method !== "POST") return jsonResponse(405, { error: "/api/session takes POST" });
  const token = signIn.trade((await readBody(request).catch(() => ({}) as Record<string, unknown>)).code);
  if (!token)
    return jsonResponse(403, { error: "This link's code is not valid, or was used already (was synartesis ui restarted?). Open the address it printed last." });
  return jsonResponse(200, { token });
}

/** Bun.serve on the loopback address, its failure to bind said as a person can act on it. */
function listen(port: number, fetch: (request: Request) => Promise<Response>): Server<undefined> {
  try {
    return Bun.serve({
      hostname: UI_ADDRESS,
      port,
      async fetch(request) {
        const response = await fetch(request);
        for (const [name, value] of Object.entries(SECURITY_HEADERS)) response.headers.set(name, value);
        return response;
      },
      error: (error) => jsonResponse(500, { error: `internal error: ${error.message}` }),
    });
  } catch (error) {
    const message = (error as Error).message ?? String(error);
    if ((error as { code?: string }).code === "EADDRINUSE" || /in use/i.test(message)) {
      throw new SynartesisError("config", `port ${port} on ${UI_ADDRESS} is in use`, { hint: "Choose another with --port, or --port 0 for any free port." });
    }
    throw new SynartesisError("config", `cannot serve on ${UI_ADDRESS}:${port}: ${message}`);
  }
}

export async function startUiServer(options: UiServerOptions): Promise<UiServer> {
  const assets = await loadAssets();
  const signIn = new PageSignIn();
  const apiSource = new JournalSource(options.journalPath);
  // The feed polls on a connection of its own, so the page's own writes move its data version too.
  const feed = new ChangeFeed(new JournalSource(options.journalPath));
  const undos = new Set<Promise<void>>();
  const ctx: ApiContext = {
    source: apiSource,
    ...(options.manifest ? { manifest: options.manifest } : {}),
    cwd: options.cwd,
    now: () => new Date(),
    decisionCommand: options.decisionCommand,
    decider: options.decider,
    undos,
    keepOpen: (request) => server.timeout(request, 0),
    runList: new RunList(),
  };
  // Read what every run's calls are about now, so the first search does not wait for it (run-list.ts); a search reads it anyway.
  void (async () => {
    const journal = await apiSource.get();
    if (journal) await ctx.runList.warm(journal);
  })().catch(() => {});

  const server = listen(options.port, async (request) => {
    if (!hostAllowed(request.headers.get("host"), UI_NAMES)) return text(403, `Refused: this page answers only to ${UI_ADDRESS} and localhost.`);
    const path = new URL(request.url).pathname;
    if (!path.startsWith("/api/")) return pageOrAsset(assets, path);
    if (request.method !== "GET" && request.method !== "HEAD") {
      const origin = sameOrigin(request.headers);
      if (!origin.ok) return jsonResponse(403, { error: `refused: ${origin.why}` });
    }
    if (path === "/api/session") return tradeCode(request, signIn);
    if (!signIn.admits(request))
      return jsonResponse(401, { error: "Not signed in: open the address synartesis ui printed (it carries the code that signs this browser in)." });
    if (path === "/api/events") {
      if (request.method !== "GET") return jsonResponse(405, { error: "/api/events takes GET" });
      server.timeout(request, 0);
      return feed.subscribe();
    }
    return handleApi(ctx, request, path);
  });

  const address = (code: string) => `http://${UI_ADDRESS}:${server.port}/#code=${code}`;
  return {
    url: address(signIn.printedCode),
    oneTimeUrl: () => address(signIn.oneTimeCode()),
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
