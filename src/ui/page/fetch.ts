// The page's calls to its server. Errors carry the server's message (and hint).
import type { Envelope, UndoEvent } from "../views.ts";

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly hint?: string,
  ) {
    super(message);
  }
}

/** Called when the server says this browser is not signed in (the ui was restarted, say). */
let onSignedOut: (message: string) => void = () => {};
export function whenSignedOut(handler: (message: string) => void): void {
  onSignedOut = handler;
}

async function failure(response: Response): Promise<ApiError> {
  let body: { error?: string; hint?: string } = {};
  try {
    body = await response.json();
  } catch {}
  const error = new ApiError(body.error ?? `the server answered ${response.status}`, response.status, body.hint);
  if (response.status === 401) onSignedOut(error.message);
  return error;
}

export async function getView<T>(path: string): Promise<Envelope<T>> {
  const response = await fetch(path, { headers: { Accept: "application/json" }, cache: "no-store" });
  if (!response.ok) throw await failure(response);
  return response.json();
}

export async function post<T>(path: string, body: unknown): Promise<T> {
  const response = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  if (!response.ok) throw await failure(response);
  return response.json();
}

/** POST, then hand each line of the NDJSON answer to `onEvent` as it arrives. */
export async function stream(path: string, body: unknown, onEvent: (event: UndoEvent) => void): Promise<void> {
  const response = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  if (!response.ok || !response.body) throw await failure(response);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (value) buffer += value;
    let newline: number;
    while ((newline = buffer.indexOf("\n")) !== -1) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      if (line.trim() !== "") onEvent(JSON.parse(line) as UndoEvent);
    }
    if (done) break;
  }
}
