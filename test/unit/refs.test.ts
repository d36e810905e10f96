// The reference language of snapshot/inverse args (R-REF-1…5): parsing, resolving,
// text substitution, projection, resolution errors and the payload of a result.
// Property-based where a law holds for every document (fast-check).
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import {
  formatPath,
  parseString,
  parseTemplate,
  payloadOf,
  refsOf,
  resolveTemplate,
  ResolveError,
  textOf,
  type Namespace,
  type RefContext,
  type RefProblem,
  type Segment,
  type Template,
} from "../../src/manifest/refs.ts";

const RUNS = { numRuns: 300 };
const NOT_A_REFERENCE = "is not a reference (use $, $.path, $snapshot.path, $result.path, or $item.path inside $as; write $$ for a literal dollar sign)";

function template(text: string): Template {
  const parsed = parseString(text);
  if ("error" in parsed) throw new Error(`"${text}" did not parse: ${parsed.error}`);
  return parsed.template;
}

function parseError(text: string): string {
  const parsed = parseString(text);
  if (!("error" in parsed)) throw new Error(`"${text}" parsed as ${JSON.stringify(parsed.template)}`);
  return parsed.error;
}

const resolve = (text: string, context: RefContext) => resolveTemplate(template(text), context);

function resolveError(text: string, context: RefContext): string {
  try {
    resolve(text, context);
  } catch (error) {
    expect(error).toBeInstanceOf(ResolveError);
    return (error as Error).message;
  }
  throw new Error(`${text} resolved`);
}

// JSON documents whose keys are written with the characters a path may use.
const key = fc.stringMatching(/^[A-Za-z0-9_-]{1,8}$/);
const scalar = fc.oneof(fc.string(), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null));
const { json } = fc.letrec<{ json: unknown; list: unknown[]; object: Record<string, unknown> }>((tie) => ({
  json: fc.oneof({ maxDepth: 4, depthIdentifier: "json" }, scalar, tie("list"), tie("object")),
  list: fc.array(tie("json"), { maxLength: 4, depthIdentifier: "json" }),
  object: fc.dictionary(key, tie("json"), { maxKeys: 4, depthIdentifier: "json" }),
}));
const namespace = fc.constantFrom<Namespace>("args", "snapshot", "result");

/** Every leaf of a document (scalars, empty lists, empty objects) with its path. */
function leaves(value: unknown, path: Segment[] = []): Array<{ path: Segment[]; value: unknown }> {
  if (Array.isArray(value) && value.length) return value.flatMap((item, index) => leaves(item, [...path, { index }]));
  if (value !== null && typeof value === "object" && Object.keys(value).length) {
    return Object.entries(value).flatMap(([k, item]) => leaves(item, [...path, { key: k }]));
  }
  return [{ path, value }];
}

const contextFor = (ns: Namespace, doc: unknown): RefContext => (ns === "args" ? { args: doc } : { args: {}, [ns]: doc });

describe("parsing references (R-REF-2, R-REF-3)", () => {
  const valid: Array<[string, Namespace, Segment[]]> = [
    ["$", "args", []],
    ["$.id", "args", [{ key: "id" }]],
    ["$.customer.email", "args", [{ key: "customer" }, { key: "email" }]],
    ["$.items[0]", "args", [{ key: "items" }, { index: 0 }]],
    ["$.items[12].id", "args", [{ key: "items" }, { index: 12 }, { key: "id" }]],
    ["$[0]", "args", [{ index: 0 }]],
    ["$snapshot", "snapshot", []],
    ["$snapshot.labels[].name", "snapshot", [{ key: "labels" }, { each: true }, { key: "name" }]],
    ["$snapshot.rows[][]", "snapshot", [{ key: "rows" }, { each: true }, { each: true }]],
    ["$result", "result", []],
    ["$result.id", "result", [{ key: "id" }]],
    ["$result[]", "result", [{ each: true }]],
    ["$.snapshot", "args", [{ key: "snapshot" }]],
    ["$.result.a-b_c.0", "args", [{ key: "result" }, { key: "a-b_c" }, { key: "0" }]],
  ];
  for (const [text, ns, path] of valid) {
    test(`${text} is one reference that keeps its type`, () => {
      expect(template(text)).toEqual({ kind: "ref", ref: { namespace: ns, path, text } });
    });
  }

  const invalid: Array<[string, string]> = [
    ["$5", `"$5" ${NOT_A_REFERENCE}`],
    ["$id", `"$id" ${NOT_A_REFERENCE}`],
    ["$.", `"$." ${NOT_A_REFERENCE}`],
    ["$snapshots.id", `"$snapshots.id" ${NOT_A_REFERENCE}`],
    ["$results", `"$results" ${NOT_A_REFERENCE}`],
    ["costs $5 a month", `"$5" ${NOT_A_REFERENCE}`],
    ["$.a and $b", `"$b" ${NOT_A_REFERENCE}`],
    ["$.items[-1]", '"$.items[-1]": [-1] is not a path step (use [n] for one item, counting from 0, or [] for every item)'],
    ["$snapshot.labels[*].name", '"$snapshot.labels[*]": [*] is not a path step (use [n] for one item, counting from 0, or [] for every item)'],
    ['$.a["b"]', '"$.a["b"]": ["b"] is not a path step (use [n] for one item, counting from 0, or [] for every item)'],
    ["$result[first", '"$result[first": [first is not a path step (use [n] for one item, counting from 0, or [] for every item)'],
  ];
  for (const [text, message] of invalid) {
    test(`${JSON.stringify(text)} is refused: ${message}`, () => {
      expect(parseError(text)).toBe(message);
    });
  }

  test("a string without $ is a literal", () => {
    expect(template("plain text")).toEqual({ kind: "literal", value: "plain text" });
    expect(template("")).toEqual({ kind: "literal", value: "" });
  });

  test("$$ is a literal dollar sign, also next to references", () => {
    expect(template("$$5")).toEqual({ kind: "literal", value: "$5" });
    expect(template("$$snapshot.id")).toEqual({ kind: "literal", value: "$snapshot.id" });
    expect(template("$$$.price")).toEqual({ kind: "text", parts: ["$", { namespace: "args", path: [{ key: "price" }], text: "$.price" }] });
  });

  test("a reference inside longer text is embedded; the path ends at the first character a key cannot hold", () => {
    expect(template("Revert agent change to $.path")).toEqual({
      kind: "text",
      parts: ["Revert agent change to ", { namespace: "args", path: [{ key: "path" }], text: "$.path" }],
    });
    expect(template("$result.id.")).toEqual({ kind: "text", parts: [{ namespace: "result", path: [{ key: "id" }], text: "$result.id" }, "."] });
    expect(template("$snapshot: $snapshot.name ($.id)")).toEqual({
      kind: "text",
      parts: [
        { namespace: "snapshot", path: [], text: "$snapshot" },
        ": ",
        { namespace: "snapshot", path: [{ key: "name" }], text: "$snapshot.name" },
        " (",
        { namespace: "args", path: [{ key: "id" }], text: "$.id" },
        ")",
      ],
    });
  });

  test("property: every path formatted with formatPath parses back to itself", () => {
    const segment = fc.oneof(
      key.map((k): Segment => ({ key: k })),
      fc.nat(999).map((index): Segment => ({ index })),
      fc.constant<Segment>({ each: true }),
    );
    fc.assert(
      fc.property(namespace, fc.array(segment, { maxLength: 6 }), (ns, path) => {
        const text = formatPath(ns, path);
        expect(template(text)).toEqual({ kind: "ref", ref: { namespace: ns, path, text } });
      }),
      RUNS,
    );
  });

  test("property: $$ round-trips: any string with every $ doubled parses to that string", () => {
    const text = fc.oneof(fc.string(), fc.string({ unit: fc.constantFrom("$", ".", "[", "]", "a", "5", " ", "snapshot", "result") }));
    fc.assert(
      fc.property(text, (original) => {
        const escaped = original.split("$").join("$$");
        expect(template(escaped)).toEqual({ kind: "literal", value: original });
      }),
      RUNS,
    );
  });
});

describe("parseTemplate and refsOf", () => {
  test("a whole args value becomes a template; every bad string is collected with where it sits", () => {
    const problems: RefProblem[] = [];
    const parsed = parseTemplate({ id: "$.id", list: ["ok", "$x", { deep: "$5" }], n: 1, flag: false, none: null }, problems);
    expect(problems).toEqual([
      { at: ["list", 1], message: `"$x" ${NOT_A_REFERENCE}` },
      { at: ["list", 2, "deep"], message: `"$5" ${NOT_A_REFERENCE}` },
    ]);
    expect(parsed).toEqual({
      kind: "object",
      entries: [
        ["id", { kind: "ref", ref: { namespace: "args", path: [{ key: "id" }], text: "$.id" } }],
        [
          "list",
          {
            kind: "array",
            items: [
              { kind: "literal", value: "ok" },
              { kind: "literal", value: "$x" },
              { kind: "object", entries: [["deep", { kind: "literal", value: "$5" }]] },
            ],
          },
        ],
        ["n", { kind: "literal", value: 1 }],
        ["flag", { kind: "literal", value: false }],
        ["none", { kind: "literal", value: null }],
      ],
    });
  });

  test("refsOf lists every reference with its place, embedded ones included", () => {
    const parsed = parseTemplate({ a: "$snapshot.a", b: ["x $result.id y $.z"], c: { d: "$" } });
    expect(refsOf(parsed).map(({ ref, at }) => [ref.text, at])).toEqual([
      ["$snapshot.a", ["a"]],
      ["$result.id", ["b", 0]],
      ["$.z", ["b", 0]],
      ["$", ["c", "d"]],
    ]);
  });
});

describe("resolving (R-REF-1, R-REF-3)", () => {
  test("property: the path of every leaf of a JSON document resolves to that leaf, in every namespace", () => {
    fc.assert(
      fc.property(json, namespace, (doc, ns) => {
        for (const leaf of leaves(doc)) {
          const resolved = resolve(formatPath(ns, leaf.path), contextFor(ns, doc));
          expect(Object.is(resolved, leaf.value)).toBe(true);
        }
      }),
      RUNS,
    );
  });

  test("property: a whole-value reference keeps the type of what it names", () => {
    fc.assert(
      fc.property(json, namespace, (value, ns) => {
        const resolved = resolve(formatPath(ns, [{ key: "v" }]), contextFor(ns, { v: value }));
        expect(resolved).toBe(value as never);
        expect(typeof resolved).toBe(typeof value);
        expect(Array.isArray(resolved)).toBe(Array.isArray(value));
      }),
      RUNS,
    );
  });

  test("property: an embedded reference is substituted as text: strings raw, other values as JSON", () => {
    fc.assert(
      fc.property(json, (value) => {
        const resolved = resolve("before $result.v after", { args: {}, result: { v: value } });
        const text = typeof value === "string" ? value : JSON.stringify(value);
        expect(resolved).toBe(`before ${text} after`);
      }),
      RUNS,
    );
  });

  test("whole and embedded references for each type, side by side", () => {
    const context: RefContext = { args: { obj: { a: 1 }, list: [1, "two"], n: 4.5, yes: true, none: null, s: "x y" } };
    expect(resolve("$.obj", context)).toEqual({ a: 1 });
    expect(resolve("$.list", context)).toEqual([1, "two"]);
    expect(resolve("$.n", context)).toBe(4.5);
    expect(resolve("$.yes", context)).toBe(true);
    expect(resolve("$.none", context)).toBeNull();
    expect(resolve("$.s", context)).toBe("x y");
    expect(resolve("obj=$.obj list=$.list n=$.n yes=$.yes none=$.none s=$.s", context)).toBe('obj={"a":1} list=[1,"two"] n=4.5 yes=true none=null s=x y');
    expect(resolve("$.s$.s", context)).toBe("x yx y");
  });

  test("$ alone is the call's whole arguments; $snapshot and $result alone are whole payloads", () => {
    const context: RefContext = { args: { id: 7 }, snapshot: { name: "Ada" }, result: [1, 2] };
    expect(resolve("$", context)).toEqual({ id: 7 });
    expect(resolve("$snapshot", context)).toEqual({ name: "Ada" });
    expect(resolve("$result", context)).toEqual([1, 2]);
  });

  test("a snapshot or result that is itself null or false still resolves as a whole", () => {
    expect(resolve("$snapshot", { args: {}, snapshot: null })).toBeNull();
    expect(resolve("$result", { args: {}, result: false })).toBe(false);
  });

  test("templates resolve structurally: literals stay, nested refs resolve", () => {
    const parsed = parseTemplate({ id: "$result.id", fixed: 3, tags: ["a", "$.tag"], note: "undo $.id", price: "$$5" });
    expect(resolveTemplate(parsed, { args: { id: 1, tag: "t" }, result: { id: 9 } })).toEqual({
      id: 9,
      fixed: 3,
      tags: ["a", "t"],
      note: "undo 1",
      price: "$5",
    });
  });
});

describe("projection [] (R-REF-3)", () => {
  test("the README example: $snapshot.labels[].name turns [{name: bug}] into [bug]", () => {
    expect(resolve("$snapshot.labels[].name", { args: {}, snapshot: { labels: [{ name: "bug" }] } })).toEqual(["bug"]);
  });

  test("property: [] reads the rest of the path from every element, for lists of any length", () => {
    fc.assert(
      fc.property(fc.array(json, { maxLength: 12 }), (names) => {
        const labels = names.map((name, i) => ({ name, i }));
        expect(resolve("$snapshot.labels[].name", { args: {}, snapshot: { labels } })).toEqual(names);
        expect(resolve("$snapshot.labels[]", { args: {}, snapshot: { labels } })).toEqual(labels);
      }),
      RUNS,
    );
  });

  test("property: nested [] keeps the nesting; [][0] takes the first of each", () => {
    fc.assert(
      fc.property(fc.array(fc.array(scalar, { minLength: 1, maxLength: 4 }), { maxLength: 6 }), (rows) => {
        expect(resolve("$result[][]", { args: {}, result: rows })).toEqual(rows);
        expect(resolve("$result[][0]", { args: {}, result: rows })).toEqual(rows.map((row) => row[0]));
      }),
      RUNS,
    );
  });

  test("an empty list projects to an empty list, whole or embedded", () => {
    expect(resolve("$.items[].id", { args: { items: [] } })).toEqual([]);
    expect(resolve("ids: $.items[].id", { args: { items: [] } })).toBe("ids: []");
    expect(resolve("ids: $.items[].id", { args: { items: [{ id: 1 }, { id: "b" }] } })).toBe('ids: [1,"b"]');
  });
});

describe("$each: one item per element of a list, $item being the element", () => {
  const parse = (value: unknown) => {
    const problems: RefProblem[] = [];
    return { template: parseTemplate(value, problems), problems };
  };

  test("a field renamed and an object reshaped, per element (memory's add_observations taken back by delete_observations)", () => {
    const { template, problems } = parse({
      deletions: { $each: "$result.results", $as: { entityName: "$item.entityName", observations: "$item.addedObservations" } },
    });
    expect(problems).toEqual([]);
    const result = {
      results: [
        { entityName: "Ada", addedObservations: ["a", "b"] },
        { entityName: "Bob", addedObservations: [] },
      ],
    };
    expect(resolveTemplate(template, { args: {}, result })).toEqual({
      deletions: [
        { entityName: "Ada", observations: ["a", "b"] },
        { entityName: "Bob", observations: [] },
      ],
    });
    // What the call's data is read for is the list; $item is the element, not data of the call.
    expect(refsOf(template).map(({ ref, at }) => [ref.text, at])).toEqual([["$result.results", ["deletions", "$each"]]]);
  });

  test("property: $as of $item is the list itself; $as may read the call's data and text beside $item, and nest", () => {
    fc.assert(
      fc.property(fc.array(json, { maxLength: 8 }), (items) => {
        expect(resolveTemplate(parse({ $each: "$.items", $as: "$item" }).template, { args: { items } })).toEqual(items);
      }),
      RUNS,
    );
    const nested = parse({ $each: "$.groups", $as: { name: "group $item.name of $.owner", members: { $each: "$item.members", $as: "$item.id" } } });
    expect(nested.problems).toEqual([]);
    expect(resolveTemplate(nested.template, { args: { owner: "ann", groups: [{ name: "a", members: [{ id: 1 }, { id: 2 }] }] } })).toEqual([
      { name: "group a of ann", members: [1, 2] },
    ]);
  });

  test("mistakes are found when the manifest loads, each at its place", () => {
    expect(parse({ x: "$item.name" }).problems).toEqual([
      { at: ["x"], message: '"$item.name": $item is the element of an $each, and is only defined inside its $as' },
    ]);
    expect(parse({ x: { $each: "$.a" } }).problems).toEqual([
      { at: ["x"], message: "an $each map has exactly two keys, $each (the list) and $as (what each element becomes)" },
    ]);
    expect(parse({ x: { $each: "$.a", $as: 1, y: 2 } }).problems[0]!.message).toBe(
      "an $each map has exactly two keys, $each (the list) and $as (what each element becomes); found also y",
    );
    expect(parse({ x: { $each: "ids: $.a", $as: 1 } }).problems).toEqual([
      { at: ["x", "$each"], message: '$each must be one reference to a list (e.g. "$result.results"), found "ids: $.a"' },
    ]);
  });

  test("an $each over something that is not a list says so when it resolves", () => {
    expect(() => resolveTemplate(parse({ $each: "$.a", $as: "$item" }).template, { args: { a: { b: 1 } } })).toThrow(
      "$.a: $each needs a list, found an object",
    );
  });
});

describe("resolution errors name the reference and what was missing (R-REF-4)", () => {
  const context: RefContext = {
    args: { id: 7, items: [{ id: "a" }, { id: "b" }], label: "bug", owner: null },
    snapshot: { name: "Ada", labels: [{ name: "x" }, { title: "y" }], tags: "urgent" },
  };

  test("a missing key", () => {
    expect(resolveError("$snapshot.email", context)).toBe('$snapshot.email: $snapshot has no key "email"');
    expect(resolveError("$.items[1].name", context)).toBe('$.items[1].name: $.items[1] has no key "name"');
    expect(resolveError("$snapshot.labels[].name", context)).toBe('$snapshot.labels[].name: $snapshot.labels[1] has no key "name"');
  });

  test("an index out of range", () => {
    expect(resolveError("$.items[2]", context)).toBe("$.items[2]: index 2 is out of range at $.items (a list of 2)");
    expect(resolveError("$result.rows[0]", { args: {}, result: { rows: [] } })).toBe("$result.rows[0]: index 0 is out of range at $result.rows (a list of 0)");
  });

  test("[] on something that is not a list", () => {
    expect(resolveError("$snapshot.tags[].name", context)).toBe("$snapshot.tags[].name: [] needs a list at $snapshot.tags, found a string");
    expect(resolveError("$.owner[]", context)).toBe("$.owner[]: [] needs a list at $.owner, found null");
  });

  test("a key or an index on the wrong kind of value", () => {
    expect(resolveError("$.items.id", context)).toBe('$.items.id: key "id" needs an object at $.items, found a list of 2');
    expect(resolveError("$.owner.email", context)).toBe('$.owner.email: key "email" needs an object at $.owner, found null');
    expect(resolveError("$.id.value", context)).toBe('$.id.value: key "value" needs an object at $.id, found a number');
    expect(resolveError("$snapshot[0]", context)).toBe("$snapshot[0]: [0] needs a list at $snapshot, found an object");
  });

  test("a namespace with nothing in it", () => {
    expect(resolveError("$result.id", { args: {} })).toBe("$result.id: the result is not available here");
    expect(resolveError("$snapshot", { args: {} })).toBe("$snapshot: the snapshot is not available here");
  });

  test("an embedded reference fails the same way", () => {
    expect(resolveError("Revert $snapshot.email now", context)).toBe('$snapshot.email: $snapshot has no key "email"');
  });

  test("inherited properties are not keys", () => {
    expect(resolveError("$.constructor", { args: {} })).toBe('$.constructor: $ has no key "constructor"');
    expect(resolveError("$.items.length", context)).toBe('$.items.length: key "length" needs an object at $.items, found a list of 2');
  });
});

describe("payloadOf (R-REF-5)", () => {
  test("structuredContent when present, even when the text block says something else", () => {
    expect(payloadOf({ content: [{ type: "text", text: '{"id":1}' }], structuredContent: { id: 2 } })).toEqual({ id: 2 });
  });

  test("a structuredContent that is present but null, false, 0 or empty is still the payload", () => {
    // "when present" (R-REF-5) means the key is there; a falsy value is what the server chose to say.
    const text = [{ type: "text", text: '{"id":1}' }];
    expect(payloadOf({ content: text, structuredContent: null })).toBeNull();
    expect(payloadOf({ content: text, structuredContent: false })).toBe(false);
    expect(payloadOf({ content: text, structuredContent: 0 })).toBe(0);
    expect(payloadOf({ content: text, structuredContent: {} })).toEqual({});
    // Absent (or undefined, which JSON cannot carry) falls through to the text.
    expect(payloadOf({ content: text, structuredContent: undefined })).toEqual({ id: 1 });
  });

  test("else the JSON parse of a single text block", () => {
    expect(payloadOf({ content: [{ type: "text", text: '{"id":"c_1","name":"Ada"}' }] })).toEqual({ id: "c_1", name: "Ada" });
    expect(payloadOf({ content: [{ type: "text", text: "[1,2]" }] })).toEqual([1, 2]);
    expect(payloadOf({ content: [{ type: "text", text: "42" }] })).toBe(42);
    expect(payloadOf({ content: [{ type: "text", text: "null" }] })).toBeNull();
  });

  test("else that text", () => {
    expect(payloadOf({ content: [{ type: "text", text: "Customer c_1 deleted" }] })).toBe("Customer c_1 deleted");
    expect(payloadOf({ content: [{ type: "text", text: "" }] })).toBe("");
  });

  test("else the whole result: several blocks, a non-text block, or no content", () => {
    const two = {
      content: [
        { type: "text", text: "1" },
        { type: "text", text: "2" },
      ],
    };
    expect(payloadOf(two)).toBe(two);
    const image = { content: [{ type: "image", data: "AA==", mimeType: "image/png" }] };
    expect(payloadOf(image)).toBe(image);
    const empty = { content: [] };
    expect(payloadOf(empty)).toBe(empty);
    const bare = { isError: false };
    expect(payloadOf(bare)).toBe(bare);
    expect(payloadOf("text")).toBe("text");
    expect(payloadOf(null)).toBeNull();
  });

  test("property: a single JSON text block gives back the document that was written", () => {
    fc.assert(
      fc.property(json, (doc) => {
        fc.pre(!Object.is(doc, -0));
        expect(payloadOf({ content: [{ type: "text", text: JSON.stringify(doc) }] })).toEqual(JSON.parse(JSON.stringify(doc)));
      }),
      RUNS,
    );
  });

  test("textOf joins the text blocks and skips the rest", () => {
    expect(
      textOf({
        content: [
          { type: "text", text: "no customer" },
          { type: "image", data: "" },
          { type: "text", text: "with id c_9" },
        ],
      }),
    ).toBe("no customer\nwith id c_9");
    expect(textOf({})).toBe("");
    expect(textOf(null)).toBe("");
  });
});
