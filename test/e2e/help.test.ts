// Every command's --help through the built binary, in one style (R-CLI, issue
// 27 item 6): a snapshot each, lines of at most 100 columns, a usage line, an
// example, every flag described, common flags last in one order; and usage
// errors in one style, with "did you mean" for a near miss.
import { describe, expect, test } from "bun:test";
import { COMMANDS, run } from "../helpers.ts";

const COMMON_LAST = ["--json", "--manifest", "--journal", "-h, --help"];

// Not concurrent: bun takes snapshots only in tests that run one at a time.
describe("--help", () => {
  for (const command of COMMANDS) {
    test(`synartesis ${command} --help`, async () => {
      const help = await run([command, "--help"]);
      expect([help.code, help.stderr]).toEqual([0, ""]);
      const lines = help.stdout.trimEnd().split("\n");
      expect(lines.filter((line) => [...line].length > 100)).toEqual([]);
      expect(lines[0]).toStartWith(`synartesis ${command} — `);
      expect(help.stdout).toContain(`Usage:\n  synartesis ${command} `);
      expect(help.stdout).toMatch(new RegExp(`Example:\\n  synartesis ${command}[ \\n]`));
      // Every flag has words beside or under it.
      const options = help.stdout.slice(help.stdout.indexOf("Options:\n"), help.stdout.indexOf("\nExample:"));
      const optionLines = options.split("\n");
      const flagLines = optionLines.filter((line) => /^ {2}-/.test(line));
      for (const line of flagLines) {
        const next = optionLines[optionLines.indexOf(line) + 1] ?? "";
        expect(`${line} ${/^ {3,}\S/.test(next) ? next : ""}`).toMatch(/^ {2}\S.*? {2,}\S/);
      }
      // The common flags come last, in one order.
      const names = flagLines.map((line) =>
        line
          .trim()
          .split(/ {2,}/)[0]!
          .replace(/ [A-Z|[,…\]]+$/, ""),
      );
      const common = names.filter((name) => COMMON_LAST.includes(name));
      expect(common).toEqual(COMMON_LAST.filter((name) => common.includes(name)));
      expect(names.slice(names.length - common.length)).toEqual(common);
      expect(help.stdout).toMatchSnapshot();
    });
  }

  test("init's usage names the server command after --, and proxy's help says where its servers come from", async () => {
    expect((await run(["init", "--help"])).stdout).toContain("  synartesis init NAME [options] -- COMMAND [ARGS…]\n");
    expect((await run(["proxy", "--help"])).stdout).toMatch(/add one with synartesis init NAME\s+--\s+COMMAND\s+\[ARGS…\]/);
  });
});

describe.concurrent("usage errors, in one style", () => {
  const cases: Array<[string[], string]> = [
    [["lst"], 'synartesis: unknown command "lst"; did you mean "list"? (see synartesis --help)\n'],
    [["frobnicate"], 'synartesis: unknown command "frobnicate" (see synartesis --help)\n'],
    [["undo", "--dryrun"], "synartesis: unknown flag --dryrun; did you mean --dry-run? (see synartesis undo --help)\n"],
    [["show", "--jsn"], "synartesis: unknown flag --jsn; did you mean --json? (see synartesis show --help)\n"],
    [["init"], "synartesis: missing NAME (the server's name in the manifest (letters, digits, - and _)) (see synartesis init --help)\n"],
  ];
  for (const [args, stderr] of cases) {
    test(`synartesis ${args.join(" ")}`, async () => {
      const result = await run(args);
      expect([result.code, result.stdout, result.stderr]).toEqual([2, "", stderr]);
    });
  }
});
