// Calls waiting for a person (R-UI-2): each with its arguments and why it is
// held, Approve, and Deny with a reason. A decision is recorded under the
// account that runs the page (R-PEOPLE-2), which the page says: no name is typed.
import type { GatesView, GateView } from "../views.ts";
import { announce, h, reconcile } from "./dom.ts";
import { ApiError, getView, post } from "./fetch.ts";
import { jsonBlock } from "./parts.ts";
import type { Page } from "./types.ts";

/** A person's decision on a held call, made from its card: the reason field and the card's status line go with it. */
type Decide = (gate: GateView, verb: "approve" | "deny", reasonInput: HTMLInputElement, status: HTMLElement) => Promise<void>;

/** One held call: what it is, why it is held, its arguments, Approve and Deny with a reason, and the shell commands. */
function gateCard(gate: GateView, decide: Decide): HTMLElement {
  const title = `gate-${gate.id}`;
  const reason = h("input", { type: "text", id: `reason-${gate.id}`, maxlength: "2000" });
  const status = h("p", { class: "gate-status", role: "status" });
  return h(
    "li",
    {},
    h(
      "article",
      { class: "gate", "aria-labelledby": title },
      h("h2", { id: title }, h("code", {}, gate.name), " ", h("span", { class: "class" }, gate.classLabel)),
      h("p", { class: "reason" }, h("b", {}, "Held: "), gate.reason),
      h(
        "p",
        { class: "facts" },
        "Action ",
        h("code", {}, gate.ref),
        ` · since ${gate.since} · run `,
        h("a", { href: `/runs/${encodeURIComponent(gate.run.id)}` }, h("code", {}, gate.run.ref), ` (${gate.run.label})`),
      ),
      h("h3", {}, "Arguments"),
      jsonBlock(gate.args),
      h(
        "div",
        { class: "decide" },
        h("button", { type: "button", class: "approve", onclick: () => void decide(gate, "approve", reason, status) }, "Approve"),
        h(
          "span",
          { class: "deny-group" },
          h("label", { for: `reason-${gate.id}` }, "Reason (told to the agent)"),
          reason,
          h("button", { type: "button", class: "deny", onclick: () => void decide(gate, "deny", reason, status) }, "Deny"),
        ),
      ),
      status,
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

  async function decide(gate: GateView, verb: "approve" | "deny", reasonInput: HTMLInputElement, status: HTMLElement): Promise<void> {
    const body = verb === "deny" ? { reason: reasonInput.value } : {};
    try {
      const answer = await post<{ message: string }>(`/api/actions/${encodeURIComponent(gate.id)}/${verb}`, body);
      outcomes.append(h("li", { class: verb === "approve" ? "approved" : "denied" }, answer.message));
      announce(answer.message);
      // The list updates from the journal; keep focus on the page, not on a card that is about to go.
      decider.focus();
      await refresh();
    } catch (error) {
      status.textContent = (error as Error).message + (error instanceof ApiError && error.hint ? ` ${error.hint}` : "");
    }
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
      (gate) => gateCard(gate, decide),
    );
    return answer.waiting;
  }

  return { refresh };
}
