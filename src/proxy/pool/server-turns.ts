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

function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/**
 * What a place passes on. `wrote` resolves when the next call may begin, with
 * whether what it reads then begins while a write is still at the server (an
 * early written(), this call's or, when it wrote nothing, the one before's);
 * `done` resolves when the next call may write, with whether those reads stand.
 */
interface Before {
  wrote: Promise<boolean>;
  done: Promise<boolean>;
}

const NOTHING_BEFORE: Before = { wrote: Promise.resolve(false), done: Promise.resolve(true) };

/** One place in a queue. */
class Place {
  state: "reserved" | "waiting" | "running" | "over" = "reserved";
  handed: unknown;
  /** How this call said written(): undefined while it has not (a call that writes nothing passes on what came before it). */
  wroteEarly: boolean | undefined;
  /** False once this call said the reads that followed its early write do not stand. */
  readsStand = true;
  next: Place | undefined;
  readonly wrote = deferred<boolean>();
  readonly done = deferred<boolean>();
}

export class ServerTurns {
  private readonly last = new Map<string, Place>();

  /** A place in `server`'s queue, taken now. */
  reserve(server: string): ServerTurn {
    const take = (): { place: Place; before: Before } => {
      const previous = this.last.get(server);
      const place = new Place();
      if (previous) previous.next = place;
      this.last.set(server, place);
      return { place, before: previous ? { wrote: previous.wrote.promise, done: previous.done.promise } : NOTHING_BEFORE };
    };
    let { place, before } = take();
    // Done means this call and every one before it are done: a call refused before it waited for mayWrite still holds the next one's write back.
    const over = () => {
      if (place.state === "over") return false;
      place.state = "over";
      const ended = place;
      void before.done.then((stood) => ended.done.resolve(ended.wroteEarly === undefined ? stood : ended.readsStand));
      return true;
    };
    return {
      async run<T>(work: (turn: RunningTurn) => Promise<T>): Promise<T> {
        place.state = "waiting";
        const beganEarly = await before.wrote;
        place.state = "running";
        const turn = (handed: unknown, mayWrite: () => Promise<boolean>, early: boolean): RunningTurn => ({
          handed,
          mayWrite,
          beganEarly: early,
          written: (handOn, how) => {
            if (place.next?.state === "waiting") place.next.handed = handOn;
            place.wroteEarly ??= how?.early === true;
            place.wrote.resolve(place.wroteEarly);
          },
          readsDoNotStand: () => {
            place.readsStand = false;
          },
          followed: () => place.next?.state === "waiting" || place.next?.state === "running",
          afresh: () => turn(undefined, () => before.done.then(() => true), false),
        });
        try {
          return await work(turn(place.handed, () => before.done, beganEarly));
        } finally {
          place.wrote.resolve(place.wroteEarly ?? beganEarly);
          over();
        }
      },
      release() {
        if (!over()) return;
        const { wrote } = place;
        void before.wrote.then(wrote.resolve);
      },
      async pause<T>(waiting: Promise<T>): Promise<T> {
        // Nothing of this call is at the server while it waits: what the next call reads meanwhile stands.
        place.wroteEarly ??= false;
        place.wrote.resolve(false);
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
