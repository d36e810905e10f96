// Runs once before the suite: most tests drive dist/synartesis over real pipes,
// so (re)build it when any source is newer than the binary.
import { setDefaultTimeout } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, renameSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "../scripts/build.ts";

// bunfig's [test] timeout is not honoured by this bun, and this default reaches only the
// first test file (each file that needs more than 5 s per test sets it itself).
setDefaultTimeout(60_000);

// The journals the tests make keep their chain heads (src/journal/anchors.ts) in a folder of this run's, not the user's state folder.
process.env.XDG_STATE_HOME = mkdtempSync(join(tmpdir(), "syn-test-state-"));

const root = join(import.meta.dir, "..");
const binary = join(root, "dist", "synartesis");

function newestMtime(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, entry)));
  return newest;
}

const sources = [join(root, "src"), join(root, "package.json"), join(root, "scripts", "build.ts")];
const stale = !existsSync(binary) || sources.some((s) => newestMtime(s) > statSync(binary).mtimeMs);
if (stale && !process.env.SYNARTESIS_SKIP_BUILD) {
  // Build beside the binary and rename: test runs started at the same time never see half a file.
  const partial = `${binary}.${process.pid}.partial`;
  await build(partial);
  renameSync(partial, binary);
}
