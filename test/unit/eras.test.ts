// eras.ts and withMembers: a raw line moved between the 2025 and 2026 eras
// keeps every byte of what the agent wrote (arguments, ids) and changes only
// the protocol's own members.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { asModernResult, claimedVersion, envelopeOf, inputRequiredOf, resultTypeOf, withEnvelope, withoutEnvelope } from "../../src/jsonrpc/eras.ts";
import { frameOf, type Response } from "../../src/jsonrpc/frames.ts";
import { rawMember, withMembers } from "../../src/jsonrpc/raw-json.ts";

const ARGS = '{ "amount" : 1.50, "big": 12345678901234567890, "word": "caf\\u00e9", "n": 1E2 }';
const META_2026 = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": { elicitation: {} },
  "io.modelcontextprotocol/clientInfo": { name: "agent", version: "1" },
  "io.synartesis/run": "nightly",
  progressToken: 7,
};
const call = (meta?: unknown) =>
  `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"put","arguments":${ARGS}${meta ? `,"_meta":${JSON.stringify(meta)}` : ""}}}`;
const argumentsOf = (line: string) => rawMember(rawMember(line, "params")!, "arguments");
const response = (line: string) => {
  const frame = frameOf(JSON.parse(line), line);
  if (frame.kind !== "response") throw new Error("not a response");
  return frame.msg as Response;
};

describe("withMembers", () => {
  test("changes, removes and adds members, keeping every other byte", () => {
    const text = '{ "a" : 1.50, "b":{"x":1},"c" : [1E2] }';
    expect(withMembers(text, { a: undefined })).toBe('{ "b":{"x":1},"c" : [1E2] }');
    expect(withMembers(text, { c: undefined })).toBe('{ "a" : 1.50, "b":{"x":1} }');
    expect(withMembers(text, { b: '"z"' })).toBe('{ "a" : 1.50, "b":"z","c" : [1E2] }');
    expect(withMembers(text, { d: "true" })).toBe('{"d":true, "a" : 1.50, "b":{"x":1},"c" : [1E2] }');
    expect(withMembers(text, { a: undefined, b: undefined, c: undefined })).toBe("{  }");
    expect(withMembers("{}", { x: "1" })).toBe('{"x":1}');
    expect(withMembers(text, {})).toBe(text);
  });

  test("on generated objects: the result parses to the object with the changes applied", () => {
    const key = fc.constantFrom("a", "b", "c", "d", "é", 'q"uote');
    const value = fc.jsonValue();
    fc.assert(
      fc.property(
        fc.dictionary(key, value),
        fc.dictionary(key, fc.option(value, { nil: undefined })),
        fc.constantFrom("", " ", "\n  "),
        (object, changes, space) => {
          const text = `{${space}${Object.entries(object)
            .map(([k, v]) => `${JSON.stringify(k)}${space}:${space}${JSON.stringify(v)}`)
            .join(`${space},${space}`)}${space}}`;
          const raw = Object.fromEntries(Object.entries(changes).map(([k, v]) => [k, v === undefined ? undefined : JSON.stringify(v)]));
          const expected: Record<string, unknown> = { ...object };
          for (const [k, v] of Object.entries(changes)) {
            if (v === undefined) delete expected[k];
            else expected[k] = JSON.parse(JSON.stringify(v));
          }
          expect(JSON.parse(withMembers(text, raw))).toEqual(JSON.parse(JSON.stringify(expected)));
        },
      ),
    );
  });
});

describe("the 2026 envelope", () => {
  test("a request's claim and envelope; a request without capabilities is not a 2026-era request", () => {
    const params = JSON.parse(call(META_2026)).params;
    expect(claimedVersion(params)).toBe("2026-07-28");
    expect(envelopeOf(params)).toEqual({ clientCapabilities: { elicitation: {} }, clientInfo: { name: "agent", version: "1" } });
    expect(envelopeOf({ _meta: { "io.modelcontextprotocol/protocolVersion": "2026-07-28" } })).toContain("clientCapabilities");
    expect(claimedVersion({})).toBeUndefined();
  });

  test("to a 2025-era server: the envelope and Synartesis's run key leave, the caller's own keys and the arguments' bytes stay", () => {
    const line = withoutEnvelope(call(META_2026));
    expect(JSON.parse(line).params._meta).toEqual({ progressToken: 7 });
    expect(argumentsOf(line)).toBe(ARGS);
    // A line without the envelope is not touched at all.
    expect(withoutEnvelope(call({ progressToken: 1 }))).toBe(call({ progressToken: 1 }));
    expect(withoutEnvelope(call())).toBe(call());
    expect(JSON.parse(withoutEnvelope(call({ "io.modelcontextprotocol/protocolVersion": "2026-07-28" }))).params._meta).toBeUndefined();
  });

  test("to a 2026-era server: the envelope given replaces the client's, other keys and the arguments' bytes stay", () => {
    const line = withEnvelope(call({ progressToken: 7, "io.modelcontextprotocol/clientInfo": { name: "old" } }), {
      clientCapabilities: {},
      clientInfo: { name: "agent", version: "1" },
    });
    expect(JSON.parse(line).params._meta).toEqual({
      progressToken: 7,
      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
      "io.modelcontextprotocol/clientCapabilities": {},
      "io.modelcontextprotocol/clientInfo": { name: "agent", version: "1" },
    });
    expect(argumentsOf(line)).toBe(ARGS);
    expect(JSON.parse(withEnvelope('{"jsonrpc":"2.0","id":1,"method":"tools/list"}', { clientCapabilities: {} })).params._meta).toEqual({
      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
      "io.modelcontextprotocol/clientCapabilities": {},
    });
  });
});

describe("results for a 2026-era client", () => {
  test("a 2025 server's result gets resultType, and a cacheable one its cache fields; what is there stays", () => {
    const result = '{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"1.0"}],"structuredContent":{"n":1.0}}}';
    const modern = asModernResult(result, "tools/call");
    expect(JSON.parse(modern).result.resultType).toBe("complete");
    expect(rawMember(rawMember(modern, "result")!, "structuredContent")).toBe('{"n":1.0}');
    expect(JSON.parse(asModernResult('{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}', "tools/list")).result).toEqual({
      resultType: "complete",
      ttlMs: 0,
      cacheScope: "private",
      tools: [],
    });
    const already = '{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","tools":[],"ttlMs":60000,"cacheScope":"public"}}';
    expect(asModernResult(already, "tools/list")).toBe(already);
    const interim = '{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","requestState":"x"}}';
    expect(asModernResult(interim, "tools/call")).toBe(interim);
    const error = '{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}';
    expect(asModernResult(error, "tools/list")).toBe(error);
  });

  test("what kind of result a reply is, and what an input_required result asks", () => {
    expect(resultTypeOf(response('{"jsonrpc":"2.0","id":1,"result":{"content":[]}}'))).toBe("complete");
    expect(resultTypeOf(response('{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"t"}}'))).toBe("task");
    const asked = response(
      '{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{"ok":{"method":"elicitation/create","params":{"message":"?"}},"bad":3},"requestState":"s"}}',
    );
    expect(inputRequiredOf(asked)).toEqual({ inputRequests: { ok: { method: "elicitation/create", params: { message: "?" } } }, requestState: "s" });
    expect(inputRequiredOf(response('{"jsonrpc":"2.0","id":1,"result":{"content":[]}}'))).toBeUndefined();
  });
});
