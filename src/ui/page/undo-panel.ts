// Undo from the page (R-UI-3): the dry-run plan first (the CLI's steps and
// stops, word for word), an explicit confirm, then the real undo step by step,
// and where it stopped and why — with the two states side by side on drift.
import type { RunView, StepJson, UndoEvent } from "../views.ts";
import { announce, h } from "./dom.ts";
import { ApiError, stream } from "./fetch.ts";
import { problem, sideBySide } from "./parts.ts";

function stepItem(step: StepJson): HTMLElement {
  return h(
    "li",
    { class: `step tone-${step.tone}` },
    h(
      "p",
      { class: "step-line" },
      h("span", { class: "seq" }, `#${step.seq}`),
      " ",
      h("strong", { class: "label" }, step.label),
      " ",
      h("code", {}, step.name),
      " ",
      h("code", { class: "args" }, step.args),
    ),
    step.call ? h("p", {}, h("code", {}, step.call)) : null,
    step.why ? h("p", { class: "why" }, step.why) : null,
    step.caution ? h("p", { class: "warn" }, step.caution) : null,
    step.read ? h("p", {}, h("code", {}, step.read)) : null,
    step.labels && step.diff ? sideBySide(`#${step.seq}: ${step.labels[0]} and ${step.labels[1]}`, step.labels, step.diff) : null,
    step.hint ? h("p", { class: "hint" }, step.hint) : null,
  );
}

/** The choices a plan was made with; the undo that runs after it uses the same. */
type UndoOptions = { fromSeq: number; replan: boolean };

/** The panel: what undo does, its options (from which call, --replan), the plan button and where the steps go. */
function panelSection(from: HTMLElement, replan: HTMLElement, planButton: HTMLElement, output: HTMLElement): HTMLElement {
  return h(
    "section",
    { class: "undo", "aria-labelledby": "undo-title" },
    h("h2", { id: "undo-title" }, "Undo"),
    h(
      "p",
      {},
      "Undo puts back the state this run replaced, newest call first, and stops rather than overwrite a change made since. You see the plan first; nothing changes until you confirm.",
    ),
    h(
      "div",
      { class: "undo-options" },
      h("label", { for: "undo-from" }, "Undo the calls from "),
      from,
      h("span", { class: "option" }, replan, h("label", { for: "undo-replan" }, " rebuild the inverses from the current manifest (--replan)")),
    ),
    planButton,
    output,
  );
}

/** Run the dry run or the real undo, showing each event; resolves with the last one. */
async function walk(runId: string, dryRun: boolean, into: HTMLElement, chosen: UndoOptions): Promise<UndoEvent | undefined> {
  const steps = h("ol", { class: "steps", "aria-label": dryRun ? "Planned steps" : "Steps done" });
  const progress = h("p", { class: "busy" }, dryRun ? "Starting the servers and reading the current state…" : "Undoing…");
  into.append(progress);
  let last: UndoEvent | undefined;
  try {
    await stream(`/api/runs/${encodeURIComponent(runId)}/undo`, { dryRun, ...(dryRun ? {} : { confirm: true }), ...chosen }, (event) => {
      last = event;
      if (event.kind === "start") into.insertBefore(h("p", { class: "undo-heading" }, event.heading), progress);
      if (event.kind === "start" && event.note) into.insertBefore(h("p", { class: "warn" }, `note: ${event.note}`), progress);
      if (event.kind === "start") into.insertBefore(steps, progress);
      if (event.kind === "nothing")
        into.insertBefore(h("div", {}, h("p", { class: "undo-heading" }, event.heading), h("p", { class: "summary lines" }, event.text)), progress);
      if (event.kind === "replan" || event.kind === "log") steps.before(h("p", { class: "log" }, event.text));
      if (event.kind === "step") steps.append(stepItem(event.step));
      if (event.kind === "end") {
        into.insertBefore(h("p", { class: `summary tone-${event.tone}`, tabindex: "-1" }, event.summary), progress);
        if (event.settle?.length) into.insertBefore(h("pre", { class: "hint" }, event.settle.join("\n")), progress);
        if (event.continueWith) into.insertBefore(h("p", { class: "hint" }, h("code", {}, event.continueWith)), progress);
      }
      if (event.kind === "error") into.insertBefore(problem(event.error, event.hint), progress);
    });
  } catch (error) {
    into.insertBefore(problem((error as Error).message, error instanceof ApiError ? error.hint : undefined), progress);
    last = { kind: "error", error: (error as Error).message };
  }
  progress.remove();
  return last;
}

/** After a plan: nothing changed yet; confirm (undo exactly as planned) or cancel. */
function confirmation(halted: boolean, onConfirm: () => void, onCancel: () => void): HTMLElement[] {
  const confirm = h("button", { type: "button", class: "danger", onclick: onConfirm }, halted ? "Undo up to the stop" : "Confirm: undo this run");
  const cancel = h("button", { type: "button", onclick: onCancel }, "Cancel");
  return [
    h("p", { class: "confirm" }, "Nothing has been changed yet. Undo for real, exactly as planned above? Each step is checked again before it runs."),
    h("div", { class: "buttons" }, confirm, cancel),
  ];
}

export function undoPanel(runId: string): { element: HTMLElement; update(view: RunView): void } {
  const from = h("select", { id: "undo-from" });
  const replan = h("input", { type: "checkbox", id: "undo-replan" });
  const planButton = h("button", { type: "button", class: "primary" }, "Show the undo plan");
  const output = h("div", { class: "undo-output" });
  const element = panelSection(from, replan, planButton, output);
  let busy = false;

  const options = (): UndoOptions => ({ fromSeq: Number(from.value) || 1, replan: replan.checked });
  /** While a plan waits for its confirm, its options are locked: the undo that runs is the one planned. */
  const lock = (locked: boolean) => {
    planButton.disabled = locked;
    from.disabled = locked;
    replan.disabled = locked;
  };
  const setBusy = (value: boolean) => {
    busy = value;
    lock(value);
    output.setAttribute("aria-busy", String(value));
  };

  async function plan(): Promise<void> {
    const planned = options();
    setBusy(true);
    const title = h("h3", { tabindex: "-1" }, "Plan");
    output.replaceChildren(title);
    const last = await walk(runId, true, output, planned);
    if (last?.kind === "end") {
      output.append(
        ...confirmation(
          last.halted,
          () => void run(planned),
          () => {
            output.replaceChildren();
            setBusy(false);
            planButton.focus();
          },
        ),
      );
      announce(`Undo plan ready: ${last.summary}`);
      setBusy(false);
      lock(true);
      title.focus();
      return;
    }
    setBusy(false);
    title.focus();
  }

  async function run(planned: UndoOptions): Promise<void> {
    setBusy(true);
    const title = h("h3", { tabindex: "-1" }, "Undo");
    output.replaceChildren(title);
    title.focus();
    const last = await walk(runId, false, output, planned);
    announce(last?.kind === "end" ? last.summary : "The undo did not finish.");
    output.append(h("div", { class: "buttons" }, h("button", { type: "button", onclick: () => void plan() }, "Plan again")));
    setBusy(false);
    (output.querySelector(".summary") as HTMLElement | null)?.focus();
  }

  planButton.addEventListener("click", () => void plan());

  return {
    element,
    update(view: RunView) {
      if (busy) return;
      const last = view.calls.reduce((top, call) => Math.max(top, call.seq), 0);
      const chosen = from.value;
      if (from.options.length !== Math.max(1, last)) {
        from.replaceChildren(h("option", { value: "1" }, "#1 (the whole run)"));
        for (let seq = 2; seq <= last; seq++) from.append(h("option", { value: String(seq) }, `#${seq} on`));
        from.value = chosen && Number(chosen) <= last ? chosen : "1";
      }
    },
  };
}
