// Turns manifest text into a checked Manifest, or into every problem it has,
// each as `file:line:col: message` (R-MAN-1…3, R-MAN-6). Pure apart from
// loadManifest(), which reads the file.
import { readFileSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import { Value } from "typebox/value";
import { isAlias, isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, visit, type Document, type Node } from "yaml";
import { SynartesisError } from "../errors.ts";
import { parseAuth } from "./auth.ts";
import { ALLOWED_KEYS, ManifestSchema } from "./schema.ts";
import { parseTemplate, refsOf, type Namespace } from "./refs.ts";
import { DEFAULT_TIMEOUT_SECONDS, type CallSpec, type Gate, type Manifest, type Rule, type ServerSpec, type ToolClass, type UnsetVariable } from "./types.ts";
import { patternToRegExp } from "./match.ts";

type Path = Array<string | number>;

export interface Problem {
  line: number;
  col: number;
  message: string;
}

export class ManifestError extends SynartesisError {
  readonly problems: Problem[];
  constructor(file: string, problems: Problem[]) {
    const lines = problems.map((p) => `${file}:${p.line}:${p.col}: ${p.message}`);
    super("manifest", problems.length === 1 ? lines[0]! : `${file}: ${problems.length} problems`, {
      details: problems.length === 1 ? [] : lines,
    });
    this.name = "ManifestError";
    this.problems = problems;
  }
}

/** A value that is not written at all (`key:` and nothing), as opposed to an explicit `~` or `null`. */
function isEmpty(node: unknown): boolean {
  if (node === null || node === undefined) return true;
  const range = (node as Node).range;
  return !range || (isScalar(node) && node.value === null && range[0] === range[1]);
}

/** Where a path points in the YAML: the deepest node that exists, and whether the key itself should be blamed. */
function locate(doc: Document, path: Path, blameKey: boolean): number {
  let node: unknown = doc.contents;
  let offset = (node as Node | null)?.range?.[0] ?? 0;
  for (let i = 0; i < path.length; i++) {
    if (isAlias(node)) node = node.resolve(doc);
    const segment = path[i];
    if (isMap(node)) {
      const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(segment));
      if (!pair) break;
      const last = i === path.length - 1;
      const keyStart = (pair.key as Node).range?.[0] ?? offset;
      if (last && (blameKey || isEmpty(pair.value))) return keyStart;
      node = pair.value;
      // `key:` with nothing after it: the key is the deepest node a person can see.
      offset = isEmpty(node) ? keyStart : ((node as Node).range?.[0] ?? keyStart);
    } else if (isSeq(node) && typeof segment === "number" && segment < node.items.length) {
      node = node.items[segment];
      offset = (node as Node | null)?.range?.[0] ?? offset;
    } else break;
  }
  return offset;
}

function label(path: Path): string {
  const last = [...path].reverse().find((s) => typeof s === "string");
  const name = last === undefined ? "the manifest" : `"${last}"`;
  // A list item is named by its position, not by the list ("item 2 of "args"", not "args").
  const tail = path[path.length - 1];
  return typeof tail === "number" ? `item ${tail + 1} of ${name}` : name;
}

function typeName(value: unknown): string {
  if (value === null || value === undefined) return "nothing";
  if (Array.isArray(value)) return "a list";
  return typeof value === "object" ? "a map" : `a ${typeof value}`;
}

const found = (value: unknown) => (value === null || value === undefined ? "nothing" : JSON.stringify(value));

function getAt(data: unknown, path: Path): unknown {
  let current = data;
  for (const segment of path) {
    if (current === null || typeof current !== "object") return undefined;
    current = (current as Record<string | number, unknown>)[segment];
  }
  return current;
}

const ARTICLE: Record<string, string> = { string: "a string", number: "a number", object: "a map", array: "a list", boolean: "true or false" };

/** Unknown keys, found before typebox sees the data (typebox stops early on them). */
function unknownKeys(data: unknown, report: (path: Path, message: string, blameKey: boolean) => void): void {
  const check = (value: unknown, allowed: readonly string[], path: Path, what: string) => {
    if (value === null || typeof value !== "object" || Array.isArray(value)) return;
    for (const key of Object.keys(value)) {
      if (!allowed.includes(key)) {
        report([...path, key], `unknown key "${key}" in ${what} (allowed: ${allowed.join(", ")})`, true);
      }
    }
  };
  check(data, ALLOWED_KEYS.root, [], "the manifest");
  const root = data as Record<string, unknown> | null;
  const servers = root?.servers;
  if (servers && typeof servers === "object" && !Array.isArray(servers)) {
    for (const [name, server] of Object.entries(servers)) {
      check(server, ALLOWED_KEYS.server, ["servers", name], `server "${name}"`);
      check((server as Record<string, unknown> | null)?.auth, ALLOWED_KEYS.auth, ["servers", name, "auth"], `"auth"`);
    }
  }
  const tools = root?.tools;
  if (Array.isArray(tools)) {
    tools.forEach((rule, i) => {
      check(rule, ALLOWED_KEYS.rule, ["tools", i], "a tool rule");
      for (const part of ["snapshot", "inverse"] as const) {
        const call = (rule as Record<string, unknown> | null)?.[part];
        check(call, ALLOWED_KEYS.call, ["tools", i, part], part);
      }
    });
  }
}

function withoutUnknownKeys(data: unknown, allowed: readonly string[]): unknown {
  if (data === null || typeof data !== "object" || Array.isArray(data)) return data;
  return Object.fromEntries(Object.entries(data).filter(([key]) => allowed.includes(key)));
}

function pruneForSchema(data: unknown): unknown {
  const root = withoutUnknownKeys(data, ALLOWED_KEYS.root) as Record<string, unknown>;
  if (root === null || typeof root !== "object") return root;
  const out: Record<string, unknown> = { ...root };
  if (root.servers && typeof root.servers === "object" && !Array.isArray(root.servers)) {
    out.servers = Object.fromEntries(
      Object.entries(root.servers).map(([name, server]) => [name, withoutUnknownKeys(server, ALLOWED_KEYS.server)]),
    );
  }
  if (Array.isArray(root.tools)) {
    out.tools = root.tools.map((rule) => {
      const pruned = withoutUnknownKeys(rule, ALLOWED_KEYS.rule) as Record<string, unknown>;
      if (pruned === null || typeof pruned !== "object") return pruned;
      const copy: Record<string, unknown> = { ...pruned };
      for (const part of ["snapshot", "inverse"]) {
        if (part in copy) copy[part] = withoutUnknownKeys(copy[part], ALLOWED_KEYS.call);
      }
      return copy;
    });
  }
  return out;
}

function schemaProblems(data: unknown, report: (path: Path, message: string, blameKey?: boolean) => void): void {
  const errors = [...Value.Errors(ManifestSchema, pruneForSchema(data))];
  const toPath = (pointer: string): Path =>
    pointer === ""
      ? []
      : pointer
          .slice(1)
          .split("/")
          .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"))
          .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
  const anyOfPaths = errors.filter((e) => e.keyword === "anyOf").map((e) => e.instancePath);
  const constPaths = errors.filter((e) => e.keyword === "const").map((e) => e.instancePath);
  for (const error of errors) {
    const path = toPath(error.instancePath);
    // Inside a union, report the union once instead of every branch's complaint.
    if (error.keyword !== "anyOf" && anyOfPaths.some((p) => error.instancePath === p || error.instancePath.startsWith(p + "/"))) continue;
    // `version: "1"` breaks both the type and the literal; the literal says it all.
    if (error.keyword === "type" && constPaths.includes(error.instancePath)) continue;
    const value = getAt(data, path);
    const params = error.params as Record<string, unknown>;
    const name = label(path);
    switch (error.keyword) {
      case "required": {
        const missing = (params.requiredProperties as string[]).join('", "');
        const where = path.length === 0 ? "the manifest" : path[0] === "tools" && path.length === 2 ? "this rule" : name;
        report(path, `${where} is missing "${missing}"`);
        break;
      }
      case "type":
        report(path, `${name} must be ${ARTICLE[String(params.type)] ?? params.type}, found ${typeName(value)}`);
        break;
      case "enum":
        report(path, `${name} must be one of ${(params.allowedValues as string[]).join(", ")} (found ${found(value)})`);
        break;
      case "const":
        report(path, `${name} must be ${JSON.stringify(params.allowedValue)} (found ${found(value)})`);
        break;
      case "minProperties":
        report(path, path[0] === "servers" ? "servers must declare at least one server" : `${name} must not be empty`);
        break;
      case "minLength":
      case "minItems":
        report(path, `${name} must not be empty`);
        break;
      case "exclusiveMinimum":
        report(path, `${name} must be a positive number of seconds`);
        break;
      case "anyOf":
        report(path, path[path.length - 1] === "absent_when" ? `"absent_when" must be a string or a non-empty list of strings` : `${name} has the wrong shape`);
        break;
      default:
        report(path, `${name} ${error.message}`);
    }
  }
}

const withArticle = (word: string) => (/^[aeiou]/.test(word) ? `an ${word}` : `a ${word}`);

const ENV_REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/**
 * ${VAR} in one value, from `env`. An unset variable is handed to `unset`
 * (with the message that names it) and the value comes back undefined.
 */
function expandValue(
  value: string,
  env: Record<string, string | undefined>,
  path: Path,
  unset: (path: Path, variable: string, message: string) => void,
): string | undefined {
  let complete = true;
  const expanded = value.replace(ENV_REFERENCE, (whole, variable: string) => {
    const found = env[variable];
    if (found !== undefined) return found;
    complete = false;
    unset(path, variable, `"${path[path.length - 1]}" uses \${${variable}}, which is not set in the environment`);
    return whole;
  });
  return complete ? expanded : undefined;
}

/** ${VAR} expanded in every value; a key whose value uses an unset variable is left out, so a server started anyway sees only what it inherits. */
function expandEnv(
  values: Record<string, string> | undefined,
  env: Record<string, string | undefined>,
  path: Path,
  unset: (path: Path, variable: string, message: string) => void,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(values ?? {})) {
    const expanded = expandValue(value, env, [...path, key], unset);
    if (expanded !== undefined) out[key] = expanded;
  }
  return out;
}

function splitTool(qualified: string): { server: string; tool: string } | undefined {
  const dot = qualified.indexOf(".");
  if (dot <= 0 || dot === qualified.length - 1) return undefined;
  return { server: qualified.slice(0, dot), tool: qualified.slice(dot + 1) };
}

const ALLOWED_NAMESPACES: Record<"snapshot" | "inverse", (hasSnapshot: boolean) => Namespace[]> = {
  snapshot: () => ["args"],
  inverse: (hasSnapshot) => (hasSnapshot ? ["args", "result", "snapshot"] : ["args", "result"]),
};

const NAMESPACE_TEXT: Record<Namespace, string> = { args: "$.", result: "$result", snapshot: "$snapshot" };

interface RawCall {
  tool: string;
  args?: Record<string, unknown>;
  absent_when?: string | string[];
}

interface RawRule {
  match: string;
  class: ToolClass;
  gate?: Gate;
  idempotent?: boolean;
  snapshot?: RawCall;
  inverse?: RawCall;
}

interface RawServer {
  command?: string;
  args?: string[];
  env?: Record<string, string>;
  cwd?: string;
  url?: string;
  headers?: Record<string, string>;
  auth?: unknown;
  timeout?: number;
  timeout_max?: number;
}

export interface ParseOptions {
  /**
   * "error" (the default): an unset ${VAR} is a load error at its line (R-MAN-6).
   * "warn": it is listed in `unsetVariables` instead, for `check` and `init`,
   * which cannot know the environment a client will start the proxy with.
   */
  unsetVariables?: "error" | "warn";
}

/**
 * Parse and check manifest text. `file` is the absolute path (used for
 * messages and to resolve relative paths); `env` expands ${VAR}.
 */
export function parseManifest(text: string, file: string, env: Record<string, string | undefined>, options: ParseOptions = {}): Manifest {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const problems: Problem[] = [];
  const at = (offset: number, message: string) => {
    const pos = lineCounter.linePos(offset);
    problems.push({ line: Math.max(pos.line, 1), col: Math.max(pos.col, 1), message });
  };
  const report = (path: Path, message: string, blameKey = false) => at(locate(doc, path, blameKey), message);
  const unsetVariables: UnsetVariable[] = [];
  const fail = (): never => {
    const unique = new Map<string, Problem>();
    // A manifest that does not load anyway: an unset variable is one more of its problems.
    for (const p of [...problems, ...unsetVariables]) unique.set(`${p.line}:${p.col}:${p.message}`, p);
    throw new ManifestError(file, [...unique.values()].sort((a, b) => a.line - b.line || a.col - b.col));
  };

  for (const error of doc.errors) {
    at(error.pos[0], `YAML syntax error: ${error.message.split("\n")[0]}`);
  }
  if (problems.length) fail();

  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 100 });
  } catch (error) {
    // The parser accepts an alias whose anchor is never set; turning it into data does not.
    let offset = 0;
    visit(doc, {
      Alias(_, alias) {
        if (alias.resolve(doc) !== undefined) return undefined;
        offset = alias.range?.[0] ?? 0;
        return visit.BREAK;
      },
    });
    at(offset, `YAML error: ${(error as Error).message}`);
    fail();
  }
  if (data === null || data === undefined) {
    at(0, 'the manifest is empty; it needs at least "version: 1" and "servers"');
    fail();
  }
  if (typeof data !== "object" || Array.isArray(data)) {
    report([], `the manifest must be a map with "version", "servers" and "tools", found ${typeName(data)}`);
    fail();
  }
  // Shape problems first; the cross-field rules then look only at the servers
  // and rules whose shape was right, so one run reports everything it can.
  const misshapen = new Set<string>();
  const reportShape = (path: Path, message: string, blameKey = false) => {
    misshapen.add(path.slice(0, 2).join("/"));
    misshapen.add(String(path[0] ?? ""));
    report(path, message, blameKey);
  };
  unknownKeys(data, report);
  schemaProblems(data, reportShape);
  const shapeOk = (...path: Path) => !misshapen.has(path.join("/"));

  const rawRoot = data as { servers?: unknown; tools?: unknown; journal?: unknown };
  const root = {
    servers: (rawRoot.servers && typeof rawRoot.servers === "object" && !Array.isArray(rawRoot.servers) ? rawRoot.servers : {}) as Record<string, RawServer>,
    tools: (Array.isArray(rawRoot.tools) ? rawRoot.tools : []) as RawRule[],
  };
  const dir = dirname(file);
  const unset = (path: Path, variable: string, message: string) => {
    if (options.unsetVariables !== "warn") return report(path, message);
    const pos = lineCounter.linePos(locate(doc, path, false));
    unsetVariables.push({ variable, line: pos.line, col: pos.col, message });
  };
  const servers: Record<string, ServerSpec> = {};
  for (const [name, raw] of Object.entries(root.servers)) {
    const path: Path = ["servers", name];
    if (!shapeOk("servers", name)) continue;
    const line = lineCounter.linePos(locate(doc, path, true)).line;
    if (name.includes(".") || name.includes("__") || name === "") {
      report(path, `server name "${name}" must not be empty or contain "." or "__" (they separate server and tool names)`, true);
    } else if (name.startsWith("_") || name.endsWith("_")) {
      report(path, `server name "${name}" must not start or end with "_" (with several servers, tools are named SERVER__TOOL)`, true);
    }
    const timeoutMs = (raw.timeout ?? DEFAULT_TIMEOUT_SECONDS) * 1000;
    const timeoutMaxMs = raw.timeout_max === undefined ? undefined : raw.timeout_max * 1000;
    if (timeoutMaxMs !== undefined && timeoutMaxMs < timeoutMs) {
      report([...path, "timeout_max"], `timeout_max (${raw.timeout_max} s) must be at least timeout (${timeoutMs / 1000} s): it caps how far progress can extend a request's timeout`);
    }
    if (raw.command !== undefined && raw.url !== undefined) {
      report([...path, "url"], `server "${name}" has both "command" and "url"; choose one`, true);
      continue;
    }
    if (raw.command === undefined && raw.url === undefined) {
      report(path, `server "${name}" needs "command" (a program to start) or "url" (a Streamable HTTP endpoint)`, true);
      continue;
    }
    if (raw.command !== undefined) {
      for (const key of ["headers", "auth"] as const) {
        if (raw[key] !== undefined) report([...path, key], `"${key}" only applies to a "url" server`, true);
      }
      const cwd = resolve(dir, raw.cwd ?? ".");
      const command = raw.command.includes("/") && !isAbsolute(raw.command) ? resolve(dir, raw.command) : raw.command;
      servers[name] = {
        name,
        kind: "command",
        command,
        args: raw.args ?? [],
        env: expandEnv(raw.env, env, [...path, "env"], unset),
        cwd,
        timeoutMs,
        timeoutMaxMs,
        line,
      };
    } else {
      for (const key of ["args", "env", "cwd"] as const) {
        if (raw[key] !== undefined) report([...path, key], `"${key}" only applies to a "command" server`, true);
      }
      let url: URL | undefined;
      try {
        url = new URL(raw.url!);
      } catch {
        report([...path, "url"], `"${raw.url}" is not a valid URL`);
      }
      if (url && url.protocol !== "http:" && url.protocol !== "https:") {
        report([...path, "url"], `url must start with http:// or https:// (found ${url.protocol})`);
      }
      const headers = expandEnv(raw.headers, env, [...path, "headers"], unset);
      const auth =
        raw.auth === undefined
          ? undefined
          : parseAuth(raw.auth, [...path, "auth"], report, (value, at) => expandValue(value, env, at, unset) ?? value, file);
      const authorization = Object.keys(headers).find((key) => key.toLowerCase() === "authorization");
      if (raw.auth !== undefined && authorization) {
        report([...path, "headers", authorization], `"${authorization}" is set by the OAuth sign-in ("auth"); remove one of them`, true);
      }
      servers[name] = { name, kind: "url", url: raw.url!, headers, ...(auth ? { auth } : {}), timeoutMs, timeoutMaxMs, line };
    }
  }
  // With no servers (already reported) every rule would name an undeclared
  // one, so names are checked against servers only when there are some.
  const serverNames = Object.keys(root.servers);

  const rules: Rule[] = [];
  const seen = new Map<string, number>();
  root.tools.forEach((raw, index) => {
    const path: Path = ["tools", index];
    const line = lineCounter.linePos(locate(doc, path, false)).line;
    if (typeof raw?.match === "string") {
      const previous = seen.get(raw.match);
      if (previous !== undefined) report([...path, "match"], `duplicate match "${raw.match}" (already used by the rule at line ${previous})`);
      else seen.set(raw.match, line);
    }
    if (!shapeOk("tools", index)) return;

    const split = splitTool(raw.match);
    if (!split) {
      report([...path, "match"], `match "${raw.match}" must look like "server.tool" (a "*" matches within one part)`);
    } else if (serverNames.length) {
      const serverPattern = patternToRegExp(split.server);
      if (!serverNames.some((s) => serverPattern.test(s))) {
        report([...path, "match"], `match "${raw.match}" names no declared server (declared: ${serverNames.join(", ")})`);
      }
    }

    const needsInverse = raw.class === "reversible" || raw.class === "compensable";
    if (needsInverse && !raw.inverse) {
      report(path, `${withArticle(raw.class)} rule needs an "inverse" (the call that puts the state back)`);
    }
    if (!needsInverse && raw.inverse) {
      report([...path, "inverse"], `${withArticle(raw.class)} rule has no inverse; remove it or change the class`, true);
    }
    if (raw.class === "readonly" && raw.snapshot) {
      report([...path, "snapshot"], `a readonly rule changes nothing, so it takes no snapshot`, true);
    }
    if (raw.class === "reversible" && !raw.snapshot) {
      report(path, `a reversible rule needs a "snapshot" (the read that captures the state it replaces); without one, make it compensable`);
    }
    if (raw.idempotent !== undefined && !needsInverse) {
      report([...path, "idempotent"], `"idempotent" says undo may resend this rule's inverse, and ${withArticle(raw.class)} rule has none`, true);
    }
    if (raw.inverse?.absent_when !== undefined) {
      report([...path, "inverse", "absent_when"], `"absent_when" belongs to a snapshot (the read that may find nothing), not to an inverse`, true);
    }

    const call = (part: "snapshot" | "inverse"): CallSpec | undefined => {
      const rawCall = raw[part];
      if (!rawCall) return undefined;
      const callPath: Path = [...path, part];
      const target = splitTool(rawCall.tool);
      if (!target || rawCall.tool.includes("*")) {
        report([...callPath, "tool"], `${part} tool "${rawCall.tool}" must name one tool as "server.tool" (no "*")`);
      } else if (serverNames.length && !serverNames.includes(target.server)) {
        report([...callPath, "tool"], `${part} tool "${rawCall.tool}" names an undeclared server "${target.server}" (declared: ${serverNames.join(", ")})`);
      }
      const refProblems: Array<{ at: Path; message: string }> = [];
      const args = parseTemplate(rawCall.args ?? {}, refProblems);
      for (const problem of refProblems) report([...callPath, "args", ...problem.at], problem.message);
      const allowed = ALLOWED_NAMESPACES[part](raw.snapshot !== undefined);
      for (const { ref, at: refAt } of refsOf(args)) {
        if (allowed.includes(ref.namespace)) continue;
        const why =
          ref.namespace === "snapshot" && part === "inverse"
            ? `${ref.text} reads the snapshot, but this rule declares no "snapshot"`
            : `${ref.text} cannot be used in ${part} args (allowed here: ${allowed.map((n) => NAMESPACE_TEXT[n]).join(", ")})`;
        report([...callPath, "args", ...refAt], why);
      }
      const absent = rawCall.absent_when;
      const toolPos = lineCounter.linePos(locate(doc, [...callPath, "tool"], false));
      return {
        at: { line: toolPos.line, col: toolPos.col },
        server: target?.server ?? "",
        tool: target?.tool ?? "",
        args,
        absentWhen: absent === undefined ? [] : [absent].flat(),
      };
    };
    const rule: Rule = {
      match: raw.match,
      class: raw.class,
      gate: raw.gate ?? (raw.class === "irreversible" ? "always" : "never"),
      idempotent: raw.idempotent === true,
      line,
    };
    const snapshot = call("snapshot");
    const inverse = call("inverse");
    if (snapshot) rule.snapshot = snapshot;
    if (inverse) rule.inverse = inverse;
    rules.push(rule);
  });

  // Where the journal is cannot be guessed: an unset variable in it is an error whatever the mode.
  const journal = typeof rawRoot.journal === "string" ? expandValue(rawRoot.journal, env, ["journal"], (path, _, message) => report(path, message)) : undefined;

  if (problems.length) fail();
  return { path: file, dir, servers, rules, unsetVariables, ...(journal === undefined ? {} : { journal }) };
}

/** Read and parse a manifest file. */
export function loadManifest(file: string, env: Record<string, string | undefined> = process.env, options: ParseOptions = {}): Manifest {
  const path = resolve(file);
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new SynartesisError("manifest", code === "ENOENT" ? `there is no manifest at ${path}` : `cannot read the manifest ${path}: ${(error as Error).message}`, {
      hint: code === "ENOENT" ? "Create one with `synartesis init NAME -- COMMAND ARGS…`, or pass --manifest PATH." : undefined,
    });
  }
  return parseManifest(text, path, env, options);
}
