// The review page's entry: picks the view from the address, keeps it live
// from the server's change events, and shows the count of calls waiting.
import { followChanges, signIn, whenSignedOut } from "./fetch.ts";
import { gatesPage } from "./gates-page.ts";
import { desktopNotices } from "./desktop.ts";
import { installShortcuts } from "./keys.ts";
import { problem } from "./parts.ts";
import { runPage } from "./run-page.ts";
import { runsPage } from "./runs-page.ts";
import type { Page } from "./types.ts";

const main = document.getElementById("main")!;
const banner = document.getElementById("connection")!;
const waiting = document.getElementById("waiting")!;

function show(message: string | undefined): void {
  banner.hidden = message === undefined;
  banner.textContent = message ?? "";
}

function choosePage(path: string): { page: Page; nav: string } {
  const run = /^\/runs\/([^/]+)$/.exec(path);
  if (run) return { page: runPage(main, decodeURIComponent(run[1]!)), nav: "runs" };
  if (path === "/gates") return { page: gatesPage(main), nav: "gates" };
  return { page: runsPage(main, () => void refresh()), nav: "runs" };
}

// The theme: the browser's, or light or dark as the switch last said (this browser remembers it).
const THEME_KEY = "synartesis.theme";
const THEMES = ["auto", "light", "dark"] as const;
const THEME_WORDS = { auto: "as the browser", light: "light", dark: "dark" };
const themeSwitch = document.getElementById("theme") as HTMLButtonElement;
function applyTheme(theme: (typeof THEMES)[number]): void {
  if (theme === "auto") delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme;
  themeSwitch.textContent = `Theme: ${THEME_WORDS[theme]}`;
}
const saved = localStorage.getItem(THEME_KEY);
let theme = THEMES.find((t) => t === saved) ?? "auto";
applyTheme(theme);
function nextTheme(): void {
  theme = THEMES[(THEMES.indexOf(theme) + 1) % THEMES.length]!;
  localStorage.setItem(THEME_KEY, theme);
  applyTheme(theme);
}
themeSwitch.addEventListener("click", nextTheme);
installShortcuts(main, nextTheme);
const notices = desktopNotices(document.getElementById("notify") as HTMLButtonElement);

const { page, nav } = choosePage(location.pathname);
for (const link of Array.from(document.querySelectorAll<HTMLAnchorElement>("nav a"))) {
  if (link.dataset.page === nav) link.setAttribute("aria-current", "page");
}

let signedOut = false;
whenSignedOut((message) => {
  signedOut = true;
  show(message);
});

// One refresh at a time; a change that arrives meanwhile asks for one more.
let running: Promise<void> | undefined;
let again = false;
async function refresh(): Promise<void> {
  if (running) {
    again = true;
    return running;
  }
  running = (async () => {
    do {
      again = false;
      try {
        const count = await page.refresh();
        waiting.textContent = count ? `(${count})` : "";
        notices.waiting(count);
        main.querySelector(":scope > .problem.load")?.remove();
      } catch (error) {
        if (!signedOut && !main.querySelector(":scope > .problem.load")) {
          const shown = problem(`Could not load this page: ${(error as Error).message}`);
          shown.classList.add("load");
          main.prepend(shown);
        }
      }
    } while (again);
  })();
  await running;
  running = undefined;
}

/** How long to wait before following the change events again after the stream was lost. */
const RECONNECT_MS = 1000;

async function follow(): Promise<void> {
  while (!signedOut) {
    try {
      await followChanges(
        () => {
          if (!signedOut) show(undefined);
          void refresh();
        },
        () => void refresh(),
      );
    } catch {
      // Said below; a 401 has signed the page out.
    }
    if (signedOut) return;
    show("Lost the connection to synartesis ui; trying again… (is it still running?)");
    await new Promise((resolve) => setTimeout(resolve, RECONNECT_MS));
  }
}

const refused = await signIn();
if (refused) {
  signedOut = true;
  show(refused);
} else {
  // Drawn at once; the change stream, when it opens, asks once more (nothing between the two is missed).
  void refresh();
  void follow();
}
