// The requests one server owes an answer: each with its timeout (re-armed by
// progress, up to timeout_max), its progress token, and the client session it
// was sent for (server requests are routed back by that).
import type { Response } from "../jsonrpc/frames.ts";
import { callDeadlineMs, type ServerSpec } from "../manifest/types.ts";
import type { SignInRequired } from "../auth/provider.ts";

/** Why a request got no answer: it timed out, or the server went away. */
export class UpstreamError extends Error {
  constructor(
    message: string,
    /** not_sent: the request never reached the server, so it certainly did not run. */
    readonly kind: "timeout" | "closed" | "start" | "cancelled" | "not_sent",
    /** Set when the server refused for want of a sign-in that a person could give now. */
    readonly signIn?: SignInRequired,
  ) {
    super(message);
    this.name = "UpstreamError";
  }
}

/**
 * A 4xx status (the server refused the request: a lost session, bad auth) or a
 * connection that never opened: the server did not run it. A 5xx, or a
 * connection that broke, may come after the server ran it: unknown.
 */
export function refusedBeforeRunning(error: Error): boolean {
  const status = (error as { code?: unknown }).code;
  if (typeof status === "number") return status >= 400 && status < 500;
  return /ECONNREFUSED|Unable to connect|ConnectionRefused|ENOTFOUND/i.test(`${error.message} ${(error as { cause?: Error }).cause?.message ?? ""}`);
}

export interface Reply {
  /** The response line exactly as the server sent it. */
  raw: string;
  msg: Response;
}

/** On whose behalf a request is sent: a server request that arrives meanwhile is routed back to that client session. */
export interface Origin {
  readonly session: object;
  /**
   * Aborts when the client cancels the request it carries: not forwarded
   * when it has not been yet, cancelled at the server while it is (the reads
   * around it still run). The abort's reason, when a string, is the client's.
   */
  readonly signal?: AbortSignal;
}

export interface Pending {
  method: string;
  origin: Origin | undefined;
  resolve(reply: Reply): void;
  reject(error: UpstreamError): void;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** Start the timeout again: progress from the server shows it is still working. */
  rearm(): void;
  progressKey?: string;
}

export class PendingRequests {
  private readonly byId = new Map<number, Pending>();
  /** Progress token (as JSON) → the requests that carry it. */
  private readonly progress = new Map<string, Set<number>>();

  constructor(
    private readonly spec: Pick<ServerSpec, "name" | "timeoutMs" | "timeoutMaxMs">,
    /** A request timed out: tell the server it is no longer wanted. */
    private readonly expired: (id: number) => void,
  ) {}

  /** Wait for the answer to request `id` (registered before it is sent). */
  wait(id: number, method: string, origin: Origin | undefined, progressToken: unknown): Promise<Reply> {
    return new Promise<Reply>((resolve, reject) => {
      const timeoutMs = this.spec.timeoutMs;
      const expire = (why: string) => {
        this.take(id);
        this.expired(id);
        reject(new UpstreamError(why, "timeout"));
      };
      const timedOut = () => expire(`server "${this.spec.name}" did not answer ${method} within ${timeoutMs / 1000} s`);
      const deadlineMs = Math.max(timeoutMs, callDeadlineMs(this.spec));
      const pastDeadline = () =>
        expire(`server "${this.spec.name}" kept reporting progress but did not answer ${method} within its timeout_max of ${deadlineMs / 1000} s`);
      const started = performance.now();
      const progressKey = progressToken === undefined ? undefined : JSON.stringify(progressToken);
      const entry: Pending = {
        method,
        origin,
        resolve,
        reject,
        timer: timeoutMs > 0 ? setTimeout(timedOut, timeoutMs) : undefined,
        progressKey,
        rearm: () => {
          if (timeoutMs <= 0) return;
          clearTimeout(entry.timer);
          const left = deadlineMs - (performance.now() - started);
          entry.timer = left < timeoutMs ? setTimeout(pastDeadline, Math.max(0, left)) : setTimeout(timedOut, timeoutMs);
        },
      };
      if (progressKey !== undefined) this.progress.set(progressKey, (this.progress.get(progressKey) ?? new Set()).add(id));
      this.byId.set(id, entry);
    });
  }

  /** Stop waiting for a request (it was answered, or given up): its timer and its progress token go with it. */
  take(id: number): Pending | undefined {
    const entry = this.byId.get(id);
    if (!entry) return undefined;
    this.byId.delete(id);
    clearTimeout(entry.timer);
    if (entry.progressKey !== undefined) {
      const ids = this.progress.get(entry.progressKey);
      ids?.delete(id);
      if (ids?.size === 0) this.progress.delete(entry.progressKey);
    }
    return entry;
  }

  /** Progress for this token: the requests carrying it are still being worked on. */
  progressed(token: unknown): void {
    for (const id of this.progress.get(JSON.stringify(token)) ?? []) this.byId.get(id)?.rearm();
  }

  /** Fail every request (of one session, when given) with `error`. */
  rejectAll(error: UpstreamError, session?: object): void {
    for (const [id, entry] of [...this.byId]) if (session === undefined || entry.origin?.session === session) this.take(id)?.reject(error);
  }

  /** On whose behalf the requests in flight here were sent (only those carrying `progressToken`, when one is given). */
  origins(progressToken?: unknown): Set<Origin> {
    const ids = progressToken === undefined ? this.byId.keys() : (this.progress.get(JSON.stringify(progressToken)) ?? []);
    const origins = new Set<Origin>();
    for (const id of ids) {
      const origin = this.byId.get(id)?.origin;
      if (origin) origins.add(origin);
    }
    return origins;
  }

  /** The client sessions with a request in flight here (only those carrying `progressToken`, when one is given). */
  sessions(progressToken?: unknown): Set<object> {
    return new Set([...this.origins(progressToken)].map((origin) => origin.session));
  }

  /** The requests of one client session in flight here (which of its calls a server's request belongs to). */
  originsOf(session: object): Set<Origin> {
    const origins = new Set<Origin>();
    for (const entry of this.byId.values()) if (entry.origin?.session === session) origins.add(entry.origin);
    return origins;
  }
}
