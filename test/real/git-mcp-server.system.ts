// manifests/git-mcp-server.yaml against the real @cyanheads/git-mcp-server
// and a real repository, through the built proxy and `synartesis undo`: a
// session that stages, commits, branches, tags, adds a remote, switches
// branch and deletes one is undone to the repository it found (refs, HEAD,
// index, working tree, remotes); what the policy holds changes nothing.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseDocument } from "yaml";
import { NODE_MODULES, ROOT, run, tempDir } from "../helpers.ts";
import { agent as startAgent, endSession, text } from "./agent-kit.ts";

setDefaultTimeout(90_000);

const SHIPPED = join(ROOT, "manifests", "git-mcp-server.yaml");
const SERVER = join(NODE_MODULES, "@cyanheads", "git-mcp-server", "dist", "index.js");

function git(repo: string, ...args: string[]): string {
  const done = Bun.spawnSync(["git", ...args], { cwd: repo, env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1" } });
  if (done.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${done.stderr.toString()}`);
  return done.stdout.toString();
}

/** A repository with two commits on main, a branch `old` and a file changed but not staged; the shipped policy beside it. */
function workspace(): { dir: string; repo: string } {
  const dir = tempDir("syn-real-gitmcp-");
  const repo = join(dir, "repo");
  Bun.spawnSync(["git", "init", "-q", "-b", "main", repo]);
  git(repo, "config", "user.email", "ada@example.com");
  git(repo, "config", "user.name", "Ada");
  git(repo, "config", "commit.gpgsign", "false");
  writeFileSync(join(repo, "a.txt"), "one\n");
  git(repo, "add", "a.txt");
  git(repo, "commit", "-qm", "first");
  git(repo, "branch", "old");
  writeFileSync(join(repo, "a.txt"), "one\ntwo\n");
  git(repo, "commit", "-qam", "second");
  writeFileSync(join(repo, "notes.txt"), "draft\n");
  const doc = parseDocument(readFileSync(SHIPPED, "utf8"));
  doc.setIn(["servers", "git", "args"], [SERVER]);
  doc.setIn(["servers", "git", "env", "GIT_SIGN_COMMITS"], "false");
  writeFileSync(join(dir, "synartesis.yaml"), doc.toString());
  return { dir, repo };
}

/** Everything undo must give back: refs and where they point, HEAD, the index, the working tree's status, the remotes. */
function repoState(repo: string): Record<string, string> {
  return {
    refs: git(repo, "for-each-ref", "--format=%(refname) %(objectname)"),
    head: git(repo, "symbolic-ref", "-q", "HEAD"),
    index: git(repo, "ls-files", "-s"),
    status: git(repo, "status", "--porcelain=v1", "--untracked-files=all"),
    remotes: git(repo, "remote", "-v"),
  };
}

describe.concurrent("manifests/git-mcp-server.yaml", () => {
  test("check: 28 tools, each covered; init adopts the policy", async () => {
    const ws = workspace();
    const checked = await run(["check"], { cwd: ws.dir });
    expect(checked.stdout).toContain("28 tools");
    expect(checked.stdout).toContain("Not covered by any rule (treated as irreversible and gated, like any tool a manifest does not mention): none");
    expect(checked.code).toBe(0);
    const dir = tempDir("syn-real-gitmcp-init-");
    const init = await run(["init", "repo", "--", "node", SERVER], { cwd: dir });
    expect(init.stdout).toContain("rules adopted from the shipped policy for @cyanheads/git-mcp-server (manifests/git-mcp-server.yaml)");
    expect(init.code).toBe(0);
  });

  test("a session of eight undoable calls (stage, commit, branch, tag, remote, checkout, branch deleted, soft reset) is undone to the repository it found", async () => {
    const ws = workspace();
    const before = repoState(ws.repo);
    const client = await startAgent(ws.dir, "git-agent");
    const call = async (name: string, args: Record<string, unknown>) => {
      const result = (await client.callTool({ name, arguments: args })) as any;
      expect({ name, error: result.isError ? text(result) : undefined }).toEqual({ name, error: undefined });
      return result;
    };
    await call("git_set_working_dir", { path: ws.repo });
    // Without path, a write is refused before it runs: a later undo's own server would not know the folder.
    const unnamed = (await client.callTool({ name: "git_add", arguments: { paths: ["notes.txt"] } })) as any;
    expect(unnamed.isError).toBe(true);
    expect(text(unnamed)).toContain("Synartesis did not run git_add: the arguments it was given lack what is needed");
    const path = ws.repo;
    await call("git_add", { path, paths: ["notes.txt"] });
    await call("git_commit", { path, message: "agent's commit" });
    await call("git_commit", { path, message: "an empty one", allowEmpty: true });
    await call("git_reset", { path, mode: "soft", target: "HEAD~1" });
    await call("git_branch", { path, mode: "create", branchName: "agent-branch" });
    await call("git_tag", { path, mode: "create", tagName: "v9" });
    await call("git_remote", { path, mode: "add", name: "mirror", url: "https://example.com/mirror.git" });
    await call("git_checkout", { path, target: "old" });
    await call("git_branch", { path, mode: "delete", branchName: "main", force: true });
    await endSession(client);
    expect(repoState(ws.repo)).not.toEqual(before);
    expect(git(ws.repo, "branch", "--list", "main")).toBe("");

    const shown = JSON.parse((await run(["show", "--json"], { cwd: ws.dir })).stdout);
    const undoable = shown.actions.filter((action: any) => action.inverse).map((action: any) => action.tool);
    expect(undoable).toEqual(["git_add", "git_commit", "git_commit", "git_reset", "git_branch", "git_tag", "git_remote", "git_checkout", "git_branch"]);
    const undone = await run(["undo"], { cwd: ws.dir });
    expect(undone.stderr).toBe("");
    if (undone.code !== 0) console.log(undone.stdout);
    expect(undone.stdout).toContain("rolled back: 9 calls reverted");
    expect(undone.code).toBe(0);
    expect(repoState(ws.repo)).toEqual(before);
  });

  test("what would discard work or cannot be put back exactly is held, and changes nothing", async () => {
    const ws = workspace();
    git(ws.repo, "add", "notes.txt");
    const before = repoState(ws.repo);
    const client = await startAgent(ws.dir, "git-agent");
    const calls = [
      { name: "git_reset", arguments: { path: ws.repo, mode: "hard", target: "HEAD~1" } },
      { name: "git_add", arguments: { path: ws.repo, all: true } },
      { name: "git_branch", arguments: { path: ws.repo, mode: "rename", branchName: "old", newBranchName: "older" } },
      { name: "git_checkout", arguments: { path: ws.repo, target: "HEAD", paths: ["a.txt"], force: true } },
      { name: "git_clean", arguments: { path: ws.repo, force: true } },
      { name: "git_commit", arguments: { path: ws.repo, message: "x", filesToStage: ["a.txt"] } },
    ];
    for (const call of calls) {
      const result = (await client.callTool(call)) as any;
      expect({ name: call.name, held: text(result).startsWith("HELD FOR APPROVAL") }).toEqual({ name: call.name, held: true });
    }
    await endSession(client);
    expect(repoState(ws.repo)).toEqual(before);
  });
});
