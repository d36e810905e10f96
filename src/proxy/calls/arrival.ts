// A tools/call's number in its run (the actions' seq), given in the order the
// requests arrived: calls recorded later (a write waiting for its server's
// turn) keep the place they came in, and a held call answered at once does not
// jump ahead of them.

export class ArrivalTicket {
  constructor(private seq: number | undefined) {}

  /** The number, once: a second row of the same call, should one ever be written, takes the run's next. */
  take(): number | undefined {
    const seq = this.seq;
    this.seq = undefined;
    return seq;
  }
}
