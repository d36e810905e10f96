// The checks every HTTP request of Synartesis's own servers passes (the MCP
// endpoint of `proxy --http`, the review page), pure: which Host and Origin
// names are ours (DNS-rebinding protection), and a secret compared in
// constant time.
import { createHash, timingSafeEqual } from "node:crypto";

/** Lower case, without IPv6 brackets: how names are compared. */
function normalName(name: string): string {
  const lower = name.toLowerCase();
  return lower.startsWith("[") && lower.endsWith("]") ? lower.slice(1, -1) : lower;
}

/** The names a request may give for a server bound to `boundAddress`: that address, localhost, and the `others`. */
export function allowedNames(boundAddress: string, others: readonly string[] = []): ReadonlySet<string> {
  return new Set(["localhost", boundAddress, ...others].map(normalName));
}

/** The name in a Host header (without its port), or undefined when the header is not a host with an optional numeric port. */
export function hostName(host: string | null): string | undefined {
  if (!host) return undefined;
  const name = host.startsWith("[") ? host.slice(0, host.indexOf("]") + 1) : host.replace(/:\d+$/, "");
  const port = host.slice(name.length);
  if (name === "" || name.includes(":") !== name.startsWith("[") || (port !== "" && !/^:\d{1,5}$/.test(port))) return undefined;
  return normalName(name);
}

/**
 * A request's path, read from its URL as text: Bun builds that URL from the
 * Host header, so a malformed one (`localhost:abc`) makes it no URL at all.
 */
export function pathOf(url: string): string {
  return /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*(\/[^?#]*)?/i.exec(url)?.[1] ?? "/";
}

/** Whether a Host header names this server by an allowed name (any port: a tunnel or forwarder may change it). */
export function hostAllowed(host: string | null, names: ReadonlySet<string>): boolean {
  const name = hostName(host);
  return name !== undefined && names.has(name);
}

/** Whether an Origin header is absent (not a browser) or an http(s) origin on an allowed name; "null" and anything else are refused. */
export function originAllowed(origin: string | null, names: ReadonlySet<string>): boolean {
  if (origin === null) return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  return (url.protocol === "http:" || url.protocol === "https:") && names.has(normalName(url.hostname));
}

const digest = (text: string) => createHash("sha256").update(text).digest();

/** Compare a presented secret with the real one in constant time (equal-length digests: not even the length leaks). */
export function tokenMatches(presented: string | null | undefined, token: string): boolean {
  if (!presented) return false;
  return timingSafeEqual(digest(presented), digest(token));
}

/** A fresh token: 32 random bytes, URL-safe. */
export function newToken(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url");
}
