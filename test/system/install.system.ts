// install.sh without a release: building and linking from a clone (R-SHIP-4),
// and the platform it picks when downloading (fake uname/ldd/sysctl on PATH).
// Downloads of real release archives are tested in release.system.ts. A
// whole-system check: .ci/run runs it (it builds the checkout several times).
import { beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import {
  chmodSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { ROOT, run, tempDir, type RunResult } from "../helpers.ts";

const INSTALL_SH = join(ROOT, "install.sh");
// A clone install runs bun install and a build; bunfig's [test] timeout is not
// applied by bun 1.4.5, so say it here.
setDefaultTimeout(60_000);
const BUN = realpathSync(process.execPath);

/** Runs a script with bash and an environment made from scratch (nothing of the test's PATH leaks in). */
function bash(args: string[], env: Record<string, string>, options: { cwd?: string; stdin?: string } = {}): Promise<RunResult> {
  return run(args, { bin: "/bin/bash", env, cleanEnv: true, cwd: options.cwd ?? env.HOME, ...(options.stdin === undefined ? {} : { stdin: options.stdin }) });
}

function script(path: string, body: string): void {
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
}

/** A folder of symlinks to every command in /usr/bin except `skip`: a PATH entry that provides the tools. */
function toolFarm(dir: string, skip: string[]): string {
  mkdirSync(dir, { recursive: true });
  for (const name of readdirSync("/usr/bin")) {
    if (skip.includes(name)) continue;
    symlinkSync(join("/usr/bin", name), join(dir, name));
  }
  if (!skip.includes("bun") && !existsSync(join(dir, "bun"))) symlinkSync(BUN, join(dir, "bun"));
  return dir;
}

// Serial: these share one clone, which each install builds into.
describe("install.sh from a clone", () => {
  let clone: string;
  let home: string;

  beforeAll(() => {
    // What a fresh clone has that the build needs (node_modules comes from `bun install`).
    clone = tempDir("syn-clone-");
    for (const entry of ["package.json", "bun.lock", "bunfig.toml", "tsconfig.json", "install.sh", "src", "scripts", "manifests"]) {
      cpSync(join(ROOT, entry), join(clone, entry), { recursive: true });
    }
    home = tempDir("syn-home-");
  });

  test("builds dist/synartesis and links it into the first writable absolute folder on PATH outside the checkout", async () => {
    const bin = tempDir("syn-bin-");
    const inside = join(clone, "tools");
    mkdirSync(inside, { recursive: true });
    // Empty, ".", relative and in-checkout entries come first and must be skipped.
    const PATH = ["", ".", "rel/bin", inside, "/nonexistent/bin", bin, "/usr/bin", "/bin"].join(":");
    const r = await bash([join(clone, "install.sh")], { HOME: home, PATH }, { cwd: clone });
    expect(r.stderr).not.toContain("error:");
    expect(r.code).toBe(0);
    const binary = join(clone, "dist", "synartesis");
    expect(existsSync(binary)).toBe(true);
    expect(lstatSync(join(bin, "synartesis")).isSymbolicLink()).toBe(true);
    expect(readlinkSync(join(bin, "synartesis"))).toBe(binary);
    expect(existsSync(join(inside, "synartesis"))).toBe(false);
    expect(existsSync(join(clone, "synartesis"))).toBe(false);
    expect(r.stdout).toContain(`Linked ${bin}/synartesis -> ${binary}`);
    expect(r.stdout).toContain(`${bin} is on your PATH`);
    expect(r.stdout).toContain("synartesis --help");
    expect(r.stdout).not.toContain("\x1b[");

    const version = Bun.spawnSync([join(bin, "synartesis"), "--version"]);
    expect(version.exitCode).toBe(0);
    expect(version.stdout.toString()).toMatch(/^synartesis \d+\.\d+\.\d+/);
  });

  test("--no-link builds and links nothing", async () => {
    const bin = tempDir("syn-bin-");
    const r = await bash([join(clone, "install.sh"), "--no-link"], { HOME: home, PATH: `${bin}:/usr/bin:/bin` }, { cwd: home });
    expect(r.code).toBe(0);
    expect(readdirSync(bin)).toEqual([]);
    expect(r.stdout).toContain("Not linked (--no-link)");
    expect(r.stdout).toContain(`${join(clone, "dist", "synartesis")} --help`);
  });

  test("with no writable folder on PATH it prints the exact command to run and exits 0", async () => {
    // Running as root makes every existing folder writable, so the PATH holds
    // only a tool folder inside the checkout (skipped) and folders that do not exist.
    const tools = toolFarm(join(clone, "all-tools"), ["synartesis"]);
    const PATH = [tools, "/nonexistent/a", "/nonexistent/b"].join(":");
    const r = await bash([join(clone, "install.sh")], { HOME: home, PATH }, { cwd: home });
    expect(r.stderr).not.toContain("error:");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("No writable folder on your PATH");
    expect(r.stdout).toContain(`  export PATH="${clone}/dist:$PATH"`);
    expect(r.stdout).toContain(`  ln -sf "${clone}/dist/synartesis" /usr/local/bin/synartesis`);
    expect(existsSync(join(tools, "synartesis"))).toBe(false);
    expect(existsSync(join(clone, "dist", "synartesis"))).toBe(true);
  });

  test("without bun it installs bun with npm install -g bun, then builds and links", async () => {
    const tools = toolFarm(join(clone, "tools-no-bun"), ["bun", "bunx", "npm", "npx", "synartesis"]);
    const fakeBin = tempDir("syn-fakenpm-");
    const log = join(fakeBin, "npm.log");
    // Stands in for npm: records the call and "installs" bun onto PATH.
    script(join(fakeBin, "npm"), `echo "$*" >> "${log}"\nln -sf "${BUN}" "${fakeBin}/bun"`);
    const PATH = [tools, fakeBin, "/nonexistent"].join(":");
    const r = await bash([join(clone, "install.sh")], { HOME: home, PATH }, { cwd: home });
    expect(r.stderr).not.toContain("error:");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("installing it with npm install -g bun");
    expect(readFileSync(log, "utf8").trim()).toBe("install -g bun");
    expect(readlinkSync(join(fakeBin, "synartesis"))).toBe(join(clone, "dist", "synartesis"));
  });

  test("--dir links into that folder", async () => {
    const target = join(tempDir("syn-dir-"), "my bin");
    const r = await bash([join(clone, "install.sh"), "--dir", target], { HOME: home, PATH: "/usr/bin:/bin" }, { cwd: home });
    expect(r.code).toBe(0);
    expect(readlinkSync(join(target, "synartesis"))).toBe(join(clone, "dist", "synartesis"));
    expect(r.stdout).toContain(`${target} is not on your PATH`);
    expect(r.stdout).toContain(`  export PATH="${target}:$PATH"`);
  });

  test("--version in a clone is refused (it builds the checkout) without building", async () => {
    const r = await bash([join(clone, "install.sh"), "--version", "9.9.9"], { HOME: home, PATH: "/usr/bin:/bin" });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--version picks a release to download");
    expect(r.stdout).not.toContain("Building");
  });
});

describe.concurrent("install.sh flags", () => {
  test("--help prints usage and exits 0; unknown options exit 2", async () => {
    const home = tempDir("syn-home-");
    const help = await bash(["-s", "--", "--help"], { HOME: home, PATH: "/usr/bin:/bin" }, { stdin: readFileSync(INSTALL_SH, "utf8") });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("Install synartesis for the current user");
    expect(help.stdout).toContain("--version X");
    expect(help.stdout).toContain("SYNARTESIS_RELEASE_URL");

    const bad = await bash([INSTALL_SH, "--frobnicate"], { HOME: home, PATH: "/usr/bin:/bin" });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("unknown option: --frobnicate");
  });
});

describe.concurrent("install.sh platform detection (download mode)", () => {
  // An empty release folder: every download fails, and the message names the
  // archive the script picked for the (faked) platform.
  let emptyRelease: string;
  let outside: string;

  beforeAll(() => {
    emptyRelease = tempDir("syn-norelease-");
    outside = tempDir("syn-outside-");
    cpSync(INSTALL_SH, join(outside, "install.sh"));
  });

  async function detect(fake: { uname_s: string; uname_m: string; ldd?: string; translated?: string }): Promise<RunResult> {
    const home = tempDir("syn-home-");
    const fakeBin = tempDir("syn-fake-");
    script(join(fakeBin, "uname"), `case "$1" in -s) echo "${fake.uname_s}" ;; -m) echo "${fake.uname_m}" ;; *) echo "${fake.uname_s}" ;; esac`);
    script(join(fakeBin, "ldd"), `echo "${fake.ldd ?? "ldd (Debian GLIBC 2.36-9+deb12u4) 2.36"}"`);
    script(join(fakeBin, "sysctl"), fake.translated === undefined ? "exit 1" : `echo "${fake.translated}"`);
    return bash([join(outside, "install.sh")], {
      HOME: home,
      PATH: `${fakeBin}:/usr/bin:/bin`,
      SYNARTESIS_RELEASE_URL: `file://${emptyRelease}`,
    });
  }

  const hasAvx2 = existsSync("/proc/cpuinfo") && readFileSync("/proc/cpuinfo", "utf8").includes("avx2");
  const muslHere = existsSync("/lib") && readdirSync("/lib").some((f) => f.startsWith("ld-musl-"));

  test.skipIf(muslHere)("Linux x86_64 picks linux-x64 (or -baseline without AVX2)", async () => {
    const r = await detect({ uname_s: "Linux", uname_m: "x86_64" });
    expect(r.code).toBe(1);
    const asset = hasAvx2 ? "synartesis-linux-x64.tar.gz" : "synartesis-linux-x64-baseline.tar.gz";
    expect(r.stderr).toContain(`could not download file://${emptyRelease}/${asset}`);
    expect(r.stdout).toContain(`Downloading ${asset}`);
  });

  test.skipIf(muslHere)("Linux aarch64 picks linux-arm64", async () => {
    const r = await detect({ uname_s: "Linux", uname_m: "aarch64" });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`could not download file://${emptyRelease}/synartesis-linux-arm64.tar.gz`);
  });

  test("musl libc on x86_64 picks linux-x64-musl", async () => {
    const r = await detect({ uname_s: "Linux", uname_m: "x86_64", ldd: "musl libc (x86_64)" });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`could not download file://${emptyRelease}/synartesis-linux-x64-musl.tar.gz`);
  });

  test("musl libc on arm64 is refused: there is no such build", async () => {
    const r = await detect({ uname_s: "Linux", uname_m: "arm64", ldd: "musl libc (aarch64)" });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("unsupported platform: musl libc on arm64");
  });

  test("macOS: arm64, x86_64, and x86_64 under Rosetta (which gets arm64)", async () => {
    const arm = await detect({ uname_s: "Darwin", uname_m: "arm64" });
    expect(arm.stderr).toContain("/synartesis-darwin-arm64.tar.gz");
    const intel = await detect({ uname_s: "Darwin", uname_m: "x86_64", translated: "0" });
    expect(intel.stderr).toContain("/synartesis-darwin-x64.tar.gz");
    const intelNoSysctlKey = await detect({ uname_s: "Darwin", uname_m: "x86_64" });
    expect(intelNoSysctlKey.stderr).toContain("/synartesis-darwin-x64.tar.gz");
    const rosetta = await detect({ uname_s: "Darwin", uname_m: "x86_64", translated: "1" });
    expect(rosetta.stderr).toContain("/synartesis-darwin-arm64.tar.gz");
  });

  test("an unsupported OS or CPU is refused early with a clear message", async () => {
    const bsd = await detect({ uname_s: "FreeBSD", uname_m: "amd64" });
    expect(bsd.code).toBe(1);
    expect(bsd.stderr).toContain("unsupported operating system: FreeBSD");
    expect(bsd.stdout).not.toContain("Downloading");
    const riscv = await detect({ uname_s: "Linux", uname_m: "riscv64" });
    expect(riscv.code).toBe(1);
    expect(riscv.stderr).toContain("unsupported CPU architecture: riscv64");
  });

  test("--version X with SYNARTESIS_RELEASE_URL uses the URL as is", async () => {
    const home = tempDir("syn-home-");
    const r = await bash([join(outside, "install.sh"), "--version", "v1.2.3"], {
      HOME: home,
      PATH: "/usr/bin:/bin",
      SYNARTESIS_RELEASE_URL: `file://${emptyRelease}/`,
    });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`(v1.2.3) from file://${emptyRelease}`);
    expect(r.stderr).toMatch(new RegExp(`could not download file://${emptyRelease}/synartesis-[a-z0-9-]+\\.tar\\.gz`));
    expect(existsSync(join(home, ".local"))).toBe(false);
  });

  test.skipIf(!Bun.which("script"))("colour only on a terminal, never with NO_COLOR", async () => {
    const home = tempDir("syn-home-");
    const cmd = `bash ${join(outside, "install.sh")}`;
    const env = { HOME: home, PATH: "/usr/bin:/bin", SYNARTESIS_RELEASE_URL: `file://${emptyRelease}`, TERM: "xterm" };
    const tty = Bun.spawnSync(["script", "-qec", cmd, "/dev/null"], { env, stdin: "ignore" });
    expect(tty.stdout.toString()).toContain("\x1b[");
    const noColor = Bun.spawnSync(["script", "-qec", cmd, "/dev/null"], { env: { ...env, NO_COLOR: "1" }, stdin: "ignore" });
    expect(noColor.stdout.toString()).toContain("could not download");
    expect(noColor.stdout.toString()).not.toContain("\x1b[");
  });
});
