// Live updates for the review page: server-sent events that say "the journal
// changed". One poll of the journal's data version serves every open page;
// the page then asks again for what it shows.
import type { JournalSource } from "./source.ts";

const POLL_MS = 250;
const KEEPALIVE_MS = 20_000;

export class ChangeFeed {
  private readonly clients = new Set<ReadableStreamDefaultController<Uint8Array>>();
  private readonly encoder = new TextEncoder();
  private version: string | undefined;
  private timer: ReturnType<typeof setInterval> | undefined;
  private keepalive: ReturnType<typeof setInterval> | undefined;

  /** `source` is a connection of its own: the data version moves only for other connections' commits, the page's own included. */
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
    void this.current().then((version) => (this.version ??= version));
    this.timer = setInterval(() => void this.poll(), POLL_MS);
    this.keepalive = setInterval(() => this.send(": keepalive\n\n"), KEEPALIVE_MS);
  }

  private async current(): Promise<string> {
    try {
      const journal = await this.source.get();
      return journal ? String(await journal.dataVersion()) : "none";
    } catch (error) {
      return `error: ${(error as Error).message}`;
    }
  }

  private polling = false;

  private async poll(): Promise<void> {
    if (this.clients.size === 0 || this.polling) return;
    this.polling = true;
    const version = await this.current().finally(() => (this.polling = false));
    if (version === this.version) return;
    this.version = version;
    this.send("event: change\ndata: {}\n\n");
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
    void this.source.close().catch(() => {});
  }
}
