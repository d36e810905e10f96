// The review page's own request checks (R-UI-4, R-UI-5), pure: whether a
// request comes from the page itself, and the credential it presents. Host
// names and tokens are checked as for every HTTP server of Synartesis
// (http/guard.ts).

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

/**
 * The token a request presents, in `Authorization: Bearer …`. The page keeps
 * it in the tab's memory and sends it itself: no cookie, which a browser
 * would also send to every other service on another port of this host.
 */
export function bearerToken(header: string | null): string | undefined {
  const match = header && /^Bearer ([A-Za-z0-9_-]+)$/.exec(header.trim());
  return match ? match[1] : undefined;
}
