// The journal as `watch` sees it: opened once it exists (never created),
// re-read only when its data version moves. What a frame shows of it is
// decided by render/watch.ts journalView(); how to tell that a run's proxy has
// gone is passed in (tests decide it themselves).
import { existsSync, statSync } from "node:fs";
import { openJournal, type Journal } from "../journal/journal.ts";
import type { Run } from "../journal/types.ts";
import { processAlive } from "../processes.ts";
import { journalView, type JournalView } from "../render/watch.ts";

/** Is the proxy that started this run gone? Only knowable for runs of this machine. */
export function proxyGone(run: Pick<Run, "host" | "pid">): boolean {
  return processAlive(run.host, run.pid) === false;
}

export class Feed {
  view: JournalView | undefined;
  problem: string | undefined;
  private journal: Journal | undefined;
  private version: number | undefined;

  constructor(
    readonly path: string,
    private readonly gone: (run: Pick<Run, "host" | "pid">) => boolean = proxyGone,
  ) {}

  /** Re-read when the journal changed (or `force`); true when the view may differ. */
  async poll(recentLimit: number, force = false): Promise<boolean> {
    try {
      if (!this.journal) {
        // An empty file is a journal the proxy is creating this instant: let it finish.
        if (!existsSync(this.path) || statSync(this.path).size === 0) return this.reset(undefined);
        this.journal = await openJournal(this.path, { create: false });
        this.version = undefined;
      }
      const version = await this.journal.dataVersion();
      if (!force && version === this.version) return false;
      this.version = version;
      this.view = journalView(await this.journal.listRuns(), await this.journal.recentActions(recentLimit), await this.journal.waiting(), this.gone);
      this.problem = undefined;
      return true;
    } catch (error) {
      return this.reset((error as Error).message);
    }
  }

  /** Once a second: a proxy may have died, the file may have been removed. */
  refresh(): void {
    if (this.journal && !existsSync(this.path)) {
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
    this.journal?.close().catch(() => {});
    this.journal = undefined;
    this.version = undefined;
  }
}
