// Asking a client for input while one of its requests is being worked on
// (R-ERA-2, R-ERA-3). A 2025-era client is sent server→client requests and
// answers them; a 2026-era client gets its attempt answered `input_required`
// (with a requestState of Synartesis's own) and answers by retrying: the retry
// that carries that state continues the same request. And a 2025-era server's
// requests during a 2026-era client's call are asked of the client that way,
// the server's call kept open meanwhile.
import { capabilityFor } from "../../jsonrpc/eras.ts";
import { isRecord, type RequestFrame } from "../../jsonrpc/frames.ts";
import { idKey } from "../../jsonrpc/json-check.ts";
import { ErrorCode, errorLine, resultLine } from "../../jsonrpc/messages.ts";
import type { Upstream } from "../../servers/upstream.ts";
import type { Asked, AskClient, ClientRequest, InputRequests } from "./client-request.ts";
import { MAX_INPUT_ROUNDS } from "../calls/exchange.ts";

/** How long a 2026-era client has to retry with the input it was asked for (a person may be answering). */
export const INPUT_WAIT_MS = 10 * 60_000;
const STATE_PREFIX = "synartesis.";

/** Why the client cannot be asked these, if it cannot: it did not declare the capability for this request. */
function undeclared(request: ClientRequest, requests: InputRequests): string | undefined {
  for (const { method } of Object.values(requests)) {
    const capability = capabilityFor(method);
    if (!capability) return `the server asked for ${method}, which is not a request a client answers with input`;
    if (!isRecord(request.envelope.clientCapabilities[capability]))
      return `the server asked for ${method}, but the client did not declare the ${capability} capability`;
  }
  return undefined;
}

/** A 2025-era client is asked by server→client requests (`send` writes one and resolves to its answer). */
export function askByRequests(send: (request: ClientRequest, method: string, params: unknown) => Promise<unknown>): AskClient {
  return async (request, requests) => {
    const refused = undeclared(request, requests);
    if (refused) return { responses: {}, refused };
    const keys = Object.keys(requests);
    const answers = await Promise.allSettled(keys.map((key) => send(request, requests[key]!.method, requests[key]!.params)));
    const responses: Record<string, unknown> = {};
    for (const [index, answer] of answers.entries()) {
      const key = keys[index]!;
      if (answer.status === "rejected")
        return { responses, refused: `the client refused the server's ${requests[key]!.method} request (${(answer.reason as Error).message})` };
      responses[key] = answer.value;
    }
    return { responses };
  };
}

/** A request's params carry a requestState of Synartesis's: it is a retry that continues an earlier request. */
export function isContinuation(params: Record<string, unknown>): boolean {
  return typeof params.requestState === "string" && params.requestState.startsWith(STATE_PREFIX);
}

interface Waiting {
  request: ClientRequest;
  resolve(params: Record<string, unknown>): void;
  reject(error: Error): void;
  timer: ReturnType<typeof setTimeout>;
}

/** 2026-era clients: attempts answered input_required, and the retries that continue them. */
export class Retries {
  private readonly waiting = new Map<string, Waiting>();

  constructor(
    /** Answer the request's current attempt with this interim result (it does not end the request). */
    private readonly answerInterim: (request: ClientRequest, line: string) => void,
    private readonly waitMs = INPUT_WAIT_MS,
  ) {}

  ask: AskClient = (request, requests) => {
    // A request the client cancelled, or that has its answer, has no retry to come.
    if (request.cancelled || request.done) return Promise.resolve({ responses: {}, refused: "the client no longer waits for this request" });
    const refused = undeclared(request, requests);
    if (refused) return Promise.resolve({ responses: {}, refused });
    const state = `${STATE_PREFIX}${crypto.randomUUID()}`;
    const retried = new Promise<Record<string, unknown>>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(state);
        reject(new Error(`the client did not retry with the input within ${this.waitMs / 60_000} minutes`));
      }, this.waitMs);
      this.waiting.set(state, { request, resolve, reject, timer });
    });
    this.answerInterim(request, resultLine(request.id, { resultType: "input_required", inputRequests: requests, requestState: state }));
    return retried.then((params): Asked => ({ responses: isRecord(params.inputResponses) ? params.inputResponses : {} }));
  };

  /**
   * The request a retry continues, with what to do once it is attached (hand
   * the retry's input on), or why it continues nothing: a state not issued
   * here (or expired), or a retry of another call than the one asked.
   */
  resume(
    params: Record<string, unknown>,
    identity: string,
    /** Why the retry may not continue its request (it keeps waiting for one that may), if it may not. */
    refuse: (request: ClientRequest) => { code: number; message: string } | undefined = () => undefined,
  ): { request: ClientRequest; proceed(): void } | { error: string; code?: number } {
    const state = String(params.requestState);
    const waiting = this.waiting.get(state);
    if (!waiting)
      return { error: "Invalid params: invalid or expired requestState (Synartesis no longer waits for this retry); make the call again from the start" };
    if (waiting.request.identity !== identity)
      return { error: "Invalid params: this requestState belongs to another call; a retry must repeat the call it answers (same tool, same arguments)" };
    const refused = refuse(waiting.request);
    if (refused) return { error: refused.message, code: refused.code };
    this.waiting.delete(state);
    clearTimeout(waiting.timer);
    return { request: waiting.request, proceed: () => waiting.resolve(params) };
  }

  /** Whether some request waits for its client's retry (a person may be answering what it asked). */
  get awaited(): boolean {
    return this.waiting.size > 0;
  }

  /** No retry will come (the client left): every request waiting for one stops waiting. */
  abandonAll(reason: string): void {
    for (const waiting of this.waiting.values()) {
      clearTimeout(waiting.timer);
      waiting.reject(new Error(reason));
    }
    this.waiting.clear();
  }
}

/**
 * A 2025-era server's requests made during one 2026-era client's call: asked
 * of the client as input_required rounds; each answer goes back to the
 * server, whose call stayed open meanwhile. What the client refuses, or
 * never answers, the server gets an error for, so that its call can end.
 */
export class HeldServerRequests {
  private readonly held = new Map<string, { upstream: Upstream; frame: RequestFrame }>();
  private asking = false;
  private next = 1;

  constructor(private readonly request: ClientRequest) {}

  add(upstream: Upstream, frame: RequestFrame): void {
    this.held.set(`${frame.msg.method.replace("/", "_")}_${this.next++}`, { upstream, frame });
    if (this.asking) return;
    this.asking = true;
    // Requests a server sends together go to the client in one round.
    queueMicrotask(() => void this.askRounds());
  }

  /** The server withdrew a request (notifications/cancelled): the client's answer to it, if any comes, is dropped. */
  withdraw(upstream: Upstream, requestIdText: string): void {
    for (const [key, held] of this.held) if (held.upstream === upstream && held.frame.id.key === idKey(requestIdText)) this.held.delete(key);
  }

  private async askRounds(): Promise<void> {
    for (let round = 1; this.held.size; round++) {
      const requests: InputRequests = {};
      for (const [key, { frame }] of this.held) requests[key] = { method: frame.msg.method, ...(frame.msg.params ? { params: frame.msg.params } : {}) };
      let asked: Asked;
      try {
        asked =
          round > MAX_INPUT_ROUNDS ? { responses: {}, refused: `the client did not answer in ${MAX_INPUT_ROUNDS} rounds` } : await this.request.ask(requests);
      } catch (error) {
        asked = { responses: {}, refused: (error as Error).message };
      }
      for (const [key, { upstream, frame }] of [...this.held]) {
        if (Object.hasOwn(asked.responses, key)) upstream.sendRaw(resultLine(frame.id, asked.responses[key]));
        else if (asked.refused) upstream.sendRaw(errorLine(frame.id, ErrorCode.InternalError, `Synartesis: ${asked.refused}`));
        else continue;
        this.held.delete(key);
      }
    }
    this.asking = false;
  }
}
