// The journal as the review page reaches it: opened once the file exists
// (the page may be started before the first agent), never created.
import { existsSync, statSync } from "node:fs";
import { openJournal, type Journal } from "../journal/journal.ts";

export class JournalSource {
  private journal: Journal | undefined;
  private opening: Promise<Journal> | undefined;

  constructor(readonly path: string) {}

  /** The open journal, or undefined while there is none yet. */
  async get(): Promise<Journal | undefined> {
    if (this.journal) return this.journal;
    // An empty file is a journal a proxy is creating this instant: let it finish.
    if (!existsSync(this.path) || statSync(this.path).size === 0) return undefined;
    this.opening ??= openJournal(this.path, { create: false }).finally(() => (this.opening = undefined));
    this.journal = await this.opening;
    return this.journal;
  }

  async close(): Promise<void> {
    const journal = this.journal;
    this.journal = undefined;
    await journal?.close();
  }
}
