// `synartesis undo [RUN]`: put back the state a run replaced, newest first,
// refusing on drift and stopping at uncertainty (R-UNDO).
import { defineCommand } from "citty";
import { hostname } from "node:os";
import { SynartesisError } from "../errors.ts";
import { manifestForRun } from "../manifest/discover.ts";
import { loadManifest } from "../manifest/load.ts";
import type { Logger } from "../proxy/log.ts";
import { renderStep, runHeader } from "../render/runs.ts";
import { formatTime, styleFor, type Style } from "../render/style.ts";
import { continueCommand, nothingToUndo, replannedText, undoHeading, undoSummary, type SummaryTone } from "../render/undo.ts";
import { resolve } from "node:path";
import { shortId } from "../journal/types.ts";
import { undoRun } from "../undo/execute.ts";
import { checkScope, hasWork } from "../undo/plan.ts";
import { journalArg, manifestArg, openExistingJournal, runArg, writeLines } from "./shared.ts";

function cliLogger(): Logger {
  const say = (msg: string, fields?: Record<string, unknown>) =>
    process.stderr.write(`synartesis: ${fields?.server ? `server "${fields.server}": ` : ""}${msg}${fields?.reason ? ` (${fields.reason})` : ""}\n`);
  const quiet = () => {};
  return { trace: quiet, debug: quiet, info: quiet, warn: say, error: say };
}

function paint(style: Style, tone: SummaryTone): (text: string) => string {
  return { good: style.green, stop: style.red, partial: style.yellow, plain: (text: string) => text }[tone];
}

export default defineCommand({
  meta: {
    name: "undo",
    description:
      "Undo a run (default: the most recent), newest call first. Checks each record for drift first and refuses to overwrite changes made since.",
  },
  args: {
    ...runArg,
    "dry-run": { type: "boolean", description: "Print each step and the exact call it would make; change nothing" },
    to: { type: "string", valueHint: "seq", description: "Undo only the calls with seq >= SEQ" },
    replan: { type: "boolean", description: "Rebuild inverses from the current manifest and the state captured at call time" },
    ...manifestArg,
    ...journalArg,
  },
  async run({ args }) {
    let fromSeq = 1;
    if (args.to !== undefined) {
      if (!/^\d+$/.test(args.to) || Number(args.to) < 1) throw new SynartesisError("usage", `--to needs a positive whole number (got "${args.to}")`);
      fromSeq = Number(args.to);
    }
    const cwd = process.cwd();
    const journal = await openExistingJournal(args);
    try {
      const run = journal.findRun(args.run);
      const manifestChoice = manifestForRun(run, args.manifest, cwd);
      if (manifestChoice.note) process.stderr.write(`synartesis: note: ${manifestChoice.note}\n`);
      const manifest = loadManifest(manifestChoice.path);
      const style = styleFor();
      const dryRun = Boolean(args["dry-run"]);
      const width = process.stdout.columns ?? 100;
      const actions = journal.actionsOfRun(run.id);
      const runRef = shortId(run.id);
      checkScope(actions, fromSeq, runRef);
      if (!hasWork(actions, fromSeq)) {
        // A client that reconnected after the damage leaves an empty newest run: point at the one that matters.
        const older =
          args.run || args.to ? undefined : journal.listRuns().find((r) => r.id !== run.id && hasWork(journal.actionsOfRun(r.id)));
        if (older) {
          throw new SynartesisError("refused", `the most recent run ${runRef} (${run.label}, ${run.status}) has nothing to undo`, {
            hint: `The most recent run with something to undo is ${shortId(older.id)} (${older.label}, started ${formatTime(older.startedAt)}): synartesis undo ${shortId(older.id)}`,
          });
        }
        writeLines([runHeader(run, actions.length, style), "", nothingToUndo(fromSeq)]);
        return 0;
      }
      writeLines([undoHeading(run, actions.length, dryRun, style), ""]);
      const report = await undoRun(journal, manifest, run, {
        fromSeq,
        dryRun,
        replan: Boolean(args.replan),
        now: () => new Date(),
        owner: `${hostname()}:${process.pid}:${crypto.randomUUID()}`,
        log: cliLogger(),
        onStep: (step) => writeLines(renderStep(step, style, { dryRun, width })),
        onReplan: (action) => writeLines([replannedText(action)]),
      });
      const summary = undoSummary(report, { dryRun, runRef, fromSeq });
      const lines = ["", paint(style, summary.tone)(summary.text + (dryRun && !report.halted ? " Run without --dry-run to do it." : ""))];
      if (report.halted && !dryRun) {
        lines.push(continueCommand(runRef, fromSeq, { manifest: args.manifest && resolve(cwd, args.manifest), journal: args.journal && journal.path }));
      }
      writeLines(lines);
      return report.halted ? 1 : 0;
    } finally {
      journal.close();
    }
  },
});
