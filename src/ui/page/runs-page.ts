// The runs page: every run, newest first, updated as agents work.
import type { RunRow } from "../views.ts";
import { h, reconcile } from "./dom.ts";
import { getView } from "./fetch.ts";
import { statusBadge, timeText } from "./parts.ts";
import type { Page } from "./types.ts";

function cell(label: string, ...content: Array<Node | string>): HTMLElement {
  return h("td", { "data-label": label }, ...content);
}

function runRow(run: RunRow): HTMLElement {
  const status = h("span", {}, statusBadge(run.status), run.gone ? h("span", { class: "gone" }, " (its proxy is gone)") : null);
  return h(
    "tr",
    {},
    h("th", { scope: "row", "data-label": "Run" }, h("a", { href: `/runs/${encodeURIComponent(run.id)}` }, h("code", {}, run.ref))),
    cell("Agent", run.label),
    cell("Started", timeText(run.started)),
    cell("Status", status),
    cell("Calls", String(run.actions)),
    cell("Unknown", run.unknown ? h("strong", { class: "bad" }, String(run.unknown)) : "0"),
    cell("Waiting", run.waiting ? h("a", { href: "/gates", class: "waiting" }, String(run.waiting)) : "0"),
  );
}

export function runsPage(main: HTMLElement): Page {
  const where = h("p", { class: "journal" });
  const empty = h("p", { class: "empty" });
  const rows = h("tbody");
  const table = h(
    "table",
    { class: "runs" },
    h("caption", { class: "visually-hidden" }, "Runs, newest first"),
    h("thead", {}, h("tr", {}, ...["Run", "Agent", "Started", "Status", "Calls", "Unknown", "Waiting"].map((title) => h("th", { scope: "col" }, title)))),
    rows,
  );
  main.replaceChildren(h("h1", {}, "Runs"), where, empty, table);
  document.title = "Runs — Synartesis";
  return {
    async refresh() {
      const answer = await getView<RunRow[]>("/api/runs");
      where.replaceChildren("Journal: ", h("code", {}, answer.journal));
      const runs = answer.view ?? [];
      empty.hidden = runs.length > 0;
      empty.textContent = answer.missing
        ? "No journal yet. Runs appear here as soon as an agent makes its first call through synartesis proxy."
        : "No runs recorded yet.";
      table.hidden = runs.length === 0;
      reconcile(rows, runs, (run) => run.id, runRow);
      return answer.waiting;
    },
  };
}
