// The one error type. Every failure a user can see carries a code; main.ts
// maps codes to exit codes, so no other module decides how the process ends.

export type ErrorCode =
  | "usage" // bad flags or arguments
  | "manifest" // the manifest is missing or does not load
  | "config" // any other configuration problem
  | "unknown_id" // a run or action id prefix that matches nothing, or several
  | "no_journal" // a read-only command found no journal
  | "server" // an upstream server would not start or answer
  | "journal" // the journal cannot be read or written (corrupt, full, not writable)
  | "refused"; // the command ran and stopped short on purpose (drift, settled gate, …)

export class SynartesisError extends Error {
  readonly code: ErrorCode;
  readonly hint?: string;
  /** Extra lines shown under the message (one problem per line). */
  readonly details: string[];

  constructor(code: ErrorCode, message: string, options: { hint?: string; details?: string[]; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "SynartesisError";
    this.code = code;
    this.hint = options.hint;
    this.details = options.details ?? [];
  }
}

export function isSynartesisError(error: unknown): error is SynartesisError {
  return error instanceof SynartesisError;
}

/** A short, human message for anything thrown, without a stack trace. */
export function describeError(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
