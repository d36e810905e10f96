// One MCP session of `proxy --http` (one Mcp-Session-Id): a client session of
// the proxy, and the event streams its lines go out on. A request's answer,
// and what a server sends on its behalf before it, ride on the response to
// the POST that carried it; anything else goes on the session's GET stream
// (kept for it until the client opens one, when none is open). The session
// ends on DELETE, after --http-idle without a request, or at shutdown.
import { deservesAnswer, type Frame } from "../jsonrpc/frames.ts";
import type { RequestChannel } from "../proxy/client-request.ts";
import { ClientSession } from "../proxy/client-session.ts";
import type { DrainEnd } from "../proxy/drain.ts";
import type { RecordingOptions } from "../proxy/session-run.ts";
import { EventStream } from "./event-stream.ts";
import { EVENT_STREAM_HEADERS, refusal, SESSION_HEADER } from "./responses.ts";

/** Lines kept for a GET stream the client has not opened; beyond this many the oldest are dropped. */
const UNDELIVERED_KEPT = 1000;

export interface HttpSessionOptions {
  id: string;
  recording: RecordingOptions;
  /** How long the session may go without a request before it ends (0: never). */
  idleMs: number;
  /** It went that long without one. */
  onIdle(session: HttpSession): void;
  /** Starts a timer, returning what stops it (tests pass their own clock). */
  timer?: (ms: number, fire: () => void) => () => void;
}

function realTimer(ms: number, fire: () => void): () => void {
  const timer = setTimeout(fire, ms);
  timer.unref?.();
  return () => clearTimeout(timer);
}

/** Whether the client is owed an answer to this message (what makes a POST's response an event stream). */
const owedAnswer = (frame: Frame) => frame.kind === "request" || (frame.kind === "invalid" && deservesAnswer(frame));

export class HttpSession {
  readonly id: string;
  readonly client: ClientSession;
  private standalone: EventStream | undefined;
  private readonly responses = new Set<EventStream>();
  private readonly undelivered: string[] = [];
  private droppedUndelivered = false;
  /** Requests received and not yet done with: the session is not idle while there are any. */
  private inProgress = 0;
  private stopIdleTimer: (() => void) | undefined;
  private ending: Promise<DrainEnd> | undefined;
  /** Set as soon as the session starts ending (its idle clock stops for good). */
  private closing = false;

  constructor(private readonly options: HttpSessionOptions) {
    this.id = options.id;
    this.client = new ClientSession({ ...options.recording, write: (line) => this.toSession(line), initializeWaitMs: 0 });
    this.touched();
  }

  /** It has ended, or is ending: it takes no more requests. */
  get ended(): boolean {
    return this.closing;
  }

  /** The client's name (its run's label). */
  get label(): string {
    return this.client.run.label;
  }

  private get headers(): Record<string, string> {
    return { [SESSION_HEADER]: this.id };
  }

  /**
   * The messages of one POST. With a request among them, the response is an
   * event stream that carries their answers and ends after the last one;
   * with none (notifications, answers to a server's requests): 202.
   */
  post(frames: Frame[]): Response {
    const owed = frames.filter(owedAnswer).length;
    if (owed === 0) {
      for (const frame of frames) this.client.handleFrame(frame);
      this.touched();
      return new Response(null, { status: 202, headers: this.headers });
    }
    const stream = new EventStream((ended) => this.responses.delete(ended));
    this.responses.add(stream);
    this.inProgress += owed;
    this.touched();
    let unanswered = owed;
    const channel: RequestChannel = {
      send: (line) => {
        // The client dropped this response: what a server sends still reaches it another way.
        if (!stream.send(line)) this.toSession(line);
      },
      end: (answer) => {
        if (answer !== undefined && !stream.send(answer)) this.options.recording.log.debug("an answer was not delivered: the client closed its response stream", { client: this.label });
        if (--unanswered === 0) stream.close();
        this.inProgress--;
        this.touched();
      },
    };
    for (const frame of frames) this.client.handleFrame(frame, owedAnswer(frame) ? channel : undefined);
    stream.opening();
    return new Response(stream.body, { headers: { ...EVENT_STREAM_HEADERS, ...this.headers } });
  }

  /** GET: the stream for what concerns no single request (one at a time, as the SDK's transport allows). */
  listen(): Response {
    this.touched();
    if (this.standalone && !this.standalone.closed) return refusal(409, "Conflict: this session already has a GET stream open", { headers: this.headers });
    const stream = new EventStream((ended) => {
      if (this.standalone === ended) this.standalone = undefined;
    });
    this.standalone = stream;
    for (const line of this.undelivered.splice(0)) stream.send(line);
    stream.opening();
    return new Response(stream.body, { headers: { ...EVENT_STREAM_HEADERS, ...this.headers } });
  }

  /** Every open stream gets a comment, so that nothing between closes it for being quiet. */
  keepAlive(): void {
    this.standalone?.keepAlive();
    for (const stream of this.responses) stream.keepAlive();
  }

  /**
   * End the session: requests in flight get the drain (R-PROXY-13), its run
   * is closed complete, its streams closed. Once.
   */
  end(drainMs: number, forced: Promise<void>): Promise<DrainEnd> {
    if (this.ending) return this.ending;
    this.closing = true;
    this.stopIdleTimer?.();
    this.ending = this.client.finish({ drainMs, forced }).finally(() => {
      this.standalone?.close();
      for (const stream of this.responses) stream.close();
    });
    return this.ending;
  }

  /** A line for the client that concerns no single request: the GET stream, else a response still open, else kept for a GET stream. */
  private toSession(line: string): void {
    if (this.standalone?.send(line)) return;
    for (const stream of [...this.responses].reverse()) if (stream.send(line)) return;
    this.undelivered.push(line);
    if (this.undelivered.length <= UNDELIVERED_KEPT) return;
    this.undelivered.shift();
    if (!this.droppedUndelivered) {
      this.droppedUndelivered = true;
      this.options.recording.log.warn("a client opens no GET stream: server messages for it are being dropped, oldest first", { client: this.label, kept: UNDELIVERED_KEPT });
    }
  }

  /** A request came or was done with: the idle clock starts again, and runs only while nothing is in progress. */
  private touched(): void {
    this.stopIdleTimer?.();
    this.stopIdleTimer = undefined;
    if (this.inProgress > 0 || this.closing || this.options.idleMs <= 0) return;
    this.stopIdleTimer = (this.options.timer ?? realTimer)(this.options.idleMs, () => this.options.onIdle(this));
  }
}
