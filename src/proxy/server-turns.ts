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
  /** Resolves once the call before this one is done (its post-read answered): this call's write may leave then. */
  mayWrite(): Promise<void>;
  /** This call's write was answered: the next call may begin, and is handed `handOn` if it is waiting. */
  written(handOn?: unknown): void;
  /** Whether the next call in this queue has begun or is waiting to (its intent is the journal's next write). */
  followed(): boolean;
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const NOTHING_BEFORE = { wrote: Promise.resolve(), done: Promise.resolve() };

/** One place in a queue. */
class Place {
  state: "reserved" | "waiting" | "running" | "over" = "reserved";
  handed: unknown;
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
      const before = previous ? { wrote: previous.wrote.promise, done: previous.done.promise } : NOTHING_BEFORE;
      return { place, before };
    };
    let { place, before } = take();
    // Done means this call and every one before it are done: a call refused before it waited for mayWrite still holds the next one's write back.
    const over = () => {
      if (place.state === "over") return false;
      place.state = "over";
      const { done } = place;
      void before.done.then(done.resolve);
      return true;
    };
    return {
      async run<T>(work: (turn: RunningTurn) => Promise<T>): Promise<T> {
        place.state = "waiting";
        await before.wrote;
        place.state = "running";
        try {
          return await work({
            handed: place.handed,
            mayWrite: () => before.done,
            written: (handOn) => {
              if (place.next?.state === "waiting") place.next.handed = handOn;
              place.wrote.resolve();
            },
            followed: () => place.next?.state === "waiting" || place.next?.state === "running",
          });
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
