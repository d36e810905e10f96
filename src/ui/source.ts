// The journal as the review page reaches it: opened once it exists (the page
// may be started before the first agent), never created.
import { isSynartesisError } from "../errors.ts";
import { isDatabaseUrl, journalMayExist, openJournal, withheldSecrets, type Journal } from "../journal/journal.ts";

export class JournalSource {
  private journal: Journal | undefined;
  private opening: Promise<Journal> | undefined;

  constructor(readonly path: string) {}

  /** Whether the journal is a database (opening one is a connection, not a look at a file). */
  get isDatabase(): boolean {
    return isDatabaseUrl(this.path);
  }

  /** The open journal, or undefined while there is none yet. */
  async get(): Promise<Journal | undefined> {
    if (this.journal) return this.journal;
    if (!journalMayExist(this.path)) return undefined;
    this.opening ??= openJournal(this.path, { create: false })
      .then(withheldSecrets)
      .finally(() => (this.opening = undefined));
    try {
      this.journal = await this.opening;
    } catch (error) {
      // A database without a journal yet is waited for, like a file that is not there yet.
      if (isSynartesisError(error) && error.code === "no_journal") return undefined;
      throw error;
    }
    return this.journal;
  }

  async close(): Promise<void> {
    const journal = this.journal;
    this.journal = undefined;
    await journal?.close();
  }
}
