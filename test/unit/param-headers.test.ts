// Tool parameters mirrored into Mcp-Param-{Name} headers (the 2026-07-28
// binding's x-mcp-header): which markings keep the constraints, the headers a
// client sends for a call's arguments, and whether a call's headers agree.
import { describe, expect, test } from "bun:test";
import { headerMarks, paramHeaderMismatch, paramHeaders, splitTools, type HeaderMark } from "../../src/jsonrpc/param-headers.ts";

const object = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ type: "object", properties, ...extra });

describe("x-mcp-header markings", () => {
  test("marks on string, integer and boolean properties, nested through properties only, with their paths", () => {
    const schema = object({
      region: { type: "string", "x-mcp-header": "Region" },
      query: { type: "string" },
      limits: object({ rows: { type: "integer", "x-mcp-header": "Rows" }, dry: { type: "boolean", "x-mcp-header": "Dry-Run" } }),
      // A property may be named like the keyword: it is a name here, not a mark.
      properties: object({ "x-mcp-header": { type: "string" } }),
    });
    expect(headerMarks(schema)).toEqual({
      marks: [
        { header: "Region", path: ["region"], type: "string" },
        { header: "Rows", path: ["limits", "rows"], type: "integer" },
        { header: "Dry-Run", path: ["limits", "dry"], type: "boolean" },
      ],
    });
    expect(headerMarks(undefined)).toEqual({ marks: [] });
    expect(headerMarks(object({ a: { type: "string", default: { "x-mcp-header": "Nope" } } }))).toEqual({ marks: [] });
  });

  test("each broken constraint makes the tool invalid, and says where and why", () => {
    const invalid = (schema: unknown) => {
      const marked = headerMarks(schema);
      return "invalid" in marked ? marked.invalid : undefined;
    };
    expect(invalid(object({ a: { type: "string", "x-mcp-header": "" } }))).toBe("a: x-mcp-header must be a non-empty string");
    expect(invalid(object({ a: { type: "string", "x-mcp-header": 7 } }))).toBe("a: x-mcp-header must be a non-empty string");
    expect(invalid(object({ a: { type: "string", "x-mcp-header": "Two Words" } }))).toBe(
      'a: x-mcp-header "Two Words" is not an HTTP field-name token (no spaces, control characters or delimiters)',
    );
    expect(invalid(object({ a: { type: "string", "x-mcp-header": "A\r\nX-Evil: 1" } }))).toStartWith(
      'a: x-mcp-header "A\\r\\nX-Evil: 1" is not an HTTP field-name token',
    );
    expect(invalid(object({ a: { type: "string", "x-mcp-header": "Ré" } }))).toStartWith('a: x-mcp-header "Ré" is not an HTTP field-name token');
    expect(invalid(object({ a: { type: "number", "x-mcp-header": "A" } }))).toBe(
      "a: x-mcp-header may only mark a string, integer or boolean property, not number",
    );
    expect(invalid(object({ a: { type: "object", "x-mcp-header": "A" } }))).toBe(
      "a: x-mcp-header may only mark a string, integer or boolean property, not object",
    );
    expect(invalid(object({ a: { "x-mcp-header": "A" } }))).toBe("a: x-mcp-header may only mark a string, integer or boolean property, not null");
    expect(invalid(object({ a: { type: "string", "x-mcp-header": "Key" }, b: { type: "string", "x-mcp-header": "KEY" } }))).toBe(
      'x-mcp-header "KEY" is used twice (also as "Key"; names are compared without case)',
    );
    const elsewhere =
      'x-mcp-header may only mark a property reached from the root through "properties" alone (not items, composition, conditionals, $defs or $ref)';
    expect(invalid({ type: "string", "x-mcp-header": "Root" })).toBe(`the schema's root: ${elsewhere}`);
    expect(invalid(object({ tags: { type: "array", items: { type: "string", "x-mcp-header": "Tag" } } }))).toBe(`tags.<items>: ${elsewhere}`);
    expect(invalid(object({}, { anyOf: [object({ a: { type: "string", "x-mcp-header": "A" } })] }))).toBe(`<anyOf>.a: ${elsewhere}`);
    expect(invalid(object({}, { $defs: { thing: { type: "string", "x-mcp-header": "A" } } }))).toBe(`<$defs>: ${elsewhere}`);
    expect(invalid(object({ m: object({}, { additionalProperties: { type: "string", "x-mcp-header": "A" } }) }))).toBe(
      `m.<additionalProperties>: ${elsewhere}`,
    );
    expect(invalid(object({}, { if: object({ a: { type: "string", "x-mcp-header": "A" } }) }))).toBe(`<if>.a: ${elsewhere}`);
  });

  test("a list of tools: the valid ones kept in order, the others named with why", () => {
    const good = { name: "good", inputSchema: object({ a: { type: "string", "x-mcp-header": "A" } }) };
    const plain = { name: "plain", inputSchema: object({ a: { type: "number" } }) };
    const bad = { name: "bad", inputSchema: object({ a: { type: "number", "x-mcp-header": "A" } }) };
    expect(splitTools([good, bad, plain])).toEqual({
      kept: [good, plain],
      dropped: [{ name: "bad", reason: "a: x-mcp-header may only mark a string, integer or boolean property, not number" }],
    });
  });
});

const MARKS: HeaderMark[] = [
  { header: "Region", path: ["region"], type: "string" },
  { header: "Rows", path: ["limits", "rows"], type: "integer" },
  { header: "Dry", path: ["dry"], type: "boolean" },
];

describe("the headers of a call", () => {
  test("a client sends one per marked parameter with a value, encoded as the binding says; null or absent: none", () => {
    expect(paramHeaders(MARKS, { region: "us-west1", limits: { rows: -7 }, dry: false })).toEqual({
      "Mcp-Param-Region": "us-west1",
      "Mcp-Param-Rows": "-7",
      "Mcp-Param-Dry": "false",
    });
    expect(paramHeaders(MARKS, { region: "Hello, 世界", limits: null, dry: null })).toEqual({ "Mcp-Param-Region": "=?base64?SGVsbG8sIOS4lueVjA==?=" });
    expect(paramHeaders(MARKS, { region: "=?base64?literal?=" })).toEqual({ "Mcp-Param-Region": "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=" });
    expect(paramHeaders(MARKS, { limits: { rows: 2 ** 60 } })).toEqual({});
    expect(paramHeaders(MARKS, undefined)).toEqual({});
  });

  test("a server finds them agreeing once decoded (integers as numbers), and says which one does not", () => {
    const args = { region: "Hello, 世界", limits: { rows: 42 }, dry: true };
    const headers = (values: Record<string, string>) => new Headers(values);
    const sent = paramHeaders(MARKS, args);
    expect(paramHeaderMismatch(MARKS, args, headers(sent))).toBeUndefined();
    // Header names are case-insensitive; 42.0 is 42.
    expect(
      paramHeaderMismatch(MARKS, args, headers({ "mcp-param-region": sent["Mcp-Param-Region"]!, "MCP-PARAM-ROWS": "42.0", "Mcp-Param-Dry": "true" })),
    ).toBeUndefined();
    expect(paramHeaderMismatch(MARKS, args, headers({ ...sent, "Mcp-Param-Rows": "43" }))).toBe(
      'the Mcp-Param-Rows header says "43" but arguments.limits.rows is 42',
    );
    expect(paramHeaderMismatch(MARKS, args, headers({ ...sent, "Mcp-Param-Dry": "TRUE" }))).toBe(
      'the Mcp-Param-Dry header says "TRUE" but arguments.dry is true',
    );
    const { "Mcp-Param-Region": _, ...withoutRegion } = sent;
    expect(paramHeaderMismatch(MARKS, args, headers(withoutRegion))).toBe('the Mcp-Param-Region header is missing (arguments.region is "Hello, 世界")');
    expect(paramHeaderMismatch(MARKS, args, headers({ ...sent, "Mcp-Param-Region": "=?base64?/w==?=" }))).toBe(
      "the Mcp-Param-Region header's =?base64?…?= value is not valid base64 of UTF-8 text",
    );
    expect(paramHeaderMismatch(MARKS, args, headers({ ...sent, "Mcp-Param-Region": "Hello, \u00e9" }))).toBe(
      "the Mcp-Param-Region header has characters a header value may not carry (encode it as =?base64?…?=)",
    );
    // Without a value in the arguments, a header is not expected, and not looked at.
    expect(paramHeaderMismatch(MARKS, { dry: null }, headers({ "Mcp-Param-Region": "anything" }))).toBeUndefined();
    // Unmarked Mcp-Param-* headers are left alone.
    expect(paramHeaderMismatch(MARKS, {}, headers({ "Mcp-Param-Other": "x" }))).toBeUndefined();
  });
});
