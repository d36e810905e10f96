// What an HTTP upstream with `auth: oauth` adds to its transport (R-AUTH-4):
// the SDK's authProvider over the stored credentials (the SDK sends the token,
// and on a 401 refreshes once and resends once), a fetch that keeps concurrent
// requests from spoiling each other's refresh, and the translation of every
// way that can fail into one error that says how to sign in again.
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { OAuthError } from "@modelcontextprotocol/sdk/server/auth/errors.js";
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import { SynartesisError } from "../errors.ts";
import type { Manifest, OAuthSettings, ServerSpec } from "../manifest/types.ts";
import { selfCommandText, shellQuote } from "../self.ts";
import { AuthFailure } from "./failure.ts";
import { SignInRequired, SynartesisOAuthProvider } from "./provider.ts";
import { CredentialStore, type SignInCommands } from "./store.ts";

export type OAuthServerSpec = Extract<ServerSpec, { kind: "url" }> & { auth: OAuthSettings };

/** An OAuth endpoint (metadata, token, registration) could not be reached. */
class AuthEndpointUnreachable extends Error {}

/** `synartesis login NAME --manifest …` and its logout, pasteable from any folder. */
export function signInCommands(spec: OAuthServerSpec): SignInCommands {
  const tail = `${shellQuote(spec.name)} --manifest ${shellQuote(spec.auth.manifestPath)}`;
  const self = selfCommandText();
  return { login: `${self} login ${tail}`, logout: `${self} logout ${tail}` };
}

export interface OAuthLink {
  provider: SynartesisOAuthProvider;
  transportOptions: { authProvider: SynartesisOAuthProvider; fetch: FetchLike };
  /** The AuthFailure a transport error amounts to, or undefined when it is not about the sign-in. */
  explain(error: unknown): AuthFailure | undefined;
}

/** Everything a session needs to use (and renew) the stored sign-in of one server. Reads the store once, so a refused file is reported at start. */
export function oauthLink(spec: OAuthServerSpec, env: Record<string, string | undefined> = process.env): OAuthLink {
  const store = new CredentialStore(spec.url, signInCommands(spec), env);
  store.read();
  const provider = new SynartesisOAuthProvider(spec.name, spec.auth, store);
  return {
    provider,
    transportOptions: { authProvider: provider, fetch: authorizedFetch(spec.url, provider) },
    explain: (error) => explain(error, provider),
  };
}

function explain(error: unknown, provider: SynartesisOAuthProvider): AuthFailure | undefined {
  if (error instanceof AuthFailure) return error;
  const signIn = (why: string) => {
    const needed = provider.signInRequired(why);
    return new AuthFailure(needed.message, needed);
  };
  if (error instanceof SignInRequired) return new AuthFailure(provider.redact(error.message), error);
  if (error instanceof SynartesisError) return new AuthFailure([error.message, ...error.details].join(" "));
  if (error instanceof UnauthorizedError) return signIn("the server refused the stored sign-in");
  if (error instanceof StreamableHTTPError && error.code === 401) return signIn("the server refused the sign-in even after it was renewed");
  if (error instanceof StreamableHTTPError && error.code === 403) {
    const wanted = provider.scopeAskedFor;
    if (wanted) {
      const needed = provider.signInRequired(`it asks for more access than was granted (scope ${wanted})`, wanted, true);
      return new AuthFailure(needed.message, needed);
    }
    return signIn(`the server refuses this sign-in access (${provider.redact(error.message)})`);
  }
  if (error instanceof OAuthError) return signIn(`renewing the sign-in failed (${provider.redact(error.message)})`);
  if (error instanceof AuthEndpointUnreachable) return signIn(`its authorization server could not be reached (${provider.redact(error.message)})`);
  return undefined;
}

/** How long a refresh answer is shared with requests that started with the same refresh token. */
const REFRESH_SHARED_MS = 60_000;

/**
 * The transport's fetch. Requests that raced a refresh are put right here:
 * a refresh with a refresh token already being (or just) used shares that
 * answer instead of spending the token twice, and a request refused with a
 * token that has since been replaced is sent once more with the new one (a
 * 401 proves it did not run).
 */
function authorizedFetch(mcpUrl: string, provider: SynartesisOAuthProvider): FetchLike {
  const refreshes = new Map<string, Promise<Renewal>>();
  const endpoint = new URL(mcpUrl).href;
  return async (input, init) => {
    const url = new URL(String(input instanceof Request ? input.url : input)).href;
    if (url !== endpoint) {
      const body = init?.body;
      const refreshToken = body instanceof URLSearchParams && body.get("grant_type") === "refresh_token" ? body.get("refresh_token") : null;
      if (refreshToken) {
        let shared = refreshes.get(refreshToken);
        if (!shared) {
          const renewal = provider.store.withLock(() => renewOnce(input, init, refreshToken, provider));
          shared = renewal;
          refreshes.set(refreshToken, renewal);
          setTimeout(() => refreshes.delete(refreshToken), REFRESH_SHARED_MS).unref?.();
          // Tokens another process renewed are shared only by the requests waiting now: the refresh
          // token was not spent, and a later expiry must renew it for real, not be given these again.
          renewal.then(
            (done) => !done.spent && refreshes.get(refreshToken) === renewal && refreshes.delete(refreshToken),
            () => refreshes.delete(refreshToken),
          );
        }
        const { answer } = await shared;
        return new Response(answer.body.slice(0), { status: answer.status, statusText: answer.statusText, headers: answer.headers });
      }
      return reach(input, init);
    }
    const response = await fetch(input, init);
    if (response.status === 403) {
      // A server asking for more access names the scope it wants; the login command must ask for it.
      const challenge = response.headers.get("www-authenticate") ?? "";
      if (/error="?insufficient_scope/.test(challenge)) provider.scopeAskedFor = /scope="([^"]*)"/.exec(challenge)?.[1];
    }
    if (response.status !== 401) return response;
    const sent = new Headers(init?.headers).get("authorization");
    const current = provider.tokens()?.access_token;
    if (!current || !sent || sent === `Bearer ${current}`) {
      if (sent?.startsWith("Bearer ")) provider.refusedAccessToken = sent.slice("Bearer ".length);
      return response;
    }
    await response.body?.cancel();
    const headers = new Headers(init?.headers);
    headers.set("authorization", `Bearer ${current}`);
    return fetch(input, { ...init, headers });
  };
}

type Answer = { status: number; statusText: string; headers: [string, string][]; body: ArrayBuffer };
/** A refresh's answer, and whether the refresh token was spent for it (false: another process had renewed the tokens). */
type Renewal = { answer: Answer; spent: boolean };

/**
 * One refresh, under the store's lock. Another process sharing this sign-in
 * may have renewed it meanwhile (the store then holds another refresh token,
 * or an access token other than the one the server refused): its new tokens
 * are the answer, and nothing is spent. Otherwise the refresh is sent, and the
 * new tokens are stored before the lock is released.
 */
async function renewOnce(
  input: Parameters<FetchLike>[0],
  init: Parameters<FetchLike>[1],
  refreshToken: string,
  provider: SynartesisOAuthProvider,
): Promise<Renewal> {
  const stored = provider.store.read()?.tokens;
  const renewedMeanwhile =
    stored?.refresh_token !== refreshToken || (provider.refusedAccessToken !== undefined && stored.access_token !== provider.refusedAccessToken);
  if (stored?.access_token && stored.refresh_token && renewedMeanwhile) {
    const { expires_in: _stale, ...renewed } = stored;
    const body = new TextEncoder().encode(JSON.stringify(renewed)).buffer as ArrayBuffer;
    return { answer: { status: 200, statusText: "OK", headers: [["content-type", "application/json"]], body }, spent: false };
  }
  const response = await reach(input, init);
  const answer: Answer = { status: response.status, statusText: response.statusText, headers: [...response.headers], body: await response.arrayBuffer() };
  if (response.ok) {
    try {
      provider.saveTokens(JSON.parse(new TextDecoder().decode(answer.body)));
    } catch {
      // Not tokens: the SDK reports the answer as the error it is.
    }
  }
  return { answer, spent: true };
}

async function reach(input: Parameters<FetchLike>[0], init: Parameters<FetchLike>[1]): Promise<Response> {
  try {
    return await fetch(input, init);
  } catch (error) {
    const url = new URL(String(input instanceof Request ? input.url : input));
    throw new AuthEndpointUnreachable(`${url.origin}${url.pathname}: ${(error as Error).message}`);
  }
}

/** The server NAME of a manifest, if it signs in with OAuth; otherwise why it does not. */
export function oauthServer(manifest: Manifest, name: string): OAuthServerSpec {
  const spec = Object.hasOwn(manifest.servers, name) ? manifest.servers[name] : undefined;
  if (!spec) {
    const known = Object.keys(manifest.servers);
    throw new SynartesisError("usage", `the manifest ${manifest.path} declares no server "${name}" (it declares: ${known.join(", ")})`);
  }
  if (spec.kind !== "url") throw new SynartesisError("config", `server "${name}" is started as a command; only a url server signs in`);
  if (!spec.auth) {
    throw new SynartesisError("config", `server "${name}" does not sign in: it has no "auth" in ${manifest.path}`, {
      hint: `Add \`auth: oauth\` under it (line ${spec.line}) if it asks for an OAuth sign-in.`,
    });
  }
  return { ...spec, auth: spec.auth };
}
