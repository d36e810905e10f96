// Colours and small text helpers for the CLI. Colour only on a terminal, never
// with NO_COLOR (R-CLI-7) and never on TERM=dumb: colourEnabled() is the one
// place that decides, for every command and for help. Pure apart from it.
import type { ActionStatus } from "../journal/types.ts";
import type { ToolClass } from "../manifest/types.ts";
import { formatTime, printable } from "../text.ts";

export { formatTime, printable } from "../text.ts";

export interface Style {
  bold(text: string): string;
  dim(text: string): string;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  cyan(text: string): string;
}

const wrap = (open: number, close: number) => (text: string) => `\x1b[${open}m${text}\x1b[${close}m`;

export const colours: Style = {
  bold: wrap(1, 22),
  dim: wrap(2, 22),
  red: wrap(31, 39),
  green: wrap(32, 39),
  yellow: wrap(33, 39),
  cyan: wrap(36, 39),
};

const identity = (text: string) => text;
export const plain: Style = { bold: identity, dim: identity, red: identity, green: identity, yellow: identity, cyan: identity };

export function colourEnabled(stream: { isTTY?: boolean } = process.stdout, env: Record<string, string | undefined> = process.env): boolean {
  return Boolean(stream.isTTY) && !env.NO_COLOR && env.TERM !== "dumb";
}

export function styleFor(stream: { isTTY?: boolean } = process.stdout): Style {
  return colourEnabled(stream) ? colours : plain;
}

export const CLASS_MARK: Record<ToolClass, string> = {
  readonly: "○",
  reversible: "↺",
  compensable: "↩",
  irreversible: "⚠",
};

export function classLabel(toolClass: ToolClass): string {
  return `${CLASS_MARK[toolClass]} ${toolClass}`;
}

/**
 * The status a person sees: a spent approval shows as `used` (R-JOURNAL-3), a
 * request an undo withdrew as `withdrawn` (R-GATE-7).
 */
export function displayStatus(action: { status: ActionStatus; spentBy?: string; withdrawnAt?: string; keptAt?: string }): string {
  if (action.keptAt && (action.status === "applied" || action.status === "pending" || action.status === "unrecoverable")) return "kept";
  if (action.status === "approved" && action.spentBy) return "used";
  if (action.status === "denied" && action.withdrawnAt) return "withdrawn";
  return action.status;
}

export function colourStatus(style: Style, status: string): string {
  switch (status) {
    case "applied":
    case "rolled_back":
    case "complete":
      return style.green(status);
    case "gated":
    case "approved":
    case "partial":
    case "active":
    case "rolling_back":
      return style.yellow(status);
    case "pending":
    case "failed":
    case "denied":
    case "unrecoverable":
      return style.red(status);
    default:
      return status;
  }
}

/** Columns `text` takes on a terminal: colour codes take none, wide characters (CJK, most emoji) two. */
export function displayWidth(text: string): number {
  return Bun.stringWidth(text);
}

/** `text` followed by spaces up to `width` terminal columns. */
export function padVisible(text: string, width: number): string {
  return text + " ".repeat(Math.max(0, width - displayWidth(text)));
}

/** Shorten to `max` characters with an ellipsis. */
export function truncate(text: string, max: number): string {
  const chars = [...text];
  if (chars.length <= max) return text;
  return max <= 1 ? chars.slice(0, max).join("") : chars.slice(0, max - 1).join("") + "…";
}

/** A compact JSON rendering of a value, shortened for one line and safe to print. */
export function oneLine(value: unknown, max = 160): string {
  return truncate(printable(JSON.stringify(value) ?? "undefined"), max);
}

/** Lay rows out as columns (the first row is the header), measured in terminal columns. */
export function table(rows: string[][], gap = "  "): string[] {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, displayWidth(cell))));
  return rows.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : padVisible(cell, widths[i]!)))
      .join(gap)
      .trimEnd(),
  );
}

let segmenter: Intl.Segmenter | undefined;

/** The characters of `text` as a person sees them (grapheme clusters); ICU's rules for them are loaded at the first use, not by every process. */
export function* graphemes(text: string): Generator<string> {
  segmenter ??= new Intl.Segmenter();
  for (const { segment } of segmenter.segment(text)) yield segment;
}

const ESCAPE = /\x1b\[[0-9;]*m/y;

/**
 * Cut `text` to at most `max` terminal columns, ending with "…" when cut.
 * Colour codes are kept (and reset after a cut); characters are never split.
 */
export function fitWidth(text: string, max: number): string {
  if (displayWidth(text) <= max) return text;
  if (max <= 0) return "";
  let out = "";
  let used = 0;
  let coloured = false;
  let i = 0;
  while (i < text.length) {
    ESCAPE.lastIndex = i;
    const escape = ESCAPE.exec(text);
    if (escape) {
      out += escape[0];
      coloured = true;
      i += escape[0].length;
      continue;
    }
    const next = text.indexOf("\x1b", i);
    const chunk = text.slice(i, next === -1 ? text.length : next === i ? i + 1 : next);
    let stop = false;
    for (const segment of graphemes(chunk)) {
      const width = displayWidth(segment);
      if (used + width > max - 1) {
        stop = true;
        break;
      }
      out += segment;
      used += width;
    }
    if (stop) break;
    i += chunk.length;
  }
  return out + "…" + (coloured ? "\x1b[0m" : "");
}

/** `server.tool`, safe to print (the tool name is the agent's choice). */
export function callName(call: { server: string; tool: string }): string {
  return printable(`${call.server}.${call.tool}`);
}

/** Local "HH:MM:SS" for a timestamp on the same day as `now`, else "YYYY-MM-DD HH:MM". */
export function clockTime(iso: string, now: Date): string {
  const full = formatTime(iso);
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return full;
  return d.toDateString() === now.toDateString() ? full.slice(11) : full.slice(0, 16);
}

/** How long ago, in one unit: "just now", "42s ago", "5m ago", "3h ago", "2d ago". */
export function ago(iso: string, now: Date): string {
  const seconds = Math.floor((now.getTime() - new Date(iso).getTime()) / 1000);
  if (Number.isNaN(seconds)) return "at an unknown time";
  if (seconds < 1) return "just now";
  if (seconds < 60) return `${seconds}s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)}h ago`;
  return `${Math.floor(seconds / 86400)}d ago`;
}
