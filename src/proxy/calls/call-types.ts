// What the tools/call pipeline works with (calls.ts, pre-read.ts): the
// context a session gives it, and one call as the client made it.
import type { Journal, JournalError } from "../../journal/journal.ts";
import type { Logger } from "../../log.ts";
import type { Matcher } from "../../manifest/match.ts";
import type { Upstream } from "../../servers/upstream.ts";
import type { ArrivalTicket } from "./arrival.ts";
import type { ClientRequest } from "../session/client-request.ts";
import type { GateContext } from "../policy/gate.ts";
import type { ServerTurn } from "../pool/server-turns.ts";

export interface CallContext extends GateContext {
  journal: Journal;
  log: Logger;
  matcher: Matcher;
  upstream(server: string): Upstream;
  /** The journal failed (the session stops when it is broken). */
  onJournalError?(error: JournalError): void;
  /** Why nothing more can be recorded (the journal was deleted or replaced), if so. */
  recordingStopped?(): Promise<string | undefined>;
  /** The file of Synartesis's own that these arguments name, if any (issue 13 item 10). */
  protectedTarget?(server: string, args: unknown): { what: string; path: string } | undefined;
  /** Announce a call newly held for a person (R-PEOPLE-3): `notify:` in the manifest. */
  announceHeld?(notice: { action: string; server: string; tool: string; args: unknown; reason: string }): void;
  /** Follow a task a server runs (woken when a notification says it changed); returns the unfollow. */
  followTask?(upstream: Upstream, taskId: string, wake: () => void): () => void;
}

export interface ToolCall {
  /** The client's request id, exactly as it wrote it (JSON text). */
  clientId: string;
  server: string;
  tool: string;
  args: Record<string, unknown>;
  /** The request line to send upstream (the tool's own name, any id). */
  line: string;
  /** params besides name and arguments (e.g. _meta), for the line sent once a person approved the call. */
  otherParams: Record<string, unknown>;
  /** The client's progress token: progress from the server keeps the call's timeout from expiring. */
  progressToken?: unknown;
  /** Answer the client now, before the call is done (a task handle, while Synartesis follows the task). */
  answerNow?(line: string): void;
  /** The client's request: whether it cancelled it (checked before anything is forwarded), whose it is, how its client is asked for input. */
  origin: ClientRequest;
  /**
   * Its place in the queue that serialises mutating calls per server
   * (R-PROXY-6), taken when the request arrived, so calls run in the order
   * they came whatever each awaited first (the journal, a tool list). Given
   * up at once by a call that turns out read-only.
   */
  turn: ServerTurn;
  /** Its number in the run, taken as the request arrived (the row it records takes it). */
  arrival?: ArrivalTicket;
}
