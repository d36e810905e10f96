// Keyboard shortcuts (R-UI-6): `?` lists them; j and k move between the
// items of the page (a run's calls, the held calls, the runs); a and d decide
// the held call the focus is in (a approves, d goes to the denial's reason).
// Keys typed into a field are the field's.
import { h } from "./dom.ts";

const SHORTCUTS: Array<[string, string]> = [
  ["?", "show or hide this list"],
  ["j / k", "next / previous call, held call or run"],
  ["Enter", "open or close the call in focus"],
  ["a", "approve the held call in focus"],
  ["d", "deny the held call in focus (type the reason, then Deny)"],
  ["t", "switch the theme"],
];

/** The items j and k move between, in page order: what takes the focus for each. */
function items(main: HTMLElement): HTMLElement[] {
  return Array.from(main.querySelectorAll<HTMLElement>("details.call > summary, article.gate, table.runs tbody tr a"));
}

export function installShortcuts(main: HTMLElement, toggleTheme: () => void): void {
  const help = h(
    "div",
    { class: "shortcuts", role: "dialog", "aria-label": "Keyboard shortcuts", hidden: true, tabindex: "-1" },
    h("h2", {}, "Keyboard shortcuts"),
    h("dl", {}, ...SHORTCUTS.flatMap(([key, what]) => [h("dt", {}, h("kbd", {}, key)), h("dd", {}, what)])),
  );
  document.body.append(help);
  document.addEventListener("keydown", (event) => {
    const target = event.target as HTMLElement;
    if (event.ctrlKey || event.metaKey || event.altKey || target.closest("input, textarea, select, [contenteditable]")) return;
    if (event.key === "Escape" && !help.hidden) help.hidden = true;
    else if (event.key === "?") {
      help.hidden = !help.hidden;
      if (!help.hidden) help.focus();
    } else if (event.key === "j" || event.key === "k") move(main, event.key === "j" ? 1 : -1);
    else if (event.key === "a") decision(target)?.querySelector<HTMLButtonElement>("button.approve")?.click();
    else if (event.key === "d") decision(target)?.querySelector<HTMLInputElement>("input")?.focus();
    else if (event.key === "t") toggleTheme();
    else return;
    event.preventDefault();
  });
}

/** The Approve and Deny of the held call the focus is in, its call opened so they show. */
function decision(target: HTMLElement): HTMLElement | undefined {
  const item = target.closest<HTMLElement>(".call, .gate");
  const controls = item?.querySelector<HTMLElement>(".decide");
  if (!item || !controls) return undefined;
  if (item instanceof HTMLDetailsElement) item.open = true;
  return controls;
}

function move(main: HTMLElement, step: 1 | -1): void {
  const list = items(main);
  if (list.length === 0) return;
  const at = list.findIndex((item) => item === document.activeElement || item.contains(document.activeElement));
  const next = list[at < 0 ? (step === 1 ? 0 : list.length - 1) : Math.min(list.length - 1, Math.max(0, at + step))]!;
  next.focus();
  next.scrollIntoView({ block: "nearest" });
}
