// Expected vs actual, side by side, for a drift report: both values
// pretty-printed, lines aligned by a longest-common-subsequence diff. Pure.
import type { Observation } from "../journal/types.ts";
import { displayWidth, fitWidth, graphemes, padVisible, printable, type Style } from "./style.ts";

/**
 * JSON, pretty-printed, except that a string holding several lines (a file's
 * text, say) is shown as those lines under `|`, so a change in its middle is
 * visible instead of buried in one long escaped line.
 */
function pretty(value: unknown, indent: string, prefix: string, suffix: string, out: string[]): void {
  if (typeof value === "string" && value.includes("\n")) {
    out.push(`${indent}${prefix}|${suffix ? `  (${suffix.trim()})` : ""}`);
    for (const line of value.split("\n")) out.push(`${indent}  ${line}`);
    return;
  }
  if (Array.isArray(value) && value.length > 0) {
    out.push(`${indent}${prefix}[`);
    value.forEach((item, i) => pretty(item, indent + "  ", "", i < value.length - 1 ? "," : "", out));
    out.push(`${indent}]${suffix}`);
    return;
  }
  if (value !== null && typeof value === "object" && Object.keys(value).length > 0) {
    const entries = Object.entries(value);
    out.push(`${indent}${prefix}{`);
    entries.forEach(([key, item], i) => pretty(item, indent + "  ", `${JSON.stringify(key)}: `, i < entries.length - 1 ? "," : "", out));
    out.push(`${indent}}${suffix}`);
    return;
  }
  out.push(`${indent}${prefix}${JSON.stringify(value) ?? "undefined"}${suffix}`);
}

/** The lines to show, each safe to print (a record's text is the server's, or the agent's). */
function linesOf(observation: Observation | undefined): string[] {
  if (!observation) return ["(nothing recorded)"];
  if (observation.absent) return ["(does not exist)"];
  if (typeof observation.payload === "string") return observation.payload.split("\n").map(printable);
  const out: string[] = [];
  pretty(observation.payload, "", "", "", out);
  return out.map(printable);
}

/** One line of a side-by-side comparison: the two sides, and whether they are equal. */
export type DiffRow = { left?: string; right?: string; same: boolean };

function align(a: string[], b: string[]): DiffRow[] {
  // LCS over lines; inputs are small (records), but cap the table for safety.
  if (a.length * b.length > 4_000_000) {
    const rows: DiffRow[] = [];
    for (let i = 0; i < Math.max(a.length, b.length); i++) rows.push({ left: a[i], right: b[i], same: a[i] === b[i] });
    return rows;
  }
  const n = a.length;
  const m = b.length;
  const lcs: Uint32Array[] = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
    }
  }
  const rows: DiffRow[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) {
      rows.push({ left: a[i], right: b[j], same: true });
      i++;
      j++;
    } else if (j < m && (i === n || lcs[i]![j + 1]! >= lcs[i + 1]![j]!)) {
      // Pair a removed line with an added one when both are waiting.
      if (i < n && lcs[i + 1]![j]! === lcs[i]![j + 1]!) {
        rows.push({ left: a[i], right: b[j], same: false });
        i++;
      } else rows.push({ right: b[j], same: false });
      j++;
    } else {
      rows.push({ left: a[i], same: false });
      i++;
    }
  }
  return rows;
}

/** Two observations as aligned lines (what sideBySide and the review page show). */
export function diffRows(expected: Observation | undefined, actual: Observation | undefined): DiffRow[] {
  return align(linesOf(expected), linesOf(actual));
}

/** Differing lines wrap (up to this many rows each); equal lines are context and are cut. */
const MAX_WRAPPED_ROWS = 12;

/** `text` cut into rows of at most `width` terminal columns; past MAX_WRAPPED_ROWS the last row ends in "…". */
function chunks(text: string, width: number): string[] {
  const rows: string[] = [];
  let row = "";
  for (const segment of graphemes(text)) {
    if (row !== "" && displayWidth(row + segment) > width) {
      rows.push(row);
      row = "";
      if (rows.length > MAX_WRAPPED_ROWS) break;
    }
    row += segment;
  }
  if (row !== "" || rows.length === 0) rows.push(row);
  if (rows.length <= MAX_WRAPPED_ROWS) return rows;
  const shown = rows.slice(0, MAX_WRAPPED_ROWS);
  // One more row than fits: the last shown one is cut, with "…" saying so.
  shown[MAX_WRAPPED_ROWS - 1] = fitWidth(shown[MAX_WRAPPED_ROWS - 1]! + rows[MAX_WRAPPED_ROWS], width);
  return shown;
}

export function sideBySide(
  expected: Observation | undefined,
  actual: Observation | undefined,
  style: Style,
  width = 100,
  labels: [string, string] = ["expected (as the agent left it)", "actual (now)"],
): string[] {
  const column = Math.max(20, Math.floor((width - 7) / 2));
  const rows = diffRows(expected, actual);
  const out = [`    ${padVisible(style.bold(labels[0]), column)} │ ${style.bold(labels[1])}`];
  for (const row of rows) {
    if (row.same) {
      out.push(`    ${padVisible(fitWidth(row.left ?? "", column), column)} │ ${fitWidth(row.right ?? "", column)}`);
      continue;
    }
    const left = chunks(row.left ?? "", column);
    const right = chunks(row.right ?? "", column);
    for (let i = 0; i < Math.max(left.length, right.length); i++) {
      const marker = i === 0 ? "≠" : " ";
      out.push(`  ${marker} ${padVisible(style.yellow(left[i] ?? ""), column)} │ ${style.yellow(right[i] ?? "")}`);
    }
  }
  return out;
}
