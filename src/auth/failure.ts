// The one error a sign-in failure becomes, in a file of its own: the upstream
// recognises it without loading the OAuth code and the SDK's schemas that
// connection.ts needs (a proxy whose servers need no sign-in never loads them).
import type { SignInRequired } from "./provider.ts";

/**
 * A request for a server failed because of its sign-in: it was refused (401)
 * or never sent, so it certainly did not run. `signIn` is set when a person
 * signing in again would help.
 */
export class AuthFailure extends Error {
  /** Read by the upstream like an HTTP status: a 4xx means the server did not run the request. */
  readonly code = 401;
  constructor(
    message: string,
    readonly signIn?: SignInRequired,
  ) {
    super(message);
    this.name = "AuthFailure";
  }
}
