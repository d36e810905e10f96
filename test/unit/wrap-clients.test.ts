// Where each client keeps its servers (src/wrap/clients.ts), on each system.
import { describe, expect, test } from "bun:test";
import { clientById, CLIENTS, type Place } from "../../src/wrap/clients.ts";

const place = (platform: NodeJS.Platform, env: Record<string, string> = {}): Place => ({ home: "/h", cwd: "/p", platform, env });
const paths = (id: string, at: Place) =>
  clientById(id)!
    .files(at)
    .map((file) => `${file.scope} ${file.path}`);

describe("client files", () => {
  test("Claude Desktop and VS Code follow the system's app folders", () => {
    expect(paths("claude-desktop", place("darwin"))).toEqual(["user /h/Library/Application Support/Claude/claude_desktop_config.json"]);
    expect(paths("claude-desktop", place("win32", { APPDATA: "C:/Users/u/AppData/Roaming" }))).toEqual([
      "user C:/Users/u/AppData/Roaming/Claude/claude_desktop_config.json",
    ]);
    expect(paths("claude-desktop", place("linux", { XDG_CONFIG_HOME: "/x" }))).toEqual(["user /x/Claude/claude_desktop_config.json"]);
    expect(paths("vscode", place("darwin"))).toEqual(["user /h/Library/Application Support/Code/User/mcp.json", "project /p/.vscode/mcp.json"]);
  });

  test("the others, user and project; Codex follows CODEX_HOME", () => {
    expect(paths("claude-code", place("linux"))).toEqual(["user /h/.claude.json", "project /p/.mcp.json"]);
    expect(paths("cursor", place("linux"))).toEqual(["user /h/.cursor/mcp.json", "project /p/.cursor/mcp.json"]);
    expect(paths("windsurf", place("linux"))).toEqual(["user /h/.codeium/windsurf/mcp_config.json"]);
    expect(paths("codex", place("linux", { CODEX_HOME: "/c" }))).toEqual(["user /c/config.toml"]);
    expect(paths("gemini", place("linux"))).toEqual(["user /h/.gemini/settings.json", "project /p/.gemini/settings.json"]);
    expect(CLIENTS.map((client) => client.id)).toEqual(["claude-desktop", "claude-code", "cursor", "vscode", "windsurf", "codex", "gemini"]);
  });

  test("Claude Code's own file holds its servers and each project's", () => {
    const claudeCode = clientById("claude-code")!;
    const [userFile] = claudeCode.files(place("linux"));
    expect(claudeCode.serverMaps({ mcpServers: {}, projects: { "/a": { mcpServers: {} }, "/b": { allowedTools: [] } } }, userFile!)).toEqual([
      ["mcpServers"],
      ["projects", "/a", "mcpServers"],
    ]);
  });
});
