// manifests/github.yaml against the real @modelcontextprotocol/server-github
// (2025.4.8, the version the policy was written from), through the built
// proxy and `synartesis undo` (R-SHIP-2). The test cannot reach GitHub: the
// server is started with a preload that sends its requests to a stand-in of
// the GitHub API (test/fixtures/github-standin.ts, answers shaped as GitHub's
// and validated by the server). An issue edited and a file changed come back
// exactly; what the policy holds is never sent.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseDocument } from "yaml";
import { NODE_MODULES, ROOT, run, tempDir } from "../helpers.ts";
import { startGithubStandIn, type StandInIssue } from "../fixtures/github-standin.ts";
import { agent, endSession, text } from "./agent-kit.ts";

setDefaultTimeout(60_000);

const SHIPPED = join(ROOT, "manifests", "github.yaml");
const SERVER = join(NODE_MODULES, "@modelcontextprotocol", "server-github", "dist", "index.js");
const REDIRECT = join(ROOT, "test", "fixtures", "github-api-redirect.mjs");
const ISSUE: StandInIssue = { title: "Crash on start", body: "Steps to reproduce: open it.", state: "open", labels: ["bug", "p1"], assignees: ["ada"] };
const FILE = "# Setup\n\nRun ./install.sh, then bun test.\n";

/** The shipped policy in a temp folder, its server started by node with the redirect to `standIn`. */
function workspace(standIn: string): string {
  const dir = tempDir("syn-real-github-");
  const doc = parseDocument(readFileSync(SHIPPED, "utf8"));
  doc.setIn(["servers", "github", "command"], "node");
  doc.setIn(["servers", "github", "args"], ["--import", REDIRECT, SERVER]);
  doc.setIn(["servers", "github", "env"], { GITHUB_PERSONAL_ACCESS_TOKEN: "ghp_not_a_real_token", GITHUB_API_STANDIN: standIn });
  writeFileSync(join(dir, "synartesis.yaml"), doc.toString());
  return dir;
}

describe("manifests/github.yaml against @modelcontextprotocol/server-github", () => {
  test("update_issue and create_or_update_file are undone exactly; create_issue and push_files are held and never reach GitHub", async () => {
    const standIn = startGithubStandIn("octo", "demo", { 7: ISSUE }, { "docs/setup.md": FILE });
    try {
      const dir = workspace(standIn.url);
      const client = await agent(dir, "careless-agent");
      const edited = (await client.callTool({
        name: "update_issue",
        arguments: { owner: "octo", repo: "demo", issue_number: 7, title: "Renamed by the agent", state: "closed", labels: ["wontfix"], assignees: [] },
      })) as any;
      expect(edited.isError).toBeFalsy();
      const changed = (await client.callTool({
        name: "create_or_update_file",
        arguments: { owner: "octo", repo: "demo", path: "docs/setup.md", branch: "main", content: "rewritten by the agent\n", message: "Update setup" },
      })) as any;
      expect(changed.isError).toBeFalsy();
      expect(standIn.issues.get(7)).toEqual({ ...ISSUE, title: "Renamed by the agent", state: "closed", labels: ["wontfix"], assignees: [] });
      expect(standIn.files.get("docs/setup.md")).toBe("rewritten by the agent\n");

      const before = standIn.requests.length;
      for (const [name, args] of [
        ["create_issue", { owner: "octo", repo: "demo", title: "New" }],
        ["push_files", { owner: "octo", repo: "demo", branch: "main", files: [{ path: "a.md", content: "a" }], message: "m" }],
      ] as const) {
        expect(text(await client.callTool({ name, arguments: args }))).toStartWith("HELD FOR APPROVAL");
      }
      expect(standIn.requests.length).toBe(before);
      await endSession(client);

      const undone = await run(["undo"], { cwd: dir });
      expect(undone.stderr).toBe("");
      expect(undone.code).toBe(0);
      expect(undone.stdout).toContain("2 calls reverted");
      expect(standIn.issues.get(7)).toEqual(ISSUE);
      expect(standIn.files.get("docs/setup.md")).toBe(FILE);
      // The file came back by a commit that names it, as the policy says.
      expect(standIn.requests.filter((r) => r === "PUT /repos/octo/demo/contents/docs/setup.md")).toHaveLength(2);
    } finally {
      standIn.stop();
    }
  });
});
