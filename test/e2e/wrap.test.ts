// `synartesis wrap` and `unwrap` through the built binary (R-WRAP, issue 33),
// one realistic configuration per client, with comments, in a temporary HOME:
// the dry run changes nothing; wrap makes every entry start `synartesis proxy`
// for a server of one manifest; a real MCP client started from a wrapped
// entry calls a tool and the journal records it; no secret is in any file
// Synartesis wrote; unwrap gives the file back byte for byte, or keeps the
// person's own edits.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { parse as parseToml } from "@decimalturn/toml-patch";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { parse as parseJsonc } from "jsonc-parser";
import { BIN, ROOT, run, tempDir } from "../helpers.ts";
import { crmFolder } from "../fixtures/counting-support.ts";
import { startHttpProxy, stopHttpProxiesAfterAll, TOKEN } from "../fixtures/http-kit.ts";

setDefaultTimeout(60_000);
stopHttpProxiesAfterAll();

const SECRET = "sk-live-4f9a1c2e7b0d";

interface Fixture {
  /** The client's files (relative to HOME, or to the project folder with "project/"), and their text. */
  files: Record<string, string>;
  /** Entries to start a client from after wrap: file, path of the entry in it. */
  start: Array<{ file: string; path: string[] }>;
  /** Entries wrap must leave alone, with the words why. */
  left?: Record<string, string>;
}

const command = (dir: string) => `"command": ${JSON.stringify(BIN)}, "args": ${JSON.stringify(["toy-crm", "--state", join(dir, "crm.json")])}`;

/** A client's files with its usual neighbours: other settings, comments, a secret in an env, a remote server with a header. */
function fixtures(dir: string, remote: string): Record<string, Fixture> {
  const crm = command(dir);
  const remoteEntry = (urlKey: string, extra = "") => `"${urlKey}": "${remote}",${extra} "headers": { "Authorization": "Bearer ${TOKEN}" }`;
  return {
    "claude-desktop": {
      files: {
        ".config/Claude/claude_desktop_config.json": `{\n  "mcpServers": {\n    // the CRM the agent works on\n    "crm": { ${crm}, "env": { "CRM_API_KEY": "${SECRET}" } }\n  },\n  "globalShortcut": "Ctrl+Space"\n}\n`,
      },
      start: [{ file: ".config/Claude/claude_desktop_config.json", path: ["mcpServers", "crm"] }],
    },
    "claude-code": {
      files: {
        ".claude.json": `{\n  "numStartups": 12,\n  "mcpServers": {\n    "crm": { "type": "stdio", ${crm}, "env": { "CRM_API_KEY": "${SECRET}" } }\n  },\n  "projects": {\n    "${dir}/project": {\n      "allowedTools": [],\n      "mcpServers": {\n        "remote-crm": { "type": "http", ${remoteEntry("url")} }\n      }\n    }\n  }\n}\n`,
        "project/.mcp.json": `{\n  // shared with the team\n  "mcpServers": {\n    "team-crm": { ${crm} }\n  }\n}\n`,
      },
      start: [
        { file: ".claude.json", path: ["mcpServers", "crm"] },
        { file: ".claude.json", path: ["projects", `${dir}/project`, "mcpServers", "remote-crm"] },
        { file: "project/.mcp.json", path: ["mcpServers", "team-crm"] },
      ],
    },
    cursor: {
      files: {
        ".cursor/mcp.json": `{\n  // Cursor's own servers\n  "mcpServers": {\n    "crm": {\n      ${crm},\n      "env": { "CRM_API_KEY": "${SECRET}" }, // the key\n    },\n    "remote": { ${remoteEntry("url")} },\n  },\n}\n`,
        "project/.cursor/mcp.json": `{\n  "mcpServers": {\n    /* this project's */\n    "project-crm": { ${crm} }\n  }\n}\n`,
      },
      start: [
        { file: ".cursor/mcp.json", path: ["mcpServers", "crm"] },
        { file: ".cursor/mcp.json", path: ["mcpServers", "remote"] },
        { file: "project/.cursor/mcp.json", path: ["mcpServers", "project-crm"] },
      ],
    },
    vscode: {
      files: {
        "project/.vscode/mcp.json": `{\n  // Servers for this workspace\n  "inputs": [\n    { "type": "promptString", "id": "crm-key", "description": "CRM key", "password": true }\n  ],\n  "servers": {\n    "crm": { "type": "stdio", ${crm}, "env": { "CRM_API_KEY": "\${input:crm-key}", "CRM_REGION": "${SECRET}" } },\n    "remote": { "type": "http", ${remoteEntry("url")} },\n    "old": { "type": "sse", "url": "http://127.0.0.1:1/sse" }\n  }\n}\n`,
        ".config/Code/User/mcp.json": `{\n  "servers": {\n    // everywhere\n    "user-crm": { ${crm} }\n  }\n}\n`,
      },
      start: [
        { file: "project/.vscode/mcp.json", path: ["servers", "remote"] },
        { file: ".config/Code/User/mcp.json", path: ["servers", "user-crm"] },
      ],
      left: { old: "it is an SSE server, a transport Synartesis does not speak (Streamable HTTP only)" },
    },
    windsurf: {
      files: {
        ".codeium/windsurf/mcp_config.json": `{\n  "mcpServers": {\n    "crm": { ${crm}, "env": { "CRM_API_KEY": "${SECRET}" } },\n    "remote": { ${remoteEntry("serverUrl")} }\n  }\n}\n`,
      },
      start: [{ file: ".codeium/windsurf/mcp_config.json", path: ["mcpServers", "remote"] }],
    },
    codex: {
      files: {
        ".codex/config.toml": `# Codex\nmodel = "o4-mini"  # the model\n\n[mcp_servers.crm]\n# the CRM\ncommand = ${JSON.stringify(BIN)}\nargs = ${JSON.stringify(["toy-crm", "--state", join(dir, "crm.json")])}\n\n[mcp_servers.crm.env]\nCRM_API_KEY = "${SECRET}"\n\n[mcp_servers.remote]\nurl = "${remote}"\nhttp_headers = { "Authorization" = "Bearer ${TOKEN}" }\n\n[profiles.fast]\nmodel = "o4-mini"\n`,
      },
      start: [
        { file: ".codex/config.toml", path: ["mcp_servers", "crm"] },
        { file: ".codex/config.toml", path: ["mcp_servers", "remote"] },
      ],
    },
    gemini: {
      files: {
        ".gemini/settings.json": `{\n  "theme": "GitHub",\n  // tools\n  "mcpServers": {\n    "crm": { ${crm}, "env": { "CRM_API_KEY": "${SECRET}" }, "trust": false },\n    "remote": { ${remoteEntry("httpUrl")} },\n    "events": { "url": "http://127.0.0.1:1/sse" }\n  }\n}\n`,
      },
      start: [
        { file: ".gemini/settings.json", path: ["mcpServers", "crm"] },
        { file: ".gemini/settings.json", path: ["mcpServers", "remote"] },
      ],
      left: { events: "it is an SSE server, a transport Synartesis does not speak (Streamable HTTP only)" },
    },
  };
}

/** A temporary HOME (with a project folder) holding the client's files. */
function home(fixture: Fixture, dir: string): { home: string; project: string; path: (file: string) => string } {
  const project = join(dir, "project");
  mkdirSync(project, { recursive: true });
  const path = (file: string) => (file.startsWith("project/") ? join(dir, file) : join(dir, "home", file));
  for (const [file, text] of Object.entries(fixture.files)) {
    mkdirSync(dirname(path(file)), { recursive: true });
    writeFileSync(path(file), text);
  }
  return { home: join(dir, "home"), project, path };
}

const ENV = (homeDir: string) => ({ HOME: homeDir, XDG_CONFIG_HOME: undefined, APPDATA: undefined, CODEX_HOME: undefined });

function entryOf(file: string, path: string[]): Record<string, any> {
  const text = readFileSync(file, "utf8");
  let at: any = file.endsWith(".toml") ? parseToml(text) : parseJsonc(text);
  for (const key of path) at = at[key];
  return at;
}

/** What a client does with a wrapped entry: start it, list the tools, call one. */
async function callThrough(entry: Record<string, any>, homeDir: string, cwd: string): Promise<string[]> {
  const client = new Client({ name: "the-client", version: "1.0.0" });
  await client.connect(
    new StdioClientTransport({
      command: entry.command,
      args: entry.args,
      env: { PATH: process.env.PATH!, HOME: homeDir, ...entry.env },
      cwd,
      stderr: "ignore",
    }),
  );
  try {
    const tools = (await client.listTools()).tools.map((tool) => tool.name);
    const answer = (await client.callTool({ name: "get_customer", arguments: { id: "c_001" } })) as any;
    expect(answer.isError).toBeFalsy();
    return tools;
  } finally {
    await client.close();
  }
}

/** Every file under `dir` but `except`, with its text. */
function filesUnder(dir: string, except: Set<string>): string[] {
  const found: string[] = [];
  for (const name of readdirSync(dir, { recursive: true }) as string[]) {
    const file = join(dir, name);
    if (!except.has(file) && statSync(file).isFile()) found.push(file);
  }
  return found;
}

describe.concurrent("wrap and unwrap, one client at a time", () => {
  for (const client of ["claude-desktop", "claude-code", "cursor", "vscode", "windsurf", "codex", "gemini"]) {
    test(`${client}: the dry run changes nothing; wrapped entries start synartesis proxy and record; no secret lands in a file it wrote; unwrap restores every byte`, async () => {
      const dir = tempDir(`syn-wrap-${client}-`);
      const remote = await startHttpProxy(workspace());
      const fixture = fixtures(dir, remote.url)[client]!;
      const { home: homeDir, project, path } = home(fixture, dir);
      const env = ENV(homeDir);
      const files = Object.keys(fixture.files).map(path);
      const originals = files.map((file) => readFileSync(file, "utf8"));

      const dry = await run(["wrap", client, "--dry-run"], { cwd: project, env });
      expect(dry.stderr).toBe("");
      expect(dry.code).toBe(0);
      expect(dry.stdout).toContain("Dry run: nothing was written.");
      expect(dry.stdout).toContain('"proxy"');
      expect(dry.stdout).not.toContain(SECRET);
      expect(dry.stdout).not.toContain(TOKEN);
      expect(files.map((file) => readFileSync(file, "utf8"))).toEqual(originals);
      expect(existsSync(join(homeDir, ".config", "synartesis"))).toBe(false);
      for (const [name, why] of Object.entries(fixture.left ?? {})) expect(dry.stdout).toContain(`${name} left alone: ${why}`);

      const wrapped = await run(["wrap", client, "--yes"], { cwd: project, env });
      expect(wrapped.stderr).toBe("");
      expect(wrapped.code).toBe(0);
      const manifest = join(homeDir, ".config", "synartesis", "synartesis.yaml");
      for (const start of fixture.start) {
        const entry = entryOf(path(start.file), start.path);
        expect(basename(entry.command)).toBe("synartesis");
        expect(entry.args.slice(-5)).toEqual(["proxy", "--manifest", manifest, "--server", expect.any(String)]);
        expect(await callThrough(entry, homeDir, project)).toContain("update_customer");
      }
      const journal = new Database(join(homeDir, ".config", "synartesis", "synartesis.db"), { readonly: true });
      const recorded = journal.query("SELECT runs.label AS label, actions.tool AS tool FROM actions JOIN runs ON runs.id = actions.run_id").all();
      journal.close();
      expect(recorded).toEqual(fixture.start.map(() => ({ label: "the-client", tool: "get_customer" })));

      // Secrets stay in the client's own files: none is in clear in anything Synartesis wrote (backups, manifest, journal).
      const written = filesUnder(dir, new Set([...files, join(dir, "crm.json")]));
      expect(written.some((file) => file.endsWith(".synartesis-backup.json"))).toBe(true);
      for (const file of written) {
        const bytes = readFileSync(file, "latin1");
        expect({ file, secret: bytes.includes(SECRET), token: bytes.includes(TOKEN) }).toEqual({ file, secret: false, token: false });
      }
      for (const file of [manifest, ...files.map((f) => `${f}.synartesis-backup.json`).filter(existsSync)]) expect(statSync(file).mode & 0o777).toBe(0o600);

      const again = await run(["wrap", client, "--yes"], { cwd: project, env });
      expect(again.stdout).toContain(`Nothing to wrap: every server of `);
      expect(again.code).toBe(0);

      const unwrapped = await run(["unwrap", client, "--yes"], { cwd: project, env });
      expect(unwrapped.stderr).toBe("");
      expect(unwrapped.code).toBe(0);
      expect(files.map((file) => readFileSync(file, "utf8"))).toEqual(originals);
      for (const file of files) expect(existsSync(`${file}.synartesis-backup.json`)).toBe(false);
    });
  }
});

function workspace() {
  const dir = crmFolder();
  return { dir, manifest: join(dir, "synartesis.yaml"), journal: join(dir, "synartesis.db"), state: join(dir, "crm.json") };
}

describe.concurrent("wrap and unwrap around a person's edits, and what they refuse", () => {
  test("an edit made between wrap and unwrap survives; an edit of wrap's own lines is a conflict that changes nothing", async () => {
    const dir = tempDir("syn-wrap-edit-");
    const fixture = fixtures(dir, "http://127.0.0.1:1/mcp").cursor!;
    const { home: homeDir, project, path } = home({ ...fixture, files: { ".cursor/mcp.json": fixture.files[".cursor/mcp.json"]! } }, dir);
    const env = ENV(homeDir);
    const file = path(".cursor/mcp.json");
    const original = readFileSync(file, "utf8");
    expect((await run(["wrap", "cursor", "--yes"], { cwd: project, env })).code).toBe(0);
    const wrapped = readFileSync(file, "utf8");
    // The person adds a server and rewords a comment.
    const edited = wrapped
      .replace("// Cursor's own servers", "// Cursor's own servers, and one more")
      .replace('"mcpServers": {', '"mcpServers": {\n    "notes": { "command": "notes-server" },');
    writeFileSync(file, edited);
    const unwrapped = await run(["unwrap", "cursor", "--yes"], { cwd: project, env });
    expect(unwrapped.code).toBe(0);
    expect(unwrapped.stdout).toContain(`Restored ${file} (edited since wrap: only wrap's entries were reverted, your edits are kept)`);
    expect(readFileSync(file, "utf8")).toBe(
      original
        .replace("// Cursor's own servers", "// Cursor's own servers, and one more")
        .replace('"mcpServers": {', '"mcpServers": {\n    "notes": { "command": "notes-server" },'),
    );

    // Wrapped again, then the person edits a line wrap wrote: unwrap refuses that file and changes nothing.
    writeFileSync(file, original);
    expect((await run(["wrap", "cursor", "--yes"], { cwd: project, env })).code).toBe(0);
    const rewrapped = readFileSync(file, "utf8");
    const touched = rewrapped.replace('"--server",\n        "crm"', '"--server",\n        "crm",\n        "--log-level",\n        "debug"');
    expect(touched).not.toBe(rewrapped);
    writeFileSync(file, touched);
    const refused = await run(["unwrap", "cursor", "--yes"], { cwd: project, env });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("synartesis: some files could not be unwrapped");
    expect(refused.stderr).toContain(`${file} was left as it is: the lines wrap changed were edited since: its change no longer applies`);
    expect(readFileSync(file, "utf8")).toBe(touched);
    expect(existsSync(`${file}.synartesis-backup.json`)).toBe(true);
  });

  test("--list shows each client found and what it holds; bad names, bad files and no terminal are refused before anything is written", async () => {
    const dir = tempDir("syn-wrap-list-");
    const fixture = fixtures(dir, "http://127.0.0.1:1/mcp").gemini!;
    const { home: homeDir, project, path } = home(fixture, dir);
    const env = ENV(homeDir);
    const listed = await run(["wrap", "--list"], { cwd: project, env });
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain("Cursor (cursor): not found here\n");
    expect(listed.stdout).toContain(
      `Gemini CLI (gemini)\n  ${path(".gemini/settings.json")} (user): 3 servers\n    mcpServers.crm  command\n    mcpServers.remote  url\n    mcpServers.events  left alone: it is an SSE server, a transport Synartesis does not speak (Streamable HTTP only)\n`,
    );

    expect(await run(["wrap", "zed"], { cwd: project, env })).toMatchObject({
      code: 2,
      stderr: 'synartesis: unknown client "zed": one of claude-desktop, claude-code, cursor, vscode, windsurf, codex, gemini (see synartesis wrap --help)\n',
    });
    expect((await run(["wrap"], { cwd: project, env })).stderr).toBe(
      "synartesis: name the client to wrap: one of claude-desktop, claude-code, cursor, vscode, windsurf, codex, gemini (or --list) (see synartesis wrap --help)\n",
    );
    expect(await run(["wrap", "cursor"], { cwd: project, env })).toMatchObject({
      code: 1,
      stderr: expect.stringContaining("no configuration of Cursor found here"),
    });
    // Without a terminal to ask on, and without --yes: nothing is written.
    const asked = await run(["wrap", "gemini"], { cwd: project, env });
    expect(asked.code).toBe(2);
    expect(asked.stderr).toBe(
      "synartesis: nothing was written: not a terminal to ask on; pass --yes to write (or --dry-run to only look) (see synartesis wrap --help)\n",
    );
    expect(readFileSync(path(".gemini/settings.json"), "utf8")).toBe(fixture.files[".gemini/settings.json"]!);

    writeFileSync(path(".gemini/settings.json"), '{\n  "mcpServers": {\n    "crm": { "command": "x" }\n  \n');
    const broken = await run(["wrap", "gemini", "--yes"], { cwd: project, env });
    expect(broken.code).toBe(2);
    expect(broken.stderr).toStartWith(`synartesis: ${path(".gemini/settings.json")}:5:1: not valid JSON: CloseBraceExpected\n`);
    expect(await run(["unwrap", "gemini"], { cwd: project, env })).toMatchObject({
      code: 1,
      stderr: "synartesis: nothing to unwrap: no file of Gemini CLI here has wrap's backup beside it\n",
    });
  });

  test("proxy --server serves one server of a manifest whose other servers' variables are unset, and names a server it does not have", async () => {
    const dir = tempDir("syn-wrap-server-");
    const manifest = join(dir, "synartesis.yaml");
    writeFileSync(
      manifest,
      `version: 1\nservers:\n  crm:\n    command: ${BIN}\n    args: ["toy-crm", "--state", "${join(dir, "crm.json")}"]\n  other:\n    command: other-server\n    env: { TOKEN: "\${OTHER_TOKEN}" }\ntools:\n  - match: "crm.get_customer"\n    class: readonly\n`,
    );
    const tools = await callThrough({ command: BIN, args: ["proxy", "--manifest", manifest, "--server", "crm"], env: {} }, dir, dir);
    expect(tools).toContain("get_customer");
    expect(tools).not.toContain("crm__get_customer");
    const missing = await run(["proxy", "--manifest", manifest, "--server", "nope"], { cwd: dir });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe(`synartesis: the manifest ${manifest} has no server "nope" (it has: crm, other) (see synartesis proxy --help)\n`);
  });
});

describe("the README's wrap line", () => {
  test("runs as shown on a machine with Cursor: the list, the dry run, then one question on the terminal answered yes; unwrap as the comment says", async () => {
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    const line = /<!-- wrap-test -->\n```sh\n(.+)\n```/.exec(readme)![1]!;
    const [commands, later] = line.split(/\s+# later: /);
    const dir = tempDir("syn-wrap-readme-");
    const fixture = fixtures(dir, "http://127.0.0.1:1/mcp").cursor!;
    const { home: homeDir, project, path } = home({ ...fixture, files: { ".cursor/mcp.json": fixture.files[".cursor/mcp.json"]! } }, dir);
    const bin = join(dir, "bin");
    mkdirSync(bin);
    symlinkSync(BIN, join(bin, "synartesis"));
    const original = readFileSync(path(".cursor/mcp.json"), "utf8");
    // `script` gives the commands a terminal, as a person's shell would; "y" answers the one question.
    const onTerminal = (command: string) =>
      run(["-qec", command!, "/dev/null"], { bin: "script", cwd: project, stdin: "y\n", env: { ...ENV(homeDir), PATH: `${bin}:${process.env.PATH}` } });
    const wrapped = await onTerminal(commands!);
    expect(wrapped.code).toBe(0);
    expect(wrapped.stdout).toContain("Cursor (cursor)\r\n");
    expect(wrapped.stdout).toContain("Dry run: nothing was written.");
    expect(wrapped.stdout).toContain("Wrap 2 servers of Cursor? [y/N]");
    expect(wrapped.stdout).toContain(`Wrapped 2 servers in ${path(".cursor/mcp.json")}`);
    expect(entryOf(path(".cursor/mcp.json"), ["mcpServers", "crm"]).args).toContain("proxy");
    const unwrapped = await onTerminal(later!);
    expect(unwrapped.code).toBe(0);
    expect(readFileSync(path(".cursor/mcp.json"), "utf8")).toBe(original);
  });
});
