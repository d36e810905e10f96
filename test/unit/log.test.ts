// The proxy's JSON-lines log (src/log.ts): text from outside reaches a
// terminal with nothing it could act on (JSON escapes the C0 controls; DEL,
// the C1 controls and bidi overrides are escaped too), reads back as the same
// text, and a long one is clipped.
import { expect, test } from "bun:test";
import { clipped, createLogger } from "../../src/log.ts";

test("a logged line carries no control character, DEL, C1 control or bidi override, and reads back as the same text", () => {
  const lines: string[] = [];
  const log = createLogger("debug", (line) => void lines.push(line));
  const hostile = "uri://a\x1b[2J\r\n\x7f\x85\x9b31m\u202eevil\u2066";
  log.warn("a server refused", { uri: hostile, [`key\x9b`]: 1 });
  expect(lines).toHaveLength(1);
  expect(lines[0]!.slice(0, -1)).not.toMatch(/[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/);
  expect(JSON.parse(lines[0]!)).toMatchObject({ level: "warn", msg: "a server refused", uri: hostile, "key\x9b": 1 });
  expect(lines[0]).toContain("\\u007f\\u0085\\u009b31m\\u202eevil\\u2066");
});

test("clipped text keeps at most its limit, and says it was cut", () => {
  expect(clipped("short")).toBe("short");
  expect(clipped("x".repeat(300))).toBe(`${"x".repeat(200)}…`);
  expect(clipped("abcdef", 3)).toBe("abc…");
});
