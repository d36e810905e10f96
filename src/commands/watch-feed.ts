// The journal as `watch` sees it: opened once it exists (never created),
// re-read only when the journal says it changed (Journal.watchChanges: a file
// polls its data version, PostgreSQL listens). What a frame shows of it is
// decided by render/watch.ts journalView(); how to tell that a run's proxy has
// gone is passed in (tests decide it themselves).
import { isSynartesisError } from "../errors.ts";
import { journalMayExist, openJournal, type Journal } from "../journal/journal.ts";
import type { Run } from "../journal/types.ts";
import { processAlive } from "../processes.ts";
import { journalView, type JournalView } from "../render/watch.ts";

/** How often a journal that could not be opened is tried again. */
const REOPEN_MS = 1000;

/** Is the proxy that started this run gone? Only knowable for runs of this machine. */
export function proxyGone(run: Pick<Run, "host" | "pid">): boolean {
  return processAlive(run.host, run.pid) === false;
}

export class Feed {
  view: JournalView | undefined;
  problem: string | undefined;
  /** Called when the journal changed, so the screen need not wait for its next tick. */
  wake: () => void = () => {};
  private journal: Journal | undefined;
  private changed = false;
  private stopWatching: (() => Promise<void>) | undefined;
  private nextOpen = 0;

  constructor(
    readonly path: string,
    private readonly gone: (run: Pick<Run, "host" | "pid">) => boolean = proxyGone,
    private readonly reopenMs = REOPEN_MS,
  ) {}

  /** Re-read when the journal changed (or `force`); true when the view may differ. */
  async poll(recentLimit: number, force = false): Promise<boolean> {
    try {
      if (!this.journal) {
        if (!journalMayExist(this.path)) return this.reset(undefined);
        // Opening a database is a connection: while there is no journal in it, once a second is enough.
        if (Date.now() < this.nextOpen) return false;
        this.nextOpen = Date.now() + this.reopenMs;
        this.journal = await openJournal(this.path, { create: false });
        this.changed = true;
        this.stopWatching = await this.journal.watchChanges(() => {
          this.changed = true;
          this.wake();
        });
      }
      if (!force && !this.changed) return false;
      this.changed = false;
      this.view = journalView(await this.journal.listRuns(), await this.journal.recentActions(recentLimit), await this.journal.waiting(), this.gone);
      this.problem = undefined;
      return true;
    } catch (error) {
      // A database without a journal yet is waited for, like a file that is not there yet.
      return this.reset(isSynartesisError(error) && error.code === "no_journal" ? undefined : (error as Error).message);
    }
  }

  /** Once a second: a proxy may have died, the file may have been removed. */
  refresh(): void {
    if (this.journal && !journalMayExist(this.path)) {
      this.reset(undefined);
      return;
    }
    if (this.view) this.view.runs = this.view.runs.map((run) => ({ ...run, gone: this.gone(run) }));
  }

  private reset(problem: string | undefined): boolean {
    const changed = this.view !== undefined || this.problem !== problem;
    this.close();
    this.view = undefined;
    this.problem = problem;
    return changed;
  }

  close(): void {
    // Closing a journal whose file vanished may fail: nothing to do about it.
    const [journal, stopWatching] = [this.journal, this.stopWatching];
    void (async () => {
      await stopWatching?.();
      await journal?.close();
    })().catch(() => {});
    this.journal = undefined;
    this.stopWatching = undefined;
  }
}
