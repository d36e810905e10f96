// bench/scale.ts, scaled down, against the built binary: it runs the whole
// scenario (its own checks: every call answered, the dry run plans every call,
// undo leaves the state file equal to the seed) and prints every figure.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { BIN, ROOT, run } from "../helpers.ts";

// Each file sets its own: the preload's default reaches only the first file bun runs.
setDefaultTimeout(60_000);

const SCRIPT = join(ROOT, "bench", "scale.ts");

describe.concurrent("bench/scale.ts", () => {
  test("a small run checks the scenario and prints each figure", async () => {
    const args = [SCRIPT, "--bin", BIN, "--customers", "40", "--calls", "30", "--runs", "3", "--actions", "10"];
    const result = await run(args, { bin: "bun" });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const figures = result.stdout
      .split("\n")
      .slice(1, -1)
      .map((line) =>
        line
          .trim()
          .split(/\s{2,}/)
          .slice(0, 2),
      );
    expect(figures.map(([what]) => what)).toEqual([
      "30 update_customer, direct → last answer",
      "the same through the proxy (recorded)",
      "proxy peak RSS during those writes",
      "the same with SYNARTESIS_JIT=0",
      "undo --dry-run of that run",
      "undo of that run",
      "30 mixed calls piped at once, direct",
      "the same, direct, sent as the proxy must",
      "the same through the proxy → last answer",
      "journal, 3 runs × 10 actions",
    ]);
    for (const [, figure] of figures) expect(figure).toMatch(/^\d+(\.\d)? (ms|MB)$/);
  });

  test("bad flags are refused with the usage line, before anything runs", async () => {
    const result = await run([SCRIPT, "--bin", BIN, "--calls", "50", "--customers", "10"], { bin: "bun" });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe("bench/scale: --calls (50) must not exceed --customers (10): each call touches its own customer\n");
    const unknown = await run([SCRIPT, "--bin", BIN, "--fast"], { bin: "bun" });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toStartWith('bench/scale: unknown argument "--fast"\nusage: bun bench/scale.ts');
    expect((await run([SCRIPT, "--calls", "0"], { bin: "bun" })).stderr).toStartWith("bench/scale: --calls needs a whole number ≥ 1 (got 0)");
  });
});
