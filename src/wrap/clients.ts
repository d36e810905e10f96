// The MCP clients `wrap` knows (R-WRAP-1): where each keeps its server
// entries on this machine, in which format, and how an entry names a remote
// server. Pure: where a file is depends only on the place given.
import { join } from "node:path";

/** What decides where a client's files are: the home folder, the folder `wrap` runs in, the system, the environment. */
export interface Place {
  home: string;
  cwd: string;
  platform: NodeJS.Platform;
  env: Record<string, string | undefined>;
}

/** How a client writes one server entry. */
export interface Dialect {
  /** Keys that hold a Streamable HTTP server's address (the first one present counts). */
  urlKeys: string[];
  /** Keys that hold an SSE server's address (Synartesis does not speak SSE: such an entry is left alone). */
  sseKeys: string[];
  /** The key of a remote server's headers. */
  headersKey: string;
  /** Whether entries say their transport in `type` (`stdio`, `http`, `sse`). */
  typed: boolean;
}

export interface ConfigFile {
  path: string;
  /** `user`, or `project` for a file of the folder `wrap` runs in. */
  scope: "user" | "project";
  format: "json" | "toml";
}

export interface Client {
  id: string;
  title: string;
  dialect: Dialect;
  /** The files it may keep entries in (those that exist are wrapped). */
  files(place: Place): ConfigFile[];
  /**
   * Where the servers maps are in a file's data: `mcpServers`, and in Claude
   * Code's own file also each project's.
   */
  serverMaps(data: unknown, file: ConfigFile): string[][];
}

const JSON_DIALECT: Dialect = { urlKeys: ["url"], sseKeys: [], headersKey: "headers", typed: true };
const topLevel = (key: string) => (data: unknown) => (isObject(data) && isObject(data[key]) ? [[key]] : []);

export const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object" && !Array.isArray(value);

/** A user-level folder of an app that keeps its settings where the system says (Claude Desktop, VS Code). */
function appFolder(place: Place, app: string): string {
  if (place.platform === "darwin") return join(place.home, "Library", "Application Support", app);
  if (place.platform === "win32") return join(place.env.APPDATA ?? join(place.home, "AppData", "Roaming"), app);
  return join(place.env.XDG_CONFIG_HOME || join(place.home, ".config"), app);
}

const user = (path: string, format: ConfigFile["format"] = "json"): ConfigFile => ({ path, scope: "user", format });
const project = (path: string): ConfigFile => ({ path, scope: "project", format: "json" });

export const CLIENTS: Client[] = [
  {
    id: "claude-desktop",
    title: "Claude Desktop",
    dialect: JSON_DIALECT,
    files: (place) => [user(join(appFolder(place, "Claude"), "claude_desktop_config.json"))],
    serverMaps: topLevel("mcpServers"),
  },
  {
    id: "claude-code",
    title: "Claude Code",
    dialect: JSON_DIALECT,
    files: (place) => [user(join(place.home, ".claude.json")), project(join(place.cwd, ".mcp.json"))],
    serverMaps: (data, file) => {
      const maps = topLevel("mcpServers")(data);
      // ~/.claude.json also keeps each project's own servers (`claude mcp add` in that folder).
      if (file.scope === "user" && isObject(data) && isObject(data.projects)) {
        for (const [folder, settings] of Object.entries(data.projects)) {
          if (isObject(settings) && isObject(settings.mcpServers)) maps.push(["projects", folder, "mcpServers"]);
        }
      }
      return maps;
    },
  },
  {
    id: "cursor",
    title: "Cursor",
    dialect: JSON_DIALECT,
    files: (place) => [user(join(place.home, ".cursor", "mcp.json")), project(join(place.cwd, ".cursor", "mcp.json"))],
    serverMaps: topLevel("mcpServers"),
  },
  {
    id: "vscode",
    title: "VS Code",
    dialect: JSON_DIALECT,
    files: (place) => [user(join(appFolder(place, "Code"), "User", "mcp.json")), project(join(place.cwd, ".vscode", "mcp.json"))],
    serverMaps: topLevel("servers"),
  },
  {
    id: "windsurf",
    title: "Windsurf",
    dialect: { urlKeys: ["serverUrl", "url"], sseKeys: [], headersKey: "headers", typed: false },
    files: (place) => [user(join(place.home, ".codeium", "windsurf", "mcp_config.json"))],
    serverMaps: topLevel("mcpServers"),
  },
  {
    id: "codex",
    title: "Codex",
    // Codex's remote servers: `url`, with `http_headers`, `env_http_headers` and `bearer_token_env_var`.
    dialect: { urlKeys: ["url"], sseKeys: [], headersKey: "http_headers", typed: false },
    files: (place) => [user(join(place.env.CODEX_HOME || join(place.home, ".codex"), "config.toml"), "toml")],
    serverMaps: topLevel("mcp_servers"),
  },
  {
    id: "gemini",
    title: "Gemini CLI",
    // Gemini CLI's `url` is SSE; `httpUrl` is Streamable HTTP.
    dialect: { urlKeys: ["httpUrl"], sseKeys: ["url"], headersKey: "headers", typed: false },
    files: (place) => [user(join(place.home, ".gemini", "settings.json")), project(join(place.cwd, ".gemini", "settings.json"))],
    serverMaps: topLevel("mcpServers"),
  },
];

export function clientById(id: string): Client | undefined {
  return CLIENTS.find((client) => client.id === id);
}
