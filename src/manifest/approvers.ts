// Who may decide a held call (R-PEOPLE-2): a rule's approvers, users and
// "group:NAME" from the manifest's groups. Pure.
import type { Manifest, Rule } from "./types.ts";

/** Undefined when `decider` may approve or deny calls under `rule`; else why not, in words. */
export function refusedDecider(rule: Pick<Rule, "approvers"> | undefined, groups: Manifest["groups"], decider: string): string | undefined {
  const approvers = rule?.approvers;
  if (!approvers) return undefined;
  const allowed = approvers.some((approver) => {
    if (!approver.startsWith("group:")) return approver === decider;
    return (groups?.[approver.slice("group:".length)] ?? []).includes(decider);
  });
  if (allowed) return undefined;
  const named = approvers.map((approver) => {
    const members = approver.startsWith("group:") ? groups?.[approver.slice("group:".length)] : undefined;
    return members ? `${approver} (${members.join(", ")})` : approver;
  });
  return `${decider} may not decide it: its rule's approvers are ${named.join(", ")}`;
}
