// Approve and Deny, wherever a held call is shown (the approvals page, the
// call on its run's page): a decision made as the page's account, a reason
// for a denial, and for an irreversible call one more step that says what
// cannot be taken back (R-UI-6).
import { announce, h } from "./dom.ts";
import { ApiError, post } from "./fetch.ts";

export interface HeldCall {
  id: string;
  name: string;
  class: string;
}

/** The controls for one held call; `decided` hears each decision's message once it is recorded. */
export function decisionControls(call: HeldCall, decided: (message: string, verb: "approve" | "deny") => void): HTMLElement {
  const reasonId = `reason-${call.id}`;
  const reason = h("input", { type: "text", id: reasonId, maxlength: "2000" });
  const status = h("p", { class: "gate-status", role: "status" });
  let confirming = false;
  const approve = h("button", { type: "button", class: "approve" }, "Approve");
  async function decide(verb: "approve" | "deny"): Promise<void> {
    if (verb === "approve" && call.class === "irreversible" && !confirming) {
      confirming = true;
      approve.textContent = "Confirm approval";
      status.textContent = `${call.name} is irreversible: once it runs it cannot be taken back, and an undo leaves it in place. Press "Confirm approval" to let it run once.`;
      announce(status.textContent);
      return;
    }
    try {
      const answer = await post<{ message: string }>(`/api/actions/${encodeURIComponent(call.id)}/${verb}`, verb === "deny" ? { reason: reason.value } : {});
      announce(answer.message);
      decided(answer.message, verb);
    } catch (error) {
      status.textContent = (error as Error).message + (error instanceof ApiError && error.hint ? ` ${error.hint}` : "");
    }
  }
  approve.addEventListener("click", () => void decide("approve"));
  return h(
    "div",
    { class: "decide" },
    approve,
    h(
      "span",
      { class: "deny-group" },
      h("label", { for: reasonId }, "Reason (told to the agent)"),
      reason,
      h("button", { type: "button", class: "deny", onclick: () => void decide("deny") }, "Deny"),
    ),
    status,
  );
}
