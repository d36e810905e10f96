// Pieces several views share: a side-by-side state table, a status badge,
// an action's notes, a block of JSON.
import type { DiffRow } from "../../render/diff.ts";
import type { Note } from "../../render/runs.ts";
import { h } from "./dom.ts";

/** Two states side by side; rows that differ are marked ≠ (and said to differ, for screen readers). */
export function sideBySide(caption: string, labels: [string, string], rows: DiffRow[]): HTMLElement {
  const body = h("tbody");
  for (const row of rows) {
    body.append(
      h(
        "tr",
        { class: row.same ? "same" : "changed" },
        h("td", { class: "mark" }, row.same ? "" : h("span", { "aria-label": "differs", title: "differs" }, "≠")),
        h("td", {}, h("code", {}, row.left ?? "")),
        h("td", {}, h("code", {}, row.right ?? "")),
      ),
    );
  }
  return h(
    "div",
    { class: "diff-scroll" },
    h(
      "table",
      { class: "diff" },
      h("caption", {}, caption),
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          h("th", { scope: "col" }, h("span", { class: "visually-hidden" }, "differs")),
          h("th", { scope: "col" }, labels[0]),
          h("th", { scope: "col" }, labels[1]),
        ),
      ),
      body,
    ),
  );
}

/** Each status's mark and words: told apart by shape and word, not by colour alone. */
const STATUS_MARKS: Record<string, string> = {
  complete: "✓",
  rolled_back: "↺",
  partial: "◐",
  active: "●",
  rolling_back: "↺",
  applied: "✓",
  used: "✓",
  gated: "‖",
  approved: "✓",
  denied: "✕",
  pending: "?",
  failed: "✕",
  unrecoverable: "!",
  withdrawn: "–",
  kept: "=",
};

export function statusBadge(status: string): HTMLElement {
  const key = status.replace(/[^a-z_]/g, "");
  const mark = STATUS_MARKS[key];
  return h("span", { class: `status status-${key}` }, mark ? h("span", { "aria-hidden": "true" }, `${mark} `) : null, status.replaceAll("_", " "));
}

// Made once: a formatter is costly to make, and a page of runs shows dozens of times.
const LOCAL_TIME = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });
const RELATIVE_TIME = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });

/** A time in the viewer's zone, with how long ago; the exact instant in its title. */
export function timeText(iso: string | undefined, now = Date.now()): HTMLElement | string {
  if (!iso) return "";
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return iso;
  const local = LOCAL_TIME.format(at);
  return h("time", { datetime: iso, title: at.toISOString() }, `${local} (${ago(now - at.getTime())})`);
}

function ago(ms: number): string {
  const seconds = Math.round(ms / 1000);
  if (seconds < 45) return "just now";
  const format = RELATIVE_TIME;
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return format.format(-minutes, "minute");
  const hours = Math.round(minutes / 60);
  if (hours < 36) return format.format(-hours, "hour");
  return format.format(-Math.round(hours / 24), "day");
}

export function notesList(notes: Note[]): HTMLElement {
  const list = h("dl", { class: "notes" });
  for (const note of notes) {
    list.append(
      h("dt", {}, note.label),
      h(
        "dd",
        note.warn ? { class: "warn" } : {},
        note.label === "undo" || note.label === "verify" || note.label === "approve" ? h("code", {}, note.text) : note.text,
      ),
    );
  }
  return list;
}

export function jsonBlock(text: string): HTMLElement {
  return h("pre", { class: "json", tabindex: "0" }, h("code", {}, text));
}

/** A paragraph saying something went wrong, with the server's hint under it. */
export function problem(message: string, hint?: string): HTMLElement {
  return h("div", { class: "problem", role: "alert" }, h("p", {}, message), hint ? h("p", { class: "hint" }, hint) : null);
}
