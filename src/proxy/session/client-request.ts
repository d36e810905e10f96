// One request of a client, from its arrival until it is answered: the id it
// came with, its AbortSignal (the client cancelled it: whatever was forwarded
// for it is cancelled at its server), what the client said of itself for it, and the
// channel its answer (and whatever a server sends on its behalf meanwhile)
// goes out on. A 2026-era client answers a server's request for input by
// retrying (SEP-2322): the retry continues this request under its own id (and
// its own channel), so a call that needs input is still one request, one
// journal action.
import { callKey } from "../../canonical.ts";
import type { Envelope } from "../../jsonrpc/eras.ts";
import { isRecord, type MessageId } from "../../jsonrpc/frames.ts";
import type { Origin } from "../../servers/upstream.ts";
import type { ServerTurn } from "../pool/server-turns.ts";
import type { ArrivalTicket } from "../calls/arrival.ts";

/**
 * Where the lines for one attempt of a client request go. Over stdio every
 * line goes to the one output; over HTTP a request's lines ride on the
 * response to the POST that carried it, which ends with its answer.
 */
export interface RequestChannel {
  /** A server's request or notification sent on the request's behalf, before its answer. */
  send(line: string): void;
  /** Its answer (none when the client cancelled it): nothing more follows. Called once. */
  end(answer?: string): void;
  /** The id the client wrote, when the request runs under another (over HTTP, a sessionless client's). */
  idText?: string;
  /**
   * Over HTTP in the 2026 era, a tools/call is about to run (its tool known):
   * why its request may not run it, if it may not (its Mcp-Param-* headers
   * disagree with its arguments as the tool's inputSchema marks them: -32020;
   * the marking itself is invalid). Nothing has run or been recorded yet.
   */
  vouch?(inputSchema: unknown, args: Record<string, unknown>): { code: number; message: string } | undefined;
}

/** Input the client was asked for (key → its answer), or why it could not be had. */
export interface Asked {
  responses: Record<string, unknown>;
  refused?: string;
}

/** What a server asks of the client: key → a sampling, elicitation or roots request. */
export type InputRequests = Record<string, { method: string; params?: unknown }>;

/** How a request's client is asked for input: server→client requests (2025 era) or input_required and a retry (2026). */
export type AskClient = (request: ClientRequest, requests: InputRequests) => Promise<Asked>;

/** A signal that never aborts (a request outside any session's end). */
const NEVER = new AbortController().signal;

export class ClientRequest implements Origin {
  private readonly cancellation = new AbortController();
  /** Aborts when the client cancels it (MCP cancellation: it gets no answer) or it is answered at shutdown; nothing more is forwarded for it. */
  readonly signal: AbortSignal = this.cancellation.signal;
  private endOverwhelmed: (() => void) | undefined;
  /** A tools/call's place in its server's queue, taken as it arrived (given up when it is answered, if not before). */
  turn: ServerTurn | undefined;
  /** A tools/call's number in the run, taken as it arrived. */
  arrival: ArrivalTicket | undefined;
  /** The id of the attempt being worked on: the request's own, then each retry's. */
  id: MessageId;
  /** Whether the attempt under `id` has its answer already (input_required: the client is to retry). */
  attemptAnswered = false;
  /** The request's final answer, when it came while the client had yet to retry. */
  finalLine: string | undefined;
  /** Answered for good (a task handle may be answered while Synartesis goes on following the task): nothing more is sent. */
  done = false;
  /** Aborts, with why, when the session stops waiting on its servers (it is ending): work still going on stops. */
  ending: AbortSignal = NEVER;
  private readonly firstId: MessageId;
  private identityKey: string | undefined;
  /** Whether the current attempt's channel has ended (it carried its answer, or was closed without one). */
  private channelEnded = false;

  constructor(
    /** The client session it came from (server requests meanwhile are routed back to it). */
    readonly session: object,
    id: MessageId,
    readonly method: string,
    private readonly params: Record<string, unknown>,
    /** Who the client is and what it can do, for this request (2025 era: as it said at initialize). */
    readonly envelope: Envelope,
    private readonly askClient: AskClient,
    private channel: RequestChannel,
  ) {
    this.id = id;
    this.firstId = id;
  }

  /** A retry continues the request: what it is sent from now on goes on the retry's channel. */
  attach(channel: RequestChannel): void {
    this.channel = channel;
    this.channelEnded = false;
  }

  /** The inputSchema of the tool a call was let run with (its retries are held to it too). */
  inputSchema: unknown;

  /** Whether the attempt's request (its HTTP headers) may run the call, see RequestChannel.vouch. */
  vouch(inputSchema: unknown, args: Record<string, unknown>): { code: number; message: string } | undefined {
    this.inputSchema = inputSchema;
    return this.channel.vouch?.(inputSchema, args);
  }

  /** A server's message on its behalf, while it waits. */
  send(line: string): void {
    if (!this.channelEnded) this.channel.send(line);
  }

  /** End the current attempt, with its answer (none: cancelled, or closed at the end), once. */
  endAttempt(line?: string): void {
    if (this.channelEnded) return;
    this.channelEnded = true;
    this.channel.end(line);
  }

  /** What identifies the call: a retry must be of the same method, name and arguments (worked out only when a retry is awaited). */
  get identity(): string {
    this.identityKey ??= requestIdentity(this.method, this.params);
    return this.identityKey;
  }

  /** Whether a retry continues it (its answers then carry the retry's id, not the one the pipeline started with). */
  get continued(): boolean {
    return this.firstId !== this.id;
  }

  /** The id the client wrote for the attempt being worked on (a subscription is known by it). */
  get clientIdText(): string {
    return this.channel.idText ?? this.id.text;
  }

  /** Whether the client cancelled it, or it was answered at shutdown. */
  get cancelled(): boolean {
    return this.signal.aborted;
  }

  /** What a cancellation stops, for a request that is not forwarded (a subscription): at once when it was cancelled already. */
  whenCancelled(cancel: () => void): void {
    if (this.signal.aborted) cancel();
    else this.signal.addEventListener("abort", cancel, { once: true });
  }

  /** The client cancelled it (`reason`, as it said), or nothing more is to be sent for it (answered at shutdown). */
  cancel(reason?: string): void {
    this.cancellation.abort(reason);
  }

  /** How it ends when its channel cannot keep up (a subscription: gracefully). */
  whenOverwhelmed(end: () => void): void {
    this.endOverwhelmed = end;
  }

  /** Its channel cannot keep up (an HTTP client that does not read what is sent on it): false when nothing ends it then. */
  overwhelmed(): boolean {
    this.endOverwhelmed?.();
    return this.endOverwhelmed !== undefined;
  }

  /** Ask the client for input (what a server needs to go on with this request). */
  ask(requests: InputRequests): Promise<Asked> {
    return this.askClient(this, requests);
  }
}

/** A request's method, name and arguments (or resource), canonical: what a retry must repeat. */
export function requestIdentity(method: string, params: Record<string, unknown>): string {
  const { name, arguments: args, uri } = params;
  return `${method} ${JSON.stringify(name ?? uri ?? null)} ${callKey(isRecord(args) ? args : {})}`;
}
