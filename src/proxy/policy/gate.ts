// Gates (R-GATE): decide whether a call must wait for a person, and speak to
// the agent about held and denied calls. Approvals live in the journal.
import { ruleHash } from "../../manifest/rule-hash.ts";
import { callKey } from "../../canonical.ts";
import type { ApprovalsRole, RecordingRole } from "../../journal/journal.ts";
import { shortId, type Action } from "../../journal/types.ts";
import type { Classification } from "../../manifest/match.ts";
import { DRAFT_MARK, type Rule, type ToolClass } from "../../manifest/types.ts";
import { classifySql, extractSql } from "./readonly-sql.ts";

/** An approval covers one retry within this window (R-GATE-3). */
export const APPROVAL_TTL_MS = 60 * 60 * 1000;

export type GateVerdict = { gated: false; readOnlySql?: boolean } | { gated: true; reason: string };

/** Whether the manifest gates this call, and why (before any pre-read). */
export function gateVerdict(classification: Classification, server: string, tool: string, args: unknown): GateVerdict {
  const name = `${server}.${tool}`;
  switch (classification.gate) {
    case "never":
      return { gated: false };
    case "always":
      if (!classification.rule) {
        return { gated: true, reason: `no rule in the manifest covers ${name}, so it is treated as irreversible` };
      }
      if (classification.rule.draft) {
        return { gated: true, reason: `the rule for ${name} is a draft Synartesis proposed, not yet confirmed by a person (its "# ${DRAFT_MARK}" mark)` };
      }
      return {
        gated: true,
        reason:
          classification.class === "irreversible"
            ? `${name} is irreversible: once it runs it cannot be undone`
            : `the manifest gates every call of ${name} (gate: always)`,
      };
    case "on_write": {
      const texts = extractSql(args);
      if (texts === undefined) return { gated: true, reason: `${name} is gated on writes and its arguments hold no SQL text to check` };
      const writing = texts.map(classifySql).find((verdict) => !verdict.readOnly);
      return writing ? { gated: true, reason: `${name} is gated on writes: ${writing.reason}` } : { gated: false, readOnlySql: true };
    }
  }
}

export interface GateContext {
  /** The gate needs only the approvals, and to record the request it raises. */
  journal: ApprovalsRole & Pick<RecordingRole, "insertAction">;
  runId: string;
  now: () => Date;
  newId: () => string;
  /** The exact shell command that approves an action (id8 → command). */
  approveCommand: (id8: string) => string;
}

export interface HeldCall {
  server: string;
  tool: string;
  args: unknown;
  class: ToolClass;
  /** The rule it is held under (none: no rule covers it); an approval is spent only while this is the rule it was given under. */
  rule?: Rule;
  /** Its number in the run, taken as its request arrived (calls/arrival.ts). */
  arrival?: { take(): number | undefined };
}

/** What a refusal was, for the log (R-PROXY-15). */
export type GateEvent =
  | { kind: "held"; action: string; id: string; reason: string; approve: string; newRequest: boolean }
  | { kind: "denied"; action: string; by?: string; reason?: string };

export type GateOutcome = { proceed: true; approval?: Action; actionId: string } | { proceed: false; text: string; event: GateEvent };

export function heldText(action: Pick<Action, "id">, reason: string, command: string): string {
  return [
    `HELD FOR APPROVAL — Synartesis did not run this call. Reason: ${reason}.`,
    `Action id: ${shortId(action.id)}.`,
    `A person must approve it by running this command in a shell:`,
    `  ${command}`,
    `Relay that command to the person. Once they have approved it, make exactly the same call again (same tool, same arguments); it will then run once.`,
    `Do not try to reach the same result with other tools while it is held.`,
  ].join("\n");
}

export function deniedText(action: Action): string {
  return [
    `DENIED — Synartesis did not run this call: ${action.approvedBy ?? "a person"} denied it at ${action.approvedAt ?? "an earlier time"}` +
      (action.reason ? ` with the reason: ${action.reason}` : " (no reason given") +
      (action.reason ? "." : ")."),
    `Do not route around this decision with other tools. Ask the person how to proceed; calling it again raises a new request for approval.`,
  ].join("\n");
}

/**
 * The gate for one call: spend an approval if there is one, report a denial
 * not yet told, reuse an open request of this run, or raise a new request.
 */
export async function passGate(ctx: GateContext, call: HeldCall, reason: string): Promise<GateOutcome> {
  const now = ctx.now();
  const argsKey = callKey(call.args);
  const actionId = ctx.newId();
  const since = new Date(now.getTime() - APPROVAL_TTL_MS).toISOString();
  const approval = await ctx.journal.spendApproval({
    call: { server: call.server, tool: call.tool, argsKey },
    approvedSince: since,
    spender: actionId,
    now: now.toISOString(),
    rule: ruleHash(call.rule),
  });
  if (approval) return { proceed: true, approval, actionId };

  const denial = await ctx.journal.takeDenial({ call: { server: call.server, tool: call.tool, argsKey }, runId: ctx.runId, now: now.toISOString() });
  if (denial) {
    return { proceed: false, text: deniedText(denial), event: { kind: "denied", action: shortId(denial.id), by: denial.approvedBy, reason: denial.reason } };
  }

  const open = await ctx.journal.openRequest({ server: call.server, tool: call.tool, argsKey });
  if (open) {
    const approve = ctx.approveCommand(shortId(open.id));
    const why = open.heldReason ?? reason;
    return {
      proceed: false,
      text: heldText(open, why, approve),
      event: { kind: "held", action: shortId(open.id), id: open.id, reason: why, approve, newRequest: false },
    };
  }

  const held = await ctx.journal.insertAction({
    id: actionId,
    runId: ctx.runId,
    seq: call.arrival?.take(),
    server: call.server,
    tool: call.tool,
    args: call.args,
    argsKey,
    class: call.class,
    status: "gated",
    heldReason: reason,
    ts: now.toISOString(),
  });
  const approve = ctx.approveCommand(shortId(held.id));
  return {
    proceed: false,
    text: heldText(held, reason, approve),
    event: { kind: "held", action: shortId(held.id), id: held.id, reason, approve, newRequest: true },
  };
}
