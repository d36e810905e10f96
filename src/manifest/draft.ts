// The first policy for a server (R-CLI-2): adopt a shipped manifest's rules
// when the server is one we know, draft the rest from the tools' own hints,
// and write it into a new or existing manifest without losing a comment.
// Pure: text and tool lists in, text out.
import { isMap, isScalar, isSeq, parseDocument, YAMLMap, YAMLSeq, type Document } from "yaml";
import { SynartesisError } from "../errors.ts";
import { createMatcher } from "./match.ts";
import { MANIFEST_NAME } from "../workspace/discover.ts";
import { proposeRule } from "./propose.ts";
import type { ShippedManifest } from "./shipped.ts";
import { DRAFT_MARK, type ToolInfo } from "./types.ts";

export type { ToolInfo } from "./types.ts";

export interface CommandBlock {
  command: string;
  args: string[];
  env?: Record<string, string>;
  cwd?: string;
}

/** A remote server: its URL, and whether it signs in with OAuth. */
export interface UrlBlock {
  url: string;
  /** As written in the manifest: `${VAR}` where the value is a secret kept elsewhere (wrap). */
  headers?: Record<string, string>;
  auth?: "oauth";
}

export type ServerBlock = CommandBlock | UrlBlock;

/** The server's block; an adopted policy's own env and cwd stay (placeholders included), and what the command line set wins. */
function serverNode(server: ServerBlock, adopted?: { env?: Record<string, string>; cwd?: string }): Record<string, unknown> {
  if ("url" in server) {
    return {
      url: server.url,
      ...(server.headers && Object.keys(server.headers).length ? { headers: server.headers } : {}),
      ...(server.auth ? { auth: server.auth } : {}),
    };
  }
  const block: Record<string, unknown> = { command: server.command, args: server.args };
  const env = { ...adopted?.env, ...server.env };
  if (Object.keys(env).length) block.env = env;
  const cwd = server.cwd ?? adopted?.cwd;
  if (cwd !== undefined) block.cwd = cwd;
  return block;
}

/** One rule to write, with the comment that goes above it. */
export interface DraftRule {
  node: YAMLMap;
  kind: "adopted" | "readonly" | "proposed" | "todo";
}

export interface Draft {
  text: string;
  adoptedFrom?: ShippedManifest;
  counts: { adopted: number; readonly: number; proposed: number; todo: number };
  /** TODO comments left in the whole file after writing. */
  todosInFile: number;
}

function shippedServerName(doc: Document): string | undefined {
  const servers = doc.get("servers", true);
  if (!isMap(servers) || servers.items.length !== 1) return undefined;
  const key = servers.items[0]!.key;
  return isScalar(key) ? String(key.value) : undefined;
}

/** What a shipped policy's server block sets besides how to start it: its env (with ${VAR} placeholders) and cwd. */
function shippedSetting(doc: Document, server: string): Pick<CommandBlock, "env" | "cwd"> {
  const block = doc.getIn(["servers", server], true);
  if (!isMap(block)) return {};
  const { env, cwd } = block.toJSON() as { env?: Record<string, unknown>; cwd?: unknown };
  return {
    ...(env && typeof env === "object" ? { env: Object.fromEntries(Object.entries(env).map(([k, v]) => [k, String(v)])) } : {}),
    ...(typeof cwd === "string" ? { cwd } : {}),
  };
}

/** The comment at the top of a manifest (yaml attaches it to the document or to its first key). */
function headerComment(doc: Document): string | undefined {
  if (doc.commentBefore) return doc.commentBefore;
  const contents = doc.contents;
  if (!isMap(contents)) return undefined;
  const first = contents.items[0]?.key;
  return contents.commentBefore ?? (isScalar(first) ? first.commentBefore : undefined) ?? undefined;
}

function renameServer(value: string, from: string, to: string): string {
  return value.startsWith(`${from}.`) ? `${to}.${value.slice(from.length + 1)}` : value;
}

/**
 * The shipped rules that apply to this server, renamed to `name`: only when
 * every concrete tool those rules name (matches without "*", snapshot and
 * inverse tools) exists on it.
 */
export function adoptShipped(
  shipped: ShippedManifest[],
  name: string,
  tools: string[],
): { from: ShippedManifest; rules: YAMLMap[]; header: string | undefined; server: Pick<CommandBlock, "env" | "cwd"> } | undefined {
  const available = new Set(tools);
  for (const manifest of shipped) {
    const doc = parseDocument(manifest.text);
    const original = shippedServerName(doc);
    const rules = doc.get("tools", true);
    if (!original || !isSeq(rules)) continue;
    const referenced: string[] = [];
    for (const rule of rules.items) {
      if (!isMap(rule)) continue;
      const match = String(rule.get("match"));
      if (!match.includes("*")) referenced.push(match);
      for (const call of callsOf(rule)) referenced.push(String(call.get("tool")));
    }
    const fits = referenced.every((ref) => ref.startsWith(`${original}.`) && available.has(ref.slice(original.length + 1)));
    if (!fits || referenced.length === 0) continue;
    const renamed = rules.items.filter(isMap).map((rule) => {
      const copy = rule.clone() as YAMLMap;
      copy.set("match", renameServer(String(copy.get("match")), original, name));
      for (const call of callsOf(copy)) call.set("tool", renameServer(String(call.get("tool")), original, name));
      return copy;
    });
    return { from: manifest, rules: renamed, header: headerComment(doc), server: shippedSetting(doc, original) };
  }
  return undefined;
}

/** The calls a rule names besides its match: its snapshot, each call of its inverse and when_absent, and the read tool of its `sql:`. */
function callsOf(rule: YAMLMap): YAMLMap[] {
  const sql = rule.get("sql", true);
  const listed = (key: string) => {
    const value = rule.get(key, true);
    return isSeq(value) ? value.items : [value];
  };
  const calls: unknown[] = [rule.get("snapshot", true), ...listed("inverse"), ...listed("when_absent"), isMap(sql) ? sql.get("read", true) : undefined];
  return calls.filter((call): call is YAMLMap => isMap(call));
}

function hintLine(tool: ToolInfo): string {
  const a = tool.annotations ?? {};
  const hints = (["destructiveHint", "idempotentHint", "openWorldHint"] as const).filter((key) => a[key] !== undefined).map((key) => `${key}=${a[key]}`);
  return hints.length ? hints.join(", ") : "none given";
}

function oneLineText(text: string | undefined): string {
  return (text ?? "").replace(/\s+/g, " ").trim() || "(no description)";
}

/** The argument that carries SQL, when the tool takes exactly one string argument named for it (query, sql, statement). */
export function sqlArgument(tool: ToolInfo): string | undefined {
  const properties = (tool.inputSchema as { properties?: Record<string, { type?: unknown }> } | undefined)?.properties;
  if (!properties || typeof properties !== "object") return undefined;
  const named = Object.entries(properties).filter(([name, schema]) => /^(sql|query|statement|sql_?query)$/i.test(name) && schema?.type === "string");
  return named.length === 1 ? named[0]![0] : undefined;
}

/** A tool of the same server that takes SQL and only reads (its hint, or its name): what an `sql:` rule would read rows with. */
function sqlReader(tools: ToolInfo[], writer: ToolInfo): { tool: ToolInfo; arg: string } | undefined {
  for (const tool of tools) {
    const arg = sqlArgument(tool);
    if (!arg || tool === writer) continue;
    if (tool.annotations?.readOnlyHint === true || /^(read|select)(_|$)|_(read|select)$|^read_query$/i.test(tool.name)) return { tool, arg };
  }
  return undefined;
}

/** The `sql:` block a person may confirm for a tool that takes SQL, as comment lines (nothing is trusted until they do). */
function sqlProposal(server: string, tool: ToolInfo, tools: ToolInfo[]): string[] {
  const arg = sqlArgument(tool);
  const reader = arg && sqlReader(tools, tool);
  if (!arg || !reader) return [];
  return [
    `   It takes SQL in "${arg}": to record each statement row by row and undo it (SQLite only, so far: docs/sql.md),`,
    `   confirm the database is SQLite and replace this rule's class and gate with:`,
    `     class: reversible`,
    `     sql: { dialect: sqlite, statement: "$.${arg}", read: { tool: "${server}.${reader.tool.name}", arg: ${reader.arg} } }`,
  ];
}

export function draftRule(doc: Document, server: string, tool: ToolInfo, tools: ToolInfo[] = [tool]): DraftRule {
  const match = `${server}.${tool.name}`;
  if (tool.annotations?.readOnlyHint === true) {
    const node = doc.createNode({ match, class: "readonly" }) as YAMLMap;
    node.commentBefore = ` ${match}: readonly because the server's own readOnlyHint says so (trusted, not verified).`;
    return { node, kind: "readonly" };
  }
  const proposal = sqlArgument(tool) ? undefined : proposeRule(server, tool, tools);
  if (proposal && "rule" in proposal) {
    const node = doc.createNode({ match, ...proposal.rule }) as YAMLMap;
    node.commentBefore = [
      ` ${DRAFT_MARK} — proposed by init, because ${proposal.why}. ${oneLineText(tool.description)}`,
      `   Server hints: ${hintLine(tool)}`,
      `   Until you remove the first line of this comment, every call of ${tool.name} waits for a person. Check the`,
      `   snapshot and inverse first (and add absent_when with the words the read's errors use for "not found").`,
    ].join("\n");
    return { node, kind: "proposed" };
  }
  const node = doc.createNode({ match, class: "irreversible", gate: "always" }) as YAMLMap;
  node.commentBefore = [
    ` TODO ${match}: gated until you decide. ${oneLineText(tool.description)}`,
    `   Server hints: ${hintLine(tool)}`,
    ...(proposal ? [`   No inverse proposed: ${proposal.none}.`] : []),
    ...sqlProposal(server, tool, tools),
    `   Choose one:`,
    `   - reversible: add a snapshot (a read of what it replaces) and an inverse that writes it back;`,
    `   - compensable: add an inverse built from $result (a call that cancels it);`,
    `   - or leave it irreversible: every call waits for a person's approval.`,
  ].join("\n");
  return { node, kind: "todo" };
}

function countTodos(text: string): number {
  return text.split("\n").filter((line) => /^\s*#\s*TODO\b/.test(line)).length;
}

function removeServer(doc: Document, name: string): void {
  const servers = doc.get("servers", true);
  if (isMap(servers)) servers.delete(name);
  const rules = doc.get("tools", true);
  if (!isSeq(rules)) return;
  rules.items = rules.items.filter((rule) => {
    if (!isMap(rule)) return true;
    const match = String(rule.get("match") ?? "");
    return !match.startsWith(`${name}.`);
  });
}

const HEADER = [
  " Synartesis policy: which tool calls are recorded, how each is undone, and",
  " which wait for a person. Written by `synartesis init`; see the README.",
  " Unmentioned tools are treated as irreversible and gated.",
].join("\n");

/**
 * Add a server and its rules to manifest text (or a new manifest when
 * `existing` is undefined). Throws when the server exists and `force` is off.
 */
export function writeServer(options: {
  existing: string | undefined;
  name: string;
  server: ServerBlock;
  tools: ToolInfo[];
  shipped: ShippedManifest[];
  force: boolean;
  draftOnly: boolean;
}): Draft {
  const doc = options.existing === undefined ? parseDocument("version: 1\n") : parseDocument(options.existing);
  if (doc.errors.length) {
    throw new SynartesisError("manifest", `the existing ${MANIFEST_NAME} is not valid YAML: ${doc.errors[0]!.message.split("\n")[0]}`);
  }
  if (options.existing === undefined) doc.commentBefore = HEADER;
  if (!isMap(doc.contents)) throw new SynartesisError("manifest", `the existing manifest is not a map of version, servers and tools`);

  let servers = doc.get("servers", true);
  if (!isMap(servers)) {
    servers = doc.createNode({}) as YAMLMap;
    doc.set("servers", servers);
  }
  const serversMap = servers as YAMLMap;
  if (serversMap.has(options.name)) {
    if (!options.force) {
      throw new SynartesisError("config", `the manifest already has a server named "${options.name}"`, {
        hint: "Pick another name, or pass --force to replace that server's block and rules.",
      });
    }
    removeServer(doc, options.name);
  }
  serversMap.flow = false;
  const adopted = options.draftOnly
    ? undefined
    : adoptShipped(
        options.shipped,
        options.name,
        options.tools.map((t) => t.name),
      );
  serversMap.set(options.name, doc.createNode(serverNode(options.server, adopted?.server)));

  let rules = doc.get("tools", true);
  if (!isSeq(rules)) {
    rules = new YAMLSeq();
    doc.set("tools", rules);
  }
  const seq = rules as YAMLSeq;
  seq.flow = false;

  const counts = { adopted: 0, readonly: 0, proposed: 0, todo: 0 };
  if (adopted) {
    if (adopted.rules[0]) {
      const note = [
        ` Rules for "${options.name}" adopted from the shipped policy for ${adopted.from.title} (manifests/${adopted.from.file}).`,
        adopted.header ? `${adopted.header}` : "",
      ]
        .filter(Boolean)
        .join("\n");
      adopted.rules[0].commentBefore = adopted.rules[0].commentBefore ? `${note}\n\n${adopted.rules[0].commentBefore}` : note;
    }
    seq.items.push(...adopted.rules);
    counts.adopted = adopted.rules.length;
  }
  const matcher = createMatcher({
    rules: adopted ? adopted.rules.map((r) => ({ match: String(r.get("match")), class: "readonly", gate: "never", line: 0 })) : [],
  });
  for (const tool of options.tools) {
    if (adopted && matcher.classify(options.name, tool.name).rule) continue;
    const rule = draftRule(doc, options.name, tool, options.tools);
    seq.items.push(rule.node);
    counts[rule.kind === "adopted" ? "todo" : rule.kind]++;
  }
  const text = doc.toString({ lineWidth: 0 });
  return { text, ...(adopted ? { adoptedFrom: adopted.from } : {}), counts, todosInFile: countTodos(text) };
}
