// manifests/git.yaml against the real mcp-git server in a throwaway
// repository, through the built proxy and `synartesis undo` (R-SHIP-2):
// staging is undone, a person's later staging stops the undo, everything
// else that writes is held, and git failures pass through as JSON-RPC errors.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { parseDocument } from "yaml";
import { NODE_MODULES, ROOT, run, tempDir } from "../helpers.ts";
import { agent as startAgent, endSession, text } from "./agent-kit.ts";
import { loadManifest } from "../../src/manifest/load.ts";
import { createMatcher } from "../../src/manifest/match.ts";

// The preload's default timeout reaches only the first file bun runs; tests sharing the machine need the room.
setDefaultTimeout(60_000);

const SHIPPED = join(ROOT, "manifests", "git.yaml");
const SERVER = join(NODE_MODULES, "mcp-git", "dist", "cli.js");
const SLOW = 120_000;

const READS = ["git_status", "git_diff_unstaged", "git_diff_staged", "git_diff", "git_log", "git_show"];
const HELD = ["git_reset", "git_commit", "git_create_branch", "git_checkout", "git_init", "git_stash", "git_stash_pop", "git_stash_apply"];

// git here must not depend on whoever runs the tests: no global or system
// config, a fixed identity. The proxy passes this environment on to mcp-git.
const GIT_ENV: Record<string, string> = {
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_AUTHOR_NAME: "Test",
  GIT_AUTHOR_EMAIL: "test@example.com",
  GIT_COMMITTER_NAME: "Test",
  GIT_COMMITTER_EMAIL: "test@example.com",
};

interface Workspace {
  dir: string;
  manifest: string;
  repo: string;
}

function git(repo: string, ...args: string[]): string {
  const result = Bun.spawnSync(["git", ...args], { cwd: repo, env: { ...process.env, ...GIT_ENV }, stdout: "pipe", stderr: "pipe" });
  if (result.exitCode !== 0) throw new Error(`git ${args.join(" ")} failed: ${result.stderr.toString()}`);
  return result.stdout.toString();
}

/**
 * The shipped manifest in a temp folder, pointed at the installed server, and
 * a repository with one commit, a modified tracked file and an untracked one.
 */
function workspace(): Workspace {
  const dir = tempDir("syn-real-git-");
  const doc = parseDocument(readFileSync(SHIPPED, "utf8"));
  doc.setIn(["servers", "git", "command"], "node");
  doc.setIn(["servers", "git", "args"], [SERVER]);
  const manifest = join(dir, "synartesis.yaml");
  writeFileSync(manifest, doc.toString());
  const repo = join(dir, "repo");
  mkdirSync(repo);
  git(repo, "init", "-q", "-b", "main");
  writeFileSync(join(repo, "README.md"), "# project\n");
  writeFileSync(join(repo, "app.txt"), "version 1\n");
  git(repo, "add", "README.md", "app.txt");
  git(repo, "commit", "-q", "-m", "first");
  writeFileSync(join(repo, "app.txt"), "version 2\n");
  writeFileSync(join(repo, "new.txt"), "brand new\n");
  return { dir, manifest, repo };
}

const agent = (ws: Workspace) => startAgent(ws.dir, "git-agent", GIT_ENV);

const undo = (ws: Workspace) => run(["undo"], { cwd: ws.dir, env: GIT_ENV });

describe.concurrent("manifests/git.yaml", () => {
  test(
    "the shipped file loads, says where the server stops, and names a rule for each of the server's 15 tools",
    async () => {
      loadManifest(SHIPPED, {});
      expect(readFileSync(SHIPPED, "utf8")).toContain("Where this server's abilities end");
      const ws = workspace();
      const checked = await run(["check"], { cwd: ws.dir, env: GIT_ENV });
      expect(checked.code).toBe(0);
      expect(checked.stdout).toContain("15 tools");

      const client = await agent(ws);
      const names = (await client.listTools()).tools.map((t) => t.name).sort();
      expect(names).toEqual([...READS, "git_add", ...HELD].sort());
      const matcher = createMatcher(loadManifest(ws.manifest, {}));
      const classOf = (name: string) => matcher.classify("git", name);
      for (const name of names) expect(classOf(name).rule?.match).toBe(`git.${name}`);
      for (const name of READS) expect(classOf(name).class).toBe("readonly");
      expect(classOf("git_add").class).toBe("compensable");
      for (const name of HELD) expect(classOf(name)).toMatchObject({ class: "irreversible", gate: "always" });
    },
    SLOW,
  );

  test(
    "git_add is undone with git_reset: the index is back as it was",
    async () => {
      const ws = workspace();
      const statusBefore = git(ws.repo, "status", "--porcelain");
      expect(statusBefore).toBe(" M app.txt\n?? new.txt\n");
      expect(git(ws.repo, "diff", "--cached")).toBe("");

      const client = await agent(ws);
      const added = (await client.callTool({ name: "git_add", arguments: { repo_path: ws.repo, files: ["app.txt", "new.txt"] } })) as any;
      expect(added.isError).toBeFalsy();
      const status = (await client.callTool({ name: "git_status", arguments: { repo_path: ws.repo } })) as any;
      expect(text(status)).toContain("Changes to be committed");
      await endSession(client);
      expect(git(ws.repo, "status", "--porcelain")).toBe("M  app.txt\nA  new.txt\n");

      const shown = JSON.parse((await run(["show", "--json"], { cwd: ws.dir })).stdout);
      expect(shown.actions[0]).toMatchObject({
        tool: "git_add",
        class: "compensable",
        status: "applied",
        snapshot: "",
        inverse: { server: "git", tool: "git_reset", args: { repo_path: ws.repo } },
      });
      expect(shown.actions[0].postState).toContain("+brand new");

      const undone = await undo(ws);
      expect(undone.stderr).toBe("");
      expect(undone.code).toBe(0);
      expect(undone.stdout).toContain("rolled back: 1 call reverted");
      expect(git(ws.repo, "status", "--porcelain")).toBe(statusBefore);
      expect(git(ws.repo, "diff", "--cached")).toBe("");
      // The working tree is untouched.
      expect(readFileSync(join(ws.repo, "app.txt"), "utf8")).toBe("version 2\n");
      expect(readFileSync(join(ws.repo, "new.txt"), "utf8")).toBe("brand new\n");
    },
    SLOW,
  );

  test(
    "undo refuses to unstage what a person staged after the agent's git_add",
    async () => {
      const ws = workspace();
      const client = await agent(ws);
      await client.callTool({ name: "git_add", arguments: { repo_path: ws.repo, files: ["new.txt"] } });
      await endSession(client);

      git(ws.repo, "add", "app.txt");
      const staged = git(ws.repo, "status", "--porcelain");
      expect(staged).toBe("M  app.txt\nA  new.txt\n");
      const undone = await undo(ws);
      expect(undone.code).toBe(1);
      expect(undone.stdout).toContain("DRIFT");
      expect(undone.stdout).toContain("+version 2");
      expect(git(ws.repo, "status", "--porcelain")).toBe(staged);
    },
    SLOW,
  );

  test(
    "commit, branch creation, checkout and reset are held and change nothing",
    async () => {
      const ws = workspace();
      git(ws.repo, "add", "app.txt");
      const log = git(ws.repo, "log", "--format=%H %s");
      const branches = git(ws.repo, "branch", "--list");
      const status = git(ws.repo, "status", "--porcelain");

      const client = await agent(ws);
      const calls = [
        { name: "git_commit", arguments: { repo_path: ws.repo, message: "agent commit" } },
        { name: "git_create_branch", arguments: { repo_path: ws.repo, branch_name: "agent-branch" } },
        { name: "git_checkout", arguments: { repo_path: ws.repo, branch_name: "main" } },
        { name: "git_reset", arguments: { repo_path: ws.repo } },
      ];
      for (const call of calls) {
        const result = (await client.callTool(call)) as any;
        expect(result.isError).toBe(true);
        expect(text(result)).toStartWith("HELD FOR APPROVAL");
        expect(text(result)).toContain(`git.${call.name} is irreversible`);
      }
      await endSession(client);
      expect(git(ws.repo, "log", "--format=%H %s")).toBe(log);
      expect(git(ws.repo, "branch", "--list")).toBe(branches);
      expect(git(ws.repo, "status", "--porcelain")).toBe(status);
    },
    SLOW,
  );

  test(
    "a failing git_add comes back as the server's JSON-RPC error, is journalled failed, and undo skips it",
    async () => {
      const ws = workspace();
      const client = await agent(ws);
      let error: unknown;
      try {
        await client.callTool({ name: "git_add", arguments: { repo_path: ws.repo, files: ["no-such-file.txt"] } });
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(McpError);
      expect((error as McpError).code).toBe(-32603);
      expect((error as McpError).message).toContain("pathspec 'no-such-file.txt' did not match any files");
      await endSession(client);

      const shown = JSON.parse((await run(["show", "--json"], { cwd: ws.dir })).stdout);
      expect(shown.actions).toMatchObject([{ tool: "git_add", status: "failed" }]);
      expect(shown.actions[0].error).toContain("JSON-RPC error -32603");
      const undone = await undo(ws);
      expect(undone.code).toBe(0);
      expect(undone.stdout).toContain("Nothing to undo: no call in this run changed anything.");
      expect(git(ws.repo, "status", "--porcelain")).toBe(" M app.txt\n?? new.txt\n");
    },
    SLOW,
  );
});
