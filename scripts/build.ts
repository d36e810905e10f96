// Compiles src/main.ts into one self-contained executable, dist/synartesis.
// Used by `bun run build`, the test preload and scripts/release.ts.
import { $ } from "bun";
import { join } from "node:path";

const root = join(import.meta.dir, "..");

export async function gitCommit(): Promise<string> {
  const result = await $`git rev-parse --short=12 HEAD`.cwd(root).quiet().nothrow();
  return result.exitCode === 0 ? result.stdout.toString().trim() : "";
}

/** How many times more reluctant to compile JavaScriptCore's JIT is while a process starts (src/jit.ts). */
const STARTUP_JIT_POLICY = 20;

/** The flags every build shares (DESIGN.md: bytecode needs esm; no autoloading of files from the cwd). */
export async function buildFlags(): Promise<string[]> {
  return [
    "--compile",
    "--minify",
    "--bytecode",
    "--format=esm",
    // Each command's code is loaded when it runs, not every command's at every start.
    "--splitting",
    // src/jit.ts: the JIT is reluctant until a serving process says its start is over.
    `--compile-jit-policy=${STARTUP_JIT_POLICY}`,
    "--no-compile-autoload-dotenv",
    "--no-compile-autoload-bunfig",
    `--define=SYNARTESIS_COMMIT=${JSON.stringify(await gitCommit())}`,
  ];
}

export interface BuildOptions {
  /** Flags of buildFlags() to leave out (for a cross target that refuses one; see scripts/release.ts). */
  drop?: string[];
}

export async function build(outfile = join(root, "dist", "synartesis"), target?: string, options: BuildOptions = {}): Promise<void> {
  const flags = (await buildFlags()).filter((flag) => !options.drop?.includes(flag));
  if (target) flags.push(`--target=${target}`);
  const result = await $`bun build ${flags} ${join(root, "src", "main.ts")} --outfile ${outfile}`.cwd(root).quiet().nothrow();
  if (result.exitCode !== 0) {
    throw new Error(`bun build failed for ${target ?? "this machine"}:\n${result.stderr.toString()}${result.stdout.toString()}`);
  }
}

if (import.meta.main) {
  try {
    await build();
    console.error(`built ${join(root, "dist", "synartesis")}`);
  } catch (error) {
    console.error((error as Error).message);
    process.exit(1);
  }
}
