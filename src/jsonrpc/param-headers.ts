// Tool parameters mirrored into `Mcp-Param-{Name}` headers by the 2026-07-28
// Streamable HTTP binding (the `x-mcp-header` schema extension), pure: which
// parameters a tool's inputSchema marks and whether the marking keeps the
// binding's constraints, the headers a client sends for a call's arguments,
// and whether the headers a call came with agree with its arguments.
import { isRecord } from "./frames.ts";
import { decodedHeader, encodedHeader } from "./header-values.ts";

const MARK_KEY = "x-mcp-header";
const PARAM_HEADER_PREFIX = "Mcp-Param-";

/** One marked parameter: its header's name part, where it sits in the arguments (a chain of `properties` keys), its type. */
export interface HeaderMark {
  header: string;
  path: string[];
  type: "string" | "integer" | "boolean";
}

/** RFC 9110 field-name token (1*tchar): no space, no control character, no delimiter. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const MARKABLE = new Set(["string", "integer", "boolean"]);
/** Keywords holding subschemas that are not a chain of `properties`: a mark under them is invalid. */
const ELSEWHERE = [
  "items",
  "prefixItems",
  "contains",
  "additionalProperties",
  "unevaluatedProperties",
  "unevaluatedItems",
  "propertyNames",
  "patternProperties",
  "dependentSchemas",
  "oneOf",
  "anyOf",
  "allOf",
  "not",
  "if",
  "then",
  "else",
  "$defs",
  "definitions",
];
/** Those of them whose value is a map of name → subschema. */
const MAPS = new Set(["patternProperties", "dependentSchemas", "$defs", "definitions"]);

const where = (path: string[]) => (path.length ? path.join(".") : "the schema's root");

/**
 * The parameters a tool's inputSchema marks with `x-mcp-header`, or why the
 * marking breaks the binding's constraints (the tool is then not offered to
 * HTTP clients): a non-empty token, case-insensitively unique, on a string,
 * integer or boolean property reached from the root by `properties` alone.
 */
export function headerMarks(inputSchema: unknown): { marks: HeaderMark[] } | { invalid: string } {
  const marks: HeaderMark[] = [];
  const seen = new Map<string, string>();
  const visit = (node: unknown, path: string[], reachable: boolean): string | undefined => {
    if (!isRecord(node)) return undefined;
    if (MARK_KEY in node) {
      const header = node[MARK_KEY];
      if (!reachable || path.length === 0)
        return `${where(path)}: x-mcp-header may only mark a property reached from the root through "properties" alone (not items, composition, conditionals, $defs or $ref)`;
      if (typeof header !== "string" || header === "") return `${where(path)}: x-mcp-header must be a non-empty string`;
      if (!TOKEN.test(header))
        return `${where(path)}: x-mcp-header ${JSON.stringify(header)} is not an HTTP field-name token (no spaces, control characters or delimiters)`;
      const type = node.type;
      if (typeof type !== "string" || !MARKABLE.has(type))
        return `${where(path)}: x-mcp-header may only mark a string, integer or boolean property, not ${typeof type === "string" ? type : JSON.stringify(type ?? null)}`;
      const earlier = seen.get(header.toLowerCase());
      if (earlier !== undefined)
        return `x-mcp-header ${JSON.stringify(header)} is used twice (also as ${JSON.stringify(earlier)}; names are compared without case)`;
      seen.set(header.toLowerCase(), header);
      marks.push({ header, path, type: type as HeaderMark["type"] });
    }
    if (isRecord(node.properties)) {
      for (const [key, child] of Object.entries(node.properties)) {
        const fault = visit(child, [...path, key], reachable);
        if (fault) return fault;
      }
    }
    for (const keyword of ELSEWHERE) {
      const sub = node[keyword];
      const branches = Array.isArray(sub) ? sub : MAPS.has(keyword) && isRecord(sub) ? Object.values(sub) : [sub];
      for (const branch of branches) {
        const fault = visit(branch, [...path, `<${keyword}>`], false);
        if (fault) return fault;
      }
    }
    return undefined;
  };
  const fault = visit(inputSchema, [], true);
  return fault ? { invalid: fault } : { marks };
}

/** The tools whose markings keep the constraints, and the others with why not. */
export function splitTools(tools: unknown[]): { kept: unknown[]; dropped: Array<{ name: string; reason: string }> } {
  const kept: unknown[] = [];
  const dropped: Array<{ name: string; reason: string }> = [];
  for (const tool of tools) {
    const marked = isRecord(tool) ? headerMarks(tool.inputSchema) : { marks: [] };
    if ("invalid" in marked) dropped.push({ name: String((tool as Record<string, unknown>).name), reason: marked.invalid });
    else kept.push(tool);
  }
  return { kept, dropped };
}

/**
 * A tools/list answer line screened: the tools whose marking is invalid left
 * out (the line as it came when none is, or when it is no such answer), with
 * what was kept and what was dropped.
 */
export function screenToolsAnswer(line: string): { line: string; kept: unknown[]; dropped: Array<{ name: string; reason: string }> } {
  let message: unknown;
  try {
    message = JSON.parse(line);
  } catch {
    return { line, kept: [], dropped: [] };
  }
  if (!isRecord(message) || !isRecord(message.result) || !Array.isArray(message.result.tools)) return { line, kept: [], dropped: [] };
  const { kept, dropped } = splitTools(message.result.tools);
  return { line: dropped.length ? JSON.stringify({ ...message, result: { ...message.result, tools: kept } }) : line, kept, dropped };
}

function valueAt(args: unknown, path: string[]): unknown {
  let node = args;
  for (const key of path) node = isRecord(node) ? node[key] : undefined;
  return node;
}

/** A value as the binding writes it before encoding: strings as they are, numbers in decimal, booleans in lower case; nothing for what is no primitive. */
function textOf(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (typeof value === "boolean") return String(value);
  if (typeof value === "number" && Number.isFinite(value) && (!Number.isInteger(value) || Number.isSafeInteger(value))) return String(value);
  return undefined;
}

/** The `Mcp-Param-*` headers a client sends with a call: one per marked parameter the arguments give a value (null or absent: none). */
export function paramHeaders(marks: HeaderMark[], args: unknown): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const mark of marks) {
    const text = textOf(valueAt(args, mark.path));
    if (text !== undefined) headers[`${PARAM_HEADER_PREFIX}${mark.header}`] = encodedHeader(text);
  }
  return headers;
}

/** A header value as it may arrive: visible ASCII, space and tab only. */
const HEADER_TEXT = /^[\t\x20-\x7e]*$/;
const DECIMAL = /^-?\d+(\.\d+)?$/;

/**
 * Why a call's `Mcp-Param-*` headers do not agree with its arguments, if they
 * do not: a marked parameter with a value needs its header, which must carry
 * only header characters and decode (=?base64?…?=) to that value (integers
 * compared as numbers). A header for a parameter without a value is not expected, and not looked at.
 */
export function paramHeaderMismatch(marks: HeaderMark[], args: unknown, headers: Headers): string | undefined {
  for (const mark of marks) {
    const name = `${PARAM_HEADER_PREFIX}${mark.header}`;
    const value = valueAt(args, mark.path);
    const text = textOf(value);
    if (text === undefined) continue;
    const arrived = headers.get(name);
    const argument = `arguments.${mark.path.join(".")}`;
    if (arrived === null) return `the ${name} header is missing (${argument} is ${JSON.stringify(value)})`;
    if (!HEADER_TEXT.test(arrived)) return `the ${name} header has characters a header value may not carry (encode it as =?base64?…?=)`;
    const decoded = decodedHeader(arrived);
    if (decoded === undefined) return `the ${name} header's =?base64?…?= value is not valid base64 of UTF-8 text`;
    const agrees = mark.type === "integer" && typeof value === "number" && DECIMAL.test(decoded) ? Number(decoded) === value : decoded === text;
    if (!agrees) return `the ${name} header says ${JSON.stringify(decoded)} but ${argument} is ${JSON.stringify(value)}`;
  }
  return undefined;
}
