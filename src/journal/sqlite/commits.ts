// Writes of the SQLite journal committed together (issue 20): a write whose
// caller can wait a moment is queued, and committed in one transaction with
// this connection's next write, or at the end of this turn of the event loop
// ("soon": with whatever else was written in it), or — when the caller knows
// another write follows, such as the next call's intent — with that one, at
// most GROUP_DELAY_MS later ("with-next"). A queued write's promise resolves
// only once it is committed. Each runs in a savepoint of its own, so one that
// fails fails alone.
import type { Database } from "bun:sqlite";
import type { Grouping } from "../journal.ts";

/** The longest a "with-next" write waits for the write it was promised. */
const GROUP_DELAY_MS = 20;

interface Queued {
  write(): unknown;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

export class CommitQueue {
  private queued: Queued[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private soon: ReturnType<typeof setImmediate> | undefined;

  /** `run` in a transaction (a savepoint inside one); made once: bun:sqlite builds a wrapper each time it is asked for one. */
  private readonly inTransaction: ReturnType<Database["transaction"]>;

  /** `beforeCommit` runs last in every transaction (the chain notes what it wrote: chain.ts). */
  constructor(
    db: Database,
    private readonly beforeCommit: () => void = () => {},
  ) {
    this.inTransaction = db.transaction((run: () => unknown) => run());
  }

  /** Queue `write` (SQL only: what it writes is worked out before); resolves with its value once committed. */
  add<T>(write: () => T, grouping: Grouping): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queued.push({ write, resolve: resolve as (value: unknown) => void, reject });
      if (grouping === "soon") this.soon ??= setImmediate(() => this.flush());
      else this.timer ??= setTimeout(() => this.flush(), GROUP_DELAY_MS);
    });
  }

  /**
   * Run `work` in one IMMEDIATE transaction, after everything queued. When
   * `work` fails, what was queued is committed without it; either way `work`'s
   * error is thrown.
   */
  transaction<T>(work: () => T): T {
    const batch = this.take();
    if (batch.length === 0) {
      return this.inTransaction.immediate(() => {
        const value = work();
        this.beforeCommit();
        return value;
      }) as T;
    }
    let outcomes: Outcome[] = [];
    let value: T;
    try {
      value = this.inTransaction.immediate(() => {
        outcomes = batch.map((queued) => this.attempt(queued));
        const value = work();
        this.beforeCommit();
        return value;
      }) as T;
    } catch (error) {
      this.queued.unshift(...batch);
      this.flush();
      throw error;
    }
    this.settle(batch, outcomes);
    return value;
  }

  /** Commit what is queued, now (close, and before reading: a connection reads its own writes). */
  flush(): void {
    const batch = this.take();
    if (batch.length === 0) return;
    let outcomes: Outcome[] = [];
    try {
      this.inTransaction.immediate(() => {
        // One write alone needs no savepoint: should it fail, the transaction does, and fails only it.
        outcomes = batch.length === 1 ? [{ ok: true, value: batch[0]!.write() }] : batch.map((queued) => this.attempt(queued));
        this.beforeCommit();
      });
    } catch (error) {
      // Nothing was committed (the journal is full, locked, broken): each queued write learns why.
      for (const queued of batch) queued.reject(error);
      return;
    }
    this.settle(batch, outcomes);
  }

  /** One queued write in a savepoint of its own: its failure rolls back only what it wrote. */
  private attempt(queued: Queued): Outcome {
    try {
      return { ok: true, value: this.inTransaction(queued.write) };
    } catch (error) {
      return { ok: false, error };
    }
  }

  private settle(batch: Queued[], outcomes: Outcome[]): void {
    batch.forEach((queued, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) queued.resolve(outcome.value);
      else queued.reject(outcome.error);
    });
  }

  private take(): Queued[] {
    clearTimeout(this.timer);
    clearImmediate(this.soon);
    this.timer = this.soon = undefined;
    return this.queued.splice(0);
  }
}
