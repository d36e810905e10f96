// Cross-compiles synartesis for every platform install.sh knows, packs each
// binary as dist/release/<name>.tar.gz holding one file named `synartesis`,
// and writes dist/release/SHA256SUMS. Used by `bun run release` and CI.
//
// Every target gets exactly the flags of scripts/build.ts. `--bytecode` was
// checked for each cross target with Bun 1.4.5 and is accepted by all six (the
// linux-arm64 binary was also run under qemu), so no flag is dropped for any
// target; if a future Bun refuses a flag for one target, list it in `drop`
// there, with the reason.
//
// Cross targets fetch their Bun runtime from the npm registry on first use
// (cached in Bun's install cache afterwards).
import { $ } from "bun";
import { availableParallelism } from "node:os";
import { join, resolve } from "node:path";
import { linkSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import pkg from "../package.json" with { type: "json" };
import { build, gitCommit } from "./build.ts";

const root = join(import.meta.dir, "..");
export const RELEASE_DIR = join(root, "dist", "release");

export interface ReleaseTarget {
  /** Bun's --target. */
  target: string;
  /** Artifact name: synartesis-<os>-<arch>[-variant] (what install.sh asks for). */
  name: string;
  /** Flags of buildFlags() this target cannot take (none today, see the header). */
  drop?: string[];
}

export const TARGETS: ReleaseTarget[] = [
  { target: "bun-linux-x64", name: "synartesis-linux-x64" },
  { target: "bun-linux-x64-baseline", name: "synartesis-linux-x64-baseline" },
  { target: "bun-linux-x64-musl", name: "synartesis-linux-x64-musl" },
  { target: "bun-linux-arm64", name: "synartesis-linux-arm64" },
  { target: "bun-darwin-x64", name: "synartesis-darwin-x64" },
  { target: "bun-darwin-arm64", name: "synartesis-darwin-arm64" },
];

export interface Artifact {
  name: string;
  target: string;
  binary: string;
  archive: string;
  binaryBytes: number;
  archiveBytes: number;
  sha256: string;
  seconds: number;
}

async function sha256(path: string): Promise<string> {
  const hasher = new Bun.CryptoHasher("sha256");
  hasher.update(await Bun.file(path).bytes());
  return hasher.digest("hex");
}

async function buildOne(t: ReleaseTarget, outDir: string): Promise<Artifact> {
  const started = performance.now();
  const binary = join(outDir, t.name);
  await build(binary, t.target, { drop: t.drop });

  // The archive holds a single file named `synartesis`: stage a hard link under
  // that name (keeps the mode bits) and let the system tar pack it. Bun's gzip
  // compresses it, at the same level as gzip's default in a third of the time.
  const stage = join(outDir, `.stage-${t.name}`);
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(stage);
  linkSync(binary, join(stage, "synartesis"));
  const archive = join(outDir, `${t.name}.tar.gz`);
  // COPYFILE_DISABLE keeps macOS's tar from adding ._ metadata entries.
  const packed = await $`tar -C ${stage} -cf - synartesis`
    .env({ ...process.env, COPYFILE_DISABLE: "1" })
    .quiet()
    .nothrow();
  rmSync(stage, { recursive: true, force: true });
  if (packed.exitCode !== 0) throw new Error(`tar failed for ${t.name}:\n${packed.stderr.toString()}`);
  await Bun.write(archive, Bun.gzipSync(packed.bytes(), { level: 6 }));

  return {
    name: t.name,
    target: t.target,
    binary,
    archive,
    binaryBytes: statSync(binary).size,
    archiveBytes: statSync(archive).size,
    sha256: await sha256(archive),
    seconds: (performance.now() - started) / 1000,
  };
}

/** Runs `work` over `items` with at most `jobs` in flight, keeping input order in the result. */
async function pool<T, R>(items: T[], jobs: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(jobs, items.length)) }, worker));
  return results;
}

/** The release target of the machine this runs on (what install.sh would pick here). */
export function hostTarget(): ReleaseTarget {
  const arch = process.arch === "arm64" ? "arm64" : "x64";
  const os = process.platform === "darwin" ? "darwin" : "linux";
  let variant = "";
  if (os === "linux" && readdirSync("/lib").some((f) => f.startsWith("ld-musl-"))) variant = "-musl";
  else if (os === "linux" && arch === "x64" && !readFileSync("/proc/cpuinfo", "utf8").includes("avx2")) variant = "-baseline";
  return TARGETS.find((t) => t.name === `synartesis-${os}-${arch}${variant}`)!;
}

export async function release(options: { outDir?: string; jobs?: number; targets?: ReleaseTarget[] } = {}): Promise<Artifact[]> {
  const outDir = options.outDir ?? RELEASE_DIR;
  const targets = options.targets ?? TARGETS;
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  // Compiling is mostly I/O (the runtime is copied and patched) and tar+gzip is
  // one core each, so one job per core overlaps the two; on 2 cores this took
  // the release from 44 s (one at a time) to 22 s.
  const artifacts = await pool(targets, options.jobs ?? availableParallelism(), (t) => buildOne(t, outDir));
  const sums = artifacts.map((a) => `${a.sha256}  ${a.name}.tar.gz\n`).join("");
  await Bun.write(join(outDir, "SHA256SUMS"), sums);
  return artifacts;
}

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

const USAGE = "usage: bun run release [--jobs N] [--out DIR] [--host-only]";

function parseFlags(argv: string[]): { jobs?: number; outDir?: string; targets?: ReleaseTarget[] } {
  const flags: { jobs?: number; outDir?: string; targets?: ReleaseTarget[] } = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [name, inline] = arg.startsWith("--") && arg.includes("=") ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)] : [arg, undefined];
    const value = () => {
      const v = inline ?? argv[++i];
      if (v === undefined) throw new Error(`${name} needs a value (${USAGE})`);
      return v;
    };
    if (name === "--jobs") {
      const text = value();
      const jobs = Number(text);
      if (!Number.isInteger(jobs) || jobs < 1) throw new Error(`--jobs wants a positive integer, got "${text}"`);
      flags.jobs = jobs;
    } else if (name === "--out") flags.outDir = resolve(value());
    else if (name === "--host-only") flags.targets = [hostTarget()];
    else if (name === "--help" || name === "-h") {
      console.log(`${USAGE.replace("usage: ", "Usage: ")}\n\nBuilds the release archives and SHA256SUMS (default: all six targets, into dist/release/).`);
      process.exit(0);
    } else throw new Error(`unknown flag ${arg} (${USAGE})`);
  }
  return flags;
}

if (import.meta.main) {
  try {
    const flags = parseFlags(process.argv.slice(2));
    const started = performance.now();
    const commit = await gitCommit();
    console.error(`building synartesis ${pkg.version} (${commit ? `commit ${commit}` : "no git commit"}) for ${(flags.targets ?? TARGETS).length} targets…`);
    const artifacts = await release(flags);
    const width = Math.max(...artifacts.map((a) => a.name.length)) + ".tar.gz".length;
    for (const a of artifacts) {
      console.log(
        `${`${a.name}.tar.gz`.padEnd(width)}  ${mb(a.archiveBytes).padStart(8)}  (binary ${mb(a.binaryBytes)}, ${a.target}, ${a.seconds.toFixed(1)} s)`,
      );
    }
    console.log(`${"SHA256SUMS".padEnd(width)}  ${artifacts.length} archives`);
    console.log(`wrote ${flags.outDir ?? RELEASE_DIR} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  } catch (error) {
    console.error((error as Error).message);
    process.exit(1);
  }
}
