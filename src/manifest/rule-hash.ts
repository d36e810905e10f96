// A rule's identity for the decisions made under it (R-VERIFY-1): the SHA-256
// of its canonical JSON, where it is written in the manifest left out. An
// approval keeps the hash of the rule its call was held under, and is spent
// only while the call's rule is still that one: a policy changed after the
// approval (another class, other approvers, another inverse) needs a new one.
import { canonicalJson, sha256 } from "../canonical.ts";
import type { Rule } from "./types.ts";

/** What a call no rule covers is held under. */
const NO_RULE = "no rule";
const known = new WeakMap<Rule, string>();

export function ruleHash(rule: Rule | undefined): string {
  if (!rule) return NO_RULE;
  let hash = known.get(rule);
  if (hash === undefined) {
    const { line: _line, ...content } = rule;
    hash = sha256(canonicalJson(content));
    known.set(rule, hash);
  }
  return hash;
}
