// Lines for one peer (a server's stdin, the client's stdout), gathered: those
// handed over in one turn of the event loop (a call's post-read and the next
// call's pre-read, a burst of answers) leave in one write, so the peer is
// woken once for them and reads them together (issue 20).

/**
 * Hops through the microtask queue before the lines are written: time for the
 * promise chains the first line set off (the next call in a server's queue
 * taking its turn) to hand over theirs. Measured: 8 are enough for the
 * proxy's pre-reads; more cost a few microseconds and no wait for I/O.
 */
const MICROTASK_HOPS = 32;

/**
 * The most bytes one gathered write carries (a longer line goes alone). A
 * write that fits in the pipe is taken whole or not at all, so when one fails
 * because the server stopped reading (EPIPE: "it never read these lines, send
 * them again") the server cannot have read, and run, a line at its start.
 */
export const MOST_BYTES_AT_ONCE = 4096;

function afterMicrotasks(run: () => void, hops = MICROTASK_HOPS): void {
  queueMicrotask(hops === 0 ? run : () => afterMicrotasks(run, hops - 1));
}

export class LineBatch {
  private lines: string[] = [];
  private bytes = 0;
  private pending: { written: Promise<void>; settle(outcome: Promise<void> | undefined): void } | undefined;

  /** `write` takes the lines joined, each ending in a newline; a promise when it completes later (it may fail then). */
  constructor(private readonly write: (text: string) => void | Promise<void>) {}

  /** Resolves once the write that carried `line` is done; rejects with its error. */
  add(line: string): Promise<void> {
    const bytes = Buffer.byteLength(line) + 1;
    if (this.bytes + bytes > MOST_BYTES_AT_ONCE) this.flush();
    this.lines.push(line);
    this.bytes += bytes;
    if (!this.pending) {
      let settle!: (outcome: Promise<void> | undefined) => void;
      const written = new Promise<void>((resolve) => (settle = resolve));
      this.pending = { written, settle };
      afterMicrotasks(() => this.flush());
    }
    return this.pending.written;
  }

  /** Write what was added, now (before the peer's input is closed). */
  flush(): void {
    const pending = this.pending;
    if (!pending) return;
    const text = this.lines.join("\n") + "\n";
    this.pending = undefined;
    this.lines = [];
    this.bytes = 0;
    try {
      const written = this.write(text);
      pending.settle(written instanceof Promise ? written : undefined);
    } catch (error) {
      pending.settle(Promise.reject(error));
    }
  }
}
