// What a link to one server is (link.ts makes them; stdio-link.ts and
// http-link.ts are the real ones): lines both ways, and how it ends.
import type { Logger } from "../log.ts";
import type { ServerSpec } from "../manifest/types.ts";

export interface Link {
  /** Send one line; a promise when the write completes later (it may fail then). */
  send(line: string): void | Promise<void>;
  /** `quick`: no grace for the server to finish (a second signal). */
  close(quick?: boolean): Promise<void>;
  /** A write failed because the server closed its input: resolves once the link is closed (it exited, or it was stopped). */
  closedInput?(): Promise<void>;
  setProtocolVersion?(version: string): void;
}

export interface LinkEvents {
  onLine(line: string): void;
  /** The link is gone: "stopped" when it was closed on purpose, else why (it exited, it closed the connection). */
  onClose(reason: string): void;
  /** A line the server wrote to stderr (a process's diagnostics). */
  onStderr(line: string): void;
}

export type Connector = (spec: ServerSpec, events: LinkEvents, log: Logger) => Promise<Link>;
