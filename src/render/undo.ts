// What undo says around its steps — the heading, "nothing to undo", the
// closing summary and how to continue — for the CLI and the review page. Pure.
import { shortId, type Action, type Run } from "../journal/types.ts";
import { decisionCommandFor, shellQuote } from "../self.ts";
import type { UndoOpening } from "../undo/begin.ts";
import type { UndoReport } from "../undo/execute.ts";
import type { Step } from "../undo/plan.ts";
import { keepOffered } from "../undo/keep.ts";
import { callText, inverseText, keptWhat, runHeader } from "./runs.ts";
import { callName, formatTime, printable, type Style } from "./style.ts";

export function undoHeading(run: Run, count: number, dryRun: boolean, style: Style): string {
  return `${dryRun ? "Dry run — nothing will be changed. " : ""}${runHeader(run, count, style)}`;
}

/** What undo says when there is nothing to revert (the run already rolled back, or nothing in scope changed anything). */
export function nothingToUndo(run: Run, opening: Exclude<UndoOpening, { kind: "work" }>, fromSeq: number, kept = 0): string[] {
  if (opening.kind === "already") {
    return [
      `Nothing to undo: run ${shortId(run.id)} was already rolled back${opening.when ? ` at ${formatTime(opening.when)}` : ""}${opening.by ? ` by ${printable(opening.by)}` : ""}.`,
    ];
  }
  const rest = opening.withdrawn.length || opening.wouldWithdraw.length || kept ? " else" : "";
  const finished = run.status === "rolled_back" ? ` Run ${shortId(run.id)} is rolled back.` : "";
  return [
    ...opening.withdrawn.map((a) => `Withdrew ${withdrawnWhat(a)} of #${a.seq} ${callText(a, 200)}: it will not run.`),
    ...opening.wouldWithdraw.map((a) => `Would withdraw ${withdrawnWhat(a)} of #${a.seq} ${callText(a, 200)}.`),
    kept
      ? `Nothing${rest} to undo: ${kept === 1 ? "the kept call stays" : `the ${kept} kept calls stay`} in place, and every other call is undone or changed nothing.${finished}`
      : `Nothing${rest} to undo: no call in this run${fromSeq > 1 ? ` from #${fromSeq} on` : ""} changed anything.`,
  ];
}

/** A request still waiting, or an approval given and never used. */
function withdrawnWhat(action: Action): string {
  return action.approvedBy ? `the approval (by ${printable(action.approvedBy)}, never used)` : "the request for approval";
}

/** The exact settle commands for an unknown outcome undo stopped at (with --journal when the person gave one). */
export function settleLines(step: Step, journalPath?: string): string[] {
  if (!step.settle) return [];
  const settle = decisionCommandFor(journalPath || undefined, "synartesis")("settle", shortId(step.action.id));
  const command = (flag: string) => `${settle} ${flag}`;
  const what = step.settle === "inverse" ? `the inverse undo sent for #${step.action.seq}` : `#${step.action.seq}`;
  return [`Once you know whether ${what} ran, record it:`, `  ${command("--applied")}       (it ran)`, `  ${command("--not-applied")}   (it did not run)`];
}

export type SummaryTone = "good" | "stop" | "partial" | "plain";

/** The line that closes an undo or a dry run. */
export function undoSummary(report: UndoReport, options: { dryRun: boolean; runRef: string; fromSeq: number }): { tone: SummaryTone; text: string } {
  const { dryRun, runRef, fromSeq } = options;
  const reverted = report.steps.filter((s) => s.outcome === "revert").length;
  const left = report.steps.filter((s) => s.outcome === "left").length;
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;
  if (report.halted) {
    const where = `#${report.halted.action.seq}`;
    const text = dryRun
      ? `A real undo would stop at ${where}. ${plural(reverted, "step")} before it would be reverted.`
      : report.halted.outcome === "unrestored"
        ? `Stopped after ${where}: its inverse ran but did not give back the state from before. ${reverted} reverted before it. Run ${runRef} is marked partial.`
        : `Stopped at ${where}; nothing older than it was touched. ${reverted} reverted before stopping. Run ${runRef} is marked partial.`;
    return { tone: "stop", text };
  }
  if (dryRun) {
    return { tone: "plain", text: `${plural(reverted, "call")} would be reverted${left ? `, ${left} left in place` : ""}.` };
  }
  if (report.runStatus === "rolled_back") return { tone: "good", text: `Run ${runRef} is rolled back: ${plural(reverted, "call")} reverted.` };
  return {
    tone: "partial",
    text: `Run ${runRef} is partially rolled back: ${reverted} reverted${left ? `, ${left} left in place (they cannot be undone)` : ""}${fromSeq > 1 ? `; calls before #${fromSeq} were not in scope` : ""}.`,
  };
}

/**
 * The command that continues a halted undo. It keeps --to: continuing without
 * it would widen the undo to calls the person left out.
 */
export function continueCommand(runRef: string, fromSeq: number, paths: { manifest?: string; journal?: string }, halted?: Step): string[] {
  const again = ["synartesis", "undo", runRef, ...(fromSeq > 1 ? ["--to", String(fromSeq)] : [])];
  if (paths.manifest) again.push("--manifest", shellQuote(paths.manifest));
  if (paths.journal) again.push("--journal", shellQuote(paths.journal));
  const lines = [`When the cause is dealt with, continue with: ${again.join(" ")}`];
  // A person may also decide that what is there now stays (R-PEOPLE-1).
  if (halted && keepOffered(halted)) {
    const seq = halted.action.seq;
    lines.push(`Or keep #${seq} as it is now and undo the rest: ${[...again, "--keep", String(seq), "--reason", '"…"'].join(" ")}`);
  }
  return lines;
}

/** What `undo --keep` recorded for one call. */
export function keptText(action: Action, before: boolean): string {
  return `${before ? "Already kept" : "Kept"} #${action.seq} ${callText(action, 200)}: ${printable(keptWhat(action))}.`;
}

/** What --replan rebuilt for one action. */
export function replannedText(action: Action): string {
  return `  replanned #${action.seq} ${callName(action)}: ${action.inverse ? `undo with ${inverseText(action.inverse)}` : "no usable inverse"}`;
}
