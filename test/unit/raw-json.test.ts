// Properties of the byte-exact JSON scanner (src/jsonrpc/raw-json.ts) against
// JSON.parse, on generated JSON texts: arbitrary whitespace between tokens,
// strings written with every kind of escape (or none), numbers in every form
// JSON allows, nesting, and keys that repeat or are spelled with escapes.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { memberSpans, rawElements, rawMember, skipValue, stringAt, withId, withIdText } from "../../src/jsonrpc/raw-json.ts";

const RUNS = { numRuns: 300 };

/** Whitespace JSON allows between tokens. */
const ws = fc.string({ unit: fc.constantFrom(" ", "\t", "\n", "\r"), maxLength: 3 });

const SHORT_ESCAPES: Record<string, string> = { '"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t" };
const hex4 = (c: string, upper: boolean) => {
  const hex = c.charCodeAt(0).toString(16).padStart(4, "0");
  return `\\u${upper ? hex.toUpperCase() : hex}`;
};

/** One UTF-16 unit of a string's value, written raw where JSON allows, else (or by choice) escaped. */
const stringUnit = fc
  .tuple(
    fc.oneof(fc.string({ unit: "binary", minLength: 1, maxLength: 1 }), fc.constantFrom('"', "\\", "/", "\n", "\u0000", "\u2028", "\ud800", "\udc00", "é")),
    fc.constantFrom("raw", "short", "hex", "HEX"),
  )
  .map(([c, how]) => {
    const mustEscape = c === '"' || c === "\\" || c.charCodeAt(0) < 0x20;
    if (how === "short" && SHORT_ESCAPES[c]) return SHORT_ESCAPES[c]!;
    if (how === "hex" || how === "HEX" || mustEscape) return SHORT_ESCAPES[c] && how === "raw" ? SHORT_ESCAPES[c]! : hex4(c, how === "HEX");
    return c;
  });

/** A JSON string literal: its text and a few ways to end in backslashes, the scanner's hard case. */
const jsonString = fc.oneof(
  { weight: 4, arbitrary: fc.array(stringUnit, { maxLength: 8 }).map((units) => `"${units.join("")}"`) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 4 }).map((n) => `"${"\\\\".repeat(n)}"`) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 3 }).map((n) => `"${"\\\\".repeat(n)}\\""`) },
);

const digits = (min: number) => fc.string({ unit: fc.constantFrom(..."0123456789"), minLength: min, maxLength: 4 });
const jsonNumber = fc
  .tuple(
    fc.boolean(),
    fc.oneof(
      fc.constant("0"),
      fc.tuple(fc.constantFrom(..."123456789"), digits(0)).map(([a, b]) => a + b),
    ),
    fc.option(digits(1).map((d) => "." + d)),
    fc.option(fc.tuple(fc.constantFrom("e", "E"), fc.constantFrom("", "+", "-"), digits(1)).map(([e, s, d]) => e + s + d)),
  )
  .map(([negative, int, fraction, exponent]) => `${negative ? "-" : ""}${int}${fraction ?? ""}${exponent ?? ""}`);

const literal = fc.constantFrom("true", "false", "null");

/** Keys that repeat, and "id" spelled with escapes, among any others. */
const jsonKey = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('"id"', '"\\u0069d"', '"i\\u0064"', '"method"', '"result"', '"params"', '"a"', '"\\u00e9"', '"é"') },
  { weight: 2, arbitrary: jsonString },
);

const { value: jsonValue } = fc.letrec<{ value: string; array: string; object: string }>((tie) => ({
  value: fc.oneof({ depthSize: "small", withCrossShrink: true }, jsonString, jsonNumber, literal, tie("array"), tie("object")),
  array: fc
    .tuple(ws, fc.array(fc.tuple(tie("value"), ws, ws), { maxLength: 4 }))
    .map(([open, items]) => (items.length ? `[${open}${items.map(([v, before, after]) => `${before}${v}${after}`).join(",")}]` : `[${open}]`)),
  object: fc
    .array(fc.tuple(ws, jsonKey, ws, ws, tie("value"), ws), { maxLength: 4 })
    .map((members) => `{${members.map(([a, k, b, c, v, d]) => `${a}${k}${b}:${c}${v}${d}`).join(",")}}`),
}));

/** A top-level object with its members known: each key's text and value text, and the whole text. */
const topObject = fc.tuple(ws, fc.array(fc.tuple(ws, jsonKey, ws, ws, jsonValue, ws), { maxLength: 6 }), ws).map(([lead, members, trail]) => ({
  text: `${lead}{${members.map(([a, k, b, c, v, d]) => `${a}${k}${b}:${c}${v}${d}`).join(",")}}${trail}`,
  members: members.map(([, keyText, , , valueText]) => ({ key: JSON.parse(keyText) as string, valueText })),
}));

/** JSON.parse's reading: the last member with a key is the one that counts. */
const lastValueText = (members: Array<{ key: string; valueText: string }>, key: string) => members.findLast((m) => m.key === key)?.valueText;

/** Deep equality that tells -0 from 0 (a number's bytes matter here). */
const same = (a: unknown, b: unknown): boolean => {
  if (typeof a === "number" || typeof b === "number") return Object.is(a, b);
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => same(x, b[i]));
  if (a && b && typeof a === "object" && typeof b === "object") {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && same((a as any)[k], (b as any)[k]));
  }
  return a === b;
};

describe("generated texts are JSON", () => {
  test("JSON.parse reads every generated value and object (the generators write only valid JSON)", () => {
    fc.assert(
      fc.property(jsonValue, (text) => void JSON.parse(text)),
      RUNS,
    );
    fc.assert(
      fc.property(topObject, ({ text }) => void JSON.parse(text)),
      RUNS,
    );
  });
});

describe("skipValue", () => {
  test("ends exactly where a value ends, whatever follows it", () => {
    fc.assert(
      fc.property(jsonValue, fc.constantFrom("", ",", "}", "]", " ", "\n,"), (value, after) => {
        expect(skipValue(value + after, 0)).toBe(value.length);
      }),
      RUNS,
    );
  });
});

describe("stringAt", () => {
  test("reads a string literal as JSON.parse does, escapes or none, wherever it sits", () => {
    fc.assert(
      fc.property(ws, jsonString, fc.constantFrom("", ":1}", ",", " "), (before, literal, after) => {
        const text = before + literal + after;
        expect(stringAt(text, before.length, before.length + literal.length)).toBe(JSON.parse(literal));
      }),
      RUNS,
    );
  });

  test("refuses what JSON.parse refuses: a raw control character, an unfinished literal", () => {
    for (const bad of ['"a\u0001b"', '"tab\there"', '"open']) {
      expect(() => JSON.parse(bad)).toThrow();
      expect(() => stringAt(bad, 0, bad.length)).toThrow();
    }
  });
});

describe("memberSpans and rawMember", () => {
  test("the raw text of a member is exactly the bytes written for the member JSON.parse keeps", () => {
    fc.assert(
      fc.property(topObject, ({ text, members }) => {
        const parsed = JSON.parse(text) as Record<string, unknown>;
        for (const key of new Set(members.map((m) => m.key))) {
          const raw = rawMember(text, key);
          expect(raw).toBe(lastValueText(members, key));
          expect(same(JSON.parse(raw!), parsed[key])).toBe(true);
        }
      }),
      RUNS,
    );
  });

  test("several keys at once: each span is that member's value", () => {
    fc.assert(
      fc.property(topObject, fc.subarray(["id", "method", "result", "params", "a", "é", "missing"]), ({ text, members }, keys) => {
        const spans = memberSpans(text, keys);
        for (const key of keys) {
          const span = spans.get(key);
          expect(span && text.slice(span[0], span[1])).toBe(lastValueText(members, key));
        }
      }),
      RUNS,
    );
  });

  test("a key the object does not have has no raw text; neither has a text that is not an object", () => {
    fc.assert(
      fc.property(topObject, ({ text, members }) => {
        const absent = "not-a-key-" + members.length;
        expect(rawMember(text, absent)).toBeUndefined();
      }),
      RUNS,
    );
    fc.assert(
      fc.property(fc.oneof(jsonNumber, jsonString, literal), (text) => expect(rawMember(text, "id")).toBeUndefined()),
      RUNS,
    );
  });
});

describe("withId and withIdText", () => {
  const newId = fc.oneof(fc.integer(), fc.string(), fc.constant(null));

  test("the id JSON.parse reads is the new one; every other member, and every byte outside the id, is unchanged", () => {
    fc.assert(
      fc.property(topObject, newId, ({ text, members }, id) => {
        const replaced = withId(text, id);
        const before = JSON.parse(text) as Record<string, unknown>;
        const after = JSON.parse(replaced) as Record<string, unknown>;
        if (!members.some((m) => m.key === "id")) {
          expect(replaced).toBe(text);
          return;
        }
        expect(same(after.id, id)).toBe(true);
        for (const key of Object.keys(before)) if (key !== "id") expect(same(after[key], before[key])).toBe(true);
        // Outside the id members, the bytes are the same.
        const strip = (t: string) => {
          let out = t;
          for (const [start, end] of idSpans(out).reverse()) out = out.slice(0, start) + out.slice(end);
          return out;
        };
        expect(strip(replaced)).toBe(strip(text));
      }),
      RUNS,
    );
  });

  test("the new id is written as exactly the bytes given (a client's id echoed back)", () => {
    fc.assert(
      fc.property(topObject, fc.oneof(jsonNumber, jsonString), ({ text, members }, idText) => {
        fc.pre(members.some((m) => m.key === "id"));
        const replaced = withIdText(text, idText);
        expect(rawMember(replaced, "id")).toBe(idText);
        expect(same(JSON.parse(replaced).id, JSON.parse(idText))).toBe(true);
      }),
      RUNS,
    );
  });

  test("with the id written twice, no reader can find the old one: every id member gets the new id", () => {
    const text = '{"id":1,"method":"tools/call","id" : 2}';
    const replaced = withId(text, 7);
    expect(replaced).toBe('{"id":7,"method":"tools/call","id" : 7}');
    expect(rawMember(text, "id")).toBe("2");
  });
});

describe("rawElements", () => {
  test("each element of an array text, byte for byte", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(ws, jsonValue, ws), { maxLength: 5 }), ws, (items, inner) => {
        const text = items.length ? `[${items.map(([a, v, b]) => `${a}${v}${b}`).join(",")}]` : `[${inner}]`;
        expect(rawElements(text)).toEqual(items.map(([, v]) => v));
      }),
      RUNS,
    );
  });
});

/** Spans of every top-level "id" member's value (test-side scan, by JSON.parse of each key). */
function idSpans(text: string): Array<[number, number]> {
  const spans: Array<[number, number]> = [];
  const parsed = JSON.parse(text);
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) return spans;
  let i = text.indexOf("{") + 1;
  const skipWs = () => {
    while (" \t\n\r".includes(text[i] ?? "x")) i++;
  };
  for (;;) {
    skipWs();
    if (text[i] === "}") return spans;
    if (text[i] === ",") {
      i++;
      continue;
    }
    const keyEnd = skipValue(text, i);
    const key = JSON.parse(text.slice(i, keyEnd));
    i = keyEnd;
    skipWs();
    i++; // the colon
    skipWs();
    const end = skipValue(text, i);
    if (key === "id") spans.push([i, end]);
    i = end;
  }
}
