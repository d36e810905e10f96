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

export function statusBadge(status: string): HTMLElement {
  return h("span", { class: `status status-${status.replace(/[^a-z_]/g, "")}` }, status);
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
