// What the review page's API answers: the journal's runs, calls and gates in
// the words of the CLI's renderers (src/render), ready to show as text. Pure;
// the page imports only the types.
import { shortId, type Action, type Run, type RunSummary } from "../journal/types.ts";
import type { ToolClass } from "../manifest/types.ts";
import { diffRows, type DiffRow } from "../render/diff.ts";
import { sqlRecordOf } from "../render/sql-rows.ts";
import { actionNotes, denyWithReason, stepView, type Note, type StepView } from "../render/runs.ts";
import { callName, classLabel, displayStatus, oneLine, printable } from "../render/style.ts";
import type { DecisionCommand } from "../self.ts";
import type { RunMatch } from "./run-list.ts";
import { keepOffered } from "../undo/keep.ts";
import { isStop, type Step } from "../undo/plan.ts";

/** Longest text of one value the page gets (arguments, states, results); `synartesis show --json` has the rest. */
export const MAX_VALUE_TEXT = 200_000;

export interface RunRow {
  id: string;
  ref: string;
  label: string;
  /** ISO instants: the page shows them in the viewer's zone. */
  started: string;
  ended?: string;
  status: string;
  actions: number;
  unknown: number;
  waiting: number;
  /** An active run whose proxy is no longer running. */
  gone?: boolean;
}

/** A page of the run list: the runs a search and filters let through (with what the search found in each), and how many there are. */
export interface RunListView {
  runs: Array<RunRow & { match?: RunMatch }>;
  /** Runs that passed the search and filters; `all`: runs in the journal. */
  total: number;
  all: number;
  page: number;
  pages: number;
  pageSize: number;
}

export interface SideBySide {
  labels: [string, string];
  rows: DiffRow[];
}

export interface CallView {
  id: string;
  ref: string;
  seq: number;
  name: string;
  class: ToolClass;
  classLabel: string;
  status: string;
  time: string;
  args: string;
  /** The arguments on one line, shortened: the call's compact line. */
  line: string;
  notes: Note[];
  /** The state before the call and the state it left, when either was read. */
  states?: SideBySide;
  result?: string;
}

export interface RunView {
  run: RunRow & { manifest?: string };
  calls: CallView[];
}

export interface GateView {
  id: string;
  ref: string;
  name: string;
  class: ToolClass;
  classLabel: string;
  args: string;
  reason: string;
  since: string;
  run: { id: string; ref: string; label: string };
  approveCommand: string;
  denyCommand: string;
}

export interface GatesView {
  gates: GateView[];
  /** Who decides when the browser has not said: the user running the page, as for `approve`. */
  decider: string;
}

/** Every answer says where the journal is and how many calls wait, for the page's header. */
export interface Envelope<T> {
  journal: string;
  /** No journal file yet: nothing has been recorded. */
  missing?: true;
  waiting: number;
  view?: T;
}

/** One undo step as the page shows it: the CLI's words, and the two states as rows when it stopped on them. */
/** A step as the page shows it: with the two states side by side, and whether a person may keep its call's effect (R-PEOPLE-1). */
export type StepJson = StepView & { diff?: DiffRow[]; keep?: boolean };

/** One line of the undo stream (NDJSON). */
export type UndoEvent =
  | { kind: "start"; heading: string; note?: string }
  | { kind: "nothing"; heading: string; text: string }
  | { kind: "replan"; text: string }
  | { kind: "log"; text: string }
  | { kind: "step"; step: StepJson }
  | { kind: "end"; tone: string; summary: string; halted: boolean; continueWith?: string; settle?: string[]; runStatus?: string }
  | { kind: "error"; error: string; hint?: string };

/** A value as indented JSON (a string as itself), cut at MAX_VALUE_TEXT. */
export function valueText(value: unknown): string {
  const text = typeof value === "string" ? value : (JSON.stringify(value, null, 2) ?? "undefined");
  return text.length > MAX_VALUE_TEXT
    ? `${text.slice(0, MAX_VALUE_TEXT)}\n… (${text.length - MAX_VALUE_TEXT} more characters: synartesis show --json has all of it)`
    : text;
}

export function runRow(run: RunSummary, gone: boolean): RunRow {
  const row: RunRow = {
    id: run.id,
    ref: shortId(run.id),
    // Chosen by the client: its controls and bidi overrides shown, as everywhere on the page.
    label: printable(run.label),
    started: run.startedAt,
    status: run.status,
    actions: run.actions,
    unknown: run.unknown,
    waiting: run.waiting,
  };
  if (run.endedAt) row.ended = run.endedAt;
  if (gone) row.gone = true;
  return row;
}

export function callView(action: Action, decisionCommand: DecisionCommand): CallView {
  const view: CallView = {
    id: action.id,
    ref: shortId(action.id),
    seq: action.seq,
    name: callName(action),
    class: action.class,
    classLabel: classLabel(action.class),
    status: displayStatus(action),
    time: action.ts,
    args: valueText(action.args),
    line: oneLine(action.args, 120),
    notes: actionNotes(action, decisionCommand),
  };
  // A statement of SQL says its rows, column by column, in its notes (render/sql-rows.ts): no JSON of the reads.
  if ((action.snapshot || action.postState) && !sqlRecordOf(action)) {
    view.states = { labels: ["before the call", "after the call"], rows: diffRows(action.snapshot, action.postState) };
  }
  if (action.resultText !== undefined) view.result = valueText(JSON.parse(action.resultText));
  return view;
}

export function runView(run: Run, actions: Action[], gone: boolean, decisionCommand: DecisionCommand): RunView {
  const counts = {
    actions: actions.length,
    unknown: actions.filter((a) => a.status === "pending").length,
    waiting: actions.filter((a) => a.status === "gated").length,
  };
  return {
    run: { ...runRow({ ...run, ...counts }, gone), ...(run.manifest ? { manifest: run.manifest } : {}) },
    calls: actions.map((action) => callView(action, decisionCommand)),
  };
}

export function gateView(action: Action, run: Run | undefined, decisionCommand: DecisionCommand): GateView {
  const ref = shortId(action.id);
  return {
    id: action.id,
    ref,
    name: callName(action),
    class: action.class,
    classLabel: classLabel(action.class),
    args: valueText(action.args),
    reason: action.heldReason ?? "",
    since: action.ts,
    run: { id: action.runId, ref: shortId(action.runId), label: printable(run?.label ?? "") },
    approveCommand: decisionCommand("approve", ref),
    denyCommand: denyWithReason(decisionCommand, ref),
  };
}

export function stepJson(step: Step, dryRun: boolean): StepJson {
  const view: StepJson = stepView(step, { dryRun });
  if (view.labels) view.diff = diffRows(step.expected, step.actual);
  if (isStop(step) && keepOffered(step)) view.keep = true;
  return view;
}
