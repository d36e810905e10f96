// The review page's request checks (R-UI-4), pure: which Host names are
// ours, whether a request comes from the page itself, and the session cookie.
import { timingSafeEqual } from "node:crypto";

/** The names a browser may use for the page: the bound loopback address and localhost (DNS-rebinding protection). */
export function hostAllowed(host: string | null, boundAddress: string): boolean {
  if (!host) return false;
  const name = host.startsWith("[") ? host.slice(0, host.indexOf("]") + 1) : host.replace(/:\d+$/, "");
  const port = host.slice(name.length);
  if (port !== "" && !/^:\d{1,5}$/.test(port)) return false;
  const lower = name.toLowerCase();
  return lower === "localhost" || lower === boundAddress || (boundAddress.includes(":") && lower === `[${boundAddress}]`);
}

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

/** Compare a presented token with the real one in constant time. */
export function tokenMatches(presented: string | null | undefined, token: string): boolean {
  if (!presented) return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** A fresh token: 32 random bytes, URL-safe. */
export function newToken(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url");
}
