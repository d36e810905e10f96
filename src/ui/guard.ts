// The review page's own request checks (R-UI-4), pure: whether a request
// comes from the page itself, and the session cookie. Host names and tokens
// are checked as for every HTTP server of Synartesis (http/guard.ts).

/**
 * Whether a state-changing request was made by the page itself: its Origin is
 * exactly this server as the browser addressed it, and Sec-Fetch-Site (sent by
 * every current browser) does not say otherwise. No Origin at all is refused:
 * browsers always send one with a POST.
 */
export function sameOrigin(headers: Headers): { ok: true } | { ok: false; why: string } {
  const origin = headers.get("origin");
  const host = headers.get("host");
  if (!origin) return { ok: false, why: "the request carries no Origin header" };
  if (origin !== `http://${host}`) return { ok: false, why: `the request comes from another origin (${origin})` };
  const site = headers.get("sec-fetch-site");
  if (site !== null && site !== "same-origin") return { ok: false, why: `the browser says the request is ${site}` };
  return { ok: true };
}

/** The value of one cookie in a Cookie header. */
export function cookieValue(header: string | null, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
