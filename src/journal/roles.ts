// A backend's journal assembled from its store and its four roles (one file
// each in the backend's folder), every method's failure reported as a
// JournalError that names the journal: written once for both backends.
import {
  JournalError,
  type ApprovalsRole,
  type ChainRole,
  type Journal,
  type JournalStore,
  type RecordingRole,
  type RunsRole,
  type UndoRole,
} from "./journal.ts";

/** How a backend's failures become JournalErrors, and which are tried again. */
export interface FailureReporting {
  /** A failure of the backend as a JournalError (anything else unchanged). */
  asJournalError(error: unknown): unknown;
  /** Whether to run the call again after this failure (`attempt` counts from 1). */
  retryable?(error: unknown, attempt: number): boolean;
  /** Told of every call but close (a PostgreSQL journal's close waits for them). */
  track?(call: Promise<unknown>): void;
}

const STORE_METHODS = [
  "proveWritable",
  "identityLost",
  "close",
  "appliedMigrations",
  "watchChanges",
  "changeMark",
] as const satisfies readonly (keyof JournalStore)[];

type Method = (...args: unknown[]) => Promise<unknown>;

/** The journal whose methods are the store's and the roles' (each role's async methods), with failures reported. */
export function assembleJournal(
  store: JournalStore,
  roles: { runs: RunsRole; recording: RecordingRole; approvals: ApprovalsRole; undo: UndoRole; chain: ChainRole },
  reporting: FailureReporting,
): Journal {
  const journal: Record<string, unknown> = {};
  for (const name of ["path", "warnings", "secretsFromEnvironment"] as const) Object.defineProperty(journal, name, { get: () => store[name] });
  const expose = (owner: object, name: string) => {
    const method = (owner as Record<string, Method>)[name]!;
    journal[name] = reported(name, (args) => method.apply(owner, args), reporting);
  };
  for (const name of STORE_METHODS) expose(store, name);
  for (const role of Object.values(roles)) {
    const prototype = Object.getPrototypeOf(role) as object;
    for (const name of Object.getOwnPropertyNames(prototype)) {
      const method = Object.getOwnPropertyDescriptor(prototype, name)?.value;
      if (typeof method === "function" && method.constructor.name === "AsyncFunction") expose(role, name);
    }
  }
  return journal as unknown as Journal;
}

function reported(name: string, call: (args: unknown[]) => Promise<unknown>, reporting: FailureReporting): Method {
  const { asJournalError, retryable = () => false, track } = reporting;
  const attempt = async (args: unknown[]) => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await call(args);
      } catch (error) {
        if (retryable(error, attempt)) continue;
        throw error instanceof JournalError ? error : asJournalError(error);
      }
    }
  };
  if (!track || name === "close") return (...args) => attempt(args);
  return (...args) => {
    const running = attempt(args);
    track(running);
    return running;
  };
}
