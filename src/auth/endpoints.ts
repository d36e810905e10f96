// The addresses an OAuth sign-in may use (MCP authorization): an endpoint
// taken from a server's metadata is opened in a browser or sent a code, so it
// must be HTTPS, or plain HTTP to this machine. Anything else is refused
// before any opener runs (file:, smb:, a custom scheme, http to elsewhere).

/** Control characters and length made harmless: the text came from a server. */
const shown = (text: string) => text.replace(/[\u0000-\u001f\u007f-\u009f]/g, "?").slice(0, 300);

/**
 * Why a URL from a server's OAuth metadata must not be opened or sent to (MCP
 * authorization: HTTPS endpoints; plain HTTP only on this machine), or
 * undefined. A browser handed file:, smb: or a custom scheme would act on it.
 */
export function endpointProblem(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(String(value));
  } catch {
    return `${shown(String(value))} is not a URL`;
  }
  if (url.protocol === "https:") return undefined;
  const loopback = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i.test(url.hostname);
  if (url.protocol === "http:" && loopback) return undefined;
  const where = shown(url.href);
  return url.protocol === "http:"
    ? `${where} is plain HTTP to another machine (only https: is allowed there)`
    : `${where} is a ${shown(url.protocol)} address (only https:, or http: on this machine, is allowed)`;
}
