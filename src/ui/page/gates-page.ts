// Calls waiting for a person (R-UI-2): each with its arguments and why it is
// held, Approve, and Deny with a reason. The decider's name is remembered in
// this browser and recorded with each decision.
import type { GatesView, GateView } from "../views.ts";
import { announce, h, reconcile } from "./dom.ts";
import { ApiError, getView, post } from "./fetch.ts";
import { jsonBlock } from "./parts.ts";
import type { Page } from "./types.ts";

const DECIDER_KEY = "synartesis.decider";

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
  const decider = h("input", { id: "decider", type: "text", autocomplete: "name", maxlength: "100", "aria-describedby": "decider-help" });
  decider.value = localStorage.getItem(DECIDER_KEY) ?? "";
  decider.addEventListener("input", () => localStorage.setItem(DECIDER_KEY, decider.value.trim()));
  const outcomes = h("ul", { class: "outcomes", "aria-label": "Decisions made on this page" });
  const empty = h("p", { class: "empty" }, "Nothing is waiting for approval.");
  const list = h("ul", { class: "gates" });
  main.replaceChildren(
    h("h1", {}, "Waiting for approval"),
    h(
      "div",
      { class: "decider" },
      h("label", { for: "decider" }, "Your name"),
      decider,
      h("p", { id: "decider-help", class: "help" }, "Recorded with each decision and told to the agent. This browser remembers it."),
    ),
    outcomes,
    empty,
    list,
  );
  document.title = "Waiting for approval — Synartesis";

  async function decide(gate: GateView, verb: "approve" | "deny", reasonInput: HTMLInputElement, status: HTMLElement): Promise<void> {
    const by = decider.value.trim();
    if (!by) {
      status.textContent = "Enter your name above first: it is recorded with the decision.";
      decider.focus();
      return;
    }
    localStorage.setItem(DECIDER_KEY, by);
    const body = verb === "deny" ? { by, reason: reasonInput.value } : { by };
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
    if (!decider.value && view.decider && localStorage.getItem(DECIDER_KEY) === null) decider.value = view.decider;
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
