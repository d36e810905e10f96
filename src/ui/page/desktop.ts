// Desktop notifications while the page is open (R-PEOPLE-3): once a person
// turns them on, each call newly held is announced by the browser — the
// tool, its arguments, why it is held — and clicking it opens the approvals
// page. The browser asks the person first; nothing is sent anywhere.
import type { GatesView } from "../views.ts";
import { getView } from "./fetch.ts";

const KEY = "synartesis.notify";

export function desktopNotices(button: HTMLButtonElement): { waiting(count: number): void } {
  const supported = typeof Notification !== "undefined";
  const on = () => supported && Notification.permission === "granted" && localStorage.getItem(KEY) === "on";
  const label = () => {
    button.textContent = on() ? "Desktop notices: on" : "Desktop notices: off";
    button.setAttribute("aria-pressed", String(on()));
  };
  button.hidden = !supported;
  label();
  button.addEventListener("click", async () => {
    if (on()) localStorage.setItem(KEY, "off");
    else if ((await Notification.requestPermission()) === "granted") localStorage.setItem(KEY, "on");
    label();
  });
  // The held calls already seen: only new ones are announced (none of those waiting when the page opened).
  let seen: Set<string> | undefined;
  let last = -1;
  return {
    waiting(count: number) {
      // Read again when the count moved, or whenever notices are on (one decided and another held leaves the count as it was).
      if (count === last && seen && !on()) return;
      last = count;
      void (async () => {
        const gates = (await getView<GatesView>("/api/gates")).view?.gates ?? [];
        const fresh = seen ? gates.filter((gate) => !seen!.has(gate.id)) : [];
        seen = new Set(gates.map((gate) => gate.id));
        if (!on()) return;
        for (const gate of fresh) {
          const args = gate.args.length > 200 ? `${gate.args.slice(0, 200)}…` : gate.args;
          const notice = new Notification(`Held for approval: ${gate.name}`, { body: `${gate.reason}\n${args}`, tag: `synartesis-${gate.id}` });
          notice.addEventListener("click", () => {
            window.focus();
            location.assign("/gates");
          });
        }
      })().catch(() => {});
    },
  };
}
