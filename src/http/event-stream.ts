// One Server-Sent Events response body (the Streamable HTTP transport's
// text/event-stream): each JSON-RPC line becomes one `message` event, its
// bytes untouched, so a tool result reaches an HTTP client exactly as the
// server wrote it (only its id replaced, as over stdio).
const encoder = new TextEncoder();
const KEEP_ALIVE = encoder.encode(": keep-alive\n\n");
const OPEN = encoder.encode(": open\n\n");

/**
 * The event carrying one line. SSE ends a field at CR, LF or CRLF; in JSON
 * text these can only be whitespace between tokens, so a line holding one is
 * sent as several data fields, which the client joins with LF: the same JSON.
 */
export function eventText(line: string): string {
  const data = /[\r\n]/.test(line) ? line.split(/\r\n|\r|\n/).join("\ndata: ") : line;
  return `event: message\ndata: ${data}\n\n`;
}

/** How many bytes sent on one stream may wait for its client to read them (beyond what the connection holds). */
export const MAX_UNREAD_BYTES = 1024 * 1024;

export class EventStream {
  readonly body: ReadableStream<Uint8Array>;
  private controller!: ReadableStreamDefaultController<Uint8Array>;
  private ended = false;
  private sentAnything = false;
  private overflowed = false;

  /**
   * `onEnd` runs once, when the stream is closed or the client went away;
   * `onOverflow` once, soon after more than MAX_UNREAD_BYTES wait unread (a
   * client that does not read while a server floods it): whoever sends on the
   * stream stops then (by default, it is closed).
   */
  constructor(
    private readonly onEnd: (stream: EventStream) => void = () => {},
    private readonly onOverflow: (stream: EventStream) => void = (stream) => stream.close(),
  ) {
    this.body = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          this.controller = controller;
        },
        cancel: () => this.end(),
      },
      { highWaterMark: MAX_UNREAD_BYTES, size: (chunk) => chunk?.byteLength ?? 0 },
    );
  }

  /** Closed, or dropped by the client: nothing sent now arrives. */
  get closed(): boolean {
    return this.ended;
  }

  /** Send one line as an event; false when the stream has ended (the line is not sent). */
  send(line: string): boolean {
    return this.enqueue(encoder.encode(eventText(line)));
  }

  /** A comment, so that proxies and tunnels between do not close a quiet stream. */
  keepAlive(): void {
    this.enqueue(KEEP_ALIVE);
  }

  /**
   * The response is being handed out: when nothing is in it yet, a comment,
   * since Bun sends a streamed response's headers with its first bytes and a
   * client waits for them (a GET stream may stay quiet for long, a call take long).
   */
  opening(): void {
    if (!this.sentAnything) this.enqueue(OPEN);
  }

  close(): void {
    if (this.ended) return;
    this.end();
    try {
      this.controller.close();
    } catch {
      // The client cancelled it meanwhile.
    }
  }

  private enqueue(bytes: Uint8Array): boolean {
    if (this.ended) return false;
    try {
      this.controller.enqueue(bytes);
      this.sentAnything = true;
    } catch {
      this.end();
      return false;
    }
    if (!this.overflowed && (this.controller.desiredSize ?? 0) < 0) {
      this.overflowed = true;
      // Not from within the send that overflowed it: whoever sent is not in the middle of ending it.
      queueMicrotask(() => {
        if (!this.ended) this.onOverflow(this);
      });
    }
    return true;
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.onEnd(this);
  }
}
