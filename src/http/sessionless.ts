// Sessionless 2026-07-28 clients of `proxy --http` (R-ERA-5). Such a client
// opens no session: every POST is one request carrying who it is in `_meta`.
// The calls of one clientInfo.name with no gap longer than --http-idle form
// one run, unless the client names its run itself (`io.synartesis/run`, never
// forwarded): each run is served by one client session of the proxy, so the
// retry that answers an input_required (R-ERA-2/3) and a task's follow-ups
// (R-ERA-4) find the call they continue whichever connection they come on.
import { runLabelOf } from "../proxy/session/client-era.ts";
import { MODERN_VERSION, REMOVED_IN_MODERN, RUN_KEY } from "../jsonrpc/eras.ts";
import { deservesAnswer, isRecord, paramsOf, type Frame } from "../jsonrpc/frames.ts";
import { ErrorCode, errorLine } from "../jsonrpc/messages.ts";
import type { Logger } from "../log.ts";
import type { HttpSession } from "./http-session.ts";
import { headerRefusal } from "./modern-headers.ts";
import { OfferedTools, vouchFor } from "./param-check.ts";
import { jsonAnswer, refusal } from "./responses.ts";

const UNNAMED = "unnamed 2026-07-28 client";

/** Which run a sessionless request belongs to: the run it names, else its client's name (the two never share a run). */
export function runKeyOf(params: Record<string, unknown>): string {
  const meta = isRecord(params._meta) ? params._meta : {};
  const named = meta[RUN_KEY];
  if (typeof named === "string" && named.trim()) return `run:${named}`;
  return `client:${runLabelOf(params) ?? UNNAMED}`;
}

export class SessionlessRuns {
  private readonly byRun = new Map<string, HttpSession>();
  private readonly offered: OfferedTools;

  constructor(
    /** A new session for a run that has none (or whose session is ending); a response when none can be opened (too many are). */
    private readonly open: () => HttpSession | Response,
    private readonly log: Logger,
    /** Why a method is not found here, when the proxy knows before anything runs (see methodNotFound). */
    private readonly notFound: (method: string) => string | undefined,
  ) {
    this.offered = new OfferedTools(log);
  }

  /** A session ended: a later request of its run opens a new one. */
  ended(session: HttpSession): void {
    for (const [key, held] of this.byRun) if (held === session) this.byRun.delete(key);
  }

  /**
   * One POST of a sessionless client: one request (answered on this POST's
   * own response) once its headers say what its body says; a notification is
   * taken and dropped (the binding defines none for HTTP); anything else is
   * refused. A method the proxy does not serve is 404 with -32601, as the
   * binding says, before any run is opened or server started.
   */
  post(request: Request, frames: Frame[], batch: boolean): Response | Promise<Response> {
    if (batch || frames.length !== 1)
      return refusal(400, "Invalid Request: a 2026-07-28 POST carries one JSON-RPC message, not a batch", { code: ErrorCode.InvalidRequest });
    const frame = frames[0]!;
    switch (frame.kind) {
      case "notification":
        this.log.debug("a notification from a sessionless client; nothing to do with it", { method: frame.msg.method });
        return new Response(null, { status: 202 });
      case "response":
        return refusal(400, "Invalid Request: a 2026-07-28 client sends no responses (input comes back in a retry's inputResponses)", {
          code: ErrorCode.InvalidRequest,
        });
      case "invalid":
        return jsonAnswer(400, deservesAnswer(frame) ? errorLine(frame.id, frame.code, frame.message) : errorLine(null, frame.code, frame.message));
    }
    const refused = headerRefusal(request.headers, frame);
    if (refused) return jsonAnswer(400, errorLine(frame.id, refused.code, refused.message, refused.data));
    const method = frame.msg.method;
    const notFound = REMOVED_IN_MODERN.has(method) ? `Method not found: ${method} (not part of ${MODERN_VERSION})` : this.notFound(method);
    if (notFound) return jsonAnswer(404, errorLine(frame.id, ErrorCode.MethodNotFound, notFound));
    const params = paramsOf(frame.msg);
    const session = this.sessionFor(runKeyOf(params));
    if (session instanceof Response) return session;
    return session.postAlone(frame, {
      signal: request.signal,
      ...(frame.msg.method === "tools/call" && { vouch: vouchFor(request.headers, params.name) }),
      ...(frame.msg.method === "tools/list" && { rewrite: this.offered.answer }),
    });
  }

  private sessionFor(key: string): HttpSession | Response {
    const held = this.byRun.get(key);
    if (held && !held.ended) return held;
    const session = this.open();
    if (session instanceof Response) return session;
    this.byRun.set(key, session);
    return session;
  }
}
