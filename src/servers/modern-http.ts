// Requests to a `url:` server in the 2026-07-28 era (R-ERA-1). The v1 SDK's
// HTTP transport sends none of the headers that binding requires, so these
// go out here: each request its own POST with MCP-Protocol-Version,
// Mcp-Method and (for a call, a prompt, a resource read) Mcp-Name, answered
// by one JSON object or by an event stream of lines about that request. A
// call also repeats in Mcp-Param-* headers the arguments its tool marks with
// `x-mcp-header` (learnt from the server's tools/list answers), which such a
// server checks against the body and refuses the call without.
// Closing that response is how such a request is cancelled. A refusal (HTTP
// 4xx) is the request's answer, as a JSON-RPC error; anything else that keeps
// the answer away (a 5xx, a dropped connection, a response that ends without
// it) fails the send as a link's write fails, so a call's outcome is unknown
// (or the call was not sent, when the server could not be reached at all).
import { ErrorCode } from "@modelcontextprotocol/sdk/types.js";
import { claimedVersion, MODERN_VERSIONS } from "../jsonrpc/eras.ts";
import { isId, isRecord } from "../jsonrpc/frames.ts";
import { encodedHeader, mirroredArguments, NAMED_METHODS, paramHeaders } from "../jsonrpc/header-values.ts";
import { errorLine } from "../jsonrpc/messages.ts";

/** How much of an HTTP error's body is quoted in the error a request gets. */
const QUOTED_BODY = 300;

/** The data of each event in an event stream, as it arrives (SSE: fields end at CR, LF or CRLF; events at a blank line). */
export async function* eventData(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  let buffer = "";
  let data: string[] = [];
  /** One field line: the data it adds, or (a blank line) the event it ends. */
  const field = (line: string): string | undefined => {
    if (line === "") {
      const event = data.length ? data.join("\n") : undefined;
      data = [];
      return event;
    }
    if (line === "data" || line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
    return undefined;
  };
  const decoder = new TextDecoder();
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let end: RegExpExecArray | null;
    // A CR at the end of what came so far may be the first half of a CRLF: it waits for the next chunk.
    while ((end = /\r\n|\r(?!$)|\n/.exec(buffer))) {
      const event = field(buffer.slice(0, end.index));
      buffer = buffer.slice(end.index + end[0].length);
      if (event !== undefined) yield event;
    }
  }
  field(buffer.replace(/\r$/, ""));
  if (data.length) yield data.join("\n");
}

/** A request whose answer did not come back: its outcome at the server is unknown (`code`: the HTTP status, when there was one). */
class LostAnswer extends Error {
  constructor(
    message: string,
    readonly code?: number,
  ) {
    super(message);
  }
}

export class ModernHttpRequests {
  /** Requests whose response is still open, by id text: aborting one is its cancellation. */
  private readonly open = new Map<string, AbortController>();
  /** By tool name: the arguments its calls mirror into Mcp-Param-* headers (from the server's tools/list answers). */
  private readonly mirrored = new Map<string, Map<string, string>>();

  constructor(
    private readonly url: URL,
    /** The manifest's headers for this server. */
    private readonly headers: Record<string, string>,
    private readonly onLine: (line: string) => void,
  ) {}

  /**
   * Send a line if it is this path's: a request carrying a 2026 envelope, or
   * the cancellation of one still open. Undefined: not this path's (a 2025-era
   * line). The promise rejects when a request's answer could not be had (as a
   * link's write does: the request then ends unknown, or not sent).
   */
  take(line: string): Promise<void> | undefined {
    if (!line.includes("io.modelcontextprotocol/protocolVersion") && !line.includes("notifications/cancelled")) return undefined;
    const message: unknown = JSON.parse(line);
    if (!isRecord(message) || typeof message.method !== "string") return undefined;
    const params = isRecord(message.params) ? message.params : {};
    if (message.method === "notifications/cancelled") {
      const cancelled = this.open.get(JSON.stringify(params.requestId));
      cancelled?.abort();
      return cancelled ? Promise.resolve() : undefined;
    }
    const version = claimedVersion(params);
    if (!isId(message.id) || typeof version !== "string" || !MODERN_VERSIONS.includes(version)) return undefined;
    return this.post(line, message.id, message.method, params, version);
  }

  /** Which arguments of each listed tool go into headers (a page of tools/list adds its tools). */
  private learnTools(text: string): void {
    const answer: unknown = JSON.parse(text);
    const tools = isRecord(answer) && isRecord(answer.result) ? answer.result.tools : undefined;
    if (!Array.isArray(tools)) return;
    for (const tool of tools) {
      if (!isRecord(tool) || typeof tool.name !== "string") continue;
      const mirrored = mirroredArguments(tool);
      if (mirrored.size > 0) this.mirrored.set(tool.name, mirrored);
      else this.mirrored.delete(tool.name);
    }
  }

  /** Every open request is dropped (the link is closing). */
  close(): void {
    for (const request of this.open.values()) request.abort();
    this.open.clear();
  }

  private async post(line: string, id: string | number, method: string, params: Record<string, unknown>, version: string): Promise<void> {
    const idText = JSON.stringify(id);
    const abort = new AbortController();
    this.open.set(idText, abort);
    const field = NAMED_METHODS[method];
    const target = field ? params[field] : undefined;
    const headers: Record<string, string> = {
      ...this.headers,
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      "MCP-Protocol-Version": version,
      "Mcp-Method": method,
      ...(typeof target === "string" ? { "Mcp-Name": encodedHeader(target) } : {}),
      ...(method === "tools/call" && typeof target === "string" ? paramHeaders(this.mirrored.get(target) ?? new Map(), params.arguments) : {}),
    };
    const deliver = (text: string) => {
      if (method === "tools/list" && isAnswerTo(text, idText)) this.learnTools(text);
      this.onLine(text);
    };
    try {
      const response = await fetch(this.url, { method: "POST", headers, body: line, signal: abort.signal });
      const type = (response.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
      if (response.ok && type === "text/event-stream" && response.body) {
        let answered = false;
        for await (const data of eventData(response.body)) {
          answered ||= isAnswerTo(data, idText);
          deliver(data);
        }
        if (!answered && !abort.signal.aborted) throw new LostAnswer("the server closed its response without answering");
        return;
      }
      const text = await response.text();
      if (isAnswerTo(text, idText)) return deliver(text);
      const said = `HTTP ${response.status} from the server${text.trim() ? `: ${errorText(text)}` : ""}`;
      // A 4xx is a refusal before anything ran: the request's answer is that refusal.
      if (response.status >= 400 && response.status < 500) return this.onLine(errorLine({ text: idText, key: "" }, ErrorCode.InternalError, said));
      throw new LostAnswer(said, response.status);
    } catch (error) {
      // Aborted: the request was cancelled, and gets no answer (MCP cancellation).
      if (!abort.signal.aborted) throw error;
    } finally {
      this.open.delete(idText);
    }
  }
}
/** Whether a line is the response to the request with this id. */
function isAnswerTo(text: string, idText: string): boolean {
  try {
    const message: unknown = JSON.parse(text);
    return isRecord(message) && !("method" in message) && ("result" in message || "error" in message) && JSON.stringify(message.id) === idText;
  } catch {
    return false;
  }
}

/** What an HTTP error's body says: a JSON-RPC error's message, else the start of its text. */
function errorText(text: string): string {
  try {
    const message: unknown = JSON.parse(text);
    if (isRecord(message) && isRecord(message.error) && typeof message.error.message === "string") return message.error.message;
  } catch {}
  return text.trim().slice(0, QUOTED_BODY);
}
