// Expected vs actual, side by side, for a drift report: both JSON values
// pretty-printed, lines aligned by a longest-common-subsequence diff. Pure.
import type { Observation } from "../journal/types.ts";
import { padVisible, truncate, type Style } from "./style.ts";

function linesOf(observation: Observation | undefined): string[] {
  if (!observation) return ["(nothing recorded)"];
  if (observation.absent) return ["(does not exist)"];
  const text = typeof observation.payload === "string" ? observation.payload : JSON.stringify(observation.payload, null, 2);
  return (text ?? "undefined").split("\n");
}

type Row = { left?: string; right?: string; same: boolean };

function align(a: string[], b: string[]): Row[] {
  // LCS over lines; inputs are small (records), but cap the table for safety.
  if (a.length * b.length > 4_000_000) {
    const rows: Row[] = [];
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
  const rows: Row[] = [];
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

export function sideBySide(
  expected: Observation | undefined,
  actual: Observation | undefined,
  style: Style,
  width = 100,
  labels: [string, string] = ["expected (as the agent left it)", "actual (now)"],
): string[] {
  const column = Math.max(20, Math.floor((width - 7) / 2));
  const rows = align(linesOf(expected), linesOf(actual));
  const out = [`    ${padVisible(style.bold(labels[0]), column)} │ ${style.bold(labels[1])}`];
  for (const row of rows) {
    const marker = row.same ? " " : "≠";
    const left = truncate(row.left ?? "", column);
    const right = truncate(row.right ?? "", column);
    const paint = row.same ? (t: string) => t : style.yellow;
    out.push(`  ${marker} ${padVisible(paint(left), column)} │ ${paint(right)}`);
  }
  return out;
}
