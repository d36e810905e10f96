// The journal as the review page reaches it: opened once the file exists
// (the page may be started before the first agent), never created.
import { existsSync, statSync } from "node:fs";
import { Journal } from "../journal/journal.ts";

export class JournalSource {
  private journal: Journal | undefined;

  constructor(readonly path: string) {}

  /** The open journal, or undefined while there is none yet. */
  get(): Journal | undefined {
    if (this.journal) return this.journal;
    // An empty file is a journal a proxy is creating this instant: let it finish.
    if (!existsSync(this.path) || statSync(this.path).size === 0) return undefined;
    this.journal = Journal.open(this.path, { create: false });
    return this.journal;
  }

  close(): void {
    this.journal?.close();
    this.journal = undefined;
  }
}
