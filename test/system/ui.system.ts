// The review page in a real browser (R-UI-1…4): Debian's Chromium driven by
// playwright-core against `synartesis ui` from the built binary, with real
// agents talking to the toy CRM through `synartesis proxy`. It writes the
// README's screenshots to demo/screenshots/. A whole-system check: .ci/run runs
// it (and installs Chromium first); it fails, never skips, without a browser.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { BIN, LineSession, ROOT, ACCOUNT, tempDir } from "../helpers.ts";
import { agent, cli, crmFolder, editState, journalRows, state, stateText, type Call } from "../fixtures/counting-support.ts";
import { crmStateText } from "../fixtures/proxy-kit.ts";
import { UiProcess } from "../fixtures/ui-kit.ts";
import { buildReviewJournal } from "../fixtures/review-journal.ts";

const CHROMIUM = process.env.SYNARTESIS_CHROMIUM ?? "/usr/bin/chromium";
const SCREENSHOTS = join(ROOT, "demo", "screenshots");
const WIDE = { width: 1280, height: 800 };
const NARROW = { width: 390, height: 844 };
const EMAIL = { to: "ada@example.com", subject: "Your plan changed", body: "You are now on the free plan." };
const XSS = "<img src=x onerror=alert(1)>";
/** A right-to-left override: "Invoice \u202Efdp.exe" would read as "Invoice exe.pdf". */
const BIDI = "Invoice \u202Efdp.exe";

let browser: Browser;
const cleanups: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: install Debian's chromium (apt-get install -y chromium) or set SYNARTESIS_CHROMIUM`);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  mkdirSync(SCREENSHOTS, { recursive: true });
});

afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
  await browser?.close();
});

async function startUi(dir: string): Promise<UiProcess> {
  const ui = await UiProcess.start(dir);
  cleanups.push(() => ui.stop());
  return ui;
}

/** A fresh browser (empty storage) signed in through the printed address; every dialog is recorded. */
async function signedIn(ui: UiProcess, viewport = WIDE): Promise<{ context: BrowserContext; page: Page; dialogs: string[] }> {
  const context = await browser.newContext({ viewport });
  cleanups.push(() => context.close());
  const page = await context.newPage();
  const dialogs: string[] = [];
  page.on("dialog", (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  await page.goto(ui.url);
  // The page traded the code and took it out of the address bar.
  await page.waitForFunction(() => location.hash === "" && localStorage.getItem("synartesis-ui-token") !== null);
  return { context, page, dialogs };
}

async function liveAgent(dir: string, name: string): Promise<LineSession & { call(id: number, tool: string, args: unknown): Promise<any> }> {
  const session = new LineSession([BIN, "proxy"], { cwd: dir });
  cleanups.push(() => session.close());
  await session.initialize(name);
  return Object.assign(session, {
    call: async (id: number, tool: string, args: unknown) => (await session.request(id, "tools/call", { name: tool, arguments: args })).result,
  });
}

/** What axe-core finds wrong on the page as it is (injected as the test's own script: the page's policy admits none, so its context sets that aside). */
async function axeViolations(page: Page): Promise<string[]> {
  await page.addScriptTag({ content: readFileSync(join(ROOT, "node_modules", "axe-core", "axe.min.js"), "utf8") });
  return page.evaluate(async () => {
    const result = await (window as any).axe.run(document, { resultTypes: ["violations"] });
    return result.violations.map((v: any) => `${v.id}: ${v.help} (${v.nodes.map((n: any) => n.target.join(" ")).join("; ")})`);
  });
}

const shot = (page: Page, name: string) => page.screenshot({ path: join(SCREENSHOTS, name), fullPage: true });
const collapse = (text: string) => text.replace(/\s+/g, " ").trim();

/** The text lines of each undo step on the page, as the CLI would print them (the side-by-side table left out). */
async function stepLines(page: Page): Promise<string[]> {
  return page.locator(".steps > li").evaluateAll((items) =>
    items.flatMap((item) =>
      Array.from(item.children)
        .filter((child) => child.tagName === "P")
        .map((p) => (p as HTMLElement).innerText),
    ),
  );
}

describe("the review page in Chromium", () => {
  test("an agent's run appears live, and its calls as it makes them", async () => {
    const dir = crmFolder();
    const ui = await startUi(dir);
    const { page } = await signedIn(ui);
    await expect(page.getByText("No journal yet.", { exact: false }).isVisible()).resolves.toBe(true);
    await page.evaluate(() => ((window as any).stillThisPage = true));

    const claude = await liveAgent(dir, "claude-code");
    await claude.call(1, "update_customer", { id: "c_001", plan: "free", notes: "downgraded by mistake" });
    const row = page.locator("table.runs tbody tr", { hasText: "claude-code" });
    await row.waitFor();
    await expect(row.locator("td[data-label=Status]").innerText()).resolves.toBe("● active");

    await row.getByRole("link").click();
    await page.locator(".call", { hasText: "crm.update_customer" }).waitFor();
    await page.evaluate(() => ((window as any).stillThisPage = true));
    await claude.call(2, "delete_customer", { id: "c_002" });
    await claude.call(3, "create_customer", { name: "Bogus Person", email: "bogus@example.com" });
    // The call appears while it runs, then shows the inverse resolved from its result.
    await page.locator(".call", { hasText: 'crm.delete_customer {"id":"c_004"}' }).waitFor();
    expect(await page.evaluate(() => (window as any).stillThisPage)).toBe(true); // no reload: it came over the event stream
    const update = page.locator(".call", { hasText: "crm.update_customer" });
    await update.locator(":scope > summary").click();
    await expect(update.locator("tr.changed").count()).resolves.toBe(2); // plan and notes, marked ≠
    await expect(update.locator("tr.changed").first().innerText()).resolves.toContain('"plan": "pro"');
    await shot(page, "run.png");

    await claude.close();
    await page.goto(`${ui.base}/`);
    await page.locator("table.runs tbody tr td[data-label=Status]", { hasText: "complete" }).waitFor();
    await shot(page, "runs.png");
  });

  test("a held send_email is approved from the page with the keyboard, as the page's account; the agent's retry sends it once", async () => {
    const dir = crmFolder();
    const ui = await startUi(dir);
    const { page } = await signedIn(ui);
    await page.goto(`${ui.base}/gates`);
    const bot = await liveAgent(dir, "mail-bot");
    expect((await bot.call(1, "send_email", EMAIL)).isError).toBe(true);
    const gate = page.locator(".gate", { hasText: "ada@example.com" });
    await gate.waitFor();
    await expect(page.locator("#waiting").innerText()).resolves.toBe("(1)");
    // No name is typed: the page says whose account decides (R-PEOPLE-2).
    await expect(page.locator("#decider").innerText()).resolves.toContain(`You decide as ${ACCOUNT}`);
    await shot(page, "gates.png");

    // Keyboard only: Tab from the top of the list to Approve, whose focus is visible, then Enter.
    await page.locator("#decider").focus();
    for (let i = 0; i < 10 && !(await page.evaluate(() => document.activeElement?.textContent === "Approve")); i++) await page.keyboard.press("Tab");
    expect(await page.evaluate(() => document.activeElement?.tagName)).toBe("BUTTON");
    expect(await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle)).not.toBe("none");
    // An irreversible call asks once more, naming what cannot be taken back.
    await page.keyboard.press("Enter");
    await gate.locator(".gate-status", { hasText: "crm.send_email is irreversible: once it runs it cannot be taken back" }).waitFor();
    expect(journalRows(dir, "SELECT status FROM actions")).toEqual([{ status: "gated" }]);
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Confirm approval");
    await page.keyboard.press("Enter");
    await page.locator(".outcomes li", { hasText: `(by ${ACCOUNT}). It runs once` }).waitFor();
    await gate.waitFor({ state: "detached" });
    expect(journalRows(dir, "SELECT status, approved_by FROM actions")).toEqual([{ status: "approved", approved_by: ACCOUNT }]);

    const sent = await bot.call(2, "send_email", EMAIL);
    expect(sent.isError).toBeUndefined();
    expect(state(dir).outbox.map((m: any) => m.to)).toEqual(["ada@example.com"]);
    expect((await bot.call(3, "send_email", EMAIL)).isError).toBe(true); // once: the next try is held again
    expect(state(dir).outbox).toHaveLength(1);
  });

  test("a run of six calls fits one screen collapsed; a held call is decided on its run's page with the keyboard (j, a, confirm); each call is linkable", async () => {
    const dir = crmFolder();
    const ui = await startUi(dir);
    const bot = await liveAgent(dir, "busy-agent");
    await bot.call(1, "update_customer", { id: "c_001", plan: "free" });
    await bot.call(2, "update_customer", { id: "c_002", notes: "called twice" });
    await bot.call(3, "create_customer", { name: "New Person", email: "new@example.com" });
    await bot.call(4, "delete_customer", { id: "c_003" });
    await bot.call(5, "get_customer", { id: "c_001" });
    expect((await bot.call(6, "send_email", EMAIL)).isError).toBe(true);
    const runId = journalRows(dir, "SELECT id FROM runs")[0].id as string;
    const { page } = await signedIn(ui);
    await page.goto(`${ui.base}/runs/${runId}`);
    await page.locator("details.call").nth(5).waitFor();
    expect(await page.locator("details.call").count()).toBe(6);
    // Collapsed: the whole run fits in one 1280×800 screen.
    expect(await page.locator("details.call[open]").count()).toBe(0);
    await shot(page, "run-compact.png");
    const box = (await page.locator("ol.calls").boundingBox())!;
    expect(box.y + box.height).toBeLessThanOrEqual(WIDE.height);

    // `?` lists the shortcuts; j moves through the calls; a approves the held one, asking once more.
    await page.keyboard.press("?");
    await page.getByRole("dialog", { name: "Keyboard shortcuts" }).waitFor();
    await page.keyboard.press("Escape");
    for (let i = 0; i < 6; i++) await page.keyboard.press("j");
    expect(await page.evaluate(() => document.activeElement?.closest("details")?.textContent)).toContain("crm.send_email");
    await page.keyboard.press("a");
    await page.locator("details.call .gate-status", { hasText: "is irreversible" }).waitFor();
    await page.keyboard.press("a");
    await page.locator("details.call", { hasText: "crm.send_email" }).locator(".status", { hasText: "approved" }).waitFor();
    expect(journalRows(dir, "SELECT status, approved_by FROM actions WHERE tool = 'send_email'")).toEqual([{ status: "approved", approved_by: ACCOUNT }]);

    // A link to one call opens it.
    const ref = (journalRows(dir, "SELECT id FROM actions WHERE seq = 2")[0].id as string).slice(0, 8);
    await page.goto(`${ui.base}/runs/${runId}#call-${ref}`);
    await page.locator(`#call-${ref} details[open]`).waitFor();
  });

  test("light and dark themes follow the browser, and the switch overrides it; a favicon; times in the viewer's zone", async () => {
    const dir = crmFolder();
    await agent(dir, [["get_customer", { id: "c_001" }]]);
    const ui = await startUi(dir);
    const { context, page } = await signedIn(ui);
    const paper = () => page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
    await page.emulateMedia({ colorScheme: "dark" });
    await page.locator("table.runs tbody tr").first().waitFor();
    expect(await paper()).toBe("rgb(21, 24, 28)");
    await shot(page, "runs-dark.png");
    await page.emulateMedia({ colorScheme: "light" });
    expect(await paper()).toBe("rgb(255, 255, 255)");
    await page.getByRole("button", { name: "Theme: as the browser" }).click();
    await page.getByRole("button", { name: "Theme: light" }).click();
    expect(await paper()).toBe("rgb(21, 24, 28)");
    await page.reload();
    await page.getByRole("button", { name: "Theme: dark" }).waitFor();
    expect(await paper()).toBe("rgb(21, 24, 28)");

    const icon = await page.evaluate(() => document.querySelector<HTMLLinkElement>("link[rel=icon]")!.href);
    const fetched = await context.request.get(icon);
    expect(fetched.status()).toBe(200);
    expect(fetched.headers()["content-type"]).toContain("image/svg+xml");

    const started = page.locator("table.runs tbody tr td[data-label=Started] time");
    expect(await started.getAttribute("datetime")).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(await started.innerText()).toContain("(just now)");
  });

  test("desktop notices, once turned on, announce each call newly held: its tool, why, its arguments", async () => {
    const dir = crmFolder();
    const ui = await startUi(dir);
    const { page } = await signedIn(ui);
    // The browser's Notification, recorded (the person's "allow" is the stub's answer).
    await page.addInitScript(() => {
      const shown: Array<{ title: string; body: string }> = [];
      (window as any).shownNotices = shown;
      (window as any).Notification = class {
        static permission = "default";
        static async requestPermission() {
          (this as any).permission = "granted";
          return "granted";
        }
        constructor(title: string, options: { body: string }) {
          shown.push({ title, body: options.body });
        }
        addEventListener() {}
      };
    });
    await page.goto(`${ui.base}/gates`);
    const toggle = page.getByRole("button", { name: "Desktop notices: off" });
    await toggle.click();
    await page.getByRole("button", { name: "Desktop notices: on" }).waitFor();
    const bot = await liveAgent(dir, "mail-bot");
    expect((await bot.call(1, "send_email", EMAIL)).isError).toBe(true);
    await page.waitForFunction(() => (window as any).shownNotices.length === 1);
    const [notice] = await page.evaluate(() => (window as any).shownNotices);
    expect(notice.title).toBe("Held for approval: crm.send_email");
    expect(notice.body).toContain("crm.send_email is irreversible");
    expect(notice.body).toContain("ada@example.com");
    // The same call again is already waiting: not announced again; the next new one is.
    expect((await bot.call(2, "send_email", EMAIL)).isError).toBe(true);
    expect((await bot.call(3, "send_email", { ...EMAIL, to: "grace@example.com" })).isError).toBe(true);
    await page.waitForFunction(() => (window as any).shownNotices.length >= 2);
    const notices = await page.evaluate(() => (window as any).shownNotices);
    expect(notices).toHaveLength(2);
    expect(notices[1].body).toContain("grace@example.com");
  });

  test("axe-core finds no violation on the runs, a run (a call opened, a plan shown) and the approvals page, light and dark, wide and narrow", async () => {
    const dir = crmFolder();
    await agent(dir, [
      ["update_customer", { id: "c_001", plan: "free" }],
      ["send_email", EMAIL],
    ]);
    const runId = journalRows(dir, "SELECT id FROM runs")[0].id as string;
    const ui = await startUi(dir);
    for (const viewport of [WIDE, NARROW]) {
      for (const colorScheme of ["light", "dark"] as const) {
        // axe is injected as a script of the test's own: the page's policy admits none, so this one context sets it aside.
        const context = await browser.newContext({ viewport, colorScheme, bypassCSP: true });
        cleanups.push(() => context.close());
        const page = await context.newPage();
        await page.goto(ui.url);
        await page.waitForFunction(() => location.hash === "" && localStorage.getItem("synartesis-ui-token") !== null);
        const pages: Array<[string, () => Promise<void>]> = [
          ["/", () => page.locator("table.runs tbody tr").first().waitFor()],
          [
            `/runs/${runId}`,
            async () => {
              await page.locator("details.call").first().locator(":scope > summary").click();
              await page.getByRole("button", { name: "Show the undo plan" }).click();
              await page.locator(".undo-output .summary").waitFor();
            },
          ],
          ["/gates", () => page.locator(".gate").first().waitFor()],
        ];
        for (const [path, ready] of pages) {
          await page.goto(`${ui.base}${path}`);
          await ready();
          const violations = await axeViolations(page);
          expect({ path, viewport, colorScheme, violations }).toEqual({ path, viewport, colorScheme, violations: [] });
        }
      }
    }
  });

  test("another is denied with a reason, and the agent's retry is told that reason", async () => {
    const dir = crmFolder();
    const ui = await startUi(dir);
    const bot = await liveAgent(dir, "mail-bot");
    const other = { ...EMAIL, to: "grace@example.com" };
    expect((await bot.call(1, "send_email", other)).isError).toBe(true);
    const { page } = await signedIn(ui);
    await page.goto(`${ui.base}/gates`);
    const gate = page.locator(".gate", { hasText: "grace@example.com" });
    await gate.getByLabel("Reason (told to the agent)").fill("Grace renews in March; not before the contract is signed");
    await gate.getByRole("button", { name: "Deny" }).click();
    await page.locator(".outcomes li", { hasText: `(by ${ACCOUNT}: Grace renews in March; not before the contract is signed)` }).waitFor();
    const retry = await bot.call(2, "send_email", other);
    expect(retry.isError).toBe(true);
    expect(retry.content[0].text).toContain(`${ACCOUNT} denied it at`);
    expect(retry.content[0].text).toContain("with the reason: Grace renews in March; not before the contract is signed.");
    expect(existsSync(join(dir, "crm.json")) ? state(dir).outbox : []).toEqual([]);
  });

  test("a run is undone from the page after its plan — the CLI's dry run, line for line — and the CRM's state file equals the seed", async () => {
    const dir = crmFolder();
    const damage: Call[] = [
      ["update_customer", { id: "c_001", plan: "free", notes: "downgraded by mistake" }],
      ["delete_customer", { id: "c_002" }],
      ["update_customer", { id: "c_003", plan: "enterprise" }],
      ["update_customer", { id: "c_003", notes: "VIP" }],
    ];
    await agent(dir, damage, { name: "careless-agent" });
    const damaged = stateText(dir);
    const ui = await startUi(dir);
    const { page } = await signedIn(ui);
    await page.locator("table.runs tbody tr a").click();
    await page.getByRole("button", { name: "Show the undo plan" }).click();
    await page.locator(".undo-output .summary").waitFor();

    const dry = (await cli(dir, ["undo", "--dry-run"])).stdout.trimEnd().split("\n");
    expect(collapse(await page.locator(".undo-heading").innerText())).toBe(collapse(dry[0]!));
    expect((await stepLines(page)).map(collapse)).toEqual(dry.slice(2, -2).map(collapse));
    await expect(page.locator(".undo-output .summary").innerText()).resolves.toBe("4 calls would be reverted.");
    expect(stateText(dir)).toBe(damaged); // the plan changed nothing
    await shot(page, "undo-plan.png");

    await page.getByRole("button", { name: "Confirm: undo this run" }).click();
    const summary = page.locator(".undo-output .summary.tone-good");
    await summary.waitFor();
    await expect(summary.innerText()).resolves.toMatch(/^Run [0-9a-f]{8} is rolled back: 4 calls reverted\.$/);
    await expect(page.locator(".steps > li .label").allInnerTexts()).resolves.toEqual(["reverted", "reverted", "reverted", "reverted"]);
    expect(stateText(dir)).toBe(crmStateText());
    await shot(page, "undo-done.png");
  });

  test("the undo that runs is the one planned: after the plan its scope is locked, and Confirm undoes exactly that", async () => {
    const dir = crmFolder();
    await agent(dir, [
      ["update_customer", { id: "c_001", plan: "free" }],
      ["update_customer", { id: "c_002", plan: "free" }],
    ]);
    const ui = await startUi(dir);
    const { page } = await signedIn(ui);
    await page.locator("table.runs tbody tr a").click();
    await page.locator("#undo-from").selectOption("2");
    await page.getByRole("button", { name: "Show the undo plan" }).click();
    await page.locator(".undo-output .summary").waitFor();
    await expect(page.locator(".undo-output .summary").innerText()).resolves.toBe("1 call would be reverted.");
    await expect(page.locator("#undo-from").isDisabled()).resolves.toBe(true);
    await expect(page.locator("#undo-replan").isDisabled()).resolves.toBe(true);
    // Even a scope changed behind the page's back (a script, a stale form) is not what runs.
    await page.locator("#undo-from").evaluate((select: HTMLSelectElement) => (select.value = "1"));
    await page.getByRole("button", { name: "Confirm: undo this run" }).click();
    const summary = page.locator(".undo-output .summary.tone-partial");
    await summary.waitFor();
    await expect(summary.innerText()).resolves.toMatch(/^Run [0-9a-f]{8} is partially rolled back: 1 reverted; calls before #2 were not in scope\.$/);
    const customers = JSON.parse(stateText(dir)).customers;
    expect([customers.c_001.plan, customers.c_002.plan]).toEqual(["free", "enterprise"]);
  });

  test("drift is shown as a side-by-side diff and nothing is changed", async () => {
    const dir = crmFolder();
    await agent(dir, [["update_customer", { id: "c_003", plan: "pro" }]], { name: "upsell-agent" });
    editState(dir, (s) => (s.customers.c_003.notes = "Asked us to call back on Monday"));
    const before = stateText(dir);
    const ui = await startUi(dir);
    const { page } = await signedIn(ui);
    await page.locator("table.runs tbody tr a").click();
    await page.getByRole("button", { name: "Show the undo plan" }).click();
    const step = page.locator(".steps > li.tone-stop");
    await step.waitFor();
    await expect(step.locator(".label").innerText()).resolves.toBe("DRIFT");
    const diff = step.locator("table.diff");
    await expect(diff.locator("thead").innerText()).resolves.toContain("expected (as the agent left it)");
    await expect(diff.locator("tr.changed").count()).resolves.toBe(1);
    await expect(diff.locator("tr.changed").innerText()).resolves.toContain('"notes": "Asked us to call back on Monday"');
    await expect(page.locator(".undo-output .summary").innerText()).resolves.toBe("A real undo would stop at #1. 0 steps before it would be reverted.");
    await shot(page, "drift.png");

    // Nothing is offered that would do nothing: the stop is dealt with first.
    await expect(page.getByRole("button", { name: /Undo the .* before the stop|Confirm/ }).count()).resolves.toBe(0);
    await expect(page.locator(".undo-output .confirm").innerText()).resolves.toContain("Nothing would be undone before the stop above");
    expect(stateText(dir)).toBe(before);

    // Keep this change (R-PEOPLE-1, as undo --keep): planned again, nothing is left to undo, and nothing is offered.
    await step.getByLabel("Why #1 stays as it is now").fill("the note is right");
    await step.getByRole("button", { name: "Keep this change" }).click();
    await page.locator(".undo-output .summary.lines").waitFor();
    await expect(page.locator(".undo-output").innerText()).resolves.toContain("Nothing");
    await expect(page.locator(".undo-output button").count()).resolves.toBe(0);
    expect(journalRows(dir, "SELECT kept_by, kept_reason FROM actions")).toEqual([{ kept_by: ACCOUNT, kept_reason: "the note is right" }]);
    expect(stateText(dir)).toBe(before);
  });

  test("a run whose agent is still connected says so before Confirm, and is undone only by the button that says so", async () => {
    const dir = crmFolder();
    const ui = await startUi(dir);
    const bot = await liveAgent(dir, "still-here");
    await bot.call(1, "update_customer", { id: "c_001", plan: "free" });
    const { page } = await signedIn(ui);
    await page.locator("table.runs tbody tr a").click();
    await page.getByRole("button", { name: "Show the undo plan" }).click();
    await page.locator(".undo-output .confirm.warn", { hasText: "This run's agent is still connected" }).waitFor();
    await expect(page.getByRole("button", { name: "Confirm: undo this run", exact: true }).count()).resolves.toBe(0);
    await page.getByRole("button", { name: "Confirm: undo this run, while its agent is connected" }).click();
    await page.locator(".undo-output .summary", { hasText: "1 call reverted" }).waitFor();
    expect(state(dir).customers.c_001.plan).toBe("pro");
  });

  test("a drifted run the CLI's undo stopped at is finished from the page: keep the change, then finish", async () => {
    const dir = crmFolder();
    await agent(dir, [
      ["update_customer", { id: "c_001", plan: "free" }],
      ["update_customer", { id: "c_003", plan: "pro" }],
    ]);
    editState(dir, (s) => (s.customers.c_001.notes = "changed by a person"));
    expect((await cli(dir, ["undo"])).code).toBe(1); // #2 reverted, stopped at #1: partial
    const ui = await startUi(dir);
    const { page } = await signedIn(ui);
    await page.locator("table.runs tbody tr a").click();
    await page.getByRole("button", { name: "Show the undo plan" }).click();
    const step = page.locator(".steps > li.tone-stop");
    await step.getByRole("button", { name: "Keep this change" }).click();
    await page.getByRole("button", { name: "Finish the undo" }).click();
    await page.locator(".run-facts .status", { hasText: "rolled back" }).waitFor();
    expect(journalRows(dir, "SELECT status FROM runs")).toEqual([{ status: "rolled_back" }]);
    expect(journalRows(dir, "SELECT seq, kept_by FROM actions ORDER BY seq")).toEqual([
      { seq: 1, kept_by: ACCOUNT },
      { seq: 2, kept_by: null },
    ]);
  });

  test("a customer named like markup renders as text, everywhere", async () => {
    const dir = crmFolder();
    await agent(
      dir,
      [
        ["create_customer", { name: XSS, email: "x@example.com", notes: BIDI }],
        ["send_email", { to: "x@example.com", subject: XSS, body: XSS }],
      ],
      { name: XSS },
    );
    const ui = await startUi(dir);
    const { page, dialogs } = await signedIn(ui);
    const label = page.locator("table.runs tbody tr td[data-label=Agent]");
    await expect(label.innerText()).resolves.toBe(XSS);
    await page.locator("table.runs tbody tr th a").click();
    await page.locator(".call", { hasText: "crm.create_customer" }).waitFor();
    await page.locator(".call", { hasText: "crm.create_customer" }).locator(":scope > summary").click();
    await expect(page.locator("h1").innerText()).resolves.toContain(XSS);
    const args = await page.locator(".call", { hasText: "crm.create_customer" }).locator("pre.json").first().innerText();
    expect(args).toContain(`"name": "${XSS}"`);
    expect(args).toContain(`"notes": "Invoice \ufffdfdp.exe"`); // control and bidi characters are shown, not obeyed
    await page.goto(`${ui.base}/gates`);
    await page.locator(".gate").waitFor();
    await expect(page.locator(".gate pre.json").first().innerText()).resolves.toContain(`"subject": "${XSS}"`);
    for (const path of ["/", "/gates"]) {
      await page.goto(`${ui.base}${path}`);
      await page.locator("main h1").waitFor();
      expect(await page.locator("img").count()).toBe(0);
    }
    expect(dialogs).toEqual([]);
  });

  test("a request without the token, or from another origin, is refused; another port of this host receives nothing that approves", async () => {
    const dir = crmFolder();
    await agent(dir, [["send_email", EMAIL]]);
    const ui = await startUi(dir);
    const [gated] = journalRows(dir, "SELECT id FROM actions");

    // No token: the page says how to sign in, and the API refuses.
    const stranger = await browser.newContext();
    cleanups.push(() => stranger.close());
    const nobody = await stranger.newPage();
    const answer = await nobody.goto(`${ui.base}/gates`);
    expect(answer?.status()).toBe(200); // the page itself holds no data
    await nobody.getByText("Not signed in").waitFor();
    expect(await nobody.evaluate(async () => (await fetch("/api/gates")).status)).toBe(401);

    // Signed in, then a page on another origin (same site: 127.0.0.1, another port) tries to approve and to read.
    // It also notes every credential the browser sends it: a cookie is not scoped by port (R-UI-5).
    const { page } = await signedIn(ui);
    const received: Array<string | null> = [];
    const attacker = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: (request) => {
        received.push(request.headers.get("cookie") ?? request.headers.get("authorization"));
        return new Response(
          `<!doctype html><title>attacker</title><form id=f method=POST action="${ui.base}/api/actions/${gated.id}/approve" enctype="text/plain"><input name='{"by":"mallory","x":"' value='"}'></form>`,
          { headers: { "Content-Type": "text/html" } },
        );
      },
    });
    cleanups.push(async () => attacker.stop(true));
    await page.goto(`http://127.0.0.1:${attacker.port}/`);
    const attempts = await page.evaluate(
      async ({ base, id }) => {
        const outcome = async (attempt: () => Promise<Response>) => {
          try {
            const response = await attempt();
            return `answered ${response.status}`;
          } catch (error) {
            return `blocked: ${(error as Error).name}`;
          }
        };
        return {
          approve: await outcome(() =>
            fetch(`${base}/api/actions/${id}/approve`, {
              method: "POST",
              credentials: "include",
              mode: "no-cors",
              headers: { "Content-Type": "text/plain" },
              body: '{"by":"mallory"}',
            }),
          ),
          read: await outcome(() => fetch(`${base}/api/gates`, { credentials: "include" })),
        };
      },
      { base: ui.base, id: gated.id },
    );
    expect(attempts.read).toBe("blocked: TypeError"); // no CORS: another origin cannot read the answer
    // Sent, and its answer withheld from the other origin (opaque, or blocked by Cross-Origin-Resource-Policy).
    expect(["answered 0", "blocked: TypeError"]).toContain(attempts.approve);
    const submitted = page.waitForResponse((response) => response.url().includes("/approve"));
    await page.evaluate(() => (document.getElementById("f") as HTMLFormElement).submit());
    expect((await submitted).status()).toBe(403);
    // What the other port received, replayed from outside the browser (where Origin is just a header), approves nothing.
    expect(received.length).toBeGreaterThan(0);
    expect(received.filter((credential) => credential !== null)).toEqual([]);
    const replayed = await fetch(`${ui.base}/api/actions/${gated.id}/approve`, {
      method: "POST",
      headers: { Origin: ui.base, "Content-Type": "application/json", ...(received[0] ? { Cookie: received[0] } : {}) },
      body: JSON.stringify({ by: "mallory" }),
    });
    expect(replayed.status).toBe(401);
    expect(journalRows(dir, "SELECT status, approved_by FROM actions")).toEqual([{ status: "gated", approved_by: null }]);
  });

  test("a big journal's run list: searched and filtered in place, kept in the address, paged; fits a phone; axe-core clean", async () => {
    // 120 runs of 5 calls (test/fixtures/review-journal.ts): run 6 is "support-bot #6" and touched c_0042 in its first call.
    const dir = tempDir("syn-ui-list-");
    await buildReviewJournal(join(dir, "synartesis.db"), 120, 5);
    const ui = await startUi(dir);
    const { context, page } = await signedIn(ui);
    const rows = page.locator("table.runs tbody tr");
    const count = page.locator(".run-count");
    await expect(count.textContent()).resolves.toBe("Runs 1–50 of 120");
    await page.getByRole("button", { name: "Older →" }).click();
    await page.waitForFunction(() => document.querySelector(".run-count")?.textContent === "Runs 51–100 of 120");
    expect(await page.locator(".page-of").textContent()).toBe("Page 2 of 3");
    expect(new URL(page.url()).search).toBe("?page=2");

    await page.getByLabel("Search", { exact: true }).fill("c_0042");
    await page.waitForFunction(() => document.querySelector(".run-count")?.textContent === "Runs 1–1 of 1 matching (120 in all)");
    expect(await rows.count()).toBe(1);
    expect(await rows.first().locator("td[data-label=Agent]").innerText()).toBe("support-bot #6\n1 matching call");
    expect(new URL(page.url()).search).toBe("?q=c_0042");
    expect(await page.locator(".pager").isHidden()).toBe(true);
    // Reloaded, the address keeps the search; the link opens the call that matched.
    await page.reload();
    await page.waitForFunction(() => document.querySelector(".run-count")?.textContent === "Runs 1–1 of 1 matching (120 in all)");
    expect(await page.getByLabel("Search", { exact: true }).inputValue()).toBe("c_0042");
    await page.getByRole("link", { name: "1 matching call" }).click();
    await page.locator("details.call[open]").waitFor();
    expect(new URL(page.url()).hash).toMatch(/^#call-[0-9a-f]{8}$/);
    expect(await page.locator("details.call[open] > summary").innerText()).toContain("c_0042");

    await page.goto(`${ui.base}/?status=rolled_back`);
    await page.waitForFunction(() => document.querySelector(".run-count")?.textContent === "Runs 1–6 of 6 matching (120 in all)");
    await page.getByLabel("Status").selectOption("");
    await page.getByLabel("has held calls").check();
    await page.waitForFunction(() => document.querySelector(".run-count")?.textContent === "Runs 1–3 of 3 matching (120 in all)");
    expect(await rows.locator("td[data-label=Agent]").allInnerTexts()).toEqual(["crm-cleanup #107", "crm-cleanup #57", "crm-cleanup #7"]);
    await page.getByLabel("Search", { exact: true }).fill("nothing-like-this");
    await page.waitForFunction(() => document.querySelector(".run-count")?.textContent === "No run matches (of 120).");
    expect(await page.locator("table.runs").isHidden()).toBe(true);
    await shot(page, "runs-search.png");

    // An announcement's link (review_page) opened in another tab of the same browser: signed in, the held call open, decidable.
    const gate = (await (await ui.request("/api/gates", { auth: await ui.signIn() })).json()).view.gates[0];
    const linked = await context.newPage();
    await linked.goto(`${ui.base}/runs/${gate.run.id}#call-${gate.ref}`);
    await linked.locator("details.call[open]").getByRole("button", { name: "Approve" }).waitFor();
    await linked.close();

    for (const viewport of [WIDE, NARROW]) {
      for (const colorScheme of ["light", "dark"] as const) {
        const context = await browser.newContext({ viewport, colorScheme, bypassCSP: true });
        cleanups.push(() => context.close());
        const tab = await context.newPage();
        await tab.goto(ui.url.replace("/#", "/?q=crm&page=2#"));
        await tab.waitForFunction(() => document.querySelector(".run-count")?.textContent === "Runs 51–100 of 120 matching (120 in all)");
        expect(await tab.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
        const violations = await axeViolations(tab);
        expect({ viewport, colorScheme, violations }).toEqual({ viewport, colorScheme, violations: [] });
      }
    }
  });

  test("readable in a narrow window: nothing wider than the screen", async () => {
    const dir = crmFolder();
    await agent(
      dir,
      [
        ["update_customer", { id: "c_001", plan: "free", notes: "a much longer note that would not fit on a phone's screen in one line" }],
        ["send_email", EMAIL],
      ],
      { name: "phone-check" },
    );
    const ui = await startUi(dir);
    const { page } = await signedIn(ui, NARROW);
    const fits = () => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
    await page.locator("table.runs tbody tr").waitFor();
    expect(await fits()).toBe(true);
    await page.locator("table.runs tbody tr th a").click();
    await page.locator(".call").first().waitFor();
    await page.getByRole("button", { name: "Show the undo plan" }).click();
    await page.locator(".undo-output .summary").waitFor();
    expect(await fits()).toBe(true);
    await shot(page, "narrow.png");
    await page.goto(`${ui.base}/gates`);
    await page.locator(".gate").waitFor();
    expect(await fits()).toBe(true);
  });
});
