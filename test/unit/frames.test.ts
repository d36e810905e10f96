// frames.ts: every JSON-RPC message typed with the SDK's guards, beside its
// raw text, with its id kept as the exact bytes its sender wrote.
import { describe, expect, test } from "bun:test";
import { ErrorCode } from "@modelcontextprotocol/sdk/types.js";
import { deservesAnswer, frameOf, type Frame } from "../../src/jsonrpc/frames.ts";

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
      ['{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"progressToken":{"a":1}}}}', "invalid", { code: ErrorCode.InvalidParams, answered: true }],
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
