// What every view of the review page offers its entry (app.ts).

export interface Page {
  /** Fetch and show the current state; resolves with how many calls wait for approval. */
  refresh(): Promise<number>;
}
