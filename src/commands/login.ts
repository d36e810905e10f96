// `synartesis login SERVER`: sign in to a url server that declares `auth: oauth`
// (R-AUTH-2) and keep the credentials in the user's state folder (R-AUTH-3).
import { defineCommand } from "citty";
import { oauthServer, signInCommands } from "../auth/connection.ts";
import { openInBrowser } from "../browser.ts";
import { SIGN_IN_TIMEOUT_MS, signIn } from "../auth/sign-in.ts";
import { SynartesisError } from "../errors.ts";
import { findManifest } from "../workspace/discover.ts";
import { loadManifest } from "../manifest/load.ts";
import { manifestArg, writeLines } from "./shared.ts";

/** Print the URL (always) and open it in a browser (unless told not to). */
export function showInBrowser(serverName: string, noBrowser: boolean): (url: URL) => Promise<void> {
  return async (url) => {
    process.stderr.write(`To sign in to server "${serverName}", open this address in a browser:\n\n  ${url.href}\n\n`);
    if (!noBrowser) {
      const failed = openInBrowser(url.href);
      if (failed) process.stderr.write(`(No browser could be started: ${failed}. Open the address yourself.)\n`);
    }
    process.stderr.write("Waiting for the sign-in to finish…\n");
  };
}

export default defineCommand({
  meta: {
    name: "login",
    description:
      "Sign in to a url server that declares `auth: oauth`: opens the authorization page in $BROWSER (or the system's browser), always prints its address too, and keeps the tokens in $XDG_STATE_HOME/synartesis/credentials/ (readable only by you).",
  },
  args: {
    server: { type: "positional", required: true, description: "The server's name in the manifest" },
    ...manifestArg,
    scope: {
      type: "string",
      valueHint: "SCOPES",
      description: "Ask for these scopes (space-separated) besides the manifest's and the server's: what a server asking for more access names",
    },
    timeout: { type: "string", valueHint: "seconds", description: `How long to wait for the browser to come back (default: ${SIGN_IN_TIMEOUT_MS / 1000})` },
    browser: {
      type: "boolean",
      default: true,
      description: "Only print the sign-in address; do not start a browser (by default: $BROWSER, else the system's)",
    },
  },
  async run({ args }) {
    const timeout = args.timeout === undefined ? SIGN_IN_TIMEOUT_MS / 1000 : Number(args.timeout);
    if (!(timeout > 0)) throw new SynartesisError("usage", `--timeout must be a positive number of seconds (got "${args.timeout}")`);
    const manifest = loadManifest(findManifest(process.cwd(), args.manifest));
    const spec = oauthServer(manifest, args.server);
    const signedIn = await signIn(spec, {
      present: showInBrowser(spec.name, args.browser === false),
      timeoutMs: timeout * 1000,
      ...(args.scope ? { scope: args.scope } : {}),
    });
    writeLines([
      `Signed in to server "${spec.name}" (${spec.url})${signedIn.scope ? ` with scope ${signedIn.scope}` : ""}.`,
      `The credentials are kept in ${signedIn.credentialsPath} (readable only by you); \`${signInCommands(spec).logout}\` removes them.`,
    ]);
  },
});
