// The client the conformance suite runs for each client `auth/*` scenario:
// `bun conformance-client.ts control|through SERVER_URL` (the suite appends the
// URL and sets MCP_CONFORMANCE_SCENARIO / MCP_CONFORMANCE_CONTEXT).
//   control: an SDK client connects straight to the scenario's server, with an
//            OAuthClientProvider whose "browser" follows the redirects.
//   through: `synartesis login` (BROWSER follows the redirects), then an SDK
//            client → `synartesis proxy` over stdio → the server as a `url:`
//            upstream with `auth`; the client can show a URL (elicitation),
//            so a sign-in the proxy offers mid-session is followed too.
// Both list the tools and call `test-tool`, as the suite's reference client does.
import { mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { UnauthorizedError, type OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { OAuthClientInformationMixed, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { manifestText } from "../fixtures/manifest-text.ts";

const ROOT = join(import.meta.dir, "..", "..");
const BIN = process.env.SYNARTESIS_BIN ?? join(ROOT, "dist", "synartesis");
/** The client-ID metadata document URL the suite's CIMD scenario expects. */
const CIMD_URL = "https://conformance-test.local/client-metadata.json";

const [mode, serverUrl] = process.argv.slice(2);
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? "{}") as { client_id?: string; client_secret?: string };

/** Follow an authorization URL as a browser would, up to the redirect back; return where it was sent. */
async function follow(url: string): Promise<URL> {
  let next = new URL(url);
  for (let hops = 0; hops < 10; hops++) {
    const response = await fetch(next, { redirect: "manual" });
    await response.body?.cancel();
    const location = response.headers.get("location");
    if (!location) return next;
    next = new URL(location, next);
    if (next.searchParams.has("code") || next.searchParams.has("error")) return next;
  }
  return next;
}

class ControlProvider implements OAuthClientProvider {
  private info: OAuthClientInformationMixed | undefined = context.client_id
    ? { client_id: context.client_id, ...(context.client_secret ? { client_secret: context.client_secret } : {}) }
    : undefined;
  private stored: OAuthTokens | undefined;
  private verifier = "";
  code: string | undefined;
  readonly redirectUrl = "http://127.0.0.1:8999/callback";
  readonly clientMetadataUrl = CIMD_URL;
  readonly clientMetadata = { client_name: "conformance-control", redirect_uris: [this.redirectUrl], grant_types: ["authorization_code", "refresh_token"] };
  clientInformation = () => this.info;
  saveClientInformation = (info: OAuthClientInformationMixed) => void (this.info = info);
  tokens = () => this.stored;
  saveTokens = (tokens: OAuthTokens) => void (this.stored = tokens);
  saveCodeVerifier = (verifier: string) => void (this.verifier = verifier);
  codeVerifier = () => this.verifier;
  async redirectToAuthorization(url: URL) {
    this.code = (await follow(url.href)).searchParams.get("code") ?? undefined;
  }
}

async function control(): Promise<void> {
  const provider = new ControlProvider();
  let transport = new StreamableHTTPClientTransport(new URL(serverUrl!), { authProvider: provider });
  let client = new Client({ name: "conformance-control", version: "1.0.0" });
  /** The SDK's pattern: on UnauthorizedError, finish the authorization with the code and try again. */
  const authorized = async <T>(work: () => Promise<T>): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await work();
      } catch (error) {
        if (!(error instanceof UnauthorizedError) || !provider.code || attempt > 3) throw error;
        await transport.finishAuth(provider.code);
        provider.code = undefined;
      }
    }
  };
  try {
    await client.connect(transport);
  } catch (error) {
    if (!(error instanceof UnauthorizedError) || !provider.code) throw error;
    await transport.finishAuth(provider.code);
    transport = new StreamableHTTPClientTransport(new URL(serverUrl!), { authProvider: provider });
    client = new Client({ name: "conformance-control", version: "1.0.0" });
    await client.connect(transport);
  }
  await authorized(() => client.listTools());
  await authorized(() => client.callTool({ name: "test-tool", arguments: {} }));
  await client.close();
}

async function through(): Promise<void> {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "syn-conformance-")));
  const auth = {
    type: "oauth",
    client_metadata_url: CIMD_URL,
    ...(context.client_id ? { client_id: context.client_id } : {}),
    ...(context.client_secret ? { client_secret: context.client_secret } : {}),
  };
  const manifest = join(dir, "synartesis.yaml");
  writeFileSync(manifest, manifestText({ servers: { conformance: { url: serverUrl, auth } }, tools: [{ match: "conformance.*", class: "readonly" }] }));
  const env = {
    ...(process.env as Record<string, string>),
    XDG_STATE_HOME: join(dir, "state"),
    BROWSER: `${process.execPath} ${join(ROOT, "test", "fixtures", "follow-browser.ts")}`,
  };

  const login = Bun.spawnSync([BIN, "login", "conformance", "--manifest", manifest], { env, stdout: "pipe", stderr: "pipe" });
  process.stderr.write(login.stderr);
  if (login.exitCode !== 0) throw new Error(`synartesis login exited ${login.exitCode}`);

  const transport = new StdioClientTransport({ command: BIN, args: ["proxy", "--manifest", manifest, "--log-level", "info"], env, stderr: "inherit" });
  const client = new Client({ name: "conformance-through", version: "1.0.0" }, { capabilities: { elicitation: { url: {} } } });
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    const params = request.params as { mode?: string; url?: string };
    if (params.mode !== "url" || !params.url) return { action: "decline" as const };
    const back = await follow(params.url);
    await (await fetch(back)).text();
    return { action: "accept" as const };
  });
  await client.connect(transport);
  await client.listTools();
  const result = await client.callTool({ name: "test-tool", arguments: {} });
  await client.close();
  if (result.isError) throw new Error(`test-tool failed through the proxy: ${JSON.stringify(result.content)}`);
}

try {
  if (mode === "control") await control();
  else if (mode === "through") await through();
  else throw new Error(`usage: conformance-client.ts control|through SERVER_URL (got ${mode})`);
  process.exit(0);
} catch (error) {
  process.stderr.write(`${mode} client failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
