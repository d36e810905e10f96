// Signing in to one server (R-AUTH-2): ask the server (its 401 names the
// protected-resource metadata and the scope it wants), discover the
// authorization server, let the SDK register or use the configured client and
// build the PKCE authorization URL with the resource indicator, show that URL
// to a person, wait on a loopback address for the browser to come back, check
// its state and trade the code for tokens. Used by `login`, by `init --url`,
// and by the proxy when a client can show a URL (elicitation).
import { randomBytes } from "node:crypto";
import { auth, discoverOAuthServerInfo, extractWWWAuthenticateParams } from "@modelcontextprotocol/sdk/client/auth.js";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { SynartesisError } from "../errors.ts";
import type { ServerSpec } from "../manifest/types.ts";
import { VERSION } from "../version.ts";
import { signInCommands, type OAuthServerSpec } from "./connection.ts";
import { endpointProblem } from "./endpoints.ts";
import { SynartesisOAuthProvider } from "./provider.ts";
import { CredentialStore } from "./store.ts";

export const SIGN_IN_TIMEOUT_MS = 5 * 60_000;

export interface SignInOptions {
  /** Show the authorization URL to the person; may throw (a SynartesisError) when they decline. */
  present(authorizationUrl: URL): Promise<void>;
  timeoutMs?: number;
  /** A scope the server asked for during a session (more access), on top of the configured scopes. */
  scope?: string;
  env?: Record<string, string | undefined>;
}

export interface SignedIn {
  credentialsPath: string;
  scope?: string;
}

const refused = (message: string) => new SynartesisError("refused", message);

/**
 * What was wrong with a server's OAuth metadata, in one sentence: the SDK
 * reports a schema failure as its issues' JSON; each becomes "field: message".
 */
function metadataProblem(error: unknown): string {
  const message = (error as Error).message ?? String(error);
  let issues: unknown;
  try {
    issues = (error as { issues?: unknown }).issues ?? JSON.parse(message);
  } catch {
    return untrusted(message);
  }
  if (!Array.isArray(issues) || issues.length === 0) return untrusted(message);
  const said = issues.map(
    (issue: { path?: unknown[]; message?: unknown }) => `${(issue.path ?? []).join(".") || "(the document)"}: ${String(issue.message ?? "invalid")}`,
  );
  return untrusted(`its OAuth metadata is invalid (${said.join("; ")})`);
}

/** Control characters and length made harmless: the text came from a server or a browser. */
function untrusted(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, "?").slice(0, 300);
}

export async function signIn(spec: OAuthServerSpec, options: SignInOptions): Promise<SignedIn> {
  const commands = signInCommands(spec);
  const store = new CredentialStore(spec.url, commands, options.env);
  const previous = store.read();
  const loopback = listen(spec.name, previous?.redirectUrl);
  try {
    const state = randomBytes(32).toString("base64url");
    const provider = new SynartesisOAuthProvider(spec.name, spec.auth, store, { redirectUrl: loopback.redirectUrl, state, open: options.present });
    const challenge = await probe(spec);
    let noMetadata = false;
    try {
      const info = await discoverOAuthServerInfo(spec.url, { resourceMetadataUrl: challenge.resourceMetadataUrl });
      noMetadata = !info.authorizationServerMetadata && !info.resourceMetadata;
      provider.useDiscovery({ ...info, resourceMetadataUrl: challenge.resourceMetadataUrl?.href });
    } catch (error) {
      throw refused(`could not find how server "${spec.name}" signs in: ${metadataProblem(error)}`);
    }
    const metadata = (provider.discoveryState()?.authorizationServerMetadata ?? {}) as Record<string, unknown>;
    for (const field of ["authorization_endpoint", "token_endpoint", "registration_endpoint"]) {
      const problem = endpointProblem(metadata[field]);
      if (problem) throw refused(`server "${untrusted(spec.name)}" publishes an ${field} Synartesis will not use: ${problem}. Nothing was opened or sent.`);
    }
    const wanted = [...spec.auth.scopes, ...(options.scope ?? "").split(" "), ...(challenge.scope ?? "").split(" ")].filter(Boolean);
    const scope = wanted.length ? [...new Set(wanted)].join(" ") : undefined;
    const flow = { serverUrl: spec.url, scope, resourceMetadataUrl: challenge.resourceMetadataUrl };

    try {
      if ((await auth(provider, flow)) === "AUTHORIZED") return { credentialsPath: store.path, scope: provider.tokens()?.scope };
    } catch (error) {
      if (error instanceof SynartesisError) throw error;
      const why = provider.redact((error as Error).message);
      if (noMetadata) {
        throw refused(
          `server "${spec.name}" publishes no OAuth metadata (neither protected-resource nor authorization-server metadata), and its default endpoints did not work either (${why}); it may not offer OAuth sign-in`,
        );
      }
      if (provider.registering) {
        throw refused(
          `the authorization server would not register Synartesis as a client of server "${spec.name}" (${why}). If its owner gave you a client id, add it to the manifest: auth: {type: oauth, client_id: …}`,
        );
      }
      throw refused(`could not start the sign-in to server "${spec.name}": ${why}`);
    }

    const code = await loopback.code(state, options.timeoutMs ?? SIGN_IN_TIMEOUT_MS, commands.login);
    try {
      await auth(provider, { ...flow, authorizationCode: code });
    } catch (error) {
      throw refused(`the authorization server did not accept the sign-in to server "${spec.name}": ${provider.redact((error as Error).message)}`);
    }
    return { credentialsPath: store.path, scope: provider.tokens()?.scope };
  } finally {
    loopback.stop();
  }
}

/** Ask the server without credentials; its 401 says where its metadata is and what scope it wants. */
export async function probe(spec: Extract<ServerSpec, { kind: "url" }>): Promise<{ status: number; resourceMetadataUrl?: URL; scope?: string }> {
  let response: Response;
  try {
    response = await fetch(spec.url, {
      method: "POST",
      headers: {
        ...spec.headers,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": LATEST_PROTOCOL_VERSION,
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 0,
        method: "initialize",
        params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "synartesis-login", version: VERSION } },
      }),
      redirect: "manual",
    });
  } catch (error) {
    throw new SynartesisError("server", `could not reach server "${spec.name}" at ${spec.url}: ${(error as Error).message}`);
  }
  await response.body?.cancel().catch(() => {});
  if (response.status !== 401) return { status: response.status };
  const { resourceMetadataUrl, scope } = extractWWWAuthenticateParams(response);
  return { status: 401, ...(resourceMetadataUrl ? { resourceMetadataUrl } : {}), ...(scope ? { scope } : {}) };
}

type Outcome = { code: string; state: string | null } | { error: string; description: string | null; state: string | null };

/** A loopback HTTP listener for the browser's return, on the port used last time when it is free (so a registration can be reused). */
function listen(serverName: string, previousRedirect: string | undefined) {
  let settle!: (outcome: Outcome) => void;
  const outcome = new Promise<Outcome>((resolve) => (settle = resolve));
  const page = (status: number, text: string) =>
    new Response(`<!doctype html><meta charset="utf-8"><title>Synartesis</title><p>${escapeHtml(text)}</p>`, {
      status,
      headers: { "content-type": "text/html; charset=utf-8" },
    });
  const serve = (port: number) =>
    Bun.serve({
      hostname: "127.0.0.1",
      port,
      fetch(request) {
        const url = new URL(request.url);
        if (url.pathname !== "/callback") return new Response("not found", { status: 404 });
        const q = url.searchParams;
        const code = q.get("code");
        const error = q.get("error");
        if (error !== null) settle({ error, description: q.get("error_description"), state: q.get("state") });
        else if (code !== null) settle({ code, state: q.get("state") });
        else return page(400, "This address only receives the answer of a sign-in.");
        return page(200, `Synartesis received the answer for server "${serverName}". You can close this tab and go back to the terminal.`);
      },
    });
  let server: ReturnType<typeof Bun.serve>;
  const preferred = previousRedirect ? Number(new URL(previousRedirect).port) : 0;
  try {
    server = serve(preferred);
  } catch {
    server = serve(0);
  }
  return {
    redirectUrl: `http://127.0.0.1:${server.port}/callback`,
    async code(state: string, timeoutMs: number, loginCommand: string): Promise<string> {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const expired = new Promise<"expired">((resolve) => (timer = setTimeout(() => resolve("expired"), timeoutMs)));
      const answer = await Promise.race([outcome, expired]).finally(() => clearTimeout(timer));
      const again = `Nothing was saved; run \`${loginCommand}\` to try again.`;
      if (answer === "expired") {
        const minutes = timeoutMs / 60_000;
        const seconds = Math.round(timeoutMs / 1000);
        const span =
          minutes >= 1 && Number.isInteger(minutes) ? `${minutes} minute${minutes === 1 ? "" : "s"}` : `${seconds} second${seconds === 1 ? "" : "s"}`;
        throw refused(`the sign-in to server "${serverName}" was not finished within ${span}. ${again}`);
      }
      if (answer.state !== state) {
        throw refused(
          `the browser came back with another "state" than this sign-in sent (an old browser tab, or a sign-in not started here), so its answer was not trusted. ${again}`,
        );
      }
      if ("error" in answer) {
        const detail = answer.description ? `: ${untrusted(answer.description)}` : "";
        const what = answer.error === "access_denied" ? "the sign-in was denied" : "the authorization server refused the sign-in";
        throw refused(`${what} (${untrusted(answer.error)}${detail}). ${again}`);
      }
      return answer.code;
    },
    stop: () => server.stop(true),
  };
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
