// `synartesis undo [RUN]`: put back the state a run replaced, newest first,
// refusing on drift and stopping at uncertainty (R-UNDO).
import { defineCommand } from "citty";
import { hostname } from "node:os";
import { SynartesisError } from "../errors.ts";
import { findManifest } from "../manifest/discover.ts";
import { loadManifest } from "../manifest/load.ts";
import type { Logger } from "../proxy/log.ts";
import { callText, renderStep, runHeader } from "../render/runs.ts";
import { callName, formatTime, printable, styleFor } from "../render/style.ts";
import { shellQuote } from "../self.ts";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { shortId, type Run } from "../journal/types.ts";
import { undoRun } from "../undo/execute.ts";
import { hasWork } from "../undo/plan.ts";
import { journalArg, manifestArg, openExistingJournal, runArg, writeLines } from "./shared.ts";

function cliLogger(): Logger {
  const say = (msg: string, fields?: Record<string, unknown>) =>
    process.stderr.write(printable(`synartesis: ${fields?.server ? `server "${fields.server}": ` : ""}${msg}${fields?.reason ? ` (${fields.reason})` : ""}`) + "\n");
  const quiet = () => {};
  return { trace: quiet, debug: quiet, info: quiet, warn: say, error: say };
}

/**
 * The manifest to undo a run with: the one it was recorded with (undo must
 * start the same servers), unless --manifest says otherwise.
 */
function manifestForRun(run: Run, explicit: string | undefined, cwd: string): string {
  if (explicit) {
    const path = resolve(cwd, explicit);
    if (run.manifest && run.manifest !== path) {
      process.stderr.write(`synartesis: note: run ${shortId(run.id)} was recorded with ${run.manifest}; undoing it with ${path} as you asked\n`);
    }
    return path;
  }
  if (!run.manifest) return findManifest(cwd);
  if (!existsSync(run.manifest)) {
    throw new SynartesisError("manifest", `run ${shortId(run.id)} was recorded with the manifest ${run.manifest}, which is not there any more`, {
      hint: "Pass --manifest PATH to undo it with the manifest that now starts the same servers.",
    });
  }
  return run.manifest;
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
      const manifest = loadManifest(manifestForRun(run, args.manifest, cwd));
      const style = styleFor();
      const dryRun = Boolean(args["dry-run"]);
      const width = process.stdout.columns ?? 100;
      const actions = journal.actionsOfRun(run.id);
      const lastSeq = Math.max(0, ...actions.map((a) => a.seq));
      if (fromSeq > 1 && fromSeq > lastSeq) {
        throw new SynartesisError("usage", `--to ${fromSeq} is past the last call of run ${shortId(run.id)} (#${lastSeq})`);
      }
      if (!hasWork(actions, fromSeq)) {
        // A client that reconnected after the damage leaves an empty newest run: point at the one that matters.
        const older =
          args.run || args.to ? undefined : journal.listRuns().find((r) => r.id !== run.id && hasWork(journal.actionsOfRun(r.id)));
        if (older) {
          throw new SynartesisError("refused", `the most recent run ${shortId(run.id)} (${run.label}, ${run.status}) has nothing to undo`, {
            hint: `The most recent run with something to undo is ${shortId(older.id)} (${older.label}, started ${formatTime(older.startedAt)}): synartesis undo ${shortId(older.id)}`,
          });
        }
        writeLines([runHeader(run, actions.length, style), "", `Nothing to undo: no call in this run${fromSeq > 1 ? ` from #${fromSeq} on` : ""} changed anything.`]);
        return 0;
      }
      writeLines([`${dryRun ? "Dry run — nothing will be changed. " : ""}${runHeader(run, actions.length, style)}`, ""]);
      const report = await undoRun(journal, manifest, run, {
        fromSeq,
        dryRun,
        replan: Boolean(args.replan),
        now: () => new Date(),
        owner: `${hostname()}:${process.pid}:${crypto.randomUUID()}`,
        log: cliLogger(),
        onStep: (step) => writeLines(renderStep(step, style, { dryRun, width })),
        onReplan: (action) =>
          writeLines([
            `  replanned #${action.seq} ${callName(action)}: ${action.inverse ? `undo with ${callText(action.inverse)}` : "no usable inverse"}`,
          ]),
      });
      const reverted = report.steps.filter((s) => s.outcome === "revert").length;
      const left = report.steps.filter((s) => s.outcome === "left").length;
      const summary: string[] = [""];
      const runRef = shortId(run.id);
      if (report.halted) {
        const where = `#${report.halted.action.seq}`;
        summary.push(
          dryRun
            ? style.red(`A real undo would stop at ${where}. ${reverted} step${reverted === 1 ? "" : "s"} before it would be reverted.`)
            : report.halted.outcome === "unrestored"
              ? style.red(`Stopped after ${where}: its inverse ran but did not give back the state from before. ${reverted} reverted before it. Run ${runRef} is marked partial.`)
              : style.red(`Stopped at ${where}; nothing older than it was touched. ${reverted} reverted before stopping. Run ${runRef} is marked partial.`),
        );
        // Keep --to: continuing without it would widen the undo to calls the person left out.
        if (!dryRun) {
          const again = ["synartesis", "undo", runRef, ...(fromSeq > 1 ? ["--to", String(fromSeq)] : [])];
          if (args.manifest) again.push("--manifest", shellQuote(resolve(cwd, args.manifest)));
          if (args.journal) again.push("--journal", shellQuote(journal.path));
          summary.push(`When the cause is dealt with, continue with: ${again.join(" ")}`);
        }
        writeLines(summary);
        return 1;
      }
      if (dryRun) {
        summary.push(`${reverted} call${reverted === 1 ? "" : "s"} would be reverted${left ? `, ${left} left in place` : ""}. Run without --dry-run to do it.`);
      } else if (report.runStatus === "rolled_back") {
        summary.push(style.green(`Run ${runRef} is rolled back: ${reverted} call${reverted === 1 ? "" : "s"} reverted.`));
      } else {
        summary.push(
          style.yellow(
            `Run ${runRef} is partially rolled back: ${reverted} reverted${left ? `, ${left} left in place (they cannot be undone)` : ""}${fromSeq > 1 ? `; calls before #${fromSeq} were not in scope` : ""}.`,
          ),
        );
      }
      writeLines(summary);
      return 0;
    } finally {
      journal.close();
    }
  },
});
