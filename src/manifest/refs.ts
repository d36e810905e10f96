// The reference language of snapshot/inverse args (R-REF): parse "$…" strings
// into templates at load time, resolve them against a call's data later. A
// map `{ $each: REF, $as: TEMPLATE }` builds one item per element of the
// list REF names, `$item` being that element (a field renamed, an object
// reshaped). Pure.

export type Namespace = "args" | "snapshot" | "result" | "item";

export type Segment = { key: string } | { index: number } | { each: true };

export interface Ref {
  namespace: Namespace;
  path: Segment[];
  /** The reference as written, e.g. `$snapshot.labels[].name`. */
  text: string;
}

export type Template =
  | { kind: "literal"; value: unknown }
  | { kind: "ref"; ref: Ref }
  | { kind: "text"; parts: Array<string | Ref> }
  | { kind: "array"; items: Template[] }
  | { kind: "object"; entries: Array<[string, Template]> }
  /** One `as` per element of the list `source` names, the element being `$item`. */
  | { kind: "each"; source: Ref; as: Template };

export interface RefProblem {
  /** Path inside the args value where the problem is (keys and indexes). */
  at: Array<string | number>;
  message: string;
}

const KEY_CHAR = /[A-Za-z0-9_-]/;

/** Reads one reference starting at text[start] === "$"; returns it and where it ends, why it is wrong, or undefined. */
function readRef(text: string, start: number): { ref: Ref; end: number } | { error: string } | undefined {
  let i = start + 1;
  let namespace: Namespace = "args";
  for (const word of ["snapshot", "result", "item"] as const) {
    if (text.startsWith(word, i) && !KEY_CHAR.test(text[i + word.length] ?? "")) {
      namespace = word;
      i += word.length;
      break;
    }
  }
  const path: Segment[] = [];
  for (;;) {
    if (text[i] === "." && KEY_CHAR.test(text[i + 1] ?? "")) {
      let j = i + 1;
      while (j < text.length && KEY_CHAR.test(text[j]!)) j++;
      path.push({ key: text.slice(i + 1, j) });
      i = j;
    } else if (text[i] === "[" && text[i + 1] === "]") {
      path.push({ each: true });
      i += 2;
    } else if (text[i] === "[") {
      const match = /^\[(\d+)\]/.exec(text.slice(i));
      if (!match) break;
      path.push({ index: Number(match[1]) });
      i += match[0].length;
    } else break;
  }
  // `[-1]`, `[*]`, `["id"]` after a path are mistaken steps; as text they would quietly substitute the wrong value.
  if (text[i] === "[") {
    const step = /^\[[^\]\s]*\]?/.exec(text.slice(i))![0];
    return { error: `"${text.slice(start, i)}${step}": ${step} is not a path step (use [n] for one item, counting from 0, or [] for every item)` };
  }
  // `$` must be followed by a namespace word, a path, or nothing at all.
  if (namespace === "args" && path.length === 0 && i < text.length && KEY_CHAR.test(text[i]!)) return undefined;
  if (namespace === "args" && path.length === 0 && text[i] === ".") return undefined;
  return { ref: { namespace, path, text: text.slice(start, i) }, end: i };
}

/**
 * Parse one string of args into a template. A string that is exactly one
 * reference keeps the referenced value's type; references inside longer text
 * are substituted as text; `$$` is a literal `$`. Any other `$` is an error.
 */
export function parseString(text: string): { template: Template } | { error: string } {
  if (!text.includes("$")) return { template: { kind: "literal", value: text } };
  const parts: Array<string | Ref> = [];
  let literal = "";
  let i = 0;
  while (i < text.length) {
    const ch = text[i]!;
    if (ch !== "$") {
      literal += ch;
      i++;
      continue;
    }
    if (text[i + 1] === "$") {
      literal += "$";
      i += 2;
      continue;
    }
    const read = readRef(text, i);
    if (read && "error" in read) return read;
    if (!read) {
      const word = /^\$[^\s]*/.exec(text.slice(i))![0];
      return {
        error: `"${word}" is not a reference (use $, $.path, $snapshot.path, $result.path, or $item.path inside $as; write $$ for a literal dollar sign)`,
      };
    }
    if (literal) parts.push(literal);
    literal = "";
    parts.push(read.ref);
    i = read.end;
  }
  if (literal) parts.push(literal);
  if (parts.length === 1 && typeof parts[0] !== "string") return { template: { kind: "ref", ref: parts[0]! } };
  if (parts.every((p) => typeof p === "string")) return { template: { kind: "literal", value: parts.join("") } };
  return { template: { kind: "text", parts } };
}

/** Parse a whole args value (any JSON) into a template, collecting every problem. `inEach`: inside an `$as`, where `$item` is defined. */
export function parseTemplate(value: unknown, problems: RefProblem[] = [], at: Array<string | number> = [], inEach = false): Template {
  if (typeof value === "string") {
    const parsed = parseString(value);
    if ("error" in parsed) {
      problems.push({ at, message: parsed.error });
      return { kind: "literal", value };
    }
    if (!inEach && refsOf(parsed.template).some(({ ref }) => ref.namespace === "item")) {
      problems.push({ at, message: `"${value}": $item is the element of an $each, and is only defined inside its $as` });
      return { kind: "literal", value };
    }
    return parsed.template;
  }
  if (Array.isArray(value)) {
    return { kind: "array", items: value.map((item, index) => parseTemplate(item, problems, [...at, index], inEach)) };
  }
  if (value !== null && typeof value === "object") {
    if (Object.hasOwn(value, "$each") || Object.hasOwn(value, "$as")) return parseEach(value as Record<string, unknown>, problems, at, inEach);
    return {
      kind: "object",
      entries: Object.entries(value).map(([key, item]) => [key, parseTemplate(item, problems, [...at, key], inEach)]),
    };
  }
  return { kind: "literal", value };
}

/** `{ $each: "$…", $as: … }`: exactly these two keys, $each one reference to a list. */
function parseEach(value: Record<string, unknown>, problems: RefProblem[], at: Array<string | number>, inEach: boolean): Template {
  const extra = Object.keys(value).filter((key) => key !== "$each" && key !== "$as");
  if (extra.length || !Object.hasOwn(value, "$each") || !Object.hasOwn(value, "$as")) {
    problems.push({
      at,
      message: `an $each map has exactly two keys, $each (the list) and $as (what each element becomes)${extra.length ? `; found also ${extra.join(", ")}` : ""}`,
    });
    return { kind: "literal", value };
  }
  const source = typeof value.$each === "string" ? parseString(value.$each) : undefined;
  if (!source || "error" in source || source.template.kind !== "ref" || (source.template.ref.namespace === "item" && !inEach)) {
    problems.push({ at: [...at, "$each"], message: `$each must be one reference to a list (e.g. "$result.results"), found ${JSON.stringify(value.$each)}` });
    return { kind: "literal", value };
  }
  return { kind: "each", source: source.template.ref, as: parseTemplate(value.$as, problems, [...at, "$as"], true) };
}

/** Every reference a template uses, with where it sits. */
export function refsOf(template: Template, at: Array<string | number> = []): Array<{ ref: Ref; at: Array<string | number> }> {
  switch (template.kind) {
    case "literal":
      return [];
    case "ref":
      return [{ ref: template.ref, at }];
    case "text":
      return template.parts.filter((p): p is Ref => typeof p !== "string").map((ref) => ({ ref, at }));
    case "array":
      return template.items.flatMap((item, index) => refsOf(item, [...at, index]));
    case "object":
      return template.entries.flatMap(([key, item]) => refsOf(item, [...at, key]));
    case "each":
      // `$item` inside is the element, not data of the call: what the call's data is read for is the list.
      return [{ ref: template.source, at: [...at, "$each"] }, ...refsOf(template.as, [...at, "$as"]).filter(({ ref }) => ref.namespace !== "item")];
  }
}

/** Whether a template reads the snapshot (an inverse that writes back the state from before). */
export function readsSnapshot(template: Template): boolean {
  return refsOf(template).some(({ ref }) => ref.namespace === "snapshot");
}

/** Whether a template reads the call's result (an inverse built from what the call returned, e.g. a new record's id). */
export function readsResult(template: Template): boolean {
  return refsOf(template).some(({ ref }) => ref.namespace === "result");
}

export interface RefContext {
  args: unknown;
  snapshot?: unknown;
  result?: unknown;
  /** The element of the list an $each goes over. */
  item?: unknown;
}

export class ResolveError extends Error {}

const NAMESPACE_LABEL: Record<Namespace, string> = { args: "the call's arguments", snapshot: "the snapshot", result: "the result", item: "the element" };

function describeType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return `a list of ${value.length}`;
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

function walk(value: unknown, path: Segment[], ref: Ref, where: string): unknown {
  let current = value;
  for (let i = 0; i < path.length; i++) {
    const segment = path[i]!;
    if ("each" in segment) {
      if (!Array.isArray(current)) {
        throw new ResolveError(`${ref.text}: [] needs a list at ${where}, found ${describeType(current)}`);
      }
      const rest = path.slice(i + 1);
      return current.map((item, index) => walk(item, rest, ref, `${where}[${index}]`));
    }
    if ("index" in segment) {
      if (!Array.isArray(current)) {
        throw new ResolveError(`${ref.text}: [${segment.index}] needs a list at ${where}, found ${describeType(current)}`);
      }
      if (segment.index >= current.length) {
        throw new ResolveError(`${ref.text}: index ${segment.index} is out of range at ${where} (${describeType(current)})`);
      }
      current = current[segment.index];
      where = `${where}[${segment.index}]`;
      continue;
    }
    if (current === null || typeof current !== "object" || Array.isArray(current)) {
      throw new ResolveError(`${ref.text}: key "${segment.key}" needs an object at ${where}, found ${describeType(current)}`);
    }
    if (!Object.hasOwn(current, segment.key)) {
      throw new ResolveError(`${ref.text}: ${where} has no key "${segment.key}"`);
    }
    current = (current as Record<string, unknown>)[segment.key];
    where = `${where}.${segment.key}`;
  }
  return current;
}

export function resolveRef(ref: Ref, context: RefContext): unknown {
  const root = context[ref.namespace];
  if (root === undefined) throw new ResolveError(`${ref.text}: ${NAMESPACE_LABEL[ref.namespace]} is not available here`);
  const rootName = ref.namespace === "args" ? "$" : `$${ref.namespace}`;
  return walk(root, ref.path, ref, rootName);
}

function asText(value: unknown): string {
  return typeof value === "string" ? value : (JSON.stringify(value) ?? "null");
}

/** Resolve a template to literal values; throws ResolveError naming the reference and what was missing. */
export function resolveTemplate(template: Template, context: RefContext): unknown {
  switch (template.kind) {
    case "literal":
      return template.value;
    case "ref":
      return resolveRef(template.ref, context);
    case "text":
      return template.parts.map((part) => (typeof part === "string" ? part : asText(resolveRef(part, context)))).join("");
    case "array":
      return template.items.map((item) => resolveTemplate(item, context));
    case "object":
      return Object.fromEntries(template.entries.map(([key, item]) => [key, resolveTemplate(item, context)]));
    case "each": {
      const list = resolveRef(template.source, context);
      if (!Array.isArray(list)) throw new ResolveError(`${template.source.text}: $each needs a list, found ${describeType(list)}`);
      return list.map((item) => resolveTemplate(template.as, { ...context, item }));
    }
  }
}

/** Write a path back as reference text (used by tests and error messages). */
export function formatPath(namespace: Namespace, path: Segment[]): string {
  let text = namespace === "args" ? "$" : `$${namespace}`;
  for (const segment of path) {
    if ("each" in segment) text += "[]";
    else if ("index" in segment) text += `[${segment.index}]`;
    else text += `.${segment.key}`;
  }
  return text;
}

/**
 * The payload of a tool result (R-REF-5): structuredContent when present, else
 * the JSON parse of a single text block, else that text, else the whole result.
 */
export function payloadOf(result: unknown): unknown {
  if (result === null || typeof result !== "object") return result;
  const record = result as { structuredContent?: unknown; content?: unknown };
  if (record.structuredContent !== undefined) return record.structuredContent;
  const content = record.content;
  if (Array.isArray(content) && content.length === 1) {
    const block = content[0] as { type?: unknown; text?: unknown };
    if (block?.type === "text" && typeof block.text === "string") {
      try {
        return JSON.parse(block.text);
      } catch {
        return block.text;
      }
    }
  }
  return result;
}

/** The text of a result's text blocks joined (for error messages and absent_when). */
export function textOf(result: unknown): string {
  const content = (result as { content?: unknown } | null)?.content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((b): b is { type: "text"; text: string } => b?.type === "text" && typeof b.text === "string")
    .map((b) => b.text)
    .join("\n");
}
