// Where a PostgreSQL journal is and how to sign in to it, read the way libpq
// reads it (R-TEAM-5): the URL's own settings first, then PGHOST, PGPORT,
// PGUSER, PGDATABASE, PGSSLMODE…; the password from the URL, else PGPASSWORD,
// else the password file (?passfile=, PGPASSFILE or ~/.pgpass). Bun's client
// reads neither the password file nor the URL before the environment, so
// everything is settled here and handed to it explicitly. Pure but for
// reading the password file.
import { readFileSync, statSync } from "node:fs";
import { homedir, userInfo } from "node:os";
import { join } from "node:path";
import { SynartesisError } from "../../errors.ts";

const SSL_MODES = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"] as const;
type SslMode = (typeof SSL_MODES)[number];

/** The URL parameters understood (libpq's names); any other is refused, naming it. */
const PARAMETERS = ["host", "port", "dbname", "user", "password", "passfile", "sslmode", "connect_timeout", "application_name", "options"] as const;
type Parameter = (typeof PARAMETERS)[number];

const DEFAULT_CONNECT_TIMEOUT_S = 10;

export interface PostgresTarget {
  /** The location as people see and paste it: the URL as given, without its password. */
  display: string;
  hostname: string;
  port: number;
  username: string;
  database: string;
  password: string | undefined;
  /** Where the password came from, to say so when it is refused (never the password itself). */
  passwordFrom: string | undefined;
  tls: SslMode;
  connectionTimeout: number;
  /** Run-time settings sent when a connection opens (application_name, `-c` options). */
  connection: Record<string, string>;
  /** Things to tell a person (a password file ignored because others can read it). */
  warnings: string[];
}

function refuse(message: string, hint?: string): never {
  throw new SynartesisError("config", message, hint ? { hint } : {});
}

function decode(text: string, what: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return refuse(`the journal URL's ${what} is not valid percent-encoding`);
  }
}

/** The URL's query: libpq's `key=value&…`, percent-decoded (a `+` is a plus sign, not a space). */
function parameters(search: string): Partial<Record<Parameter, string>> {
  const found: Partial<Record<Parameter, string>> = {};
  for (const pair of search.replace(/^\?/, "").split("&")) {
    if (pair === "") continue;
    const eq = pair.indexOf("=");
    const key = decode(eq === -1 ? pair : pair.slice(0, eq), "parameter name");
    if (!(PARAMETERS as readonly string[]).includes(key)) {
      refuse(`the journal URL has the parameter "${key}", which Synartesis does not support (supported: ${PARAMETERS.join(", ")})`);
    }
    if (eq === -1) refuse(`the journal URL's parameter "${key}" has no value`);
    found[key as Parameter] = decode(pair.slice(eq + 1), `parameter "${key}"`);
  }
  return found;
}

/** libpq's `options`: `-c name=value` or `--name=value`, separated by spaces. */
function runtimeOptions(text: string): Record<string, string> {
  const settings: Record<string, string> = {};
  const words = text.trim().split(/\s+/).filter(Boolean);
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    const setting = word === "-c" ? words[++i] : word.startsWith("--") ? word.slice(2) : word.startsWith("-c") ? word.slice(2) : undefined;
    const eq = setting?.indexOf("=") ?? -1;
    if (setting === undefined || eq <= 0) refuse(`the journal URL's options "${text}" must be "-c name=value" settings`);
    settings[setting.slice(0, eq).replace(/-/g, "_")] = setting.slice(eq + 1);
  }
  return settings;
}

function field(text: string): string[] {
  // One line of a password file: fields split at unescaped colons; \: and \\ are escapes.
  const fields: string[] = [];
  let current = "";
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === "\\" && i + 1 < text.length) current += text[++i];
    else if (c === ":" && fields.length < 4) {
      fields.push(current);
      current = "";
    } else current += c;
  }
  fields.push(current);
  return fields;
}

/**
 * The password for this connection from a password file, as libpq finds it:
 * the first line whose host, port, database and user match (`*` matches
 * anything). A file that others can read is ignored, with a warning.
 */
function passwordFromFile(
  file: string,
  target: { hostname: string; port: number; database: string; username: string },
  warnings: string[],
): string | undefined {
  let text: string;
  try {
    const stat = statSync(file);
    if (!stat.isFile()) return undefined;
    if (stat.mode & 0o077) {
      warnings.push(`the password file ${file} is ignored: others can read it (chmod 600 it, as libpq asks)`);
      return undefined;
    }
    text = readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
  // A socket folder is "localhost" to a password file, as to libpq.
  const host = target.hostname.startsWith("/") ? "localhost" : target.hostname;
  const wanted = [host, String(target.port), target.database, target.username];
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === "" || line.startsWith("#")) continue;
    const fields = field(line);
    if (fields.length < 5) continue;
    if (wanted.every((value, i) => fields[i] === "*" || fields[i] === value)) return fields[4];
  }
  return undefined;
}

function osUser(): string {
  try {
    return userInfo().username;
  } catch {
    return "postgres";
  }
}

/** A journal URL in its parts, as written (percent-encoded), or undefined when it is not one. */
interface UrlParts {
  scheme: string;
  user?: string;
  password?: string;
  host?: string;
  port?: string;
  path?: string;
  query: string;
}

// libpq's URI form: scheme://[user[:password]@][host][:port][/dbname][?param=value&…]
const URL_FORM = /^(postgres(?:ql)?):\/\/(?:([^:@/?#]*)(?::([^@/?#]*))?@)?(\[[^\]/?#]*\]|[^:/?#]*)(?::([^/?#]*))?(?:\/([^?#]*))?(?:\?([^#]*))?$/;

function urlParts(location: string): UrlParts | undefined {
  const match = URL_FORM.exec(location);
  if (!match) return undefined;
  const [, scheme, user, password, host, port, path, query] = match;
  return { scheme: scheme!, user, password, host: host || undefined, port, path, query: query ?? "" };
}

/** Read a journal URL (`postgres://` or `postgresql://`) with the environment, as libpq would. */
export function postgresTarget(location: string, env: Record<string, string | undefined> = process.env): PostgresTarget {
  const url = urlParts(location);
  if (!url) return refuse(`the journal URL is not one PostgreSQL understands (expected postgres://USER@HOST:PORT/DATABASE?PARAMETERS)`);
  const query = parameters(url.query);
  const path = url.path ?? "";
  if (path.includes("/")) refuse(`the journal URL's path must be one database name (found "/${path}")`);
  const host = query.host ?? (url.host ? decode(url.host.replace(/^\[(.*)\]$/, "$1"), "host") : undefined) ?? env.PGHOST ?? "localhost";
  if (host.includes(",")) refuse(`the journal URL names several hosts (${host}); give one`);
  const portText = query.port ?? (url.port || undefined) ?? env.PGPORT ?? "5432";
  const port = Number(portText);
  if (!Number.isInteger(port) || port <= 0 || port > 65535) refuse(`the journal URL's port "${portText}" is not a port number`);
  const username = query.user ?? (url.user ? decode(url.user, "user name") : undefined) ?? env.PGUSER ?? osUser();
  const database = query.dbname ?? (path ? decode(path, "database name") : undefined) ?? env.PGDATABASE ?? username;
  const sslmode = query.sslmode ?? env.PGSSLMODE ?? "prefer";
  if (!(SSL_MODES as readonly string[]).includes(sslmode)) refuse(`the journal URL's sslmode "${sslmode}" is not one of ${SSL_MODES.join(", ")}`);
  const timeoutText = query.connect_timeout ?? env.PGCONNECT_TIMEOUT;
  const timeout = timeoutText === undefined ? DEFAULT_CONNECT_TIMEOUT_S : Number(timeoutText);
  if (!(timeout >= 0) || !Number.isFinite(timeout)) refuse(`the journal URL's connect_timeout "${timeoutText}" is not a number of seconds`);

  const warnings: string[] = [];
  let password: string | undefined;
  let passwordFrom: string | undefined;
  const inUrl = query.password ?? (url.password ? decode(url.password, "password") : undefined);
  if (inUrl !== undefined) [password, passwordFrom] = [inUrl, "the journal URL"];
  else if (env.PGPASSWORD) [password, passwordFrom] = [env.PGPASSWORD, "PGPASSWORD"];
  else {
    const file = query.passfile ?? env.PGPASSFILE ?? join(env.HOME || homedir(), ".pgpass");
    password = passwordFromFile(file, { hostname: host, port, database, username }, warnings);
    if (password !== undefined) passwordFrom = `the password file ${file}`;
  }

  return {
    display: withoutPassword(location),
    hostname: host,
    port,
    username,
    database,
    password,
    passwordFrom,
    tls: sslmode as SslMode,
    // 0 means "wait as long as it takes" to libpq; Bun's client needs a number.
    connectionTimeout: timeout === 0 ? 3600 : timeout,
    connection: { application_name: query.application_name ?? env.PGAPPNAME ?? "synartesis", ...runtimeOptions(query.options ?? env.PGOPTIONS ?? "") },
    warnings,
  };
}

/**
 * A journal URL as people may see and paste it: the URL as given, without a
 * password (in its user part or as ?password=). One that does not parse
 * keeps only what comes before any user part.
 */
export function withoutPassword(location: string): string {
  const url = urlParts(location);
  if (!url) return location.replace(/\/\/[^/?#]*@/, "//…@");
  const query = url.query
    .split("&")
    .filter((pair) => pair !== "" && pair.split("=")[0] !== "password")
    .join("&");
  const authority = `${url.user !== undefined ? `${url.user}@` : ""}${url.host ?? ""}${url.port !== undefined ? `:${url.port}` : ""}`;
  return `${url.scheme}://${authority}${url.path !== undefined ? `/${url.path}` : ""}${query ? `?${query}` : ""}`;
}

/** `text` with every occurrence of `secret` replaced, so no message, log line or page can carry a password. */
export function redact(text: string, secret: string | undefined): string {
  return secret ? text.split(secret).join("***") : text;
}
