// One run: its calls as they happen — class, status, agent, time, arguments,
// the exact call that undoes each, the state before and after side by side —
// and the undo panel.
import type { CallView, RunView } from "../views.ts";
import { h, reconcile } from "./dom.ts";
import { getView } from "./fetch.ts";
import { jsonBlock, notesList, sideBySide, statusBadge } from "./parts.ts";
import type { Page } from "./types.ts";
import { undoPanel } from "./undo-panel.ts";

function callCard(call: CallView, agent: string): HTMLElement {
  const title = `call-${call.id}`;
  return h(
    "li",
    {},
    h(
      "article",
      { class: `call class-${call.class}`, "aria-labelledby": title },
      h("h3", { id: title }, h("span", { class: "seq" }, `#${call.seq}`), " ", h("code", { class: "tool" }, call.name)),
      h(
        "p",
        { class: "facts" },
        h("span", { class: "class" }, call.classLabel),
        " ",
        statusBadge(call.status),
        " ",
        h("span", { class: "agent" }, "agent ", h("b", {}, agent)),
        " ",
        h("span", { class: "time" }, call.time),
      ),
      h("h4", {}, "Arguments"),
      jsonBlock(call.args),
      notesList(call.notes),
      call.status === "gated" ? h("p", {}, h("a", { href: "/gates" }, "Approve or deny it on the approvals page")) : null,
      call.states ? sideBySide(`State before and after #${call.seq}`, call.states.labels, call.states.rows) : null,
      call.result !== undefined ? h("details", {}, h("summary", {}, "Result"), jsonBlock(call.result)) : null,
    ),
  );
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
    undo.element,
    h("section", { "aria-labelledby": "calls-title" }, h("h2", { id: "calls-title" }, "Calls"), calls),
  );
  let agent = "";
  return {
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
        ...fact("Started", run.started),
        ...(run.ended ? fact("Ended", run.ended) : []),
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
          (call) => callCard(call, agent),
        );
      return answer.waiting;
    },
  };
}
