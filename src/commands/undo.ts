// `synartesis undo [RUN]`: put back the state a run replaced, newest first,
// refusing on drift and stopping at uncertainty (R-UNDO).
import { defineCommand } from "citty";
import { hostname } from "node:os";
import { SynartesisError } from "../errors.ts";
import { loadManifest } from "../manifest/load.ts";
import { processAlive } from "../processes.ts";
import type { Logger } from "../proxy/log.ts";
import { callText, renderStep, runHeader } from "../render/runs.ts";
import { callName, formatTime, printable, styleFor } from "../render/style.ts";
import { shellQuote } from "../self.ts";
import { resolve } from "node:path";
import { shortId } from "../journal/types.ts";
import { undoRun } from "../undo/execute.ts";
import { hasWork, inScope, type Step } from "../undo/plan.ts";
import { currentUser, journalArg, manifestArg, manifestForRun, openExistingJournal, runArg, writeLines } from "./shared.ts";

function cliLogger(): Logger {
  const say = (msg: string, fields?: Record<string, unknown>) =>
    process.stderr.write(printable(`synartesis: ${fields?.server ? `server "${fields.server}": ` : ""}${msg}${fields?.reason ? ` (${fields.reason})` : ""}`) + "\n");
  const quiet = () => {};
  return { trace: quiet, debug: quiet, info: quiet, warn: say, error: say };
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
    force: { type: "boolean", description: "Undo a run even though its proxy is still recording it" },
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
      const dryRun = Boolean(args["dry-run"]);
      // Undoing a run while its proxy still records into it would race the agent (issue 13 item 11).
      if (!dryRun && run.status === "active" && processAlive(run.host, run.pid) && !args.force) {
        throw new SynartesisError("refused", `run ${shortId(run.id)} is still being recorded: its proxy (pid ${run.pid}) is running`, {
          hint: "Undo it once its client has disconnected (the run is then complete), or pass --force to undo what it has recorded so far.",
        });
      }
      const manifest = loadManifest(manifestForRun(run, args.manifest, cwd));
      const style = styleFor();
      const width = process.stdout.columns ?? 100;
      const actions = journal.actionsOfRun(run.id);
      const lastSeq = Math.max(0, ...actions.map((a) => a.seq));
      if (fromSeq > 1 && fromSeq > lastSeq) {
        throw new SynartesisError("usage", `--to ${fromSeq} is past the last call of run ${shortId(run.id)} (#${lastSeq})`);
      }
      const by = currentUser();
      const openRequests = inScope(actions, fromSeq).filter((a) => a.status === "gated");
      if (!hasWork(actions, fromSeq)) {
        if (run.status === "rolled_back") {
          const when = run.undoneAt ?? run.endedAt;
          writeLines([
            runHeader(run, actions.length, style),
            "",
            `Nothing to undo: run ${shortId(run.id)} was already rolled back${when ? ` at ${formatTime(when)}` : ""}${run.undoneBy ? ` by ${printable(run.undoneBy)}` : ""}.`,
          ]);
          return 0;
        }
        // A client that reconnected after the damage leaves an empty newest run: point at the one that matters.
        const older =
          args.run || args.to || openRequests.length
            ? undefined
            : journal.listRuns().find((r) => r.id !== run.id && hasWork(journal.actionsOfRun(r.id)));
        if (older) {
          throw new SynartesisError("refused", `the most recent run ${shortId(run.id)} (${run.label}, ${run.status}) has nothing to undo`, {
            hint: `The most recent run with something to undo is ${shortId(older.id)} (${older.label}, started ${formatTime(older.startedAt)}): synartesis undo ${shortId(older.id)}`,
          });
        }
        const lines = [runHeader(run, actions.length, style), ""];
        if (openRequests.length && !dryRun) {
          const now = new Date().toISOString();
          const withdrawn = journal.withdrawRequests(run.id, fromSeq, by, now);
          lines.push(...withdrawn.map((a) => `Withdrew the request for approval of #${a.seq} ${callText(a, 200)}: it will not run.`));
          journal.setRunStatus(run.id, "rolled_back", now, by);
        } else if (openRequests.length) {
          lines.push(...openRequests.map((a) => `Would withdraw the request for approval of #${a.seq} ${callText(a, 200)}.`));
        }
        lines.push(`Nothing${openRequests.length ? " else" : ""} to undo: no call in this run${fromSeq > 1 ? ` from #${fromSeq} on` : ""} changed anything.`);
        writeLines(lines);
        return 0;
      }
      writeLines([`${dryRun ? "Dry run — nothing will be changed. " : ""}${runHeader(run, actions.length, style)}`, ""]);
      // Its requests for approval go first, so none of them can be approved and run while the run is undone (R-GATE-7).
      if (!dryRun) journal.withdrawRequests(run.id, fromSeq, by, new Date().toISOString());
      const report = await undoRun(journal, manifest, run, {
        fromSeq,
        dryRun,
        replan: Boolean(args.replan),
        now: () => new Date(),
        owner: `${hostname()}:${process.pid}:${crypto.randomUUID()}`,
        by,
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
      const journalFlag = args.journal ? ["--journal", shellQuote(journal.path)] : [];
      if (report.halted) {
        const where = `#${report.halted.action.seq}`;
        summary.push(
          dryRun
            ? style.red(`A real undo would stop at ${where}. ${reverted} step${reverted === 1 ? "" : "s"} before it would be reverted.`)
            : report.halted.outcome === "unrestored"
              ? style.red(`Stopped after ${where}: its inverse ran but did not give back the state from before. ${reverted} reverted before it. Run ${runRef} is marked partial.`)
              : style.red(`Stopped at ${where}; nothing older than it was touched. ${reverted} reverted before stopping. Run ${runRef} is marked partial.`),
        );
        if (report.halted.settle) summary.push(...settleLines(report.halted, journalFlag));
        // Keep --to: continuing without it would widen the undo to calls the person left out.
        if (!dryRun) {
          const again = ["synartesis", "undo", runRef, ...(fromSeq > 1 ? ["--to", String(fromSeq)] : [])];
          if (args.manifest) again.push("--manifest", shellQuote(resolve(cwd, args.manifest)));
          again.push(...journalFlag);
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

/** The exact settle commands for an unknown outcome undo stopped at. */
function settleLines(step: Step, journalFlag: string[]): string[] {
  const id = shortId(step.action.id);
  const command = (flag: string) => ["synartesis", "settle", id, flag, ...journalFlag].join(" ");
  const what = step.settle === "inverse" ? `the inverse undo sent for #${step.action.seq}` : `#${step.action.seq}`;
  return [
    `Once you know whether ${what} ran, record it:`,
    `  ${command("--applied")}       (it ran)`,
    `  ${command("--not-applied")}   (it did not run)`,
  ];
}
