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
 * The most bytes one gathered write carries (a longer line goes alone). Each
 * write is handed over only once the one before was taken whole (below), so
 * it goes into the socket in one piece: when it fails because the server
 * stopped reading (EPIPE: "it never read these lines, send them again"), the
 * server cannot have read, and run, a line at its start. (A Unix socket takes
 * a send of this size whole while it has room; a longer line may go in parts,
 * but a line read in part is never run.)
 */
export const MOST_BYTES_AT_ONCE = 4096;

function afterMicrotasks(run: () => void, hops = MICROTASK_HOPS): void {
  queueMicrotask(hops === 0 ? run : () => afterMicrotasks(run, hops - 1));
}

type Settle = (outcome: Promise<void> | undefined) => void;

export class LineBatch {
  private lines: string[] = [];
  private bytes = 0;
  private pending: { written: Promise<void>; settle: Settle } | undefined;
  /** Gathered writes waiting for the one in flight: the writer would otherwise join them to its unsent rest, in one send. */
  private readonly waiting: Array<{ text: string; settle: Settle }> = [];
  private inFlight = false;

  /** `write` takes the lines joined, each ending in a newline; a promise when it completes later (it may fail then). */
  constructor(private readonly write: (text: string) => void | Promise<void>) {}

  /** Resolves once the write that carried `line` is done; rejects with its error. */
  add(line: string): Promise<void> {
    const bytes = Buffer.byteLength(line) + 1;
    if (this.bytes + bytes > MOST_BYTES_AT_ONCE) this.flush();
    this.lines.push(line);
    this.bytes += bytes;
    if (!this.pending) {
      let settle!: Settle;
      const written = new Promise<void>((resolve) => (settle = resolve));
      // A caller that does not wait for its line (a notification sent and forgotten) must not turn
      // a failed write into an unhandled rejection, which would end the process; those who wait still see it.
      written.catch(() => {});
      this.pending = { written, settle };
      afterMicrotasks(() => this.flush());
    }
    return this.pending.written;
  }

  /**
   * Hand over what was added: now, unless a write is still in flight (then
   * once it is done). `all`: everything now, in order, whatever is in flight
   * (the peer's input is about to be closed, and nothing will be sent again).
   */
  flush(all = false): void {
    const pending = this.pending;
    if (pending) {
      this.waiting.push({ text: this.lines.join("\n") + "\n", settle: pending.settle });
      this.pending = undefined;
      this.lines = [];
      this.bytes = 0;
    }
    while (this.waiting.length > 0 && (all || !this.inFlight)) {
      const { text, settle } = this.waiting.shift()!;
      let written: Promise<void> | undefined;
      try {
        const result = this.write(text);
        written = result instanceof Promise ? result : undefined;
      } catch (error) {
        written = Promise.reject(error);
      }
      settle(written);
      if (written && !all) {
        this.inFlight = true;
        written.then(
          () => {
            this.inFlight = false;
            this.flush();
          },
          (error: unknown) => {
            // What waited behind it was never handed over: it fails the same way (and may be sent again).
            this.inFlight = false;
            for (const held of this.waiting.splice(0)) held.settle(Promise.reject(error));
          },
        );
      }
    }
  }
}
