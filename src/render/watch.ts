// Frames of `synartesis watch` (R-CLI-5), and whether the full-screen view
// should run at all. Pure: state, clock and screen size in, lines out.
import { shortId, type Action, type RunSummary } from "../journal/types.ts";
import { decisionWords, shellQuote, type DecisionVerb } from "../self.ts";
import {
  ago,
  callName,
  CLASS_MARK,
  classLabel,
  clockTime,
  colourStatus,
  displayStatus,
  displayWidth,
  fitWidth,
  formatTime,
  oneLine,
  printable,
  table,
  type Style,
} from "./style.ts";

/** An active run, and whether its proxy is known to have exited without closing it. */
export interface WatchRun extends RunSummary {
  gone?: boolean;
}

/** What the journal holds right now, as watch shows it. */
export interface JournalView {
  /** Active runs, newest first. */
  runs: WatchRun[];
  /** The most recent calls across runs, newest first. */
  recent: Action[];
  /** Calls held for a decision, oldest first. */
  waiting: Action[];
}

export interface WatchState {
  journalPath: string;
  now: Date;
  /** Redrawing in place (the title says how to quit). */
  live: boolean;
  /** How a person runs this program (`synartesis`, or a path). */
  command: string;
  /** Absent while the journal does not exist yet. */
  journal?: JournalView;
  /** Why the journal could not be read (the view keeps trying). */
  problem?: string;
}

/**
 * What watch shows of the journal: its active runs, each marked when its proxy
 * is known to be gone, the recent calls and the calls waiting for a decision.
 */
export function journalView(runs: RunSummary[], recent: Action[], waiting: Action[], gone: (run: RunSummary) => boolean): JournalView {
  return {
    runs: runs.filter((run) => run.status === "active").map((run): WatchRun => (gone(run) ? { ...run, gone: true } : run)),
    recent,
    waiting,
  };
}

/** Printed once, when stdout is not a terminal or with --once. */
export const ONCE_COLUMNS = 100;

export interface WatchMode {
  live: boolean;
  reason: string;
}

/** Should the full-screen view run, and if not, why. */
export function watchMode(isTTY: boolean, once: boolean, env: Record<string, string | undefined>): WatchMode {
  if (once) return { live: false, reason: "--once prints the state once" };
  if (!isTTY) return { live: false, reason: "stdout is not a terminal" };
  if (env.TERM === "dumb") return { live: false, reason: "TERM=dumb cannot redraw in place" };
  return { live: true, reason: "stdout is a terminal" };
}

/** Groups of lines that stay together, under a heading, clipped to `budget` lines (with a note when given). */
function section(heading: string, blocks: string[][], budget: number, clipped?: (hidden: number) => string | undefined): string[] {
  if (budget < 3) return [];
  const lines = ["", heading];
  const total = blocks.reduce((n, block) => n + block.length, 0);
  if (lines.length + total <= budget) return lines.concat(...blocks);
  const reserve = clipped ? 1 : 0;
  let shown = 0;
  for (const block of blocks) {
    if (lines.length + block.length + reserve > budget) break;
    lines.push(...block);
    shown++;
  }
  const note = clipped?.(blocks.length - shown);
  if (note !== undefined && lines.length < budget) lines.push(note);
  return lines;
}

/**
 * Words laid out on lines of at most `width` columns; a line that continues
 * ends with " \" so the whole command still pastes into a shell. A word
 * longer than a line is left for the final cut.
 */
function wrapWords(words: string[], width: number, indent: string): string[] {
  const lines: string[] = [];
  let line = "";
  words.forEach((word, i) => {
    const candidate = line === "" ? word : `${line} ${word}`;
    const continues = i < words.length - 1;
    if (line !== "" && displayWidth(indent + candidate) + (continues ? 2 : 0) > width) {
      lines.push(`${line} \\`);
      line = word;
    } else {
      line = candidate;
    }
  });
  lines.push(line);
  return lines.map((text) => indent + text);
}

function title(state: WatchState, columns: number, style: Style): string {
  const name = "synartesis watch";
  // Live, the clock only shows the view is alive; printed once, the frame is a record and carries the date.
  const right = state.live ? `${clockTime(state.now.toISOString(), state.now)}  Ctrl-C quits` : formatTime(state.now.toISOString());
  const room = columns - displayWidth(name) - displayWidth(right) - 4;
  if (room < 8) return `${style.bold(name)}  ${right}`;
  const path = printable(state.journalPath);
  const shownPath = displayWidth(path) <= room ? path : "…" + [...path].slice(-(room - 1)).join("");
  const gap = " ".repeat(Math.max(2, columns - displayWidth(name) - 2 - displayWidth(shownPath) - displayWidth(right)));
  return `${style.bold(name)}  ${style.dim(shownPath)}${gap}${right}`;
}

function styledName(action: Action, style: Style): string {
  return style.cyan(callName(action));
}

function runLines(runs: WatchRun[], state: WatchState, style: Style): string[][] {
  const rows = runs.map((run) => {
    const counts = [`${run.actions} call${run.actions === 1 ? "" : "s"}`];
    if (run.waiting) counts.push(style.yellow(`${run.waiting} waiting`));
    if (run.unknown) counts.push(style.red(`${run.unknown} unknown`));
    // Its proxy exited without ending the run (`synartesis close` marks it complete).
    if (run.gone) counts.push(style.yellow("proxy gone"));
    return [
      `  ${style.bold(shortId(run.id))}`,
      fitWidth(printable(run.label), 24),
      counts.join(", "),
      `since ${clockTime(run.startedAt, state.now)} (${ago(run.startedAt, state.now)})`,
    ];
  });
  return table(rows).map((line) => [line]);
}

function waitingBlock(action: Action, state: WatchState, columns: number, style: Style): string[] {
  const id = shortId(action.id);
  const label = (text: string) => `    ${style.dim(text.padEnd(9))}`;
  const indent = " ".repeat(13);
  const command = (verb: DecisionVerb) => {
    const words = decisionWords(verb, id, { command: state.command, journalPath: state.journalPath });
    const [first, ...rest] = wrapWords(words.map(printable), columns, indent);
    return [label(verb) + first!.slice(indent.length), ...rest];
  };
  return [
    `  ${style.bold(id)}  ${style.yellow(classLabel(action.class))}  ${styledName(action, style)} ${oneLine(action.args, 400)}`,
    label("why") + printable(action.heldReason ?? "held for approval"),
    label("since") + `${clockTime(action.ts, state.now)} (${ago(action.ts, state.now)}), run ${shortId(action.runId)}`,
    ...command("approve"),
    ...command("deny"),
  ];
}

function recentLines(recent: Action[], state: WatchState, style: Style): string[][] {
  const rows = recent.map((action) => [
    `  ${clockTime(action.ts, state.now)}`,
    CLASS_MARK[action.class] ?? "?",
    colourStatus(style, displayStatus(action)),
    `${styledName(action, style)} ${oneLine(action.args, 400)}`,
  ]);
  return table(rows).map((line) => [line]);
}

/**
 * One frame: the title, then what waits for a decision (it has priority), the
 * live runs, and as many recent calls as the remaining rows hold. No line is
 * wider than `columns`; there are at most `rows` lines (Infinity: no limit).
 */
export function renderWatch(state: WatchState, columns: number, rows: number, style: Style): string[] {
  const width = Math.max(1, Math.floor(columns));
  const height = Math.max(0, Math.floor(rows));
  const lines = [title(state, width, style)];
  const journal = state.journal;

  if (state.problem !== undefined) {
    lines.push("", style.red(`Cannot read the journal: ${printable(state.problem)}`));
    if (state.live) lines.push(style.dim("Trying again every second."));
  } else if (!journal) {
    lines.push("", `Waiting for the first run at ${printable(state.journalPath)}`);
    lines.push(style.dim(`The journal is created when an agent first connects through \`${state.command} proxy\`.`));
    if (state.live) lines.push(style.dim("This view shows it as soon as it appears."));
  } else {
    let budget = height - lines.length;
    const waiting =
      journal.waiting.length === 0
        ? section(style.bold("Waiting for a decision"), [[style.dim("  Nothing is waiting.")]], budget)
        : section(
            style.bold(style.yellow(`Waiting for a decision (${journal.waiting.length})`)),
            journal.waiting.map((action) => waitingBlock(action, state, width, style)),
            budget,
            (hidden) => style.yellow(`  … and ${hidden} more: ${state.command} gates --journal ${shellQuote(state.journalPath)}`),
          );
    budget -= waiting.length;
    const runs = section(
      style.bold(`Live runs (${journal.runs.length})`),
      journal.runs.length ? runLines(journal.runs, state, style) : [[style.dim("  No agent is connected.")]],
      budget,
      (hidden) => (hidden < journal.runs.length ? style.dim(`  … and ${hidden} more`) : undefined),
    );
    budget -= runs.length;
    const recent = section(
      style.bold("Recent calls, newest first"),
      journal.recent.length ? recentLines(journal.recent, state, style) : [[style.dim("  No calls recorded yet.")]],
      budget,
    );
    lines.push(...waiting, ...runs, ...recent);
  }
  return lines.slice(0, height).map((line) => fitWidth(line, width));
}
