// A client's configuration file as `wrap` reads it: its data (JSON with
// comments, or TOML), and each server entry in it — a command, a remote
// server, one already behind Synartesis, or one left alone and why. Pure.
import { basename } from "node:path";
import { parse as parseToml } from "@decimalturn/toml-patch";
import { parse as parseJsonc, printParseErrorCode, type ParseError } from "jsonc-parser";
import { SynartesisError } from "../errors.ts";
import { isObject, type Client, type ConfigFile, type Dialect } from "./clients.ts";

export type EntryShape =
  | { kind: "command"; command: string; args: string[]; env: Record<string, string>; cwd?: string }
  | {
      kind: "url";
      url: string;
      /** Header values as written in the entry. */
      headers: Record<string, string>;
      /** Headers whose value the client takes from an environment variable (Codex's env_http_headers, bearer_token_env_var). */
      headersFromEnv: Record<string, { variable: string; prefix: string }>;
    }
  | { kind: "wrapped"; server?: string }
  | { kind: "left"; why: string };

export interface Entry {
  /** The entry's path in the file's data: its servers map's, then its name. */
  path: string[];
  name: string;
  value: Record<string, unknown>;
  shape: EntryShape;
}

/** Where in a text an offset is, 1-based, for messages. */
function lineAndColumn(text: string, offset: number): string {
  const before = text.slice(0, offset).split("\n");
  return `${before.length}:${before.at(-1)!.length + 1}`;
}

/** The file's data; a file that does not parse is refused with where and why. */
export function readConfig(text: string, file: ConfigFile): unknown {
  if (file.format === "toml") {
    try {
      return parseToml(text);
    } catch (error) {
      throw new SynartesisError("config", `${file.path} is not valid TOML: ${(error as Error).message.split("\n")[0]}`, {
        hint: "Fix it (its client would not read it either), then run wrap again. Nothing was changed.",
      });
    }
  }
  const errors: ParseError[] = [];
  const data = text.trim() === "" ? {} : parseJsonc(text, errors, { allowTrailingComma: true, disallowComments: false });
  if (errors.length) {
    const first = errors[0]!;
    throw new SynartesisError("config", `${file.path}:${lineAndColumn(text, first.offset)}: not valid JSON: ${printParseErrorCode(first.error)}`, {
      hint: "Fix it (its client would not read it either), then run wrap again. Nothing was changed.",
    });
  }
  return data;
}

const strings = (value: unknown): Record<string, string> =>
  isObject(value) ? Object.fromEntries(Object.entries(value).filter((pair): pair is [string, string] => typeof pair[1] === "string")) : {};

/** Whether an entry starts `synartesis proxy` already (wrapped before, or written by hand), and for which server. */
function wrappedServer(command: string, args: string[]): { server?: string } | undefined {
  const program = basename(command).replace(/\.exe$/i, "");
  if (!program.startsWith("synartesis") || !args.includes("proxy")) return undefined;
  const at = args.indexOf("--server");
  return at >= 0 && args[at + 1] ? { server: args[at + 1] } : {};
}

/** What an entry is, in the client's dialect. */
export function entryShape(value: Record<string, unknown>, dialect: Dialect): EntryShape {
  const type = typeof value.type === "string" ? value.type.toLowerCase() : undefined;
  if (typeof value.command === "string" && value.command !== "") {
    const args = Array.isArray(value.args) ? value.args.filter((arg): arg is string => typeof arg === "string") : [];
    if (Array.isArray(value.args) && args.length !== value.args.length) return { kind: "left", why: "its args are not all strings" };
    const wrapped = wrappedServer(value.command, args);
    if (wrapped) return { kind: "wrapped", ...wrapped };
    return { kind: "command", command: value.command, args, env: strings(value.env), ...(typeof value.cwd === "string" && { cwd: value.cwd }) };
  }
  const sse = dialect.sseKeys.find((key) => typeof value[key] === "string");
  if (type === "sse" || (sse && !dialect.urlKeys.some((key) => typeof value[key] === "string"))) {
    return { kind: "left", why: "it is an SSE server, a transport Synartesis does not speak (Streamable HTTP only)" };
  }
  const urlKey = dialect.urlKeys.find((key) => typeof value[key] === "string");
  if (!urlKey) return { kind: "left", why: "it has neither a command nor a URL" };
  const headersFromEnv: Record<string, { variable: string; prefix: string }> = {};
  for (const [header, variable] of Object.entries(strings(value.env_http_headers))) headersFromEnv[header] = { variable, prefix: "" };
  if (typeof value.bearer_token_env_var === "string") headersFromEnv.Authorization = { variable: value.bearer_token_env_var, prefix: "Bearer " };
  return { kind: "url", url: value[urlKey] as string, headers: strings(value[dialect.headersKey]), headersFromEnv };
}

/** Every server entry of a file, map by map, in the file's order. */
export function configEntries(client: Client, file: ConfigFile, data: unknown): Entry[] {
  const entries: Entry[] = [];
  for (const map of client.serverMaps(data, file)) {
    let servers: unknown = data;
    for (const key of map) servers = isObject(servers) ? servers[key] : undefined;
    if (!isObject(servers)) continue;
    for (const [name, value] of Object.entries(servers)) {
      const shape: EntryShape = isObject(value) ? entryShape(value, client.dialect) : { kind: "left", why: "it is not an object" };
      entries.push({ path: [...map, name], name, value: isObject(value) ? value : {}, shape });
    }
  }
  return entries;
}
