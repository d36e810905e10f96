// frames.ts: every JSON-RPC message checked as the SDK's guards check it, beside its
// raw text, with its id kept as the exact bytes its sender wrote.
import { describe, expect, test } from "bun:test";
import { ErrorCode } from "@modelcontextprotocol/sdk/types.js";
import { deservesAnswer, frameOf, paramsFit, responseFits, type Frame } from "../../src/jsonrpc/frames.ts";

const frame = (raw: string): Frame => frameOf(JSON.parse(raw), raw);

describe("frameOf", () => {
  test("requests keep their id's exact bytes, even ids the SDK's guards would refuse", () => {
    for (const id of ["9007199254740993", "1e400", "1.0", '"caf\\u00e9"', "-0"]) {
      const raw = `{"jsonrpc":"2.0","id":${id},"method":"ping","extra":true}`;
      const parsed = frame(raw);
      expect(parsed.kind).toBe("request");
      if (parsed.kind === "request") {
        expect(parsed.id.text).toBe(id);
        expect(parsed.raw).toBe(raw);
        expect(parsed.msg.method).toBe("ping");
      }
    }
  });

  test("what each kind of message becomes", () => {
    const cases: Array<[string, Frame["kind"], { code: ErrorCode; answered: boolean }?]> = [
      ['{"jsonrpc":"2.0","method":"notifications/initialized"}', "notification"],
      ['{"jsonrpc":"2.0","method":"notifications/initialized","params":null}', "notification"],
      ['{"jsonrpc":"2.0","id":2,"method":"tools/list","params":null}', "request"],
      ['{"jsonrpc":"2.0","id":3,"result":{}}', "response"],
      ['{"jsonrpc":"2.0","id":"s","error":{"code":1,"message":"no"}}', "response"],
      ['{"id":6,"method":"ping"}', "invalid", { code: ErrorCode.InvalidRequest, answered: true }],
      ['{"jsonrpc":"2.0","id":null,"method":"ping"}', "invalid", { code: ErrorCode.InvalidRequest, answered: true }],
      ['{"jsonrpc":"2.0","id":7,"method":"tools/call","params":"x"}', "invalid", { code: ErrorCode.InvalidParams, answered: true }],
      [
        '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"progressToken":{"a":1}}}}',
        "invalid",
        { code: ErrorCode.InvalidParams, answered: true },
      ],
      ['{"jsonrpc":"2.0","method":"notifications/cancelled","params":[1]}', "invalid", { code: ErrorCode.InvalidParams, answered: false }],
      ['{"jsonrpc":"2.0","id":3,"result":5}', "invalid", { code: ErrorCode.InvalidRequest, answered: false }],
      ['{"jsonrpc":"2.0","id":3,"error":{"code":1}}', "invalid", { code: ErrorCode.InvalidRequest, answered: false }],
      ['{"jsonrpc":"2.0","id":3}', "invalid", { code: ErrorCode.InvalidRequest, answered: true }],
    ];
    for (const [raw, kind, expected] of cases) {
      const parsed = frame(raw);
      expect({ raw, kind: parsed.kind }).toEqual({ raw, kind });
      if (parsed.kind === "invalid" && expected) {
        expect({ raw, code: parsed.code, answered: deservesAnswer(parsed) }).toEqual({ raw, code: expected.code, answered: expected.answered });
      }
    }
  });

  test("an invalid request keeps its id to be answered with; a response's id is its own", () => {
    const parsed = frame('{"jsonrpc":"2.0","id":12345678901234567890,"method":"tools/call","params":7}');
    expect(parsed.kind === "invalid" && parsed.id?.text).toBe("12345678901234567890");
    const response = frame('{"jsonrpc":"2.0","id": 2.50 ,"result":{"ok":true}}');
    expect(response.kind === "response" && response.id.text).toBe("2.50");
  });
});

// frames.ts checks envelopes without loading the SDK's zod schemas; here its checks meet the SDK's guards on every shape.
describe("the envelope checks agree with the SDK's guards", () => {
  const scalars: unknown[] = [undefined, null, 0, 1, -1, 1.5, 2 ** 53, -(2 ** 53), 9007199254740991, "", "x", true, false, [], [1], {}];
  const metas: unknown[] = [
    ...scalars,
    { progressToken: "t" },
    { progressToken: 7 },
    { progressToken: 7.5 },
    { progressToken: 2 ** 60 },
    { progressToken: null },
    { progressToken: [] },
    { progressToken: {} },
    { "io.modelcontextprotocol/related-task": { taskId: "t1" } },
    { "io.modelcontextprotocol/related-task": { taskId: 1 } },
    { "io.modelcontextprotocol/related-task": {} },
    { "io.modelcontextprotocol/related-task": null },
    { "io.modelcontextprotocol/related-task": "t" },
    { progressToken: "t", other: { deep: [1] } },
    { other: 1 },
  ];
  const objects = (meta: unknown): unknown[] => [meta === undefined ? {} : { _meta: meta }, { _meta: meta, name: "x", arguments: { a: 1 } }];
  const paramsCases: unknown[] = [...scalars, ...metas.flatMap(objects)];

  test("params of requests and notifications", async () => {
    const sdk = await import("@modelcontextprotocol/sdk/types.js");
    for (const params of paramsCases) {
      const envelope = { jsonrpc: "2.0", method: "m", ...(params === undefined ? {} : { params }) };
      const label = JSON.stringify(params) ?? "undefined";
      expect([label, paramsFit(params)]).toEqual([label, sdk.isJSONRPCNotification(envelope)]);
      expect([label, paramsFit(params)]).toEqual([label, sdk.isJSONRPCRequest({ ...envelope, id: 0 })]);
    }
  });

  test("results and errors of responses", async () => {
    const sdk = await import("@modelcontextprotocol/sdk/types.js");
    const errors: unknown[] = [
      ...scalars,
      { code: 1, message: "m" },
      { code: -32600, message: "m", data: { x: 1 } },
      { code: 1.5, message: "m" },
      { code: 2 ** 60, message: "m" },
      { code: "1", message: "m" },
      { code: 1 },
      { message: "m" },
      { code: 1, message: 2 },
      { code: 1, message: "m", extra: true },
    ];
    const results: unknown[] = [...scalars, ...metas.flatMap(objects), { content: [], isError: true }];
    for (const result of [undefined, ...results]) {
      for (const error of result === undefined ? [undefined, ...errors] : [undefined, { code: 1, message: "m" }]) {
        if (result === undefined && error === undefined) continue;
        const envelope = { jsonrpc: "2.0", id: 0, ...(result === undefined ? {} : { result }), ...(error === undefined ? {} : { error }) };
        const label = JSON.stringify([result, error]);
        expect([label, responseFits(result, error)]).toEqual([label, sdk.isJSONRPCResultResponse(envelope) || sdk.isJSONRPCErrorResponse(envelope)]);
      }
    }
  });
});
