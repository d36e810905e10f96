// `synartesis undo [RUN]`: put back the state a run replaced, newest first,
// refusing on drift and stopping at uncertainty (R-UNDO).
import { defineCommand } from "citty";
import { hostname } from "node:os";
import { SynartesisError } from "../errors.ts";
import { loadManifest } from "../manifest/load.ts";
import type { Logger } from "../log.ts";
import { renderStep } from "../render/runs.ts";
import { printable, styleFor, type Style } from "../render/style.ts";
import { continueCommand, keptText, nothingToUndo, replannedText, settleLines, undoHeading, undoSummary, type SummaryTone } from "../render/undo.ts";
import { resolve } from "node:path";
import { shortId } from "../journal/types.ts";
import { openUndo } from "../undo/begin.ts";
import { undoRun } from "../undo/execute.ts";
import { requireIntact } from "../journal/integrity.ts";
import { currentUser, journalArg, manifestArg, manifestPathForRun, openExistingJournal, runArg, writeLines } from "./shared.ts";
import { startupOver } from "../jit.ts";
import { keepCalls } from "../undo/keep.ts";

/** `--keep 1,3` (or `--keep 1 --keep 3`): the calls' numbers, in order, once each. */
function keptSeqs(value: string | string[]): number[] {
  const words = [value]
    .flat()
    .flatMap((part) => part.split(/[\s,]+/))
    .filter(Boolean);
  const bad = words.find((word) => !/^\d+$/.test(word) || Number(word) < 1);
  if (bad !== undefined || words.length === 0)
    throw new SynartesisError("usage", `--keep needs call numbers as show prints them, e.g. --keep 3 or --keep 3,5 (got "${printable(String(bad ?? ""))}")`);
  return [...new Set(words.map(Number))];
}

function cliLogger(): Logger {
  const say = (msg: string, fields?: Record<string, unknown>) =>
    process.stderr.write(
      printable(`synartesis: ${fields?.server ? `server "${fields.server}": ` : ""}${msg}${fields?.reason ? ` (${fields.reason})` : ""}`) + "\n",
    );
  const quiet = () => {};
  return { trace: quiet, debug: quiet, info: quiet, warn: say, error: say };
}

function paint(style: Style, tone: SummaryTone): (text: string) => string {
  return { good: style.green, stop: style.red, partial: style.yellow, plain: (text: string) => text }[tone];
}

export default defineCommand({
  meta: {
    name: "undo",
    description: "Undo a run (default: the most recent), newest call first. Checks each record for drift first and refuses to overwrite changes made since.",
  },
  args: {
    ...runArg,
    "dry-run": { type: "boolean", description: "Print each step and the exact call it would make; change nothing" },
    to: { type: "string", valueHint: "seq", description: "Undo only the calls with seq >= SEQ" },
    replan: { type: "boolean", description: "Rebuild inverses from the current manifest and the state captured at call time" },
    force: { type: "boolean", description: "Undo a run even though its proxy is still recording it, or its record was changed outside Synartesis (recorded)" },
    keep: { type: "string", valueHint: "SEQ[,SEQ…]", description: "Keep these calls' effects (a drifted record, an unknown outcome), then undo the rest" },
    reason: { type: "string", valueHint: "text", description: "Why the calls given to --keep stay (recorded with your user name)" },
    ...manifestArg,
    ...journalArg,
  },
  async run({ args }) {
    let fromSeq = 1;
    if (args.to !== undefined) {
      if (!/^\d+$/.test(args.to) || Number(args.to) < 1) throw new SynartesisError("usage", `--to needs a positive whole number (got "${args.to}")`);
      fromSeq = Number(args.to);
    }
    const keep = args.keep === undefined ? undefined : keptSeqs(args.keep);
    if (args.reason !== undefined && keep === undefined) throw new SynartesisError("usage", "--reason goes with --keep (why those calls' effects stay)");
    if (keep && args["dry-run"]) throw new SynartesisError("usage", "--keep records a decision and cannot be rehearsed: run --dry-run alone to see the plan");
    const cwd = process.cwd();
    const journal = await openExistingJournal(args);
    try {
      const run = await journal.findRun(args.run);
      const dryRun = Boolean(args["dry-run"]);
      // Undo acts on what the journal says: not on a record changed outside Synartesis, unless forced (R-VERIFY).
      await requireIntact(journal, run.id, { force: Boolean(args.force), by: currentUser(), doing: "undo" });
      const style = styleFor();
      const width = process.stdout.columns ?? 100;
      let actions = await journal.actionsOfRun(run.id);
      const runRef = shortId(run.id);
      const by = currentUser();
      if (keep) {
        const { kept, already } = await keepCalls(journal, run, actions, keep, {
          by,
          at: new Date().toISOString(),
          ...(args.reason ? { reason: args.reason } : {}),
        });
        writeLines([...kept.map((action) => keptText(action, false)), ...already.map((action) => keptText(action, true)), ""]);
        actions = await journal.actionsOfRun(run.id);
      }
      const opening = await openUndo(journal, run, actions, { fromSeq, dryRun, force: Boolean(args.force), by, now: () => new Date(), picked: !args.run });
      if (opening.kind !== "work") {
        // Withdrawing the last requests, or keeping the last stop, may have finished the run.
        const now = await journal.findRun(run.id);
        const kept = actions.filter((action) => action.seq >= fromSeq && action.keptAt).length;
        writeLines([undoHeading(now, actions.length, false, style), "", ...nothingToUndo(now, opening, fromSeq, kept)]);
        return 0;
      }
      const manifest = loadManifest(manifestPathForRun(run, args.manifest, cwd));
      writeLines([undoHeading(run, actions.length, dryRun, style), ""]);
      startupOver();
      const report = await undoRun(journal, manifest, run, {
        fromSeq,
        dryRun,
        replan: Boolean(args.replan),
        now: () => new Date(),
        owner: `${hostname()}:${process.pid}:${crypto.randomUUID()}`,
        by,
        log: cliLogger(),
        onStep: (step) => writeLines(renderStep(step, style, { dryRun, width })),
        onReplan: (action) => writeLines([replannedText(action)]),
        actions: opening.actions,
      });
      const summary = undoSummary(report, { dryRun, runRef, fromSeq });
      const lines = ["", paint(style, summary.tone)(summary.text + (dryRun && !report.halted ? " Run without --dry-run to do it." : ""))];
      if (report.halted) lines.push(...settleLines(report.halted, args.journal && journal.path));
      if (report.halted && !dryRun) {
        lines.push(
          ...continueCommand(runRef, fromSeq, { manifest: args.manifest && resolve(cwd, args.manifest), journal: args.journal && journal.path }, report.halted),
        );
      }
      writeLines(lines);
      return report.halted ? 1 : 0;
    } finally {
      await journal.close();
    }
  },
});
