// Text renderings of runs, actions, gates and undo steps. Pure: data and a
// style in, lines out.
import { inverseCalls, shortId, type Action, type Inverse, type Run, type RunSummary, type Settled } from "../journal/types.ts";
import type { DecisionCommand } from "../self.ts";
import { isStop, staticVerdict, type Step } from "../undo/plan.ts";
import { sideBySide } from "./diff.ts";
import { sqlDrift, sqlNotes } from "./sql-rows.ts";
import { callName, classLabel, colourStatus, displayStatus, formatTime, oneLine, padVisible, printable, table, type Style } from "./style.ts";

export function renderRunList(runs: RunSummary[], style: Style): string[] {
  if (runs.length === 0) return ["No runs recorded yet."];
  const rows = [["RUN", "AGENT", "STARTED", "STATUS", "ACTIONS", "UNKNOWN", "WAITING"].map(style.bold)];
  for (const run of runs) {
    rows.push([
      shortId(run.id),
      printable(run.label),
      formatTime(run.startedAt),
      colourStatus(style, run.status),
      String(run.actions),
      run.unknown ? style.red(String(run.unknown)) : "0",
      run.waiting ? style.yellow(String(run.waiting)) : "0",
    ]);
  }
  return table(rows);
}

export function callText(call: { server: string; tool: string; args: unknown }, max = 400): string {
  return `${callName(call)} ${oneLine(call.args, max)}`;
}

/** An inverse as called: each of its calls, in order. */
export function inverseText(inverse: Inverse, max = 400): string {
  return inverseCalls(inverse)
    .map((call) => callText(call, max))
    .join(", then ");
}

export function runHeader(run: Run, count: number, style: Style): string {
  const ended = run.endedAt ? `, ended ${formatTime(run.endedAt)}` : "";
  return `${style.bold(`Run ${run.id}`)}  ${printable(run.label)}  started ${formatTime(run.startedAt)}${ended}  ${colourStatus(style, run.status)}  ${count} action${count === 1 ? "" : "s"}`;
}

const SETTLED_TEXT: Record<Settled, string> = {
  applied: "it ran",
  not_applied: "it did not run",
  inverse_applied: "the inverse an interrupted undo sent ran",
  inverse_not_applied: "the inverse an interrupted undo sent did not run",
};

/** Who kept a call's effect, when and why (R-PEOPLE-1). */
export function keptWhat(action: Action): string {
  return `by ${action.keptBy ?? "?"} at ${formatTime(action.keptAt)}${action.keptReason ? `: ${action.keptReason}` : ""}; undo leaves its effect in place`;
}

/** A labelled line under an action: what `show` prints and the review page lists. */
export interface Note {
  label: string;
  text: string;
  /** Something to notice (a warning, a failed undo attempt). */
  warn?: boolean;
}

/** The notes under one action: id and time, the decision, errors, warnings, and the exact call that undoes it. */
export function actionNotes(action: Action, decisionCommand: DecisionCommand): Note[] {
  const notes: Note[] = [];
  // Every note may carry text from the agent or a server: made printable here, once.
  const note = (label: string, text: string, warn?: boolean) => notes.push(warn ? { label, text: printable(text), warn } : { label, text: printable(text) });
  note("id", `${shortId(action.id)}  at ${formatTime(action.ts)}`);
  if (action.status === "gated") {
    note("held", action.heldReason ?? "awaiting approval");
    note("approve", decisionCommand("approve", shortId(action.id)));
  } else if (action.withdrawnAt) {
    if (action.heldReason) note("held", action.heldReason);
    const approved = action.approvedBy ? `approved by ${action.approvedBy} and never used, then ` : "";
    note("gate", `${approved}withdrawn by the undo of this run (${action.withdrawnBy ?? "?"} at ${formatTime(action.withdrawnAt)}); it never ran`);
  } else if (action.status === "approved" || action.status === "denied") {
    if (action.heldReason) note("held", action.heldReason);
    const verb = action.status === "denied" ? "denied" : "approved";
    note(verb, `by ${action.approvedBy ?? "?"} at ${formatTime(action.approvedAt)}${action.reason ? `: ${action.reason}` : ""}`);
    if (action.spentBy && action.status === "approved") note("used", `by action ${shortId(action.spentBy)} at ${formatTime(action.spentAt)}`);
  } else {
    if (action.approvedBy) note("approved", `by ${action.approvedBy} at ${formatTime(action.approvedAt)}`);
    if (action.error) note(action.status === "pending" ? "unknown" : "error", action.error);
  }
  if (action.task)
    note(
      "task",
      action.status === "pending"
        ? `waits for task ${action.task} on ${action.server}: its outcome is known once the task ends`
        : `ran as task ${action.task} on ${action.server}`,
    );
  // An unknown outcome only a person can settle: say how, pasteable from any folder.
  if (action.status === "pending" || (action.status === "rolling_back" && action.inverseSentAt)) {
    note("settle", `${decisionCommand("settle", shortId(action.id))} --applied | --not-applied`);
  }
  if (action.settled) {
    note(
      "settled",
      `${SETTLED_TEXT[action.settled]}: found by ${action.settledBy ?? "?"} at ${formatTime(action.settledAt)}${action.settledNote ? ` (${action.settledNote})` : ""}`,
    );
  }
  if (action.keptAt) note("kept", keptWhat(action));
  for (const warning of action.warnings) note("warning", warning, true);
  if (action.undoNote) note("undo try", action.undoNote, true);
  if (action.inverse) note("undo", inverseText(action.inverse));
  else if (action.status === "applied" && action.class !== "readonly") {
    const verdict = staticVerdict(action);
    if ("why" in verdict) note("undo", verdict.why, true);
  }
  if (action.verify) note("verify", callText(action.verify));
  for (const sql of sqlNotes(action)) notes.push(sql);
  return notes;
}

/** One action as `show` prints it. */
export function renderAction(action: Action, style: Style, decisionCommand: DecisionCommand): string[] {
  const status = displayStatus(action);
  const lines = [
    `${style.bold(`#${action.seq}`.padStart(4))}  ${classLabel(action.class).padEnd(14)}  ${padVisible(colourStatus(style, status), 12)}  ${style.cyan(callName(action))} ${oneLine(action.args, 300)}`,
  ];
  for (const note of actionNotes(action, decisionCommand)) {
    lines.push(`       ${style.dim(note.label.padEnd(9))}${note.warn ? style.yellow(note.text) : note.text}`);
  }
  return lines;
}

/** What undo will do with an action as it stands, in a sentence (printed by settle). */
export function undoOutlook(action: Action): string {
  const verdict = staticVerdict(action);
  switch (verdict.kind) {
    case "skip":
      return `Undo steps over it: ${verdict.why}.`;
    case "left":
      return `Undo leaves it in place: ${verdict.why}.`;
    case "halt":
      return `Undo stops at it: ${verdict.why}.`;
    case "check":
      return `Undo reads ${callText(verdict.verify)} to check for drift, then calls ${inverseText(verdict.call)}.`;
    case "revert":
      return `Undo calls ${inverseText(verdict.call)} (${verdict.why}).`;
    case "unknown":
      return `Undo reads ${callText(verdict.verify)} first: its outcome is unknown.`;
  }
}

export function renderShow(run: Run, actions: Action[], style: Style, decisionCommand: DecisionCommand): string[] {
  const lines = [runHeader(run, actions.length, style), ""];
  if (actions.length === 0) lines.push("  (no calls)");
  for (const action of actions) lines.push(...renderAction(action, style, decisionCommand));
  return lines;
}

/** The deny command as `gates` and the review page show it, with the reason left to fill in. */
export function denyWithReason(decisionCommand: DecisionCommand, id8: string): string {
  return `${decisionCommand("deny", id8)} --reason "…"`;
}

export function renderGates(waiting: Action[], style: Style, decisionCommand: DecisionCommand): string[] {
  if (waiting.length === 0) return ["Nothing is waiting for approval."];
  const lines: string[] = [];
  for (const action of waiting) {
    lines.push(
      `${style.bold(shortId(action.id))}  ${classLabel(action.class)}  ${style.cyan(callName(action))} ${oneLine(action.args, 300)}`,
      `          ${style.dim("why      ")}${printable(action.heldReason ?? "")}`,
      `          ${style.dim("since    ")}${formatTime(action.ts)} (run ${shortId(action.runId)})`,
      `          ${style.dim("approve  ")}${decisionCommand("approve", shortId(action.id))}`,
      `          ${style.dim("deny     ")}${denyWithReason(decisionCommand, shortId(action.id))}`,
    );
  }
  return lines;
}

/** What `approve`/`deny` and the review page say after recording a decision. */
export function decisionText(verb: "approve" | "deny", action: Action, by: string, reason?: string): string {
  const what = `${shortId(action.id)} ${callName(action)} ${oneLine(action.args, 100)}`;
  return verb === "approve"
    ? `Approved ${what} (by ${printable(by)}). It runs once when the agent makes the same call again, within the next hour.`
    : `Denied ${what} (by ${printable(by)}${reason ? `: ${printable(reason)}` : ""}). The agent is told on its next try.`;
}

/** Why a decision was not recorded: the call was settled already, or an undo withdrew it. */
export function settledText(action: Action): string {
  const why = action.withdrawnAt
    ? `: it was withdrawn by the undo of run ${shortId(action.runId)} (${printable(action.withdrawnBy ?? "?")} at ${formatTime(action.withdrawnAt)})`
    : ` (it is ${displayStatus(action)})`;
  return `${shortId(action.id)} is no longer awaiting approval${why}`;
}

const OUTCOME_LABEL: Record<Step["outcome"], string> = {
  revert: "revert",
  already: "already reverted",
  skip: "skip",
  left: "left in place",
  halt: "STOP",
  drift: "DRIFT",
  unrestored: "NOT RESTORED",
};

/** How an undo step reads at a glance: reverted, stopped, left in place, or passed over. */
export type StepTone = "good" | "stop" | "left" | "quiet";

/** An undo step in words, as the CLI prints it and the review page shows it. */
export interface StepView {
  seq: number;
  label: string;
  tone: StepTone;
  name: string;
  /** The agent's arguments on one line. */
  args: string;
  /** "would call: …" / "called: …", with literal values. */
  call?: string;
  why?: string;
  /** "note: …" — something a person should know before a revert runs. */
  caution?: string;
  /** For a drift or a state not restored: the read that saw it, and the two sides' titles. */
  read?: string;
  labels?: [string, string];
  hint?: string;
}

/** One undo step in words. `dryRun` words reverts as what would happen. */
export function stepView(step: Step, options: { dryRun: boolean }): StepView {
  const action = step.action;
  let label = OUTCOME_LABEL[step.outcome];
  if (step.outcome === "revert") label = options.dryRun ? "would revert" : "reverted";
  if (step.unverified) label += " [unverified]";
  const tone: StepTone = step.outcome === "revert" || step.outcome === "already" ? "good" : isStop(step) ? "stop" : step.outcome === "left" ? "left" : "quiet";
  const view: StepView = { seq: action.seq, label, tone, name: callName(action), args: oneLine(action.args, 200) };
  if (step.call && (step.outcome === "revert" || step.outcome === "halt" || step.outcome === "unrestored")) {
    view.call = `${options.dryRun ? "would call" : "called"}: ${inverseText(step.call, 2000)}`;
  }
  if (step.outcome !== "revert" || step.unverified || step.resent) view.why = printable(step.why);
  if (step.caution) view.caution = `note: ${printable(step.caution)}`;
  if (step.expected || step.actual) {
    view.read = `read: ${action.verify ? callText(action.verify) : ""}`;
    view.labels =
      step.outcome === "drift"
        ? ["expected (as the agent left it)", "actual (now)"]
        : step.outcome === "unrestored"
          ? ["before the agent's call", "now, after the inverse"]
          : ["before the agent's call", "now"];
  }
  if (step.hint && isStop(step)) view.hint = printable(step.hint);
  return view;
}

/** One undo step as the CLI prints it. */
export function renderStep(step: Step, style: Style, options: { dryRun: boolean; width: number }): string[] {
  const view = stepView(step, options);
  const paint = { good: style.green, stop: style.red, left: style.yellow, quiet: style.dim }[view.tone];
  const lines = [`${style.bold(`#${view.seq}`.padStart(4))}  ${paint(view.label.padEnd(16))}  ${style.cyan(view.name)} ${view.args}`];
  const indent = "        ";
  if (view.call) lines.push(`${indent}${view.call}`);
  if (view.why) lines.push(`${indent}${view.why}`);
  if (view.caution) lines.push(`${indent}${style.yellow(view.caution)}`);
  if (view.labels) {
    lines.push(`${indent}${view.read}`);
    const rows = step.outcome === "drift" ? sqlDrift(step.action, step.expected, step.actual) : undefined;
    if (rows) lines.push(...rows.map((line) => `${indent}${style.yellow(line)}`));
    else lines.push(...sideBySide(step.expected, step.actual, style, options.width, view.labels));
  }
  if (view.hint) lines.push(`${indent}${view.hint}`);
  return lines;
}
