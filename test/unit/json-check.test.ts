import { describe, expect, test } from "bun:test";
import { duplicateMember, firstAmbiguity, idKey, inexactNumber, nestingDepth } from "../../src/jsonrpc/json-check.ts";
import { rawElements, withIdText } from "../../src/jsonrpc/raw-json.ts";

describe("inexactNumber", () => {
  test("numbers a double carries exactly, however they are written", () => {
    for (const literal of [
      "0",
      "0.0",
      "-1",
      "1.0",
      "1e2",
      "1E+2",
      "100e-2",
      "0.1",
      "1.5",
      "-2.50",
      "9007199254740992",
      "1e21",
      "5e-324",
      "123456789012345680000",
    ]) {
      expect([literal, inexactNumber(literal)]).toEqual([literal, undefined]);
    }
  });

  test("numbers that change on their way through a double", () => {
    expect(inexactNumber("9007199254740993")).toBe("it cannot be carried exactly (it would become 9007199254740992)");
    expect(inexactNumber("0.10000000000000001")).toBe("it cannot be carried exactly (it would become 0.1)");
    expect(inexactNumber("1e400")).toBe("it is too large for a JSON number (it would become null)");
    expect(inexactNumber("-1e400")).toBe("it is too large for a JSON number (it would become null)");
    expect(inexactNumber("1e-400")).toBe("it cannot be carried exactly (it would become 0)");
    expect(inexactNumber("-0")).toBe("it is a negative zero (it would become 0)");
    expect(inexactNumber("-0.0e5")).toBe("it is a negative zero (it would become 0)");
  });
});

describe("firstAmbiguity", () => {
  const everywhere = () => true;
  test("finds a duplicate key at any depth, naming its path", () => {
    expect(firstAmbiguity('{"a":1,"b":{"c":[{"d":1,"d":2}]}}', "x", everywhere)).toBe("x.b.c[0].d is given twice (a duplicate key)");
    expect(firstAmbiguity('{"odd key":1,"odd key":2}', "x", everywhere)).toBe('x["odd key"] is given twice (a duplicate key)');
    // Keys are compared as strings: an escape is the same key.
    expect(firstAmbiguity('{"to":1,"t\\u006f":2}', "x", everywhere)).toBe("x.to is given twice (a duplicate key)");
  });

  test("checks numbers only where asked", () => {
    const text = '{ "meta" : 9007199254740993 , "arguments" : { "n" : [ 1 , 9007199254740993 ] } }';
    expect(firstAmbiguity(text, "params", (p) => p.startsWith("params.arguments"))).toBe(
      "params.arguments.n[1] is 9007199254740993: it cannot be carried exactly (it would become 9007199254740992)",
    );
    expect(firstAmbiguity('{"a":"9007199254740993","b":[true,null,{}],"c":[]}', "x", everywhere)).toBeUndefined();
  });
});

test("nestingDepth counts objects and arrays, not brackets inside strings", () => {
  expect(nestingDepth('{"a":[1,{"b":"[[[[{{{"}]}')).toBe(3);
  expect(nestingDepth('"\\"[["')).toBe(0);
  expect(nestingDepth("[".repeat(5000) + "]".repeat(5000))).toBe(5000);
});

test("idKey: one id however a number is written, two ids where a double would merge them", () => {
  expect(idKey("1")).toBe(idKey("1.0"));
  expect(idKey('"a"')).toBe(idKey('"\\u0061"'));
  expect(idKey("9007199254740993")).not.toBe(idKey("9007199254740992"));
  expect(idKey('"1"')).not.toBe(idKey("1"));
});

test("idKey: a plain integer's key is the one the full reading gives", () => {
  const fullReading = (text: string) => `n:${inexactNumber(text) === undefined ? String(Number(text)) : text}`;
  for (const text of ["0", "-0", "7", "-7", "10", "999999999999999", "-999999999999999", "123456789012345", "9007199254740993", "1000000000000000"]) {
    expect(idKey(text)).toBe(fullReading(text));
  }
  expect(idKey("-0")).not.toBe(idKey("0"));
  expect(idKey("1")).toBe(idKey("1e0"));
});

test("rawElements and withIdText keep every byte", () => {
  expect(rawElements(' [ {"id":1.0} , "x\\"y" ,2 ] ')).toEqual(['{"id":1.0}', '"x\\"y"', "2"]);
  expect(withIdText('{"result":{"n":1.50},"id":3}', "9007199254740993")).toBe('{"result":{"n":1.50},"id":9007199254740993}');
});

describe("duplicateMember", () => {
  test("names a top-level key given twice, whatever the spacing; nested duplicates are another check's", () => {
    expect(duplicateMember('{"id":1,"method":"x","id":2}')).toBe("id");
    expect(duplicateMember(' { "a" : [1,{"b":2}] ,\n "params":{}, "params" : null } ')).toBe("params");
    expect(duplicateMember('{"a":{"b":1,"b":2},"c":"\\"a\\""}')).toBeUndefined();
    expect(duplicateMember('{"a\\u0062":1,"ab":2}')).toBe("ab");
    expect(duplicateMember("[1,2]")).toBeUndefined();
  });
});
