// Who decides a held call, and whether they may (R-PEOPLE-2): the account
// that runs the command or the page (for a team journal, its PostgreSQL
// role), checked against the approvers of the rule the call was held under.
import { readFileSync } from "node:fs";
import { userInfo } from "node:os";
import type { Journal } from "../journal/journal.ts";
import { shortId, type Action } from "../journal/types.ts";
import { refusedDecider } from "../manifest/approvers.ts";
import { loadManifest } from "../manifest/load.ts";
import { createMatcher, type Matcher } from "../manifest/match.ts";
import { ruleHash } from "../manifest/rule-hash.ts";
import type { Manifest } from "../manifest/types.ts";
import { manifestForRun } from "./discover.ts";

/**
 * Who decides a held call (R-PEOPLE-2): for a team journal the PostgreSQL
 * role it connects as, else the operating-system account running this
 * command, looked up by its user id — never $USER, which whoever starts the
 * command can set, and never a name typed in.
 */
export function decider(journalLocation: string): string {
  if (/^postgres(ql)?:\/\//.test(journalLocation)) {
    const role = decodeURIComponent(new URL(journalLocation).username);
    if (role) return role;
  }
  return osAccount();
}

/**
 * The operating-system account of this process's user id, from the account
 * database (Bun's userInfo() answers $USER, which anyone can set); the id
 * itself when no name is found.
 */
export function osAccount(): string {
  const uid = process.getuid?.();
  if (uid === undefined) return userInfo().username || "unknown";
  try {
    const entry = readFileSync("/etc/passwd", "utf8")
      .split("\n")
      .find((line) => line.split(":")[2] === String(uid));
    if (entry) return entry.split(":")[0]!;
  } catch {}
  // macOS keeps its people out of /etc/passwd: id asks the directory service for this uid.
  try {
    const asked = Bun.spawnSync(["id", "-un"], { env: {} });
    const name = asked.stdout.toString().trim();
    if (asked.exitCode === 0 && name) return name;
  } catch {}
  return `uid ${uid}`;
}

/**
 * Whether `by` may decide an action under the policy its run was recorded
 * with (R-PEOPLE-2): why not, or the hash of the rule the decision is made
 * under (R-VERIFY-1: an approval is spent only while the call's rule is that
 * one). A policy that cannot be read refuses: who may decide is not guessed.
 * Each run's policy is read once by one check (approve --all decides many
 * calls of few runs).
 */
export function decisionCheck(journal: Journal, explicitManifest?: string): (action: Action, by: string) => Promise<{ refused: string } | { rule: string }> {
  const policies = new Map<string, { matcher: Matcher; groups: Manifest["groups"] } | { unreadable: string }>();
  const policyOf = async (runId: string) => {
    const known = policies.get(runId);
    if (known) return known;
    const run = await journal.getRun(runId);
    let policy: { matcher: Matcher; groups: Manifest["groups"] } | { unreadable: string };
    if (!run) policy = { unreadable: `its run ${shortId(runId)} is not in the journal` };
    else {
      try {
        const manifest = loadManifest(manifestForRun(run, explicitManifest, process.cwd()).path);
        policy = { matcher: createMatcher(manifest), groups: manifest.groups };
      } catch (error) {
        policy = { unreadable: `who may decide it cannot be read from the policy (${(error as Error).message.split("\n")[0]})` };
      }
    }
    policies.set(runId, policy);
    return policy;
  };
  return async (action, by) => {
    const policy = await policyOf(action.runId);
    if ("unreadable" in policy) return { refused: policy.unreadable };
    const rule = policy.matcher.classify(action.server, action.tool, action.args).rule;
    const refused = refusedDecider(rule, policy.groups, by);
    return refused === undefined ? { rule: ruleHash(rule) } : { refused };
  };
}
