// The per-server queue that serialises mutating calls (R-PROXY-6). A call
// takes its place when it arrives, so calls to one server run in the order
// they came, even when some of them first wait for the journal (a gate).
//
// Reads overlap where that changes nothing (issue 20): once a call's write is
// answered, the next call may begin, so its pre-read runs beside this call's
// post-read — both see the state this write left, since no write can come
// between them — but its write waits until this call is done. A call that was
// already waiting is handed this call's post-read: when it reads the same
// thing first, that one read serves both, and the state it records is no
// older than a read of its own would be.
//
// At a server that answers in order (`in_order: true`), a call may say it has
// written as soon as its write has left (its post-read follows the write at
// once, and the next call's pre-read after it: the server runs them in that
// order). Should the write turn out not to be over when answered (a task, a
// request for input, a resend to a restarted server), the call says that what
// was read meanwhile does not stand, and the next call reads again before its
// write.
export interface ServerTurn {
  /** Run `work` once the call before this one has written (or is done). */
  run<T>(work: (turn: RunningTurn) => Promise<T>): Promise<T>;
  /** Give the place up without running (a call held, refused or failed before it ran); once run, this does nothing. */
  release(): void;
  /**
   * Inside `run`: give the place up while `waiting` (nothing of this call is
   * at the server meanwhile, e.g. a 2026-era client is answering a server's
   * request for input), then queue again behind whoever came since.
   */
  pause<T>(waiting: Promise<T>): Promise<T>;
}

export interface RunningTurn {
  /** What the call before handed on with `written`, when this call was already waiting for its turn then. */
  readonly handed: unknown;
  /**
   * Resolves once the call before this one is done (its post-read answered):
   * this call's write may leave then. False when what this call read before
   * then (handed or its own) does not stand: it must read again (afresh()).
   */
  mayWrite(): Promise<boolean>;
  /** This call's write was answered (or, `early`, has left for a server that answers in order): the next call may begin, and is handed `handOn` if it is waiting. */
  written(handOn?: unknown, how?: { early: boolean }): void;
  /** Whether the call before said written() early: what this call read began while that write was still at its server. */
  readonly beganEarly: boolean;
  /** What the next call read after an early written() does not stand (this write was not over when answered). */
  readsDoNotStand(): void;
  /** Whether the next call in this queue has begun or is waiting to (its intent is the journal's next write). */
  followed(): boolean;
  /** This turn once the call before is done: nothing handed on, and the write may leave. */
  afresh(): RunningTurn;
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const NOTHING_BEFORE = { wrote: Promise.resolve(), done: Promise.resolve(true), wroteEarly: () => false };

/** One place in a queue. */
class Place {
  state: "reserved" | "waiting" | "running" | "over" = "reserved";
  handed: unknown;
  /** Whether this call said written() as soon as its write left. */
  wroteEarly = false;
  /** False once this call said the reads that followed its write early do not stand. */
  readsStand = true;
  next: Place | undefined;
  readonly wrote = deferred();
  readonly done = deferred();
}

export class ServerTurns {
  private readonly last = new Map<string, Place>();

  /** A place in `server`'s queue, taken now. */
  reserve(server: string): ServerTurn {
    const take = () => {
      const previous = this.last.get(server);
      const place = new Place();
      if (previous) previous.next = place;
      this.last.set(server, place);
      const before = previous
        ? { wrote: previous.wrote.promise, done: previous.done.promise.then(() => previous.readsStand), wroteEarly: () => previous.wroteEarly }
        : NOTHING_BEFORE;
      return { place, before };
    };
    let { place, before } = take();
    // Done means this call and every one before it are done: a call refused before it waited for mayWrite still holds the next one's write back.
    const over = () => {
      if (place.state === "over") return false;
      place.state = "over";
      const { done } = place;
      void before.done.then(() => done.resolve());
      return true;
    };
    return {
      async run<T>(work: (turn: RunningTurn) => Promise<T>): Promise<T> {
        place.state = "waiting";
        await before.wrote;
        place.state = "running";
        const turn = (handed: unknown, mayWrite: () => Promise<boolean>, beganEarly: () => boolean): RunningTurn => ({
          handed,
          mayWrite,
          get beganEarly() {
            return beganEarly();
          },
          written: (handOn, how) => {
            if (place.next?.state === "waiting") place.next.handed = handOn;
            if (how?.early) place.wroteEarly = true;
            place.wrote.resolve();
          },
          readsDoNotStand: () => {
            place.readsStand = false;
          },
          followed: () => place.next?.state === "waiting" || place.next?.state === "running",
          afresh: () => turn(undefined, () => before.done.then(() => true), () => false),
        });
        try {
          return await work(turn(place.handed, () => before.done, () => before.wroteEarly()));
        } finally {
          place.wrote.resolve();
          over();
        }
      },
      release() {
        if (!over()) return;
        const { wrote } = place;
        void before.wrote.then(wrote.resolve);
      },
      async pause<T>(waiting: Promise<T>): Promise<T> {
        place.wrote.resolve();
        over();
        try {
          return await waiting;
        } finally {
          ({ place, before } = take());
          place.state = "running";
          // Nothing it read before stands for what the calls that ran meanwhile left: it writes again once they are all done.
          await before.done;
        }
      },
    };
  }
}
