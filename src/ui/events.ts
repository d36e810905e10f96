// Live updates for the review page: server-sent events that say "the journal
// changed". One subscription to the journal's changes (Journal.watchChanges)
// serves every open page; the page then asks again for what it shows. Until
// the journal exists, whether it has appeared is polled.
import type { JournalSource } from "./source.ts";

const POLL_MS = 250;
const KEEPALIVE_MS = 20_000;
const CHANGE = "event: change\ndata: {}\n\n";

export class ChangeFeed {
  private readonly clients = new Set<ReadableStreamDefaultController<Uint8Array>>();
  private readonly encoder = new TextEncoder();
  /** What the page saw at the last look before the journal was watched. */
  private state: string | undefined;
  private timer: ReturnType<typeof setInterval> | undefined;
  private keepalive: ReturnType<typeof setInterval> | undefined;

  /** `source` is a connection of its own, so the page's own decisions (made through another) count as changes too. */
  constructor(private readonly source: JournalSource) {}

  /** A text/event-stream response that gets a `change` event whenever the journal changes. */
  subscribe(): Response {
    let self: ReadableStreamDefaultController<Uint8Array> | undefined;
    const stream = new ReadableStream<Uint8Array>({
      start: (controller) => {
        self = controller;
        this.clients.add(controller);
        controller.enqueue(this.encoder.encode("retry: 2000\n\n"));
        this.start();
      },
      cancel: () => {
        if (self) this.clients.delete(self);
      },
    });
    return new Response(stream, { headers: { "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-store" } });
  }

  private start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.poll(), POLL_MS);
    this.keepalive = setInterval(() => this.send(": keepalive\n\n"), KEEPALIVE_MS);
    void this.poll();
  }

  private polling = false;
  private nextTry = 0;
  private stopWatching: (() => Promise<void>) | undefined;

  /** Until the journal is watched: open it, and say so when what the page would see (none, an error, the journal) changed. */
  private async poll(): Promise<void> {
    if (this.clients.size === 0 || this.polling || this.stopWatching || Date.now() < this.nextTry) return;
    this.polling = true;
    // A database is asked by connecting to it: while it holds no journal, once a second is enough.
    if (this.source.isDatabase) this.nextTry = Date.now() + 1000;
    let state: string;
    try {
      const journal = await this.source.get();
      if (journal) this.stopWatching = await journal.watchChanges(() => this.send(CHANGE));
      state = journal ? "journal" : "none";
    } catch (error) {
      state = `error: ${(error as Error).message}`;
    } finally {
      this.polling = false;
    }
    // The first look is what the page already shows.
    const previous = this.state;
    this.state = state;
    if (previous !== undefined && previous !== state) this.send(CHANGE);
  }

  private send(text: string): void {
    const bytes = this.encoder.encode(text);
    for (const client of this.clients) {
      try {
        client.enqueue(bytes);
      } catch {
        this.clients.delete(client);
      }
    }
  }

  stop(): void {
    clearInterval(this.timer);
    clearInterval(this.keepalive);
    for (const client of this.clients) {
      try {
        client.close();
      } catch {}
    }
    this.clients.clear();
    const stopWatching = this.stopWatching;
    this.stopWatching = undefined;
    void (async () => {
      await stopWatching?.();
      await this.source.close();
    })().catch(() => {});
  }
}
