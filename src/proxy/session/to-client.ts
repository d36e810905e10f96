// Requests that go to one client: servers' requests, forwarded under ids of the
// session's own (one id space per connection), and the proxy's own questions
// (a sign-in offered by URL elicitation). Each answer goes back where its
// request came from, with the id its sender wrote.
import { numberKey, type InvalidFrame, type MessageId, type NotificationFrame, type RequestFrame, type ResponseFrame } from "../../jsonrpc/frames.ts";
import { idKey } from "../../jsonrpc/json-check.ts";
import { ErrorCode, errorLine, messageLine } from "../../jsonrpc/messages.ts";
import { rawMember, withId, withIdText } from "../../jsonrpc/raw-json.ts";
import type { Logger } from "../../log.ts";
import type { Upstream } from "../../servers/upstream.ts";

/** A server's own request id, unique across servers. */
const originalKey = (upstream: Upstream, key: string) => `${upstream.name}\u0000${key}`;

export class ToClient {
  private nextId = 1;
  /** By the id key the client sees: the server request it carries. */
  private readonly forwarded = new Map<string, { upstream: Upstream; originalId: MessageId }>();
  private readonly byOriginal = new Map<string, number>();
  private readonly own = new Map<string, { resolve(result: unknown): void; reject(error: Error): void }>();

  constructor(private readonly log: Logger) {}

  /** A server's request, as the line to write to the client. */
  forward(upstream: Upstream, request: RequestFrame): string {
    const id = this.nextId++;
    this.forwarded.set(numberKey(id), { upstream, originalId: request.id });
    this.byOriginal.set(originalKey(upstream, request.id.key), id);
    return withId(request.raw, id);
  }

  /** A question of the proxy's own: the line to write, and the client's answer (rejected when it answers with an error). */
  ask(method: string, params: unknown): { line: string; answer: Promise<unknown> } {
    const id = this.nextId++;
    const answer = new Promise<unknown>((resolve, reject) => this.own.set(numberKey(id), { resolve, reject }));
    return { line: messageLine(method, params, id), answer };
  }

  /** The client answered: pass the answer on to whoever asked. */
  answered(response: ResponseFrame): void {
    const own = this.own.get(response.id.key);
    if (own) {
      this.own.delete(response.id.key);
      if ("error" in response.msg) own.reject(new Error(`the client answered with an error: ${response.msg.error.message}`));
      else own.resolve(response.msg.result);
      return;
    }
    const request = this.take(response.id.key);
    if (!request) return this.log.debug("response to no request of ours; ignored", { id: response.id.text });
    request.upstream.sendRaw(withIdText(response.raw, request.originalId.text));
  }

  /** The client answered with something that is not a response: whoever asked gets an error instead of waiting. */
  malformed(answer: InvalidFrame): void {
    const key = answer.id?.key;
    if (key === undefined) return;
    const why = "the client's answer was not a valid JSON-RPC response";
    const own = this.own.get(key);
    if (own) {
      this.own.delete(key);
      return own.reject(new Error(why));
    }
    const request = this.take(key);
    request?.upstream.sendRaw(errorLine(request.originalId, ErrorCode.InternalError, `Synartesis: ${why}`));
  }

  /** A server withdrew one of its requests: the line that tells the client, when the request went to it. */
  withdrawn(upstream: Upstream, cancelled: NotificationFrame): string | undefined {
    const requestIdText = rawMember(rawMember(cancelled.raw, "params") ?? "", "requestId");
    if (requestIdText === undefined) return undefined;
    const id = this.byOriginal.get(originalKey(upstream, idKey(requestIdText)));
    if (id === undefined) return undefined;
    this.take(numberKey(id));
    return JSON.stringify({ ...cancelled.msg, params: { ...cancelled.msg.params, requestId: id } });
  }

  /** The client is gone: every server still waiting is refused, every question of ours fails. */
  refuseAll(): void {
    for (const request of this.forwarded.values()) {
      request.upstream.sendRaw(errorLine(request.originalId, ErrorCode.InternalError, "Synartesis: the client disconnected before answering"));
    }
    this.forwarded.clear();
    this.byOriginal.clear();
    for (const own of this.own.values()) own.reject(new Error("the client disconnected before answering"));
    this.own.clear();
  }

  private take(key: string): { upstream: Upstream; originalId: MessageId } | undefined {
    const request = this.forwarded.get(key);
    if (!request) return undefined;
    this.forwarded.delete(key);
    this.byOriginal.delete(originalKey(request.upstream, request.originalId.key));
    return request;
  }
}
