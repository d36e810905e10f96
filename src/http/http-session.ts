// One MCP session of `proxy --http` (one Mcp-Session-Id), or one run of
// sessionless 2026-era clients (R-ERA-5): a client session of the proxy, and
// the event streams its lines go out on. A request's answer, and what a
// server sends on its behalf before it, ride on the response to the POST
// that carried it; anything else goes on the session's GET stream (kept for
// it until the client opens one, when none is open). The session ends on
// DELETE, after --http-idle without a request, or at shutdown.
import { deservesAnswer, errorCodeOf, type Frame, type RequestFrame } from "../jsonrpc/frames.ts";
import { idKey } from "../jsonrpc/json-check.ts";
import { ErrorCode, HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY } from "../jsonrpc/messages.ts";
import { withIdText } from "../jsonrpc/raw-json.ts";
import { LISTEN } from "../jsonrpc/subscriptions.ts";
import type { RequestChannel } from "../proxy/session/client-request.ts";
import { ClientSession } from "../proxy/session/client-session.ts";
import type { DrainEnd } from "../proxy/drain.ts";
import type { RecordingOptions } from "../proxy/session/session-run.ts";
import { EventStream, MAX_UNREAD_BYTES } from "./event-stream.ts";
import { EVENT_STREAM_HEADERS, jsonAnswer, refusal, SESSION_HEADER } from "./responses.ts";

/** Lines kept for a GET stream the client has not opened; beyond this many the oldest are dropped. */
const UNDELIVERED_KEPT = 1000;

export interface HttpSessionOptions {
  id: string;
  /** The sessionless era's run: no Mcp-Session-Id is given out, and there is no GET stream. */
  sessionless?: boolean;
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

/**
 * How long a call's answer is awaited before its event stream opens: an answer
 * that comes sooner (most do, and every quick refusal) can still carry the
 * HTTP status the binding gives its error; a longer call gets its stream, and
 * its keep-alives, after this.
 */
const QUICK_ANSWER_MS = 1000;

/**
 * The HTTP status the 2026-07-28 binding gives an answer of its own, not an
 * event stream: -32601 is 404; -32021 is 400; -32020 is 400 when it is the proxy's verdict on
 * this request's headers (a server's, about Synartesis's own headers to it,
 * is no fault of the client's headers).
 */
function statusOf(code: number | undefined, headersRefused: boolean): number | undefined {
  if (code === ErrorCode.MethodNotFound) return 404;
  if (code === MISSING_REQUIRED_CLIENT_CAPABILITY) return 400;
  return code === HEADER_MISMATCH && headersRefused ? 400 : undefined;
}

/** How a sessionless request is served. */
interface SessionlessOptions {
  /** What its answer becomes (before its id is the client's). */
  rewrite?: (line: string) => string;
  /** Over HTTP, whether a call's Mcp-Param-* headers agree with its arguments (see RequestChannel). */
  vouch?: RequestChannel["vouch"];
  /** Aborts when the client goes away before the response is handed out. */
  signal?: AbortSignal;
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
  /** The ids sessionless requests are run under (their clients number them each their own way). */
  private ownIds = 0;

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

  get sessionless(): boolean {
    return this.options.sessionless === true;
  }

  private get headers(): Record<string, string> {
    return this.sessionless ? {} : { [SESSION_HEADER]: this.id };
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
    const { stream, channel } = this.responseStream(owed);
    for (const frame of frames) this.client.handleFrame(frame, owedAnswer(frame) ? channel : undefined);
    return this.streamed(stream);
  }

  /**
   * One request of a sessionless (2026-07-28) client. The clients of one run
   * share this session and each numbers its requests its own way: the request
   * is run under an id of the session's own, and answered under the client's.
   * Closing the response before its answer cancels it, as the binding says.
   * The response is handed out with the first line for the client (a
   * tools/call's: once it is let run, see `vouch`), so that an answer the
   * binding gives an HTTP status of its own (-32601: 404) still gets it.
   */
  postAlone(frame: RequestFrame, options: SessionlessOptions = {}): Promise<Response> {
    const ownId = `synartesis-http-${++this.ownIds}`;
    const own = { text: JSON.stringify(ownId), key: idKey(JSON.stringify(ownId)) };
    const cancel = (why: string) => {
      this.options.recording.log.debug("a request is cancelled", { client: this.label, why });
      this.client.requests.get(own.key)?.cancel(why);
    };
    // A subscription stays open until it is cancelled: the run is not busy with it (it may idle, which ends the subscription).
    const lasting = frame.msg.method === LISTEN;
    const { stream, channel } = this.responseStream(1, {
      answerAs: (line) => withIdText(options.rewrite?.(line) ?? line, frame.id.text),
      dropped: () => cancel("the client closed its response stream"),
      overwhelmed: () => this.client.requests.get(own.key)?.overwhelmed() ?? false,
      lasting,
    });
    let handOut!: (response: Response) => void;
    const response = new Promise<Response>((resolve) => (handOut = resolve));
    let held = true;
    const release = () => {
      if (!held) return;
      held = false;
      options.signal?.removeEventListener("abort", onAbort);
      handOut(this.streamed(stream));
    };
    const onAbort = () => cancel("the client went away before its answer");
    options.signal?.addEventListener("abort", onAbort, { once: true });
    const vouch = options.vouch;
    let headersRefused = false;
    const heldChannel: RequestChannel = {
      idText: frame.id.text,
      send: (line) => {
        release();
        channel.send(line);
      },
      end: (answer) => {
        const status = held && answer !== undefined ? statusOf(errorCodeOf(answer), headersRefused) : undefined;
        if (status === undefined) {
          release();
          return channel.end(answer);
        }
        held = false;
        options.signal?.removeEventListener("abort", onAbort);
        handOut(jsonAnswer(status, withIdText(answer!, frame.id.text)));
        channel.end();
      },
      ...(vouch && {
        vouch: (inputSchema, args) => {
          const refused = vouch(inputSchema, args);
          if (!refused) setTimeout(release, QUICK_ANSWER_MS).unref();
          headersRefused = refused?.code === HEADER_MISMATCH;
          return refused;
        },
      }),
    };
    // A call nobody vouches for runs as it comes, and a subscription's acknowledgment may wait for the servers: the stream opens at once.
    if ((frame.msg.method === "tools/call" && !vouch) || lasting) release();
    this.client.handleFrame({ ...frame, id: own, raw: withIdText(frame.raw, own.text), msg: { ...frame.msg, id: ownId } }, heldChannel);
    return response;
  }

  /**
   * The response stream for `owed` answers, and the channel they go out on;
   * `answerAs` rewrites an answer's id, `dropped` runs when the client closes
   * the stream before every answer was sent, `overwhelmed` when it leaves too
   * much unread (true: that ends the request, a subscription; otherwise what
   * a server sends before the answer is dropped from then on, and the answer
   * still goes out). A `lasting` one (a subscription) does not keep the
   * session from idling.
   */
  private responseStream(
    owed: number,
    options: { answerAs?: (line: string) => string; dropped?: () => void; overwhelmed?: () => boolean; lasting?: boolean } = {},
  ): { stream: EventStream; channel: RequestChannel } {
    let unanswered = owed;
    let shedding = false;
    const counted = options.lasting ? 0 : owed;
    const stream = new EventStream(
      (ended) => {
        this.responses.delete(ended);
        if (unanswered > 0) options.dropped?.();
      },
      () => {
        const ended = options.overwhelmed?.() ?? false;
        this.unread(ended ? "a response stream: its subscription is ended" : "a response stream: what comes before its answer is dropped");
        shedding = !ended;
      },
    );
    this.responses.add(stream);
    this.inProgress += counted;
    this.touched();
    const channel: RequestChannel = {
      send: (line) => {
        if (shedding) return;
        // The client dropped this response: what a server sends still reaches it another way.
        if (!stream.send(line)) this.toSession(line);
      },
      end: (answer) => {
        const line = answer === undefined || !options.answerAs ? answer : options.answerAs(answer);
        if (line !== undefined && !stream.send(line))
          this.options.recording.log.debug("an answer was not delivered: the client closed its response stream", { client: this.label });
        if (--unanswered === 0) stream.close();
        if (counted) this.inProgress--;
        this.touched();
      },
    };
    return { stream, channel };
  }

  private streamed(stream: EventStream): Response {
    stream.opening();
    return new Response(stream.body, { headers: { ...EVENT_STREAM_HEADERS, ...this.headers } });
  }

  /** GET: the stream for what concerns no single request (one at a time, as the SDK's transport allows). */
  listen(): Response {
    this.touched();
    if (this.standalone && !this.standalone.closed) return refusal(409, "Conflict: this session already has a GET stream open", { headers: this.headers });
    const stream = new EventStream(
      (ended) => {
        if (this.standalone === ended) this.standalone = undefined;
      },
      (full) => {
        this.unread("its GET stream: it is closed");
        full.close();
      },
    );
    this.standalone = stream;
    for (const line of this.undelivered.splice(0)) stream.send(line);
    stream.opening();
    return new Response(stream.body, { headers: { ...EVENT_STREAM_HEADERS, ...this.headers } });
  }

  /** One warning for a stream its client leaves unread while more and more is sent on it (`which`: the stream, and what is done about it). */
  private unread(which: string): void {
    this.options.recording.log.warn(`a client does not read ${which}`, { client: this.label, unreadBytes: MAX_UNREAD_BYTES });
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
  end(drainMs: number, forced: AbortSignal): Promise<DrainEnd> {
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
    if (this.sessionless)
      return this.options.recording.log.debug("a server message for a sessionless client that concerns none of its requests; dropped", { client: this.label });
    if (this.standalone?.send(line)) return;
    for (const stream of [...this.responses].reverse()) if (stream.send(line)) return;
    this.undelivered.push(line);
    if (this.undelivered.length <= UNDELIVERED_KEPT) return;
    this.undelivered.shift();
    if (!this.droppedUndelivered) {
      this.droppedUndelivered = true;
      this.options.recording.log.warn("a client opens no GET stream: server messages for it are being dropped, oldest first", {
        client: this.label,
        kept: UNDELIVERED_KEPT,
      });
    }
  }

  /** A request came or was done with: the idle clock starts again, and runs only while nothing is in progress. */
  private touched(): void {
    this.stopIdleTimer?.();
    this.stopIdleTimer = undefined;
    if (this.inProgress > 0 || this.closing || this.options.idleMs <= 0) return;
    // A request waiting for its client's retry is still in progress: a person may be answering what it asked.
    this.stopIdleTimer = (this.options.timer ?? realTimer)(this.options.idleMs, () => (this.client.awaitingRetry ? this.touched() : this.options.onIdle(this)));
  }
}
