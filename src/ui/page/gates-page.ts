// Calls waiting for a person (R-UI-2): each with its arguments and why it is
// held, Approve, and Deny with a reason. A decision is recorded under the
// account that runs the page (R-PEOPLE-2), which the page says: no name is typed.
import type { GatesView, GateView } from "../views.ts";
import { decisionControls } from "./decide.ts";
import { h, reconcile } from "./dom.ts";
import { getView } from "./fetch.ts";
import { jsonBlock, timeText } from "./parts.ts";
import type { Page } from "./types.ts";

/** One held call: what it is, why it is held, its arguments, Approve and Deny with a reason, and the shell commands. */
function gateCard(gate: GateView, decided: (message: string, verb: "approve" | "deny") => void): HTMLElement {
  const title = `gate-${gate.id}`;
  return h(
    "li",
    {},
    h(
      "article",
      { class: "gate", "aria-labelledby": title, tabindex: "-1" },
      h("h2", { id: title }, h("code", {}, gate.name), " ", h("span", { class: "class" }, gate.classLabel)),
      h("p", { class: "reason" }, h("b", {}, "Held: "), gate.reason),
      h(
        "p",
        { class: "facts" },
        "Action ",
        h("code", {}, gate.ref),
        " · since ",
        timeText(gate.since),
        " · run ",
        h("a", { href: `/runs/${encodeURIComponent(gate.run.id)}#call-${gate.ref}` }, h("code", {}, gate.run.ref), ` (${gate.run.label})`),
      ),
      h("h3", {}, "Arguments"),
      jsonBlock(gate.args),
      decisionControls(gate, decided),
      h("details", {}, h("summary", {}, "From a shell instead"), h("pre", {}, h("code", {}, `${gate.approveCommand}\n${gate.denyCommand}`))),
    ),
  );
}

export function gatesPage(main: HTMLElement): Page {
  const decider = h("p", { id: "decider", class: "decider help", tabindex: "-1" });
  const outcomes = h("ul", { class: "outcomes", "aria-label": "Decisions made on this page" });
  const empty = h("p", { class: "empty" }, "Nothing is waiting for approval.");
  const list = h("ul", { class: "gates" });
  main.replaceChildren(h("h1", {}, "Waiting for approval"), decider, outcomes, empty, list);
  document.title = "Waiting for approval — Synartesis";

  async function decided(message: string, verb: "approve" | "deny"): Promise<void> {
    outcomes.append(h("li", { class: verb === "approve" ? "approved" : "denied" }, message));
    // The list updates from the journal; keep focus on the page, not on a card that is about to go.
    decider.focus();
    await refresh();
  }

  async function refresh(): Promise<number> {
    const answer = await getView<GatesView>("/api/gates");
    const view = answer.view ?? { gates: [], decider: "" };
    decider.textContent = view.decider
      ? `You decide as ${view.decider}: the account running this page, recorded with each decision and told to the agent.`
      : "";
    empty.hidden = view.gates.length > 0;
    reconcile(
      list,
      view.gates,
      (gate) => gate.id,
      (gate) => gateCard(gate, (message, verb) => void decided(message, verb)),
    );
    return answer.waiting;
  }

  return { refresh };
}
