// Undo from the page (R-UI-3): the dry-run plan first (the CLI's steps and
// stops, word for word), an explicit confirm, then the real undo step by step,
// and where it stopped and why — with the two states side by side on drift.
import type { RunView, StepJson, UndoEvent } from "../views.ts";
import { announce, h } from "./dom.ts";
import { ApiError, post, stream } from "./fetch.ts";
import { problem, sideBySide } from "./parts.ts";

function stepItem(step: StepJson, keep?: (seq: number, reason: string) => Promise<void>): HTMLElement {
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
    step.keep && keep ? keepControls(step, keep) : null,
  );
}

/** R-PEOPLE-1 on the page: keep a drifted call's effect (why, recorded with the page's account), so the rest can be undone. */
function keepControls(step: StepJson, keep: (seq: number, reason: string) => Promise<void>): HTMLElement {
  const id = `keep-reason-${step.seq}`;
  const reason = h("input", { type: "text", id, maxlength: "2000" });
  return h(
    "div",
    { class: "keep" },
    h("label", { for: id }, `Why #${step.seq} stays as it is now`),
    reason,
    h("button", { type: "button", onclick: () => void keep(step.seq, reason.value) }, "Keep this change"),
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

/** Run the dry run or the real undo, showing each event; resolves with the last one and how many steps revert a call. */
async function walk(
  runId: string,
  dryRun: boolean,
  into: HTMLElement,
  chosen: UndoOptions & { force?: boolean },
  keep?: (seq: number, reason: string) => Promise<void>,
): Promise<{ last: UndoEvent | undefined; reverts: number }> {
  let reverts = 0;
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
      if (event.kind === "step") {
        steps.append(stepItem(event.step, keep));
        if (/revert/.test(event.step.label) && event.step.tone === "good") reverts++;
      }
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
  return { last, reverts };
}

/**
 * After a plan: nothing changed yet. Confirm (undo exactly as planned) or
 * cancel — and nothing is offered that would do nothing. A run whose agent is
 * still connected says so, and undoing it anyway is its own button.
 */
function confirmation(plan: { halted: boolean; reverts: number; active: boolean }, onConfirm: (force: boolean) => void, onCancel: () => void): HTMLElement[] {
  const cancel = h("button", { type: "button", onclick: onCancel }, plan.reverts ? "Cancel" : "Close");
  if (plan.reverts === 0) {
    return [
      h(
        "p",
        { class: "confirm" },
        plan.halted
          ? "Nothing would be undone before the stop above: deal with it first (keep the change, or put the record right), then plan again."
          : "Nothing would be undone.",
      ),
      h("div", { class: "buttons" }, cancel),
    ];
  }
  const what = plan.halted ? `Undo the ${plan.reverts} call${plan.reverts === 1 ? "" : "s"} before the stop` : "Confirm: undo this run";
  if (plan.active) {
    return [
      h(
        "p",
        { class: "confirm warn" },
        "This run's agent is still connected: its proxy is recording it now, and a call it makes while the undo runs may build on what is being put back. Nothing has been changed yet.",
      ),
      h(
        "div",
        { class: "buttons" },
        h("button", { type: "button", class: "danger", onclick: () => onConfirm(true) }, `${what}, while its agent is connected`),
        cancel,
      ),
    ];
  }
  return [
    h("p", { class: "confirm" }, "Nothing has been changed yet. Undo for real, exactly as planned above? Each step is checked again before it runs."),
    h("div", { class: "buttons" }, h("button", { type: "button", class: "danger", onclick: () => onConfirm(false) }, what), cancel),
  ];
}

export function undoPanel(runId: string): { element: HTMLElement; update(view: RunView): void } {
  const from = h("select", { id: "undo-from" });
  const replan = h("input", { type: "checkbox", id: "undo-replan" });
  const planButton = h("button", { type: "button", class: "primary" }, "Show the undo plan");
  const output = h("div", { class: "undo-output" });
  const element = panelSection(from, replan, planButton, output);
  let busy = false;
  /** The run is being recorded by a proxy that still runs (its agent is connected). */
  let active = false;
  let status = "";

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

  /** Keep a drifted call's effect from the plan, then plan again without it. */
  async function keep(seq: number, reason: string): Promise<void> {
    try {
      const answer = await post<{ message: string }>(`/api/runs/${encodeURIComponent(runId)}/keep`, { seq, ...(reason.trim() ? { reason } : {}) });
      announce(answer.message);
      await plan();
    } catch (error) {
      output.append(problem((error as Error).message, error instanceof ApiError ? error.hint : undefined));
    }
  }

  async function plan(): Promise<void> {
    const planned = options();
    setBusy(true);
    const title = h("h3", { tabindex: "-1" }, "Plan");
    output.replaceChildren(title);
    const { last, reverts } = await walk(runId, true, output, planned, keep);
    if (last?.kind === "end") {
      output.append(
        ...confirmation(
          { halted: last.halted, reverts, active },
          (force) => void run({ ...planned, force }),
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
    // Nothing left to revert after an undo that stopped (what it stopped at kept since): the run can be finished, as the CLI's undo does.
    if (last?.kind === "nothing" && status === "partial") {
      output.append(
        h(
          "div",
          { class: "buttons" },
          h("button", { type: "button", class: "primary", onclick: () => void run({ ...planned, force: false }) }, "Finish the undo"),
        ),
      );
    }
    setBusy(false);
    title.focus();
  }

  async function run(planned: UndoOptions & { force: boolean }): Promise<void> {
    setBusy(true);
    const title = h("h3", { tabindex: "-1" }, "Undo");
    output.replaceChildren(title);
    title.focus();
    const { last } = await walk(runId, false, output, planned);
    announce(last?.kind === "end" ? last.summary : "The undo did not finish.");
    output.append(h("div", { class: "buttons" }, h("button", { type: "button", onclick: () => void plan() }, "Plan again")));
    setBusy(false);
    (output.querySelector(".summary") as HTMLElement | null)?.focus();
  }

  planButton.addEventListener("click", () => void plan());

  return {
    element,
    update(view: RunView) {
      active = view.run.status === "active" && !view.run.gone;
      status = view.run.status;
      if (!busy) offerScopes(from, view);
    },
  };
}

/** The calls an undo may start from: #1 (the whole run) to the run's last; the choice kept while it still exists. */
function offerScopes(from: HTMLSelectElement, view: RunView): void {
  const last = view.calls.reduce((top, call) => Math.max(top, call.seq), 0);
  const chosen = from.value;
  if (from.options.length === Math.max(1, last)) return;
  from.replaceChildren(h("option", { value: "1" }, "#1 (the whole run)"));
  for (let seq = 2; seq <= last; seq++) from.append(h("option", { value: String(seq) }, `#${seq} on`));
  from.value = chosen && Number(chosen) <= last ? chosen : "1";
}
