// The flags of `proxy --http` read and checked (R-HTTP-1…3), before anything
// starts: the port, the address, the extra names, the idle time, how many
// sessions may be open at once, and the
// bearer token from --token, --token-file or SYNARTESIS_TOKEN. Any problem is
// a usage error (exit 2) that names the flag; a token is never echoed.
import { readFileSync, statSync } from "node:fs";
import { SynartesisError } from "../errors.ts";

export const MIN_TOKEN_LENGTH = 16;
export const DEFAULT_IDLE_MINUTES = 30;
export const DEFAULT_MAX_SESSIONS = 1000;
export const DEFAULT_HTTP_HOST = "127.0.0.1";

export interface HttpFlags {
  http?: string;
  "http-host"?: string;
  "http-idle"?: string;
  "http-max-sessions"?: string;
  token?: string;
  "token-file"?: string;
}

export interface HttpSettings {
  /** 0: any free port. */
  port: number;
  host: string;
  /** Names besides the bound address and localhost that Host and Origin may give. */
  allowHosts: string[];
  /** How long a session may go without a request (0: forever). */
  idleMs: number;
  /** Sessions (and sessionless runs) open at once, at most: each holds a run and its memory until it ends. */
  maxSessions: number;
  token: string;
}

const usage = (message: string) => new SynartesisError("usage", message);

/** Every value given to a flag that may be repeated (`--name V` or `--name=V`), in order. */
export function repeatedFlag(rawArgs: string[], name: string): string[] {
  const values: string[] = [];
  for (let i = 0; i < rawArgs.length; i++) {
    const token = rawArgs[i]!;
    if (token === `--${name}` && i + 1 < rawArgs.length) values.push(rawArgs[++i]!);
    else if (token.startsWith(`--${name}=`)) values.push(token.slice(name.length + 3));
  }
  return values;
}

/** The bearer token, from exactly one place; at least 16 characters that fit in a header. */
export function readToken(flags: Pick<HttpFlags, "token" | "token-file">, env: Record<string, string | undefined>): string {
  if (flags.token !== undefined && flags["token-file"] !== undefined) throw usage("give the token one way: --token or --token-file, not both");
  let token: string | undefined;
  let from: string;
  if (flags["token-file"] !== undefined) {
    from = `--token-file ${flags["token-file"]}`;
    try {
      // A token others can read opens every server of the manifest to them: refused, as a credentials file would be.
      const mode = statSync(flags["token-file"]).mode & 0o777;
      if (mode & 0o077) {
        throw new SynartesisError(
          "config",
          `the token file ${flags["token-file"]} can be read by other users (mode ${mode.toString(8).padStart(4, "0")}); run chmod 600 on it`,
        );
      }
      token = readFileSync(flags["token-file"], "utf8").trim();
    } catch (error) {
      if (error instanceof SynartesisError) throw error;
      throw usage(`cannot read the token: ${from}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  } else if (flags.token !== undefined) {
    from = "--token";
    token = flags.token;
  } else {
    from = "SYNARTESIS_TOKEN";
    token = env.SYNARTESIS_TOKEN;
  }
  if (token === undefined || token === "") {
    throw usage(
      `--http needs a bearer token${token === "" ? ` (${from} is empty)` : ""}: set SYNARTESIS_TOKEN, or give --token-file FILE (or --token TOKEN, which other users of this machine can see in ps)`,
    );
  }
  if (!/^[\x21-\x7e]+$/.test(token))
    throw usage(`the token from ${from} has a space, a control character or a non-ASCII character; a bearer token travels in a header and cannot`);
  if (token.length < MIN_TOKEN_LENGTH) throw usage(`the token from ${from} is ${token.length} characters long; it must have at least ${MIN_TOKEN_LENGTH}`);
  return token;
}

/** A name for --http-allow-host: a host name or an address, without a port. */
function allowedHost(value: string): string {
  const bracketed = /^\[[0-9a-f:.]+\]$/i.test(value);
  const ipv6 = /^[0-9a-f:.]+$/i.test(value) && (value.match(/:/g)?.length ?? 0) > 1;
  if (bracketed || ipv6 || /^[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?$/i.test(value)) return value;
  if (/^[^:]+:\d+$/.test(value)) throw usage(`--http-allow-host takes a name without a port (got "${value}"): any port is accepted`);
  throw usage(`--http-allow-host takes a host name or an address (got "${value}")`);
}

/** The HTTP settings when --http is given; undefined for the proxy over stdio (which refuses the HTTP flags). */
export function httpSettings(flags: HttpFlags, allowHosts: string[], env: Record<string, string | undefined>): HttpSettings | undefined {
  if (flags.http === undefined) {
    const stray = (["http-host", "http-idle", "http-max-sessions", "token", "token-file"] as const)
      .filter((name) => flags[name] !== undefined)
      .map((name) => `--${name}`);
    if (allowHosts.length) stray.push("--http-allow-host");
    if (stray.length) throw usage(`${stray.join(", ")} ${stray.length === 1 ? "is" : "are"} for serving over HTTP: add --http PORT`);
    return undefined;
  }
  const port = Number(flags.http);
  if (!/^\d+$/.test(flags.http) || port > 65535) throw usage(`--http takes a port number, 0 to 65535 (0: any free port; got "${flags.http}")`);
  const host = flags["http-host"] ?? DEFAULT_HTTP_HOST;
  if (host.trim() === "" || /[\s/@]/.test(host)) throw usage(`--http-host takes an address to bind, such as 127.0.0.1 or 0.0.0.0 (got "${host}")`);
  const idleText = flags["http-idle"];
  const idleMinutes = idleText === undefined ? DEFAULT_IDLE_MINUTES : Number(idleText);
  if (idleText !== undefined && !(idleText.trim() !== "" && Number.isFinite(idleMinutes) && idleMinutes >= 0)) {
    throw usage(`--http-idle takes minutes, 0 or more (0: sessions never expire; decimals allowed; got "${idleText}")`);
  }
  const maxText = flags["http-max-sessions"];
  const maxSessions = maxText === undefined ? DEFAULT_MAX_SESSIONS : Number(maxText);
  if (maxText !== undefined && !(/^\d+$/.test(maxText) && maxSessions >= 1))
    throw usage(`--http-max-sessions takes a whole number, 1 or more (got "${maxText}")`);
  return { port, host, allowHosts: allowHosts.map(allowedHost), idleMs: idleMinutes * 60_000, maxSessions, token: readToken(flags, env) };
}
