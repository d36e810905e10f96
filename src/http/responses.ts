// The HTTP answers of the MCP endpoint outside an event stream: a JSON-RPC
// message as the whole answer, a refused request as a JSON-RPC error without
// id (as the SDK's transport writes them); and the headers of an event stream.

/** A server error code of JSON-RPC's implementation range; the SDK's transport answers refusals with it too. */
const TRANSPORT_REFUSAL = -32000;

export const SESSION_HEADER = "mcp-session-id";

export const EVENT_STREAM_HEADERS: Record<string, string> = {
  "Content-Type": "text/event-stream",
  "Cache-Control": "no-cache, no-transform",
  "X-Accel-Buffering": "no",
};

/** A JSON-RPC message (`line`) as the whole answer to an HTTP request. */
export function jsonAnswer(status: number, line: string, headers: Record<string, string> = {}): Response {
  return new Response(line, { status, headers: { "Content-Type": "application/json", ...headers } });
}

/** A request refused before any JSON-RPC exchange: `status`, and a JSON-RPC error (id null) that says why. */
export function refusal(status: number, message: string, options: { code?: number; headers?: Record<string, string> } = {}): Response {
  return jsonAnswer(status, JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: options.code ?? TRANSPORT_REFUSAL, message } }), options.headers);
}

export function plainText(status: number, text: string, headers: Record<string, string> = {}): Response {
  return new Response(`${text}\n`, { status, headers: { "Content-Type": "text/plain; charset=utf-8", "Cache-Control": "no-store", ...headers } });
}
