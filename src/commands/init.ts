// `synartesis init NAME -- COMMAND ARGS…`: start a server, list its tools and
// write (or extend) the manifest with a first policy (R-CLI-2).
import { defineCommand } from "citty";
import { existsSync, readFileSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import { SynartesisError } from "../errors.ts";
import { findManifest, MANIFEST_NAME } from "../workspace/discover.ts";
import { writeManifest } from "../workspace/manifest-file.ts";
import { signInCommands, type OAuthServerSpec } from "../auth/connection.ts";
import { writeServer, type CommandBlock, type ServerBlock, type ToolInfo, type UrlBlock } from "../manifest/draft.ts";
import { SHIPPED_MANIFESTS } from "../manifest/shipped.ts";
import { DEFAULT_TIMEOUT_SECONDS, DRAFT_MARK, type ServerSpec } from "../manifest/types.ts";
import { discoverTools } from "../servers/tools.ts";
import { signInRefusal } from "../servers/with-servers.ts";
import { clientCommand } from "../self.ts";
import { type CommandData, writeLines } from "./shared.ts";

const looksRelativePath = (value: string) => value.startsWith("./") || value.startsWith("../");

/** How to start the server, written so the manifest works from any folder. */
export function serverBlock(argv: string[], cwd: string): CommandBlock {
  const env: Record<string, string> = {};
  let rest = [...argv];
  // `env A=1 B=2 command …` becomes an env block.
  if (rest[0] === "env") {
    rest = rest.slice(1);
    while (rest[0] && /^[A-Za-z_][A-Za-z0-9_]*=/.test(rest[0])) {
      const [key, ...value] = rest.shift()!.split("=");
      env[key!] = value.join("=");
    }
  }
  let [command, ...args] = rest;
  if (!command) throw new SynartesisError("usage", "give the server's command after --, e.g. synartesis init crm -- synartesis toy-crm --state ./crm.json");
  // `synartesis` is kept as the word: the proxy starts itself for it, wherever it was installed.
  if (command !== "synartesis" && command.includes("/") && !isAbsolute(command)) {
    command = resolve(cwd, command);
  }
  args = args.map((arg) => {
    if (looksRelativePath(arg)) return resolve(cwd, arg);
    const eq = arg.indexOf("=");
    if (arg.startsWith("-") && eq !== -1 && looksRelativePath(arg.slice(eq + 1))) return `${arg.slice(0, eq + 1)}${resolve(cwd, arg.slice(eq + 1))}`;
    if (!arg.startsWith("-") && !isAbsolute(arg) && arg.includes("/") && existsSync(resolve(cwd, arg))) return resolve(cwd, arg);
    return arg;
  });
  return { command, args, ...(Object.keys(env).length ? { env } : {}) };
}

/**
 * A remote server's tools (R-CLI-2 for `--url`): asked without credentials
 * first; a server that answers 401 is drafted with `auth: oauth`, using the
 * sign-in kept for its URL or signing in now in the browser.
 */
async function discoverRemoteTools(name: string, url: string, manifestPath: string): Promise<{ block: UrlBlock; tools: ToolInfo[] }> {
  const spec = { name, kind: "url" as const, url, headers: {}, timeoutMs: DEFAULT_TIMEOUT_SECONDS * 1000, line: 0 };
  const { probe, signIn } = await import("../auth/sign-in.ts");
  if ((await probe(spec)).status !== 401) return { block: { url }, tools: await discoverTools(spec) };
  const signed: OAuthServerSpec = { ...spec, auth: { scopes: [], manifestPath } };
  try {
    return { block: { url, auth: "oauth" }, tools: await discoverTools(signed) };
  } catch (error) {
    if (!signInRefusal(error)) throw error;
  }
  const { showInBrowser } = await import("./login.ts");
  await signIn(signed, { present: showInBrowser(name, false) });
  try {
    return { block: { url, auth: "oauth" }, tools: await discoverTools(signed) };
  } catch (error) {
    const refusal = signInRefusal(error);
    throw refusal ? new SynartesisError("server", `server "${name}" still refuses after signing in: ${refusal.message}`) : error;
  }
}

/** The name and the server's command or URL, checked before anything starts. */
function checkInitArgs(name: string, url: string | undefined, argv: string[] | undefined): void {
  if (!/^[A-Za-z0-9_-]+$/.test(name) || name.includes("__")) {
    throw new SynartesisError("usage", `server name "${name}" may contain only letters, digits, "-" and "_" (and no "__")`);
  }
  if (url !== undefined && argv !== undefined) throw new SynartesisError("usage", "give either --url URL or a command after --, not both");
  if (url !== undefined && !/^https?:\/\//i.test(url)) throw new SynartesisError("usage", `--url must be an http:// or https:// URL (got "${url}")`);
  if (url === undefined && !argv?.length) {
    throw new SynartesisError(
      "usage",
      "give the server's command after --, e.g. synartesis init crm -- synartesis toy-crm --state ./crm.json (or --url URL for a remote server)",
    );
  }
}

/** The manifest to write or extend: --manifest, else the one found upwards, else a new one in this folder. */
function manifestToWrite(cwd: string, given: string | undefined): string {
  if (given) return resolve(cwd, given);
  try {
    return findManifest(cwd);
  } catch {
    return resolve(cwd, MANIFEST_NAME);
  }
}

/** A server started as a command: how to start it, written so the manifest works from any folder, and its tools. */
async function discoverLocalTools(name: string, argv: string[], cwd: string, manifestPath: string): Promise<{ block: ServerBlock; tools: ToolInfo[] }> {
  const local = serverBlock(argv, cwd);
  const tools = await discoverTools({
    name,
    kind: "command",
    command: local.command,
    args: local.args,
    env: local.env ?? {},
    cwd: dirname(manifestPath),
    timeoutMs: DEFAULT_TIMEOUT_SECONDS * 1000,
    line: 0,
  });
  return { block: local, tools };
}

/** What init says it did, and the client block to paste. */
function summaryLines(done: {
  name: string;
  manifestPath: string;
  existing: boolean;
  block: ServerBlock;
  toolCount: number;
  draft: ReturnType<typeof writeServer>;
}): string[] {
  const { name, manifestPath, block, draft } = done;
  const self = clientCommand();
  const client = { mcpServers: { synartesis: { command: self.argv[0], args: [...self.argv.slice(1), "proxy", "--manifest", manifestPath] } } };
  const { adopted, readonly, proposed, todo } = draft.counts;
  const lines = [`${done.existing ? "Extended" : "Wrote"} ${manifestPath}: server "${name}" (${done.toolCount} tools).`];
  if ("url" in block && block.auth) {
    const { login } = signInCommands({ name, kind: "url", url: block.url, headers: {}, timeoutMs: 0, line: 0, auth: { scopes: [], manifestPath } });
    lines.push(`  it signs in with OAuth (auth: oauth); when it asks again, run: ${login}`);
  }
  if (draft.adoptedFrom) lines.push(`  ${adopted} rules adopted from the shipped policy for ${draft.adoptedFrom.title} (manifests/${draft.adoptedFrom.file})`);
  lines.push(
    `  ${readonly} readonly (the server's readOnlyHint, trusted)`,
    ...(proposed
      ? [`  ${proposed} proposed from the server's tools, marked "# ${DRAFT_MARK}": each waits for a person until you check it and remove the mark`]
      : []),
    `  ${todo} gated with a TODO: decide reversible, compensable, or leave them gated`,
    `TODOs left in the manifest: ${draft.todosInFile}`,
    "",
    "Point your MCP client at the proxy: add this to its configuration (e.g. claude_desktop_config.json, .cursor/mcp.json):",
    JSON.stringify(client, null, 2),
    ...(self.caveat ? [self.caveat] : []),
    "",
    `Check the policy any time with: synartesis check --manifest ${manifestPath}`,
  );
  return lines;
}

export default defineCommand({
  meta: {
    name: "init",
    description:
      "Start a server (the command after --), ask for its tools and write (or extend) synartesis.yaml: read-only tools become readonly, every other tool is gated with a TODO. Known servers adopt the shipped policy. With --url, a remote server instead (signing in first when it asks).",
  },
  args: {
    name: { type: "positional", required: true, description: "The server's name in the manifest (letters, digits, - and _)" },
    manifest: {
      type: "string",
      valueHint: "path",
      description: `The manifest to write or extend (default: ${MANIFEST_NAME} found upwards, else in this folder)`,
    },
    url: {
      type: "string",
      valueHint: "URL",
      description: "A remote server (Streamable HTTP) instead of a command; one that answers 401 is signed in to first (auth: oauth)",
    },
    force: { type: "boolean", description: "Replace the server's block and rules if the name exists already" },
    draft: { type: "boolean", description: "Draft every rule from the tools' hints, even for a server with a shipped policy" },
  },
  async run({ args, data }) {
    const name = args.name;
    const argv = (data as CommandData).afterDashes;
    checkInitArgs(name, args.url, argv);
    const cwd = process.cwd();
    const manifestPath = manifestToWrite(cwd, args.manifest);
    const { block, tools } =
      args.url !== undefined ? await discoverRemoteTools(name, args.url, manifestPath) : await discoverLocalTools(name, argv!, cwd, manifestPath);
    if (tools.length === 0) throw new SynartesisError("server", `server "${name}" exposes no tools; there is nothing to write a policy for`);

    const existing = existsSync(manifestPath) ? readFileSync(manifestPath, "utf8") : undefined;
    const draft = writeServer({ existing, name, server: block, tools, shipped: SHIPPED_MANIFESTS, force: Boolean(args.force), draftOnly: Boolean(args.draft) });
    const written = writeManifest(manifestPath, draft.text, "init");
    writeLines(summaryLines({ name, manifestPath, existing: existing !== undefined, block, toolCount: tools.length, draft }));
    for (const unset of written.unsetVariables) {
      process.stderr.write(
        `synartesis: warning: ${unset.variable} is not set. The manifest keeps \${${unset.variable}} (${manifestPath}:${unset.line}:${unset.col}); ` +
          `the proxy will not start until the environment your client starts it with sets ${unset.variable} (for example an "env" entry beside "command" in the client's configuration).\n`,
      );
    }
  },
});
