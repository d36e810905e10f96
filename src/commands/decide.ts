// What `approve` and `deny` share: pick the held calls, record the decision.
import { SynartesisError } from "../errors.ts";
import type { Action } from "../journal/types.ts";
import { shortId } from "../journal/types.ts";
import { requireIntact } from "../journal/integrity.ts";
import { decisionText, settledText } from "../render/runs.ts";
import { callName, oneLine } from "../render/style.ts";
import { decider, decisionCheck } from "../workspace/deciders.ts";
import { openExistingJournal, tell, writeLines } from "./shared.ts";

export const decisionArgs = {
  id: { type: "positional", required: false, description: "Action id or any unique prefix (default: the only call waiting)" },
  all: { type: "boolean", description: "Every call that is waiting" },
  force: { type: "boolean", description: "Decide even though the record of the call's run was changed outside Synartesis (the override is recorded)" },
} as const;

export async function decide(
  verb: "approve" | "deny",
  args: { id?: string; all?: boolean; reason?: string; force?: boolean; journal?: string; manifest?: string },
): Promise<number> {
  if (args.id && args.all) throw new SynartesisError("usage", `give an action id or --all, not both`);
  const journal = await openExistingJournal(args);
  // Who decides is the account running this (R-PEOPLE-2), never a name given.
  const by = decider(journal.path);
  const mayDecide = decisionCheck(journal, args.manifest);
  try {
    let targets: Action[];
    if (args.all) {
      targets = await journal.waiting();
      if (targets.length === 0) {
        writeLines(["Nothing is waiting for approval."]);
        return 0;
      }
    } else if (args.id) {
      targets = [await journal.findAction(args.id)];
    } else {
      const waiting = await journal.waiting();
      if (waiting.length === 0) throw new SynartesisError("refused", "nothing is waiting for approval");
      if (waiting.length > 1) {
        throw new SynartesisError("usage", `${waiting.length} calls are waiting; name one (or use --all)`, {
          details: waiting.map((a) => `${shortId(a.id)}  ${callName(a)} ${oneLine(a.args, 100)}`),
        });
      }
      targets = waiting;
    }
    const status = verb === "approve" ? "approved" : "denied";
    const lines: string[] = [];
    let refused = 0;
    for (const target of targets) {
      // A record changed outside Synartesis (a forged request, a changed call) is not decided on unless forced (R-VERIFY).
      await requireIntact(journal, target.runId, { force: Boolean(args.force), by, doing: verb });
      const allowed = await mayDecide(target, by);
      if ("refused" in allowed) {
        tell(`refused: #${target.seq} ${callName(target)} (${shortId(target.id)}) is not ${verb === "approve" ? "approved" : "denied"}: ${allowed.refused}`);
        refused++;
        continue;
      }
      const outcome = await journal.decide(target.id, { status, by, at: new Date().toISOString(), reason: args.reason, rule: allowed.rule });
      if ("settled" in outcome) {
        tell(settledText((await journal.getAction(target.id)) ?? target));
        refused++;
        continue;
      }
      lines.push(decisionText(verb, target, by, args.reason));
    }
    writeLines(lines);
    return refused > 0 ? 1 : 0;
  } finally {
    await journal.close();
  }
}
