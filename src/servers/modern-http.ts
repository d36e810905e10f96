// Requests to a `url:` server in the 2026-07-28 era (R-ERA-1). The v1 SDK's
// HTTP transport sends none of the headers that binding requires, so these
// go out here: each request its own POST with MCP-Protocol-Version,
// Mcp-Method and (for a call, a prompt, a resource read) Mcp-Name, answered
// by one JSON object or by an event stream of lines about that request.
// Closing that response is how such a request is cancelled. A refusal (HTTP
// 4xx) is the request's answer, as a JSON-RPC error; anything else that keeps
// the answer away (a 5xx, a dropped connection, a response that ends without
// it) fails the send as a link's write fails, so a call's outcome is unknown
// (or the call was not sent, when the server could not be reached at all).
// As a client of the binding, it honours `x-mcp-header`: tools whose marking
// breaks the binding's constraints are left out of the server's tools/list
// answers (a warning names each), and a call carries an Mcp-Param-* header
// for each marked parameter; refused for a header the marking it knows did
// not ask for (HeaderMismatch), it lists the tools again and resends once.
import { claimedVersion, MODERN_VERSIONS } from "../jsonrpc/eras.ts";
import { errorCodeOf, isId, isRecord } from "../jsonrpc/frames.ts";
import { encodedHeader, NAMED_METHODS } from "../jsonrpc/header-values.ts";
import { ErrorCode, errorLine, HEADER_MISMATCH } from "../jsonrpc/messages.ts";
import { headerMarks, paramHeaders, screenToolsAnswer, type HeaderMark } from "../jsonrpc/param-headers.ts";

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
  // A CR at the end of what came so far may be the first half of a CRLF: it waits for the next chunk.
  const lineEnd = /\r\n|\r(?!$)|\n/g;
  // Where the search for a line end goes on: a long line that comes in many chunks is scanned once, not again with each.
  let scanned = 0;
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let start = 0;
    lineEnd.lastIndex = scanned;
    let end: RegExpExecArray | null;
    while ((end = lineEnd.exec(buffer))) {
      const event = field(buffer.slice(start, end.index));
      start = lineEnd.lastIndex = end.index + end[0].length;
      if (event !== undefined) yield event;
    }
    buffer = buffer.slice(start);
    scanned = Math.max(0, buffer.length - 1);
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

  /** The marked parameters of each tool, from the server's tools/list answers. */
  private readonly marks = new Map<string, HeaderMark[]>();
  private readonly warned = new Set<string>();
  private ownIds = 0;

  constructor(
    private readonly url: URL,
    /** The manifest's headers for this server. */
    private readonly headers: Record<string, string>,
    private readonly onLine: (line: string) => void,
    /** A tool of the server's is left out: its marking is invalid. */
    private readonly onDropped: (tool: string, reason: string) => void = () => {},
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

  /** Every open request is dropped (the link is closing). */
  close(): void {
    for (const request of this.open.values()) request.abort();
    this.open.clear();
  }

  /** The headers a request goes with: the manifest's, the binding's, and a call's Mcp-Param-* ones. */
  private headersFor(method: string, params: Record<string, unknown>, version: string): Record<string, string> {
    const field = NAMED_METHODS[method];
    const target = field ? params[field] : undefined;
    const marks = method === "tools/call" && typeof target === "string" ? this.marks.get(target) : undefined;
    return {
      ...this.headers,
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      "MCP-Protocol-Version": version,
      "Mcp-Method": method,
      ...(typeof target === "string" ? { "Mcp-Name": encodedHeader(target) } : {}),
      ...(marks ? paramHeaders(marks, params.arguments) : {}),
    };
  }

  /** A tools/list answer: the tools' markings learnt, and those that break the binding's constraints left out. */
  private listed(line: string): string {
    const screened = screenToolsAnswer(line);
    for (const tool of screened.kept) {
      const marked = isRecord(tool) && typeof tool.name === "string" ? headerMarks(tool.inputSchema) : undefined;
      if (marked && "marks" in marked) this.marks.set((tool as { name: string }).name, marked.marks);
    }
    for (const { name, reason } of screened.dropped) {
      this.marks.delete(name);
      if (!this.warned.has(`${name}\n${reason}`)) this.onDropped(name, reason);
      this.warned.add(`${name}\n${reason}`);
    }
    return screened.line;
  }

  /**
   * List the server's tools again (every page), to learn their markings: a
   * call was refused for its Mcp-Param-* headers. False when that failed.
   */
  private async relist(meta: unknown, signal: AbortSignal): Promise<boolean> {
    const envelope = isRecord(meta) ? Object.fromEntries(Object.entries(meta).filter(([key]) => key.startsWith("io.modelcontextprotocol/"))) : {};
    const version = claimedVersion({ _meta: envelope });
    if (typeof version !== "string") return false;
    let cursor: unknown;
    do {
      const id = `synartesis-marks-${++this.ownIds}`;
      const params = { ...(cursor === undefined ? {} : { cursor }), _meta: envelope };
      try {
        const body = JSON.stringify({ jsonrpc: "2.0", id, method: "tools/list", params });
        const response = await fetch(this.url, { method: "POST", headers: this.headersFor("tools/list", params, version), body, signal });
        const answer = await answerIn(response, JSON.stringify(id));
        const result = answer === undefined ? undefined : (JSON.parse(this.listed(answer)) as { result?: { nextCursor?: unknown } }).result;
        if (!result) return false;
        cursor = result.nextCursor;
      } catch {
        return false;
      }
    } while (typeof cursor === "string" && cursor !== "");
    return true;
  }

  private async post(line: string, id: string | number, method: string, params: Record<string, unknown>, version: string): Promise<void> {
    const idText = JSON.stringify(id);
    const abort = new AbortController();
    this.open.set(idText, abort);
    const deliver = (text: string) => this.onLine(method === "tools/list" && isAnswerTo(text, idText) ? this.listed(text) : text);
    try {
      let response = await fetch(this.url, { method: "POST", headers: this.headersFor(method, params, version), body: line, signal: abort.signal });
      // Nothing ran (the headers were checked first): with the tools' markings learnt again, the call goes once more.
      if (
        method === "tools/call" &&
        response.status === 400 &&
        errorCodeOf(await response.clone().text()) === HEADER_MISMATCH &&
        (await this.relist(params._meta, abort.signal))
      ) {
        response = await fetch(this.url, { method: "POST", headers: this.headersFor(method, params, version), body: line, signal: abort.signal });
      }
      if (response.ok && mediaType(response) === "text/event-stream" && response.body) {
        let answered = false;
        for await (const data of eventData(response.body)) {
          answered = isAnswerTo(data, idText);
          deliver(data);
          // The answer ends the request: what the stream may still carry (keep-alives) is not waited for.
          if (answered) break;
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
/** A response's Content-Type without its parameters, lower case. */
function mediaType(response: Response): string {
  return (response.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
}

/** The answer to the request with this id that a response carries (a JSON body, or the event that answers it in a stream). */
async function answerIn(response: Response, idText: string): Promise<string | undefined> {
  if (mediaType(response) !== "text/event-stream" || !response.body) {
    const text = await response.text();
    return isAnswerTo(text, idText) ? text : undefined;
  }
  for await (const data of eventData(response.body)) if (isAnswerTo(data, idText)) return data;
  return undefined;
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
