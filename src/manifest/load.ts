// Turns manifest text into a checked Manifest, or into every problem it has,
// each as `file:line:col: message` (R-MAN-1…3, R-MAN-6): YAML first, then the
// shape (shape.ts), then each section (servers.ts, rules.ts). Pure apart from
// loadManifest(), which reads the file.
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { isMap as isYamlMap, LineCounter, parseDocument, visit, type Document } from "yaml";
import { SynartesisError } from "../errors.ts";
import type { SectionContext } from "./context.ts";
import { EnvExpander } from "./env.ts";
import { Problems, type Path } from "./problems.ts";
import { parseRules } from "./rules.ts";
import type { RawManifest } from "./schema.ts";
import { parseServers } from "./servers.ts";
import { shapeProblems, typeName, withoutUnknownKeys } from "./shape.ts";
import type { Manifest, NotifyTarget, UnsetVariable } from "./types.ts";

export { ManifestError, type Problem } from "./problems.ts";

export interface ParseOptions {
  /**
   * "error" (the default): an unset ${VAR} is a load error at its line (R-MAN-6).
   * "warn": it is listed in `unsetVariables` instead, for `check` and `init`,
   * which cannot know the environment a client will start the proxy with.
   */
  unsetVariables?: "error" | "warn";
  /**
   * Load for serving this one server only (`proxy --server`, as `wrap`
   * writes client entries): the other servers' ${VAR}s need not be set, since
   * each client entry gives only its own server's environment; the manifest
   * loaded has that server alone.
   */
  onlyServer?: string;
}

/** The data of a YAML text that parses, or the problems that stop it. */
function yamlData(doc: Document, problems: Problems): { data: unknown } | undefined {
  for (const error of doc.errors) problems.at(error.pos[0], `YAML syntax error: ${error.message.split("\n")[0]}`);
  if (problems.count) return undefined;
  try {
    return { data: doc.toJS({ maxAliasCount: 100 }) };
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
    problems.at(offset, `YAML error: ${(error as Error).message}`);
    return undefined;
  }
}

/** The comment above a node: on the node, or (yaml puts it there for a map in a list) on its first key. */
function commentAbove(doc: Document, path: Path): string | undefined {
  const node = doc.getIn(path, true);
  if (!node || typeof node !== "object") return undefined;
  const own = (node as { commentBefore?: string | null }).commentBefore;
  const first = isYamlMap(node) ? (node.items[0]?.key as { commentBefore?: string | null } | undefined)?.commentBefore : undefined;
  return [own, first].filter(Boolean).join("\n") || undefined;
}

const isMap = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object" && !Array.isArray(value);

/**
 * Parse and check manifest text. `file` is the absolute path (used for
 * messages and to resolve relative paths); `env` expands ${VAR}.
 */
export function parseManifest(text: string, file: string, env: Record<string, string | undefined>, options: ParseOptions = {}): Manifest {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const problems = new Problems(file, doc, lineCounter);
  const unsetVariables: UnsetVariable[] = [];
  // A manifest that does not load anyway: an unset variable is one more of its problems.
  const fail = (): never => {
    throw problems.error(unsetVariables);
  };

  const parsed = yamlData(doc, problems);
  if (!parsed) return fail();
  const data = parsed.data;
  if (data === null || data === undefined) {
    problems.at(0, 'the manifest is empty; it needs at least "version: 1" and "servers"');
    return fail();
  }
  if (!isMap(data)) {
    problems.report([], `the manifest must be a map with "version", "servers" and "tools", found ${typeName(data)}`);
    return fail();
  }

  // Shape problems first; the cross-field rules then look only at the servers
  // and rules whose shape was right, so one run reports everything it can.
  const misshapen = new Set<string>();
  shapeProblems(withoutUnknownKeys(data, problems.report), (path, message, blameKey) => {
    misshapen.add(path.slice(0, 2).join("/"));
    misshapen.add(String(path[0] ?? ""));
    problems.report(path, message, blameKey);
  });

  const onUnset = (path: Path, variable: string, message: string) => {
    if (options.onlyServer !== undefined && path[0] === "servers" && path[1] !== options.onlyServer) return;
    if (options.unsetVariables !== "warn") return problems.report(path, message);
    const pos = problems.position(path);
    unsetVariables.push({ variable, line: pos.line, col: pos.col, message });
  };
  const ctx: SectionContext = {
    file,
    dir: dirname(file),
    report: problems.report,
    position: (path, blameKey) => problems.position(path, blameKey),
    comment: (path) => commentAbove(doc, path),
    shapeOk: (...path) => !misshapen.has(path.join("/")),
    env: new EnvExpander(env, onUnset),
  };
  // Each section as far as its shape allows: a misshapen one counts as empty.
  const raw = data as Partial<RawManifest>;
  const rawServers = isMap(raw.servers) ? raw.servers : {};
  if (options.onlyServer !== undefined && !(options.onlyServer in rawServers)) {
    throw new SynartesisError("usage", `the manifest ${file} has no server "${options.onlyServer}" (it has: ${Object.keys(rawServers).join(", ") || "none"})`);
  }
  const parsedServers = parseServers(rawServers, ctx);
  const servers = options.onlyServer === undefined ? parsedServers : { [options.onlyServer]: parsedServers[options.onlyServer]! };
  const groups = isMap(raw.groups) ? (raw.groups as Record<string, string[]>) : undefined;
  const rules = parseRules(Array.isArray(raw.tools) ? raw.tools : [], Object.keys(rawServers), ctx, Object.keys(groups ?? {}));
  // Where the journal is cannot be guessed: an unset variable in it is an error whatever the mode.
  const journal =
    typeof raw.journal === "string"
      ? new EnvExpander(env, (path, _variable, message) => problems.report(path, message)).value(raw.journal, ["journal"])
      : undefined;

  const notify = Array.isArray(raw.notify) ? parseNotify(raw.notify, ctx) : undefined;
  const reviewPage = typeof raw.review_page === "string" ? parseReviewPage(raw.review_page, ctx) : undefined;
  if (problems.count) return fail();
  return {
    path: file,
    dir: ctx.dir,
    servers,
    rules,
    unsetVariables,
    ...(journal === undefined ? {} : { journal }),
    ...(groups && { groups }),
    ...(notify?.length ? { notify } : {}),
    ...(reviewPage !== undefined && { reviewPage }),
  };
}

/** `review_page:`, ${VAR}s expanded: the address of the page (http(s), nothing after its host but a slash). */
function parseReviewPage(raw: string, ctx: SectionContext): string | undefined {
  const url = ctx.env.value(raw, ["review_page"]);
  if (url === undefined) return undefined;
  if (!/^https?:\/\/[^\s/?#]+\/?$/i.test(url)) {
    ctx.report(["review_page"], `"review_page" is the page's address, such as http://127.0.0.1:8111 (found ${JSON.stringify(url)})`);
    return undefined;
  }
  return url.replace(/\/$/, "");
}

/** The `notify:` targets, ${VAR}s expanded (a secret usually comes from the environment); each URL http(s). */
function parseNotify(raw: NonNullable<RawManifest["notify"]>, ctx: SectionContext): NotifyTarget[] {
  return raw.flatMap((item, index): NotifyTarget[] => {
    const path = ["notify", index];
    if ((item.webhook === undefined) === (item.slack === undefined)) {
      ctx.report(path, `each item of "notify" is a webhook: URL (with an optional secret:) or a slack: URL`);
      return [];
    }
    if (item.slack !== undefined && item.secret !== undefined) {
      ctx.report([...path, "secret"], `"secret" signs a webhook's body; a Slack hook takes none`, true);
      return [];
    }
    const key = item.webhook !== undefined ? "webhook" : "slack";
    const url = ctx.env.value((item.webhook ?? item.slack)!, [...path, key]);
    if (url === undefined) return [];
    if (!/^https?:\/\/[^\s/]/i.test(url)) {
      ctx.report([...path, key], `"${key}" must be an http(s) URL, found ${JSON.stringify(url)}`);
      return [];
    }
    if (key === "slack") return [{ kind: "slack", url }];
    const secret = item.secret === undefined ? undefined : ctx.env.value(item.secret, [...path, "secret"]);
    return [{ kind: "webhook", url, ...(secret !== undefined && { secret }) }];
  });
}

/** Read and parse a manifest file. */
export function loadManifest(file: string, env: Record<string, string | undefined> = process.env, options: ParseOptions = {}): Manifest {
  const path = resolve(file);
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new SynartesisError(
      "manifest",
      code === "ENOENT" ? `there is no manifest at ${path}` : `cannot read the manifest ${path}: ${(error as Error).message}`,
      {
        hint: code === "ENOENT" ? "Create one with `synartesis init NAME -- COMMAND ARGS…`, or pass --manifest PATH." : undefined,
      },
    );
  }
  return parseManifest(text, path, env, options);
}
