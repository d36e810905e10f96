// The shape check (R-MAN-1): unknown keys, then typebox's complaints turned
// into sentences a person can act on. Both come from the schema itself: an
// unknown key is what typebox reports as `additionalProperties`, and the keys
// listed as allowed are that object schema's own properties.
import type { TSchema } from "typebox";
import { Pointer, Value } from "typebox/value";
import type { Path, Report } from "./problems.ts";
import { AuthMapSchema, ManifestSchema } from "./schema.ts";

function toPath(pointer: string): Path {
  return Pointer.Indices(pointer).map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

const isMap = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object" && !Array.isArray(value);

function getAt(data: unknown, path: Path): unknown {
  let current = data;
  for (const segment of path) {
    if (current === null || typeof current !== "object") return undefined;
    current = (current as Record<string | number, unknown>)[segment];
  }
  return current;
}

/** How an unknown-key message names the object holding the key. */
function objectName(path: Path): string {
  if (path.length === 0) return "the manifest";
  if (path[0] === "servers") return path.length === 2 ? `server "${path[1]}"` : `"${path[path.length - 1]}"`;
  return path.length === 2 ? "a tool rule" : String(path[path.length - 1]);
}

/**
 * Report every key `schema` does not declare, and delete it from `data` (a
 * copy) so the shape check that follows sees only known keys. typebox may
 * stop looking inside an object once it found an unknown key there, so this
 * repeats until it finds none.
 */
function removeUnknownKeys(schema: TSchema, data: unknown, base: Path, report: Report): void {
  const seen = new Set<string>();
  for (let removed = true; removed; ) {
    removed = false;
    for (const error of Value.Errors(schema, data)) {
      if (error.keyword !== "additionalProperties") continue;
      const path = toPath(error.instancePath);
      const holder = getAt(data, path) as Record<string, unknown>;
      const allowed = Object.keys((Pointer.Get(schema, error.schemaPath.replace(/^#/, "")) as { properties: object }).properties);
      for (const key of (error.params as { additionalProperties: string[] }).additionalProperties) {
        if (Object.hasOwn(holder, key)) {
          delete holder[key];
          removed = true;
        }
        const at = [...base, ...path, key];
        if (seen.has(JSON.stringify(at))) continue;
        seen.add(JSON.stringify(at));
        report(at, `unknown key "${key}" in ${objectName([...base, ...path])} (allowed: ${allowed.join(", ")})`, true);
      }
    }
  }
}

/** The manifest's data without its unknown keys, each of which is reported. */
export function withoutUnknownKeys(data: object, report: Report): unknown {
  const copy = structuredClone(data) as Record<string, unknown>;
  removeUnknownKeys(ManifestSchema, copy, [], report);
  if (isMap(copy.servers)) {
    for (const [name, server] of Object.entries(copy.servers)) {
      const auth = isMap(server) ? server.auth : undefined;
      if (isMap(auth)) removeUnknownKeys(AuthMapSchema, auth, ["servers", name, "auth"], report);
    }
  }
  return copy;
}

function label(path: Path): string {
  const last = [...path].reverse().find((s) => typeof s === "string");
  const name = last === undefined ? "the manifest" : `"${last}"`;
  // A list item is named by its position, not by the list ("item 2 of "args"", not "args").
  const tail = path[path.length - 1];
  return typeof tail === "number" ? `item ${tail + 1} of ${name}` : name;
}

export function typeName(value: unknown): string {
  if (value === null || value === undefined) return "nothing";
  if (Array.isArray(value)) return "a list";
  return typeof value === "object" ? "a map" : `a ${typeof value}`;
}

const found = (value: unknown) => (value === null || value === undefined ? "nothing" : JSON.stringify(value));

const ARTICLE: Record<string, string> = { string: "a string", number: "a number", object: "a map", array: "a list", boolean: "true or false" };

/**
 * The branches of a union of a map and a list (an inverse of one call or of
 * several) that the value's own kind picked — the one branch with no complaint
 * about the value's type — whose complaints (a call without its tool) are
 * clearer than the union's "wrong shape".
 */
function pickedBranches(errors: Array<{ keyword: string; schemaPath: string; instancePath: string; params: unknown }>): string[] {
  const picked: string[] = [];
  for (const union of errors.filter((e) => e.keyword === "anyOf")) {
    const branches = new Map<string, string | undefined>(); // branch → the kind it wanted instead of the value's
    for (const error of errors) {
      const match = error.schemaPath.startsWith(`${union.schemaPath}/anyOf/`) && /^\/anyOf\/\d+/.exec(error.schemaPath.slice(union.schemaPath.length));
      if (!match) continue;
      const branch = union.schemaPath + match[0];
      const wanted = error.keyword === "type" && error.instancePath === union.instancePath ? String((error.params as { type?: unknown }).type) : undefined;
      branches.set(branch, branches.get(branch) ?? wanted);
    }
    const right = [...branches].filter(([, wanted]) => wanted === undefined);
    const other = [...branches].find(([, wanted]) => wanted !== undefined)?.[1];
    if (branches.size === 2 && right.length === 1 && (other === "object" || other === "array")) picked.push(right[0]![0]);
  }
  return picked;
}

/** What each union of the schema takes, in words. */
const UNION_SHAPES: Record<string, (found: string) => string> = {
  absent_when: () => `"absent_when" must be a string or a non-empty list of strings`,
  inverse: (found) => `"inverse" must be a map (one call) or a list of maps (calls sent in order), found ${found}`,
};

/** Every way `data` (known keys only) departs from the schema, in words. */
export function shapeProblems(data: unknown, report: Report): void {
  const errors = [...Value.Errors(ManifestSchema, data)];
  const anyOfPaths = errors.filter((e) => e.keyword === "anyOf").map((e) => e.instancePath);
  const constPaths = errors.filter((e) => e.keyword === "const").map((e) => e.instancePath);
  const picked = pickedBranches(errors);
  for (const error of errors) {
    const path = toPath(error.instancePath);
    // Inside a union, report the union once instead of every branch's complaint, unless the value's own kind picked a branch.
    const inPicked = picked.some((branch) => error.schemaPath.startsWith(`${branch}/`) || error.schemaPath === branch);
    if (
      error.keyword === "anyOf"
        ? picked.some((branch) => branch.startsWith(`${error.schemaPath}/anyOf/`))
        : !inPicked && anyOfPaths.some((p) => error.instancePath === p || error.instancePath.startsWith(p + "/"))
    )
      continue;
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
        report(path, UNION_SHAPES[String(path[path.length - 1])]?.(typeName(value)) ?? `${name} has the wrong shape`);
        break;
      default:
        report(path, `${name} ${error.message}`);
    }
  }
}
