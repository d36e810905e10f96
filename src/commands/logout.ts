// `synartesis logout SERVER`: forget the credentials kept for a server (R-AUTH-2).
import { defineCommand } from "citty";
import { oauthServer, signInCommands } from "../auth/connection.ts";
import { CredentialStore } from "../auth/store.ts";
import { SynartesisError } from "../errors.ts";
import { findManifest } from "../workspace/discover.ts";
import { loadManifest } from "../manifest/load.ts";
import { manifestArg, writeLines } from "./shared.ts";

export default defineCommand({
  meta: {
    name: "logout",
    description: "Forget the sign-in kept for a server: SERVER is its name in the manifest, or its URL (for a server the manifest no longer has).",
  },
  args: {
    server: { type: "positional", required: true, description: "The server's name in the manifest, or its URL" },
    ...manifestArg,
  },
  async run({ args }) {
    let url: string;
    let label: string;
    let commands = { login: "synartesis login SERVER", logout: "synartesis logout SERVER" };
    if (/^https?:\/\//i.test(args.server)) {
      if (!URL.canParse(args.server)) throw new SynartesisError("usage", `"${args.server}" is not a valid URL`);
      url = new URL(args.server).href;
      label = url;
    } else {
      const spec = oauthServer(loadManifest(findManifest(process.cwd(), args.manifest)), args.server);
      url = spec.url;
      label = `server "${spec.name}" (${spec.url})`;
      commands = signInCommands(spec);
    }
    const store = new CredentialStore(url, commands);
    writeLines([store.remove() ? `Signed out of ${label}: removed ${store.path}.` : `There was no sign-in kept for ${label} (looked for ${store.path}).`]);
  },
});
