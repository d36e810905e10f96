// What `wrap` does to one client's file, decided before anything is started
// or written (R-WRAP-1, R-WRAP-3): each entry that starts a server or names a
// Streamable HTTP one becomes an entry, under the same name, that starts
// `synartesis proxy --manifest M --server S`, and S becomes a server of the
// manifest. A secret (a header's value, a URL that carries a key) stays in
// the client's entry, in its env, and the manifest names it as ${VAR}. Pure.
import { isAbsolute, resolve } from "node:path";
import type { ServerBlock } from "../manifest/draft.ts";
import type { Secret } from "./backup.ts";
import type { Client, ConfigFile, Place } from "./clients.ts";
import { configEntries, readConfig, type Entry, type EntryShape } from "./entries.ts";
import { rewriteConfig, type EntryChange } from "./rewrite.ts";

export interface WrapSettings {
  /** The manifest every wrapped entry serves from. */
  manifest: string;
  /** How a client starts synartesis (the program, then its first arguments). */
  self: string[];
}

/** The manifest's servers, by name and by what they start: an entry wrapped again reuses its server; any other gets a free name. */
export class ServerNames {
  private readonly byName = new Map<string, string>();

  constructor(existing: Record<string, ServerBlock>) {
    for (const [name, block] of Object.entries(existing)) this.byName.set(name, identity(block));
  }

  /** A name for an entry's server, whose block may depend on the name (the variables that carry its secrets are named after it). */
  claim<T extends { block: ServerBlock }>(entryName: string, blockFor: (name: string) => T): T & { name: string; fresh: boolean } {
    const base = validName(entryName);
    for (let n = 1; ; n++) {
      const name = n === 1 ? base : `${base}-${n}`;
      const made = blockFor(name);
      const wanted = identity(made.block);
      const held = this.byName.get(name);
      if (held === wanted) return { ...made, name, fresh: false };
      if (held === undefined) {
        this.byName.set(name, wanted);
        return { ...made, name, fresh: true };
      }
    }
  }
}

/** What makes two blocks the same server: what they start, or where they connect and with which headers. */
function identity(block: ServerBlock): string {
  return "url" in block
    ? JSON.stringify({ url: block.url, headers: block.headers ?? {} })
    : JSON.stringify({ command: block.command, args: block.args, cwd: block.cwd ?? null });
}

/** A client's name for a server as a manifest's (letters, digits, "-" and "_", no "__"). */
function validName(name: string): string {
  const valid = name
    .replace(/[^A-Za-z0-9_-]+/g, "-")
    .replace(/_{2,}/g, "_")
    .replace(/^-+|-+$/g, "");
  return valid || "server";
}

/** The environment variable that carries one of a server's secrets to the proxy. */
export const secretVariable = (server: string, what: string) => `SYNARTESIS_${server}_${what}`.toUpperCase().replace(/[^A-Z0-9_]/g, "_");

export interface PlannedEntry {
  entry: Entry;
  server: string;
  /** A server the manifest does not have yet: its policy is to be adopted or drafted. */
  fresh: boolean;
  block: ServerBlock;
}

export interface FilePlan {
  file: ConfigFile;
  before: string;
  after: string;
  wrapped: PlannedEntry[];
  left: Array<{ entry: Entry; why: string }>;
  /** Every value of an entry's env or headers, and where it is in the wrapped file. */
  secrets: Secret[];
}

/** The folder a project's entries run in: Claude Code's `projects` key names it; a project file's is the folder wrap runs in. */
function folderOf(entry: Entry, file: ConfigFile, place: Place): string | undefined {
  if (entry.path[0] === "projects" && entry.path.length === 4) return entry.path[1];
  return file.scope === "project" ? place.cwd : undefined;
}

function commandBlock(shape: Extract<EntryShape, { kind: "command" }>, folder: string | undefined): ServerBlock {
  const base = shape.cwd ? resolve(folder ?? "/", shape.cwd) : folder;
  const command = shape.command.includes("/") && !isAbsolute(shape.command) && base ? resolve(base, shape.command) : shape.command;
  return { command, args: shape.args, ...(base && { cwd: base }) };
}

/** A remote entry's block: each header's value, and a URL carrying a key, moved to the entry's env as ${VAR}. */
function urlBlock(shape: Extract<EntryShape, { kind: "url" }>, server: string): { block: ServerBlock; env: Record<string, string>; passed: string[] } {
  const env: Record<string, string> = {};
  const headers: Record<string, string> = {};
  for (const [header, value] of Object.entries(shape.headers)) {
    const variable = secretVariable(server, header);
    env[variable] = value;
    headers[header] = `\${${variable}}`;
  }
  const passed: string[] = [];
  for (const [header, { variable, prefix }] of Object.entries(shape.headersFromEnv)) {
    headers[header] = `${prefix}\${${variable}}`;
    passed.push(variable);
  }
  let url = shape.url;
  if (/^[a-z]+:\/\/[^/]*@|[?#]/i.test(url)) {
    const variable = secretVariable(server, "url");
    env[variable] = url;
    url = `\${${variable}}`;
  }
  return { block: { url, ...(Object.keys(headers).length && { headers }) }, env, passed };
}

function selfEntry(settings: WrapSettings, server: string): EntryChange["set"] {
  return [
    { key: ["command"], value: settings.self[0] },
    { key: ["args"], value: [...settings.self.slice(1), "proxy", "--manifest", settings.manifest, "--server", server] },
  ];
}

/** Every secret the file holds in its entries: env values where they are, header values where wrap moves them. */
function secretsOf(entries: Entry[], moved: Map<Entry, Record<string, string>>, client: Client): Secret[] {
  const secrets: Secret[] = [];
  for (const entry of entries) {
    for (const [key, value] of Object.entries(entry.value.env ?? {})) if (typeof value === "string") secrets.push({ value, at: [...entry.path, "env", key] });
    const movedTo = moved.get(entry);
    if (movedTo) {
      for (const [variable, value] of Object.entries(movedTo)) secrets.push({ value, at: [...entry.path, "env", variable] });
      continue;
    }
    const headers = entry.value[client.dialect.headersKey];
    for (const [key, value] of Object.entries(headers && typeof headers === "object" ? headers : {})) {
      if (typeof value === "string") secrets.push({ value, at: [...entry.path, client.dialect.headersKey, key] });
    }
  }
  return secrets;
}

export function planFile(client: Client, file: ConfigFile, before: string, place: Place, settings: WrapSettings, names: ServerNames): FilePlan {
  const entries = configEntries(client, file, readConfig(before, file));
  const wrapped: PlannedEntry[] = [];
  const left: FilePlan["left"] = [];
  const changes: EntryChange[] = [];
  const moved = new Map<Entry, Record<string, string>>();
  for (const entry of entries) {
    const { shape } = entry;
    if (shape.kind === "wrapped") left.push({ entry, why: "it starts synartesis proxy already" });
    else if (shape.kind === "left") left.push({ entry, why: shape.why });
    else if (shape.kind === "command") {
      const { name, fresh, block } = names.claim(entry.name, () => ({ block: commandBlock(shape, folderOf(entry, file, place)) }));
      wrapped.push({ entry, server: name, fresh, block });
      changes.push({ path: entry.path, set: selfEntry(settings, name), remove: [] });
    } else {
      const { name, fresh, block, env, passed } = names.claim(entry.name, (name) => urlBlock(shape, name));
      wrapped.push({ entry, server: name, fresh, block });
      moved.set(entry, env);
      const { dialect } = client;
      const remove = [...dialect.urlKeys, ...dialect.sseKeys, dialect.headersKey, "env_http_headers", "bearer_token_env_var"].filter(
        (key) => key in entry.value,
      );
      const set: EntryChange["set"] = [
        ...(dialect.typed && "type" in entry.value ? [{ key: ["type"], value: "stdio" }] : []),
        ...selfEntry(settings, name),
        ...Object.entries(env).map(([variable, value]) => ({ key: ["env", variable], value })),
      ];
      // Codex passes a server only the variables it is told to.
      if (passed.length) {
        const kept = Array.isArray(entry.value.env_vars) ? entry.value.env_vars : [];
        set.push({ key: ["env_vars"], value: [...new Set([...kept, ...passed])] });
      }
      changes.push({ path: entry.path, set, remove });
    }
  }
  const after = changes.length ? rewriteConfig(before, file.format, changes) : before;
  return { file, before, after, wrapped, left, secrets: secretsOf(entries, moved, client) };
}
