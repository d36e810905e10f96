// manifests/github.yaml without a server (github.system.ts runs it against
// the real server package and a stand-in of the GitHub API): it loads, it
// says what it was tested against, and its references resolve on data shaped
// like GitHub's answers to the literal calls an undo would make (R-SHIP-2,
// R-REF).
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../helpers.ts";
import { ManifestError, loadManifest } from "../../src/manifest/load.ts";
import { createMatcher } from "../../src/manifest/match.ts";
import { resolveTemplate } from "../../src/manifest/refs.ts";

const SHIPPED = join(ROOT, "manifests", "github.yaml");
const ENV = { GITHUB_PERSONAL_ACCESS_TOKEN: "ghp_not_a_real_token" };

const READS = [
  "get_file_contents",
  "get_issue",
  "get_pull_request",
  "get_pull_request_files",
  "get_pull_request_status",
  "get_pull_request_comments",
  "get_pull_request_reviews",
  "list_commits",
  "list_issues",
  "list_pull_requests",
  "search_repositories",
  "search_code",
  "search_issues",
  "search_users",
];
const HELD = [
  "create_issue",
  "add_issue_comment",
  "create_pull_request",
  "create_pull_request_review",
  "merge_pull_request",
  "update_pull_request_branch",
  "push_files",
  "create_branch",
  "create_repository",
  "fork_repository",
];

describe("manifests/github.yaml", () => {
  test("says at the top what it was tested against (not github.com itself), and where the server stops", () => {
    const text = readFileSync(SHIPPED, "utf8");
    expect(text).toContain("It\n# has not met github.com itself");
    expect(text).toContain("Where this server's abilities end");
  });

  test("loads with GITHUB_PERSONAL_ACCESS_TOKEN set, and refuses to load without it", () => {
    const manifest = loadManifest(SHIPPED, ENV);
    expect(manifest.servers.github).toMatchObject({ kind: "command", env: ENV });
    let error: unknown;
    try {
      loadManifest(SHIPPED, {});
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ManifestError);
    expect((error as ManifestError).message).toMatch(/github\.yaml:\d+:\d+: .*GITHUB_PERSONAL_ACCESS_TOKEN/);
  });

  test("classes: 14 reads, 2 reversible writes, 10 held; a tool it does not name is held too", () => {
    const matcher = createMatcher(loadManifest(SHIPPED, ENV));
    const classOf = (name: string) => matcher.classify("github", name);
    for (const name of READS) expect(classOf(name)).toMatchObject({ class: "readonly", rule: { match: `github.${name}` } });
    for (const name of ["update_issue", "create_or_update_file"]) expect(classOf(name).class).toBe("reversible");
    for (const name of HELD) expect(classOf(name)).toMatchObject({ class: "irreversible", gate: "always", rule: { match: `github.${name}` } });
    expect(classOf("delete_repository")).toEqual({ rule: undefined, class: "irreversible", gate: "always" });
  });

  test("update_issue: the snapshot's label objects become label names in the inverse", () => {
    const rule = createMatcher(loadManifest(SHIPPED, ENV)).classify("github", "update_issue").rule!;
    const args = { owner: "octo", repo: "demo", issue_number: 7, title: "Renamed by the agent", labels: ["wontfix"] };
    expect(resolveTemplate(rule.snapshot!.args, { args })).toEqual({ owner: "octo", repo: "demo", issue_number: 7 });
    const snapshot = {
      number: 7,
      title: "Crash on start",
      body: "Steps to reproduce…",
      state: "open",
      labels: [
        { id: 1, name: "bug", color: "d73a4a" },
        { id: 2, name: "p1", color: "b60205" },
      ],
      assignees: [{ login: "ada", id: 10 }],
      milestone: null,
      updated_at: "2026-01-01T00:00:00Z",
    };
    expect(resolveTemplate(rule.inverse![0]!.args, { args, snapshot, result: { ...snapshot, title: args.title } })).toEqual({
      owner: "octo",
      repo: "demo",
      issue_number: 7,
      title: "Crash on start",
      body: "Steps to reproduce…",
      state: "open",
      labels: ["bug", "p1"],
      assignees: ["ada"],
    });
    expect(rule.inverse![0]!.tool).toBe("update_issue");
    expect(rule.snapshot!.tool).toBe("get_issue");
  });

  test("create_or_update_file: the old text goes back with the new file's sha and a commit message naming the path", () => {
    const rule = createMatcher(loadManifest(SHIPPED, ENV)).classify("github", "create_or_update_file").rule!;
    const args = { owner: "octo", repo: "demo", path: "docs/setup.md", branch: "main", content: "agent text\n", message: "Update setup" };
    expect(resolveTemplate(rule.snapshot!.args, { args })).toEqual({ owner: "octo", repo: "demo", path: "docs/setup.md", branch: "main" });
    const snapshot = { type: "file", encoding: "base64", name: "setup.md", path: "docs/setup.md", content: "old text\n", sha: "aaa111" };
    const result = { content: { name: "setup.md", path: "docs/setup.md", sha: "bbb222" }, commit: { sha: "ccc333", message: "Update setup" } };
    expect(resolveTemplate(rule.inverse![0]!.args, { args, snapshot, result })).toEqual({
      owner: "octo",
      repo: "demo",
      path: "docs/setup.md",
      branch: "main",
      content: "old text\n",
      sha: "bbb222",
      message: "Revert agent change to docs/setup.md",
    });
    expect(rule.snapshot!.absentWhen).toEqual(["Not Found"]);
  });
});
