// Signing in from inside a session (R-AUTH-4): when a server refuses a call
// for want of a sign-in and the client can show a URL (URL-mode elicitation),
// the proxy offers the authorization URL through the client, waits for the
// browser to come back, and lets the call be sent again. One sign-in per
// server at a time: calls that need it meanwhile wait for the same one.
import type { OAuthServerSpec } from "../../auth/connection.ts";
import type { SignInRequired } from "../../auth/provider.ts";
import { SynartesisError } from "../../errors.ts";
import type { Logger } from "../../log.ts";
import { UpstreamError, type Upstream } from "../../servers/upstream.ts";

export interface ClientChannel {
  /** Whether the client said it can show a URL (capabilities.elicitation.url). */
  canShowUrl(): boolean;
  /** Send a request to the client and wait for its result (rejects on a JSON-RPC error). */
  ask(method: string, params: unknown): Promise<unknown>;
  notify(method: string, params: unknown): void;
}

export function signInThroughClient(client: ClientChannel, log: Logger): (upstream: Upstream, needed: SignInRequired) => Promise<boolean> {
  const running = new Map<string, Promise<boolean>>();
  return (upstream, needed) => {
    const spec = upstream.spec;
    if (spec.kind !== "url" || !spec.auth || !client.canShowUrl()) return Promise.resolve(false);
    const oauth: OAuthServerSpec = { ...spec, auth: spec.auth };
    let attempt = running.get(spec.name);
    if (!attempt) {
      attempt = offer(client, log, oauth, needed).finally(() => running.delete(spec.name));
      running.set(spec.name, attempt);
    }
    return attempt;
  };
}

async function offer(client: ClientChannel, log: Logger, spec: OAuthServerSpec, needed: SignInRequired): Promise<boolean> {
  const elicitationId = crypto.randomUUID();
  log.info("offering a sign-in through the client", { server: spec.name });
  try {
    // Loaded only when a sign-in is offered: the OAuth client and the SDK's schemas cost every proxy memory and start-up time.
    const { signIn } = await import("../../auth/sign-in.ts");
    await signIn(spec, {
      scope: needed.scope,
      present: async (url) => {
        const answer = await client.ask("elicitation/create", {
          mode: "url",
          elicitationId,
          url: url.href,
          message: `Server "${spec.name}" needs you to sign in before Synartesis can pass this call on. Open the address to sign in; the call continues once you have.`,
        });
        const action = answer !== null && typeof answer === "object" ? (answer as { action?: unknown }).action : undefined;
        if (action !== "accept")
          throw new SynartesisError("refused", `the sign-in offered through the client was ${action === "decline" ? "declined" : "cancelled"}`);
      },
    });
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    log.warn("the sign-in offered through the client did not finish", { server: spec.name, error: why });
    throw new UpstreamError(`${needed.message} (${why})`, "not_sent");
  }
  client.notify("notifications/elicitation/complete", { elicitationId });
  log.info("signed in through the client", { server: spec.name });
  return true;
}
