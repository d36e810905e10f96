// One run: its calls as they happen, one compact line each that opens to its
// detail — class, status, agent, time, arguments, the exact call that undoes
// it, the state before and after side by side; a held call decided in place —
// and the undo panel.
import type { CallView, RunView } from "../views.ts";
import { decisionControls } from "./decide.ts";
import { h, reconcile } from "./dom.ts";
import { getView } from "./fetch.ts";
import { jsonBlock, notesList, sideBySide, statusBadge, timeText } from "./parts.ts";
import type { Page } from "./types.ts";
import { undoPanel } from "./undo-panel.ts";

/**
 * One call as one compact line — number, class, status, tool, its arguments
 * on one line — that opens to its whole detail; linkable as #call-REF. A held
 * call is decided where it is (opened, or with a and d), the run's other calls in view.
 */
function callCard(call: CallView, agent: string, opened: Set<string>, decided: () => void): HTMLElement {
  const anchor = `call-${call.ref}`;
  const details = h(
    "details",
    { class: `call class-${call.class}`, ...((opened.has(call.id) || location.hash === `#${anchor}`) && { open: true }) },
    h(
      "summary",
      {},
      h("span", { class: "seq" }, `#${call.seq}`),
      " ",
      h("span", { class: "class" }, call.classLabel),
      " ",
      statusBadge(call.status),
      " ",
      h("code", { class: "tool" }, call.name),
      " ",
      h("span", { class: "line" }, call.line),
    ),
    h(
      "p",
      { class: "facts" },
      h("span", { class: "agent" }, "agent ", h("b", {}, agent)),
      " · ",
      h("span", { class: "time" }, timeText(call.time)),
      " · ",
      h("a", { href: `#${anchor}` }, "link to this call"),
    ),
    call.status === "gated" ? decisionControls(call, decided) : null,
    h("h3", { class: "part" }, "Arguments"),
    jsonBlock(call.args),
    notesList(call.notes),
    call.states ? sideBySide(`State before and after #${call.seq}`, call.states.labels, call.states.rows) : null,
    call.result !== undefined ? h("details", {}, h("summary", {}, "Result"), jsonBlock(call.result)) : null,
  );
  details.addEventListener("toggle", () => (details.open ? opened.add(call.id) : opened.delete(call.id)));
  return h("li", { id: anchor }, details);
}

export function runPage(main: HTMLElement, runId: string): Page {
  const heading = h("h1", {}, "Run");
  const facts = h("dl", { class: "run-facts" });
  const problem = h("p", { class: "empty" });
  const calls = h("ol", { class: "calls", "aria-label": "Calls, in the order they were made" });
  const undo = undoPanel(runId);
  main.replaceChildren(
    h("p", {}, h("a", { href: "/" }, "← All runs")),
    heading,
    problem,
    facts,
    h("section", { "aria-labelledby": "calls-title" }, h("h2", { id: "calls-title" }, "Calls"), calls),
    undo.element,
  );
  let agent = "";
  // Which calls the person opened: kept when a live update redraws them.
  const opened = new Set<string>();
  // A link to one call (#call-REF) opens it, on arrival and when the address changes.
  window.addEventListener("hashchange", () => {
    const target = document.getElementById(decodeURIComponent(location.hash.slice(1)))?.querySelector("details");
    if (target) {
      target.open = true;
      target.scrollIntoView({ block: "nearest" });
    }
  });
  const page: Page = {
    async refresh() {
      const answer = await getView<RunView>(`/api/runs/${encodeURIComponent(runId)}`);
      problem.hidden = Boolean(answer.view);
      problem.textContent = answer.missing ? "No journal yet." : "";
      const view = answer.view;
      if (!view) return answer.waiting;
      const run = view.run;
      agent = run.label;
      heading.replaceChildren("Run ", h("code", {}, run.ref), " · ", run.label);
      document.title = `Run ${run.ref} — Synartesis`;
      const fact = (term: string, value: Node | string) => [h("dt", {}, term), h("dd", {}, value)];
      facts.replaceChildren(
        ...fact("Run id", h("code", {}, run.id)),
        ...fact("Agent", run.label),
        ...fact("Started", timeText(run.started)),
        ...(run.ended ? fact("Ended", timeText(run.ended)) : []),
        ...fact("Status", h("span", {}, statusBadge(run.status), run.gone ? " (its proxy is gone)" : "")),
        ...fact(
          "Calls",
          `${run.actions}${run.unknown ? `, ${run.unknown} of unknown outcome` : ""}${run.waiting ? `, ${run.waiting} waiting for approval` : ""}`,
        ),
      );
      undo.update(view);
      if (view.calls.length === 0) calls.replaceChildren(h("li", { class: "empty", "data-key": "none" }, "No calls yet."));
      else
        reconcile(
          calls,
          view.calls,
          (call) => call.id,
          (call) => callCard(call, agent, opened, () => void page.refresh()),
        );
      return answer.waiting;
    },
  };
  return page;
}
