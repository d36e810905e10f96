// A server reached over Streamable HTTP: in the 2025 era through the SDK's
// client transport, with the stored OAuth sign-in when the manifest says
// `auth: oauth`; in the 2026-07-28 era (a server without `auth`) by requests
// of its own that carry the headers that era requires (modern-http.ts).
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { oauthLink, type OAuthLink } from "../auth/connection.ts";
import { SynartesisError } from "../errors.ts";
import type { Logger } from "../log.ts";
import type { ServerSpec } from "../manifest/types.ts";
import { transportLink, type Link, type LinkEvents } from "./link.ts";
import { ModernHttpRequests } from "./modern-http.ts";

const HTTP_CLOSE_WAIT_MS = 300;

export async function httpLink(spec: Extract<ServerSpec, { kind: "url" }>, events: LinkEvents, log: Logger): Promise<Link> {
  let auth: OAuthLink | undefined;
  try {
    auth = spec.auth ? oauthLink({ ...spec, auth: spec.auth }) : undefined;
  } catch (error) {
    if (error instanceof SynartesisError) throw new Error([error.message, ...error.details].join(" "));
    throw error;
  }
  const transport = new StreamableHTTPClientTransport(new URL(spec.url), { requestInit: { headers: spec.headers }, ...auth?.transportOptions });
  transport.onerror = (error) => log.warn("http upstream error", { server: spec.name, error: auth?.provider.redact(error.message) ?? error.message });
  // A server that signs in is spoken to in the 2025 era only: the sign-in lives in the SDK's transport.
  const modern = spec.auth
    ? undefined
    : new ModernHttpRequests(new URL(spec.url), spec.headers, events.onLine, (tool, reason) =>
        log.warn("a tool of the server is left out: its x-mcp-header marking is invalid", { server: spec.name, tool, reason }),
      );
  const link = await transportLink(transport, events, async () => {
    modern?.close();
    // A server that never answers the session's DELETE must not keep the proxy from exiting.
    await Promise.race([transport.terminateSession().catch(() => {}), Bun.sleep(HTTP_CLOSE_WAIT_MS)]);
    await transport.close();
  });
  return {
    ...link,
    send: (line) => {
      const sent = modern?.take(line);
      if (sent) return sent;
      return Promise.resolve(link.send(line)).catch((error: unknown) => {
        throw auth?.explain(error) ?? error;
      });
    },
  };
}
