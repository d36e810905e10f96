// The runs page: every run, newest first, updated as agents work — searched
// (agent, tool, record, text in arguments), filtered (status, held calls,
// unknown outcomes) and paged by the server (run-list.ts). The search and
// filters live in the address, so a view can be linked and reloaded.
import type { RunListView } from "../views.ts";
import { h, reconcile } from "./dom.ts";
import { getView } from "./fetch.ts";
import { statusBadge, timeText } from "./parts.ts";
import type { Page } from "./types.ts";

type Row = RunListView["runs"][number];

const STATUS_CHOICES: Array<[string, string]> = [
  ["", "any status"],
  ["active", "active"],
  ["complete", "complete"],
  ["partial", "partial"],
  ["rolled_back", "rolled back"],
];

function cell(label: string, ...content: Array<Node | string | null>): HTMLElement {
  return h("td", { "data-label": label }, ...content);
}

function runRow(run: Row): HTMLElement {
  const status = h("span", {}, statusBadge(run.status), run.gone ? h("span", { class: "gone" }, " (its proxy is gone)") : null);
  const href = `/runs/${encodeURIComponent(run.id)}`;
  const found = run.match?.first
    ? h("a", { class: "found", href: `${href}#call-${run.match.first.ref}` }, `${run.match.calls} matching call${run.match.calls === 1 ? "" : "s"}`)
    : null;
  return h(
    "tr",
    {},
    h("th", { scope: "row", "data-label": "Run" }, h("a", { href }, h("code", {}, run.ref))),
    cell("Agent", run.label, found ? h("br") : null, found),
    cell("Started", timeText(run.started)),
    cell("Status", status),
    cell("Calls", String(run.actions)),
    cell("Unknown", run.unknown ? h("strong", { class: "bad" }, String(run.unknown)) : "0"),
    cell("Waiting", run.waiting ? h("a", { href: "/gates", class: "waiting" }, String(run.waiting)) : "0"),
  );
}

/** The list's part of the address: what the server is asked, and what a link keeps. */
function queryOf(form: HTMLFormElement, page: number): string {
  const data = new FormData(form);
  const params = new URLSearchParams();
  const text = String(data.get("q") ?? "").trim();
  if (text) params.set("q", text);
  if (data.get("status")) params.set("status", String(data.get("status")));
  if (data.get("held")) params.set("held", "1");
  if (data.get("unknown")) params.set("unknown", "1");
  if (page > 1) params.set("page", String(page));
  return params.toString();
}

function filterForm(initial: URLSearchParams): HTMLFormElement {
  const search = h("input", {
    type: "search",
    name: "q",
    id: "run-search",
    autocomplete: "off",
    placeholder: "agent, tool, record, text in arguments",
  });
  search.value = initial.get("q") ?? "";
  const status = h("select", { name: "status", id: "run-status" }, ...STATUS_CHOICES.map(([value, words]) => h("option", { value }, words)));
  status.value = STATUS_CHOICES.some(([value]) => value === initial.get("status")) ? (initial.get("status") ?? "") : "";
  const check = (name: string, words: string) => {
    const box = h("input", { type: "checkbox", name, value: "1" });
    box.checked = initial.get(name) === "1";
    return h("label", { class: "check" }, box, ` ${words}`);
  };
  return h(
    "form",
    { class: "run-filters", role: "search", "aria-label": "Search and filter runs" },
    h("label", { for: "run-search" }, "Search"),
    search,
    h("label", { for: "run-status" }, "Status"),
    status,
    check("held", "has held calls"),
    check("unknown", "unknown outcomes"),
  );
}

function countText(view: RunListView, filtered: boolean): string {
  if (view.total === 0) return filtered ? `No run matches (of ${view.all}).` : "";
  const from = (view.page - 1) * view.pageSize + 1;
  const to = from + view.runs.length - 1;
  return `Runs ${from}–${to} of ${view.total}${filtered ? ` matching (${view.all} in all)` : ""}`;
}

export function runsPage(main: HTMLElement, changed: () => void): Page {
  const initial = new URLSearchParams(location.search);
  let page = Math.max(1, Number(initial.get("page")) || 1);
  const where = h("p", { class: "journal" });
  const empty = h("p", { class: "empty" });
  const form = filterForm(initial);
  const count = h("p", { class: "run-count", role: "status" });
  const rows = h("tbody");
  const table = h(
    "table",
    { class: "runs" },
    h("caption", { class: "visually-hidden" }, "Runs, newest first"),
    h("thead", {}, h("tr", {}, ...["Run", "Agent", "Started", "Status", "Calls", "Unknown", "Waiting"].map((title) => h("th", { scope: "col" }, title)))),
    rows,
  );
  const previous = h("button", { type: "button", onclick: () => turn(-1) }, "← Newer");
  const next = h("button", { type: "button", onclick: () => turn(1) }, "Older →");
  const position = h("span", { class: "page-of" });
  const pager = h("nav", { class: "pager", "aria-label": "Pages of runs" }, previous, position, next);
  main.replaceChildren(h("h1", {}, "Runs"), where, form, count, empty, table, pager);
  document.title = "Runs — Synartesis";

  function turn(by: number): void {
    page = Math.max(1, page + by);
    changed();
  }
  const restart = () => {
    page = 1;
    changed();
  };
  form.addEventListener("input", restart);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    restart();
  });

  return {
    async refresh() {
      const query = queryOf(form, page);
      const answer = await getView<RunListView>(`/api/runs${query ? `?${query}` : ""}`);
      // A newer search was asked for meanwhile (and a refresh with it): its answer will show.
      if (queryOf(form, page) !== query) return answer.waiting;
      history.replaceState(history.state, "", `/${query ? `?${query}` : ""}`);
      where.replaceChildren("Journal: ", h("code", {}, answer.journal));
      const view = answer.view;
      const filtered = query.replace(/(^|&)page=\d+/, "") !== "";
      const runs = view?.runs ?? [];
      page = view?.page ?? 1;
      empty.hidden = (view?.all ?? 0) > 0;
      empty.textContent = answer.missing
        ? "No journal yet. Runs appear here as soon as an agent makes its first call through synartesis proxy."
        : "No runs recorded yet.";
      form.hidden = table.hidden = pager.hidden = count.hidden = !view || view.all === 0;
      count.textContent = view ? countText(view, filtered) : "";
      count.dataset.query = query;
      table.hidden ||= runs.length === 0;
      reconcile(rows, runs, (run) => run.id, runRow);
      pager.hidden ||= (view?.pages ?? 1) <= 1;
      previous.disabled = page <= 1;
      next.disabled = page >= (view?.pages ?? 1);
      position.textContent = `Page ${page} of ${view?.pages ?? 1}`;
      return answer.waiting;
    },
  };
}
