// Text measured in terminal columns (wide CJK and emoji take two, colour codes
// none): table(), padVisible() and the side-by-side drift report; and the one
// colour decision every command and the help share.
import { describe, expect, test } from "bun:test";
import { sideBySide } from "../../src/render/diff.ts";
import { colourEnabled, colours, padVisible, plain, table } from "../../src/render/style.ts";

const width = (text: string) => Bun.stringWidth(text);

describe("table", () => {
  test("columns line up in display columns, whatever the script of a cell", () => {
    const rows = [
      ["RUN", "AGENT", "STATUS"],
      ["a1", "日本語のエージェント", "complete"],
      ["b2", "🤖 robot", "active"],
      ["c3", "ada", "complete"],
    ];
    const lines = table(rows);
    const statusColumn = lines.map((line) => width(line.slice(0, line.search(/STATUS|complete|active/))));
    expect(statusColumn).toEqual([27, 27, 27, 27]);
    expect(lines[2]).toBe("b2   🤖 robot              active");
  });

  test("colour codes take no room", () => {
    const lines = table([
      [colours.bold("ID"), "NAME"],
      [colours.red("x"), "y"],
    ]);
    expect(lines.map((line) => width(line))).toEqual([8, 5]);
    expect(lines[1]).toBe(`${colours.red("x")}   y`);
  });

  test("padVisible pads to columns", () => {
    expect(padVisible("日本", 6)).toBe("日本  ");
    expect(padVisible(colours.green("ok"), 4)).toBe(`${colours.green("ok")}  `);
    expect(padVisible("toolong", 3)).toBe("toolong");
  });
});

describe("sideBySide", () => {
  test("wide text is cut and wrapped by columns: the divider stays in one place", () => {
    const before = { absent: false as const, payload: { notes: "日本語".repeat(30) } };
    const after = { absent: false as const, payload: { notes: "short" } };
    const lines = sideBySide(before, after, plain, 60);
    // Under the header (whose title is wider than a column at this width).
    const divider = lines.slice(1).map((line) => width(line.slice(0, line.indexOf("│"))));
    expect(new Set(divider).size).toBe(1);
    expect(lines.length).toBeGreaterThan(3);
  });

  test("a differing value longer than twelve rows ends its last row with one ellipsis", () => {
    const lines = sideBySide({ absent: false, payload: "x".repeat(2000) }, { absent: false, payload: "y" }, plain, 60);
    const left = lines.slice(1).map((line) => line.slice(4, line.indexOf("│")).trimEnd());
    expect(left).toHaveLength(12);
    expect(left.at(-1)).toEndWith("x…");
    expect(left.at(-1)).not.toEndWith("……");
    expect(left.slice(0, -1).every((row) => /^x+$/.test(row))).toBe(true);
  });
});

describe("colourEnabled: the one colour decision", () => {
  test("a terminal, no NO_COLOR and a TERM other than dumb", () => {
    expect(colourEnabled({ isTTY: true }, { TERM: "xterm-256color" })).toBe(true);
    expect(colourEnabled({ isTTY: true }, {})).toBe(true);
    expect(colourEnabled({ isTTY: false }, { TERM: "xterm" })).toBe(false);
    expect(colourEnabled({}, {})).toBe(false);
    expect(colourEnabled({ isTTY: true }, { NO_COLOR: "1", TERM: "xterm" })).toBe(false);
    expect(colourEnabled({ isTTY: true }, { TERM: "dumb" })).toBe(false);
  });
});
