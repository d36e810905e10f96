// The review page's run list on a big journal (issue 32 item 4): a journal of
// RUNS runs × ACTIONS calls (test/fixtures/review-journal.ts), `synartesis ui` from the
// built binary, Debian's Chromium through playwright-core. Prints, as medians:
// first paint (navigation to the first run row drawn: in a new browser that
// signs in, on reload, and in the first browser while the just-started server
// still reads the journal), and searches and filters (the input event to the
// table drawn for it) — each measured inside the page.
//
//   bun bench/review-page.ts [--runs 1000] [--actions 100] [--rounds 5] [--journal FILE] [--bin dist/synartesis]
//   --journal: use (or build, when missing) that journal instead of a throwaway one
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Page } from "playwright-core";
import { buildReviewJournal } from "../test/fixtures/review-journal.ts";

const root = join(import.meta.dir, "..");
const CHROMIUM = process.env.SYNARTESIS_CHROMIUM ?? "/usr/bin/chromium";
const USAGE = "usage: bun bench/review-page.ts [--runs N] [--actions N] [--rounds N] [--journal FILE] [--bin PATH]";

function fail(message: string): never {
  console.error(`bench/review-page: ${message}`);
  process.exit(1);
}

function parseFlags(argv: string[]) {
  const flags = { runs: 1000, actions: 100, rounds: 5, journal: undefined as string | undefined, bin: join(root, "dist", "synartesis") };
  for (let i = 0; i < argv.length; i++) {
    const [flag, value] = [argv[i]!, argv[i + 1]];
    if (value === undefined) fail(`${flag} needs a value\n${USAGE}`);
    if (flag === "--journal") flags.journal = value;
    else if (flag === "--bin") flags.bin = value;
    else if (["--runs", "--actions", "--rounds"].includes(flag) && /^[1-9]\d*$/.test(value)) flags[flag.slice(2) as "runs"] = Number(value);
    else fail(`bad argument "${flag} ${value}"\n${USAGE}`);
    i++;
  }
  return flags;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const ms = (value: number) => `${value.toFixed(0)} ms`;

/** Records, from the page's own clock, when the first run row is drawn. */
const FIRST_ROW = `new MutationObserver((_, observer) => {
  if (document.querySelector(".runs tbody tr")) { window.__firstRow = performance.now(); observer.disconnect(); }
}).observe(document, { childList: true, subtree: true });`;

/** Set the search box (or a filter) in the page and wait until the list is drawn for it: the time between, in the page. */
async function timed(page: Page, change: { search?: string; held?: boolean }): Promise<{ ms: number; count: string }> {
  return page.evaluate(async (change) => {
    const form = document.querySelector("form.run-filters") as HTMLFormElement;
    const count = document.querySelector(".run-count") as HTMLElement;
    const before = count.dataset.query;
    const started = performance.now();
    if (change.search !== undefined) (form.elements.namedItem("q") as HTMLInputElement).value = change.search;
    if (change.held !== undefined) (form.elements.namedItem("held") as HTMLInputElement).checked = change.held;
    form.dispatchEvent(new Event("input", { bubbles: true }));
    const wanted = new URLSearchParams();
    const text = (form.elements.namedItem("q") as HTMLInputElement).value.trim();
    if (text) wanted.set("q", text);
    if ((form.elements.namedItem("held") as HTMLInputElement).checked) wanted.set("held", "1");
    while (count.dataset.query !== wanted.toString() || (count.dataset.query === before && wanted.toString() !== before)) {
      await new Promise((resolve) => requestAnimationFrame(resolve));
    }
    return { ms: performance.now() - started, count: count.textContent ?? "" };
  }, change);
}

const flags = parseFlags(process.argv.slice(2));
if (!existsSync(CHROMIUM)) fail(`no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set SYNARTESIS_CHROMIUM)`);
if (!existsSync(flags.bin)) fail(`no binary at ${flags.bin}: bun run build`);
const work = mkdtempSync(join(tmpdir(), "syn-bench-review-"));
const journal = flags.journal ?? join(work, "synartesis.db");
if (!existsSync(journal)) {
  const began = performance.now();
  await buildReviewJournal(journal, flags.runs, flags.actions);
  console.log(`journal: ${flags.runs} runs × ${flags.actions} calls, built in ${((performance.now() - began) / 1000).toFixed(0)} s`);
}

const ui = Bun.spawn([flags.bin, "ui", "--no-open", "--port", "0", "--journal", journal], {
  cwd: work,
  stdout: "pipe",
  stderr: "inherit",
  env: { ...process.env, NO_COLOR: "1" },
});
const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"] });
try {
  let printed = "";
  const reader = ui.stdout.getReader();
  while (!/^ {2}(http:\/\/\S+)$/m.test(printed)) {
    const { value, done } = await reader.read();
    if (done) fail(`synartesis ui exited before printing its address:\n${printed}`);
    printed += new TextDecoder().decode(value);
  }
  const address = /^ {2}(http:\/\/\S+)$/m.exec(printed)![1]!;

  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await context.addInitScript(FIRST_ROW);
  const firstRow = async (page: Page) => {
    await page.waitForFunction(() => (window as { __firstRow?: number }).__firstRow !== undefined);
    return page.evaluate(() => (window as unknown as { __firstRow: number }).__firstRow);
  };
  const page = await context.newPage();
  await page.goto(address);
  const cold = await firstRow(page);
  const firstSearch = await timed(page, { search: "c_0042" });
  await timed(page, { search: "" });

  // A browser opening the printed address once the server has read the journal (a search waits for that).
  const base = new URL(address).origin;
  const session = await fetch(`${base}/api/session`, {
    method: "POST",
    headers: { Origin: base, "Content-Type": "application/json" },
    body: JSON.stringify({ code: /#code=(.+)$/.exec(address)![1] }),
  });
  const { token } = (await session.json()) as { token: string };
  await fetch(`${base}/api/runs?q=warm`, { headers: { Authorization: `Bearer ${token}` } });
  const opened: number[] = [];
  for (let round = 0; round < flags.rounds; round++) {
    const fresh = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await fresh.addInitScript(FIRST_ROW);
    const tab = await fresh.newPage();
    await tab.goto(address);
    opened.push(await firstRow(tab));
    await fresh.close();
  }
  const reloads: number[] = [];
  for (let round = 0; round < flags.rounds; round++) {
    await page.reload();
    reloads.push(await firstRow(page));
  }

  const cases: Array<[string, { search?: string; held?: boolean }]> = [
    ["a record in the arguments (c_0042)", { search: "c_0042" }],
    ["text in the arguments (step 57)", { search: "step 57" }],
    ["an agent (renewals)", { search: "renewals" }],
    ["a tool in every run (get_customer)", { search: "get_customer" }],
    ["nothing matches", { search: "no-such-thing" }],
  ];
  const results: Array<[string, number, string]> = [];
  for (const [label, change] of cases) {
    const times: number[] = [];
    let count = "";
    for (let round = 0; round < flags.rounds; round++) {
      const result = await timed(page, change);
      times.push(result.ms);
      count = result.count;
      await timed(page, { search: "" });
    }
    results.push([label, median(times), count]);
  }
  const held: number[] = [];
  let heldCount = "";
  for (let round = 0; round < flags.rounds; round++) {
    const result = await timed(page, { held: true });
    held.push(result.ms);
    heldCount = result.count;
    await timed(page, { held: false });
  }

  console.log(`review page, ${flags.runs} runs × ${flags.actions} calls (medians of ${flags.rounds}; Chromium, 1280×800)`);
  console.log(`  first paint (navigation to the first run drawn), a new browser signing in: ${ms(median(opened))}; on reload: ${ms(median(reloads))}`);
  console.log(`  the same, the first browser while the just-started server reads the journal: ${ms(cold)}; its first search: ${ms(firstSearch.ms)}`);
  for (const [label, time, count] of results) console.log(`  search, ${label}: ${ms(time)} (${count})`);
  console.log(`  filter, has held calls: ${ms(median(held))} (${heldCount})`);
} finally {
  await browser.close();
  ui.kill();
  await ui.exited;
  rmSync(work, { recursive: true, force: true });
}
