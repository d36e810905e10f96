// The MCP SDK's OAuthClientProvider over the credentials store (R-AUTH-1…4).
// Two ways to use it: during a session (proxy, check, init, undo) it only
// uses and refreshes stored tokens and never opens a browser: when a person
// must sign in, it throws SignInRequired. During an interactive sign-in it
// registers, sends the browser to the authorization server and keeps the PKCE
// verifier in memory only.
import type { OAuthClientProvider, OAuthDiscoveryState } from "@modelcontextprotocol/sdk/client/auth.js";
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import { sameJson } from "../canonical.ts";
import type { OAuthSettings } from "../manifest/types.ts";
import { VERSION } from "../version.ts";
import type { CredentialStore } from "./store.ts";
import { SynartesisError } from "../errors.ts";
import { endpointProblem } from "./endpoints.ts";
import { shellQuote } from "../self.ts";

/** A person has to sign in (again) before this server can be used. */
export class SignInRequired extends Error {
  constructor(
    message: string,
    /** The scope the server asked for, to request at the next sign-in. */
    readonly scope?: string,
  ) {
    super(message);
    this.name = "SignInRequired";
  }
}

export interface Interactive {
  /** The loopback address the authorization server sends the browser back to. */
  redirectUrl: string;
  /** The OAuth `state` sent out, checked when the browser comes back. */
  state: string;
  /** Show the authorization URL to the person (browser, printed, or an MCP URL elicitation). */
  open(authorizationUrl: URL): Promise<void>;
}

/** Used when nothing better is known: a loopback address nobody listens on, never visited in a session. */
const NO_REDIRECT = "http://127.0.0.1/callback";

export class SynartesisOAuthProvider implements OAuthClientProvider {
  private verifier: string | undefined;
  private discovery: OAuthDiscoveryState | undefined;
  private issuedTokens: OAuthTokens | undefined;
  /** The access token the server last refused (a newer one in the store means another process renewed the sign-in). */
  refusedAccessToken: string | undefined;
  /** The refresh token last handed to the SDK: the one a refused refresh spent. */
  private offeredRefresh: string | undefined;
  /** Refresh tokens the authorization server refused: not offered again (another process may store newer ones). */
  private readonly deadRefreshTokens = new Set<string>();
  private registrationRefused = false;
  /** True between finding no client registration and saving a new one (to name a failure there). */
  registering = false;

  constructor(
    readonly serverName: string,
    private readonly settings: OAuthSettings,
    readonly store: CredentialStore,
    private readonly interactive?: Interactive,
  ) {}

  get redirectUrl(): string {
    return this.interactive?.redirectUrl ?? this.store.read()?.redirectUrl ?? NO_REDIRECT;
  }

  get clientMetadataUrl(): string | undefined {
    return this.settings.clientMetadataUrl;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: "Synartesis",
      redirect_uris: [this.redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      software_id: "synartesis",
      software_version: VERSION,
      ...(this.settings.scopes.length ? { scope: this.settings.scopes.join(" ") } : {}),
    };
  }

  state(): string {
    return this.interactive?.state ?? crypto.randomUUID();
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    const stored = this.store.read()?.clientInformation;
    const configured = this.settings.clientId;
    if (configured !== undefined) {
      // The manifest's client is the one used; the store only remembers which server it was bound to.
      const issuer = stored?.client_id === configured ? stored.issuer : undefined;
      return { client_id: configured, ...(this.settings.clientSecret ? { client_secret: this.settings.clientSecret } : {}), ...(issuer ? { issuer } : {}) };
    }
    const usable = stored && !this.registrationRefused && (!this.interactive || this.registeredFor(stored)) ? stored : undefined;
    if (!usable && !this.interactive)
      throw this.signInRequired(this.registrationRefused ? "the authorization server no longer knows this client" : "nobody has signed in yet");
    this.registering = !usable;
    return usable;
  }

  /** A registration made for another redirect address (another port) would be refused: register again. */
  private registeredFor(stored: OAuthClientInformationMixed): boolean {
    if (stored.client_id === this.settings.clientMetadataUrl) return true;
    return "redirect_uris" in stored && Array.isArray(stored.redirect_uris) && stored.redirect_uris.map(String).includes(this.redirectUrl);
  }

  saveClientInformation(information: OAuthClientInformationMixed): void {
    this.registering = false;
    const { client_secret: _secret, ...withoutSecret } = information;
    // A configured client's secret stays in the manifest (or its environment); it is not copied here.
    const kept = this.settings.clientId !== undefined ? withoutSecret : information;
    this.store.update((current) => ({ ...current, clientInformation: kept, ...(this.interactive ? { redirectUrl: this.redirectUrl } : {}) }));
  }

  tokens(): OAuthTokens | undefined {
    // A sign-in always asks anew: the person may want another account or more access.
    if (this.interactive) return this.issuedTokens;
    const tokens = this.store.read()?.tokens;
    if (tokens?.refresh_token && this.deadRefreshTokens.has(tokens.refresh_token)) return undefined;
    this.offeredRefresh = tokens?.refresh_token;
    return tokens;
  }

  saveTokens(tokens: OAuthTokens): void {
    if (this.interactive) this.issuedTokens = tokens;
    this.store.update((current) => ({ ...current, tokens }));
  }

  async redirectToAuthorization(authorizationUrl: URL): Promise<void> {
    if (this.interactive) {
      const problem = endpointProblem(authorizationUrl.href);
      if (problem) throw new SynartesisError("refused", `the authorization address is not one Synartesis will open: ${problem}`);
      return this.interactive.open(authorizationUrl);
    }
    const scope = authorizationUrl.searchParams.get("scope") ?? undefined;
    const granted = new Set((this.store.read()?.tokens?.scope ?? "").split(" ").filter(Boolean));
    const more = (scope ?? "").split(" ").filter((s) => s && !granted.has(s));
    const stored = this.store.read()?.tokens;
    const renewable = stored?.refresh_token !== undefined && !this.deadRefreshTokens.has(stored.refresh_token);
    const why = !stored
      ? "nobody has signed in yet"
      : granted.size && more.length
        ? `it asks for more access than was granted (${more.join(" ")})`
        : renewable
          ? "the server refused the access this sign-in grants"
          : "its sign-in has expired and could not be renewed";
    // Asked for more access (a 403 insufficient_scope): the login command asks for that scope, or it would ask for the same again.
    throw this.signInRequired(why, scope, granted.size > 0 && more.length > 0);
  }

  saveCodeVerifier(codeVerifier: string): void {
    this.verifier = codeVerifier;
  }

  codeVerifier(): string {
    if (this.verifier === undefined) throw new Error("no sign-in is in progress (there is no PKCE code verifier)");
    return this.verifier;
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.interactive ? this.discovery : (this.discovery ?? this.store.read()?.discovery);
  }

  async saveDiscoveryState(state: OAuthDiscoveryState): Promise<void> {
    this.discovery = state;
    // Under the lock another process renews the sign-in with: a write of the whole file made from an
    // older read would put back the tokens that process has just replaced (and spent).
    await this.store.withLock(async () => {
      if (!sameJson(this.store.read()?.discovery, state)) this.store.update((current) => ({ ...current, discovery: state }));
    });
  }

  invalidateCredentials(scope: "all" | "client" | "tokens" | "verifier" | "discovery"): void {
    // Nothing is deleted from the store here: another process may just have saved better credentials.
    if (scope === "all" || scope === "client") this.registrationRefused = true;
    if (scope === "all" || scope === "tokens") {
      // The token that was refused, not whatever the store holds now (another process may just have renewed it).
      if (this.offeredRefresh) this.deadRefreshTokens.add(this.offeredRefresh);
      this.issuedTokens = undefined;
    }
    if (scope === "all" || scope === "verifier") this.verifier = undefined;
    if (scope === "all" || scope === "discovery") this.discovery = undefined;
  }

  /** Discovery done before the flow (by the sign-in), so auth() does not repeat it. */
  useDiscovery(state: OAuthDiscoveryState): void {
    this.discovery = state;
  }

  /** The scope a server last asked for when it refused a request for want of access (403 insufficient_scope). */
  scopeAskedFor: string | undefined;

  signInRequired(why: string, scope?: string, wider = false): SignInRequired {
    const login = wider && scope ? `${this.store.commands.login} --scope ${shellQuote(scope)}` : this.store.commands.login;
    return new SignInRequired(`server "${this.serverName}" needs a sign-in: ${why}; run \`${login}\``, scope);
  }

  /** Text with every stored secret blanked out, for anything that may be shown or logged. */
  redact(text: string): string {
    let credentials;
    try {
      credentials = this.store.read();
    } catch {
      credentials = undefined;
    }
    const secrets = [
      credentials?.tokens?.access_token,
      credentials?.tokens?.refresh_token,
      credentials?.tokens?.id_token,
      credentials?.clientInformation?.client_secret,
      this.issuedTokens?.access_token,
      this.issuedTokens?.refresh_token,
      this.settings.clientSecret,
      this.verifier,
    ].filter((s): s is string => typeof s === "string" && s.length >= 4);
    return secrets.reduce((out, secret) => out.split(secret).join("[redacted]"), text);
  }
}
