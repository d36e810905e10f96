// The page's calls to its server, each carrying the session's token as a
// bearer token (R-UI-5: no cookie). The token is traded once for the code in
// the address's fragment and kept in this origin's localStorage — this host
// and port only — so a reload, another tab and a link from an announcement
// (review_page) are signed in while this `synartesis ui` runs; the next one
// has a new token. Errors carry the server's message (and hint).
import type { Envelope, UndoEvent } from "../views.ts";

const TOKEN_KEY = "synartesis-ui-token";

/**
 * Sign this browser in: trade the address's #code=… for the token (then drop the
 * fragment from the address bar and history), or use the token kept before.
 * Resolves with why it could not, or undefined.
 */
export async function signIn(): Promise<string | undefined> {
  const code = /(?:^#|&)code=([A-Za-z0-9_-]+)/.exec(location.hash)?.[1];
  if (code) {
    history.replaceState(null, "", location.pathname + location.search);
    const response = await fetch("/api/session", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ code }) });
    const body = (await response.json().catch(() => ({}))) as { token?: string; error?: string };
    if (!response.ok || !body.token) return body.error ?? `signing in failed (${response.status})`;
    localStorage.setItem(TOKEN_KEY, body.token);
    return undefined;
  }
  return localStorage.getItem(TOKEN_KEY)
    ? undefined
    : "Not signed in: open the address synartesis ui printed (it carries the code that signs this browser in).";
}

function authorized(headers: Record<string, string> = {}): Record<string, string> {
  const token = localStorage.getItem(TOKEN_KEY);
  return token ? { ...headers, Authorization: `Bearer ${token}` } : headers;
}

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
  const response = await fetch(path, { headers: authorized({ Accept: "application/json" }), cache: "no-store" });
  if (!response.ok) throw await failure(response);
  return response.json();
}

export async function post<T>(path: string, body: unknown): Promise<T> {
  const response = await fetch(path, { method: "POST", headers: authorized({ "Content-Type": "application/json" }), body: JSON.stringify(body) });
  if (!response.ok) throw await failure(response);
  return response.json();
}

/** POST, then hand each line of the NDJSON answer to `onEvent` as it arrives. */
export async function stream(path: string, body: unknown, onEvent: (event: UndoEvent) => void): Promise<void> {
  const response = await fetch(path, { method: "POST", headers: authorized({ "Content-Type": "application/json" }), body: JSON.stringify(body) });
  if (!response.ok || !response.body) throw await failure(response);
  await eachPart(response.body, "\n", (line) => {
    if (line.trim() !== "") onEvent(JSON.parse(line) as UndoEvent);
  });
}

/** Read a response body as it arrives, handing each part before `separator` to `onPart`. */
async function eachPart(body: NonNullable<Response["body"]>, separator: string, onPart: (part: string) => void): Promise<void> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (value) buffer += value;
    let end: number;
    while ((end = buffer.indexOf(separator)) !== -1) {
      const part = buffer.slice(0, end);
      buffer = buffer.slice(end + separator.length);
      onPart(part);
    }
    if (done) break;
  }
}

/**
 * Follow the server's change events (an EventSource cannot send the token):
 * `onOpen` once connected, `onChange` for each change, and resolves when the
 * stream ends; rejects when it cannot be opened (a 401 also signs the page out).
 */
export async function followChanges(onOpen: () => void, onChange: () => void): Promise<void> {
  const response = await fetch("/api/events", { headers: authorized({ Accept: "text/event-stream" }), cache: "no-store" });
  if (!response.ok || !response.body) throw await failure(response);
  onOpen();
  await eachPart(response.body, "\n\n", (event) => {
    if (/^event: change$/m.test(event)) onChange();
  });
}
