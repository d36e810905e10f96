// `synartesis watch`: a live view of the journal (R-CLI-5). Wakes when the
// journal says it changed (watch-feed.ts) and redraws only then, or when the
// clock's second moves; piped or with --once it prints one frame. It never
// creates a journal.
import { defineCommand } from "citty";
import { SynartesisError } from "../errors.ts";
import { shownLocation } from "../journal/journal.ts";
import { findJournal } from "../workspace/discover.ts";
import { Screen } from "../render/screen.ts";
import { styleFor, type Style } from "../render/style.ts";
import { ONCE_COLUMNS, renderWatch, watchMode, type WatchState } from "../render/watch.ts";
import { selfCommandText } from "../self.ts";
import { journalArg, manifestArg, tell, writeLines } from "./shared.ts";
import { Feed } from "./watch-feed.ts";

const POLL_MS = 250;
/** Recent calls printed by a one-shot frame. */
const ONCE_RECENT = 20;

async function printOnce(path: string, style: Style, command: string): Promise<void> {
  const feed = new Feed(path);
  await feed.poll(ONCE_RECENT);
  feed.close();
  if (feed.problem !== undefined) {
    throw new SynartesisError("config", feed.problem);
  }
  const state: WatchState = { journalPath: shownLocation(path), now: new Date(), live: false, command, journal: feed.view };
  const columns = process.stdout.isTTY && process.stdout.columns ? process.stdout.columns : ONCE_COLUMNS;
  writeLines(renderWatch(state, columns, Infinity, style));
}

async function live(path: string, style: Style, command: string): Promise<void> {
  const out = {
    fd: 1,
    get columns() {
      return process.stdout.columns;
    },
    get rows() {
      return process.stdout.rows;
    },
  };
  const screen = new Screen(out, process.stdin);
  const feed = new Feed(path);
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  let second = 0;
  let resized = true;

  // Cheap when nothing happens: the journal is read again only when it says it
  // changed; a redraw (of the changed lines only) when the data, the size or the clock's second changed.
  let failure: { error: unknown } | undefined;
  const update = async () => {
    const force = resized;
    resized = false;
    let changed = (await feed.poll(screen.rows, force)) || force;
    const now = Math.floor(Date.now() / 1000);
    if (now !== second) {
      second = now;
      feed.refresh();
      changed = true; // the title's clock and the "… ago" times
    }
    if (!changed) return;
    const state: WatchState = { journalPath: shownLocation(path), now: new Date(), live: true, command, journal: feed.view, problem: feed.problem };
    screen.draw(renderWatch(state, screen.columns, screen.rows, style));
  };
  // A bug must not leave the terminal in the alternate screen: stop, restore, then report it.
  // One update at a time: a tick that comes while the last one still reads is skipped.
  let busy = false;
  const tick = () => {
    if (busy) return;
    busy = true;
    update()
      .catch((error) => {
        failure = { error };
        stop();
      })
      .finally(() => (busy = false));
  };
  const onResize = () => {
    screen.invalidate();
    resized = true;
    tick();
  };

  const signals = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
  for (const signal of signals) process.on(signal, stop);
  process.stdout.on("resize", onResize);
  feed.wake = tick;
  const timer = setInterval(tick, POLL_MS);
  try {
    screen.enter(stop);
    tick();
    await stopped;
  } finally {
    clearInterval(timer);
    process.stdout.off("resize", onResize);
    for (const signal of signals) process.off(signal, stop);
    screen.restore();
    feed.close();
  }
  if (failure) throw failure.error;
}

export default defineCommand({
  meta: {
    name: "watch",
    description:
      "Live view of the journal: live runs, recent calls with class and status, and every call waiting for a decision with the commands that approve or deny it. Redraws as the agent works; Ctrl-C (or q) stops it. Piped, or with --once, prints the state once and exits.",
  },
  args: {
    once: { type: "boolean", description: "Print the current state once and exit (what happens anyway when stdout is not a terminal)" },
    ...journalArg,
    ...manifestArg,
  },
  async run({ args }) {
    const path = findJournal(process.cwd(), args);
    const command = selfCommandText();
    const mode = watchMode(Boolean(process.stdout.isTTY), Boolean(args.once), process.env);
    const style = styleFor(process.stdout);
    if (!mode.live) {
      if (process.stdout.isTTY && !args.once) tell(`printing the state once: ${mode.reason}`);
      return printOnce(path, style, command);
    }
    return live(path, style, command);
  },
});
