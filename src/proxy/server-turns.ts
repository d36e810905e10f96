// The per-server queue that serialises mutating calls (R-PROXY-6). A call
// takes its place when it arrives, so calls to one server run in the order
// they came, even when some of them first wait for the journal (a gate).
export interface ServerTurn {
  /** Run `work` once every call before this one is done. */
  run<T>(work: () => Promise<T>): Promise<T>;
  /** Give the place up without running (a call held, refused or failed before it ran). */
  release(): void;
  /**
   * Inside `run`: give the place up while `waiting` (nothing of this call is
   * at the server meanwhile, e.g. a 2026-era client is answering a server's
   * request for input), then queue again behind whoever came since.
   */
  pause<T>(waiting: Promise<T>): Promise<T>;
}

export class ServerTurns {
  private readonly last = new Map<string, Promise<void>>();

  /** A place in `server`'s queue, taken now. */
  reserve(server: string): ServerTurn {
    const take = () => {
      const previous = this.last.get(server) ?? Promise.resolve();
      let done!: () => void;
      this.last.set(server, new Promise<void>((resolve) => (done = resolve)));
      return { previous, done };
    };
    let place = take();
    return {
      async run<T>(work: () => Promise<T>): Promise<T> {
        await place.previous;
        try {
          return await work();
        } finally {
          place.done();
        }
      },
      release: () => void place.previous.then(place.done),
      async pause<T>(waiting: Promise<T>): Promise<T> {
        place.done();
        try {
          return await waiting;
        } finally {
          place = take();
          await place.previous;
        }
      },
    };
  }
}
