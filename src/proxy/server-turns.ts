// The per-server queue that serialises mutating calls (R-PROXY-6). A call
// takes its place when it arrives, so calls to one server run in the order
// they came, even when some of them first wait for the journal (a gate).
export interface ServerTurn {
  /** Run `work` once every call before this one is done. */
  run<T>(work: () => Promise<T>): Promise<T>;
  /** Give the place up without running (a call held, refused or failed before it ran). */
  release(): void;
}

export class ServerTurns {
  private readonly last = new Map<string, Promise<void>>();

  /** A place in `server`'s queue, taken now. */
  reserve(server: string): ServerTurn {
    const previous = this.last.get(server) ?? Promise.resolve();
    let done!: () => void;
    this.last.set(server, new Promise<void>((resolve) => (done = resolve)));
    const release = () => void previous.then(done);
    return {
      async run<T>(work: () => Promise<T>): Promise<T> {
        await previous;
        try {
          return await work();
        } finally {
          done();
        }
      },
      release,
    };
  }
}
