// `bun run release` end to end: cross-compiled archives with SHA256SUMS, each
// binary the right kind of executable, and install.sh piped into bash (as with
// curl | bash) installing from them over file:// and loopback HTTP, refusing a
// corrupted archive. All six targets are built and checked: a whole-system
// check that .ci/run runs (`bun test` leaves it out: it takes a while).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { LineSession, ROOT, run, tempDir, type RunResult } from "../helpers.ts";

// Never the checkout's dist/release: a concurrent run must not see half a release.
const RELEASE = join(tempDir("syn-release-"), "release");
const INSTALL_SH = readFileSync(join(ROOT, "install.sh"), "utf8");

const EXPECTED: Record<string, RegExp[]> = {
  "synartesis-linux-x64": [/ELF 64-bit LSB (pie )?executable, x86-64/, /ld-linux-x86-64\.so\.2/],
  "synartesis-linux-x64-baseline": [/ELF 64-bit LSB (pie )?executable, x86-64/, /ld-linux-x86-64\.so\.2/],
  "synartesis-linux-x64-musl": [/ELF 64-bit LSB (pie )?executable, x86-64/, /ld-musl-x86_64\.so\.1/],
  "synartesis-linux-arm64": [/ELF 64-bit LSB (pie )?executable, ARM aarch64/],
  "synartesis-darwin-x64": [/Mach-O 64-bit x86_64 executable/],
  "synartesis-darwin-arm64": [/Mach-O 64-bit arm64 executable/],
};

let releaseLog = "";
const commit = Bun.spawnSync(["git", "rev-parse", "--short=12", "HEAD"], { cwd: ROOT });
const COMMIT = commit.exitCode === 0 ? commit.stdout.toString().trim() : "";

beforeAll(async () => {
  const flags = ["--out", RELEASE];
  const proc = Bun.spawn([process.execPath, "run", "release", ...flags], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  releaseLog = out + err;
  if (code !== 0) throw new Error(`bun run release failed (${code}):\n${releaseLog}`);
}, 180_000);

/** The platform install.sh picks here (this suite runs on Linux x64 or arm64 with glibc or musl). */
function hostAsset(): string {
  const arch = process.arch === "arm64" ? "arm64" : "x64";
  if (readdirSync("/lib").some((f) => f.startsWith("ld-musl-"))) return `synartesis-linux-${arch}-musl`;
  if (arch === "x64" && !readFileSync("/proc/cpuinfo", "utf8").includes("avx2")) return "synartesis-linux-x64-baseline";
  return `synartesis-linux-${arch}`;
}

/** install.sh piped into bash on stdin, from a folder that is not a clone, with a made-up HOME and PATH. */
async function pipedInstall(env: Record<string, string>, args: string[] = []): Promise<RunResult & { home: string; tmp: string }> {
  const home = tempDir("syn-home-");
  const tmp = tempDir("syn-tmp-");
  const cwd = tempDir("syn-cwd-");
  const result = await run(["-s", "--", ...args], {
    bin: "/bin/bash",
    cwd,
    cleanEnv: true,
    env: { HOME: home, TMPDIR: tmp, PATH: "/usr/bin:/bin", ...env },
    stdin: INSTALL_SH,
  });
  return { ...result, home, tmp };
}

describe("bun run release", () => {
  test("prints what it built", () => {
    for (const name of Object.keys(EXPECTED)) expect(releaseLog).toContain(`${name}.tar.gz`);
    expect(releaseLog).toContain("SHA256SUMS");
  });

  test("SHA256SUMS lists every archive built in sha256sum format, and the sums match", async () => {
    const lines = readFileSync(join(RELEASE, "SHA256SUMS"), "utf8").trimEnd().split("\n");
    expect(lines).toHaveLength(Object.keys(EXPECTED).length);
    const listed = new Map<string, string>();
    for (const line of lines) {
      const match = /^([0-9a-f]{64}) {2}(\S+)$/.exec(line);
      expect(match).not.toBeNull();
      listed.set(match![2]!, match![1]!);
    }
    expect([...listed.keys()].sort()).toEqual(
      Object.keys(EXPECTED)
        .map((n) => `${n}.tar.gz`)
        .sort(),
    );
    for (const [file, sum] of listed) {
      const hasher = new Bun.CryptoHasher("sha256");
      hasher.update(await Bun.file(join(RELEASE, file)).bytes());
      expect(`${file} ${hasher.digest("hex")}`).toBe(`${file} ${sum}`);
    }
    // The standard tool agrees.
    const check = Bun.spawnSync(["sha256sum", "--check", "--strict", "SHA256SUMS"], { cwd: RELEASE });
    expect(check.stdout.toString()).toContain(`${hostAsset()}.tar.gz: OK`);
    expect(check.exitCode).toBe(0);
  }, 60_000);

  test("each archive holds one executable named synartesis, of the right kind", async () => {
    const file = Bun.which("file");
    if (!file) throw new Error("the `file` command is missing: apt-get install -y file (.ci/run installs it)");
    const out = tempDir("syn-extract-");
    await Promise.all(
      Object.entries(EXPECTED).map(async ([name, patterns]) => {
        const archive = join(RELEASE, `${name}.tar.gz`);
        const dir = join(out, name);
        mkdirSync(dir);
        const extract = Bun.spawn(["tar", "-xzf", archive, "-C", dir], { stderr: "pipe" });
        expect(`${name}: ${await extract.exited} ${await new Response(extract.stderr).text()}`).toBe(`${name}: 0 `);
        expect(readdirSync(dir)).toEqual(["synartesis"]);
        expect(statSync(join(dir, "synartesis")).mode & 0o777).toBe(0o755);
        const kind = Bun.spawnSync([file, "-b", join(dir, "synartesis")]).stdout.toString();
        for (const pattern of patterns) expect(`${name}: ${kind}`).toMatch(pattern);
      }),
    );
  }, 120_000);
});

// The installs share nothing (each its own HOME, TMPDIR and folder): they run concurrently.
describe.concurrent("install.sh | bash from a release", () => {
  test("over file:// installs into ~/.local/bin; the binary reports the version and commit, and serves toy-crm", async () => {
    const r = await pipedInstall({ SYNARTESIS_RELEASE_URL: `file://${RELEASE}` });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const installed = join(r.home, ".local", "bin", "synartesis");
    // A local folder holds whatever was built there: it is not called "the latest release".
    expect(r.stdout).toContain(`Downloading ${hostAsset()}.tar.gz from file://${RELEASE}\n`);
    expect(r.stdout).not.toContain("latest");
    expect(r.stdout).toContain(`to ${installed}`);
    // ~/.local/bin is not on this PATH: say so, with the line that fixes it.
    expect(r.stdout).toContain(`${r.home}/.local/bin is not on your PATH`);
    expect(r.stdout).toContain(`  export PATH="${r.home}/.local/bin:$PATH"`);
    expect(r.stdout).toContain(`${installed} --help`);
    expect(readdirSync(join(r.home, ".local", "bin"))).toEqual(["synartesis"]);
    expect(readdirSync(r.tmp)).toEqual([]);

    const version = Bun.spawnSync([installed, "--version"], { env: { PATH: "/usr/bin:/bin", HOME: r.home } });
    expect(version.exitCode).toBe(0);
    const line = version.stdout.toString().trim();
    expect(line).toStartWith(`synartesis ${pkg.version} (commit `);
    if (COMMIT) expect(line).toBe(`synartesis ${pkg.version} (commit ${COMMIT})`);
    expect(r.stdout).toContain(`Installed ${line} to ${installed}`);

    const help = Bun.spawnSync([installed, "--help"], { env: { PATH: "/usr/bin:/bin", HOME: r.home } });
    expect(help.exitCode).toBe(0);
    expect(help.stdout.toString()).toContain("toy-crm");

    // The installed binary serves toy-crm (answers initialize).
    const session = new LineSession([installed, "toy-crm"], { cwd: r.home, env: { HOME: r.home, PATH: "/usr/bin:/bin" } });
    try {
      const init = await session.initialize();
      expect(init.result.protocolVersion).toBeString();
      expect(init.result.capabilities.tools).toBeDefined();
      const tools = await session.request(1, "tools/list");
      expect(tools.result.tools.map((t: { name: string }) => t.name)).toContain("get_customer");
    } finally {
      await session.close();
    }
  }, 60_000);

  describe("over loopback HTTP", () => {
    let server: ReturnType<typeof Bun.serve>;
    const requests: string[] = [];

    beforeAll(() => {
      server = Bun.serve({
        hostname: "127.0.0.1",
        port: 0,
        fetch(request) {
          const path = new URL(request.url).pathname;
          requests.push(path);
          // Serves dist/release as /releases/download/v<version>/… would.
          const prefix = `/releases/download/v${pkg.version}/`;
          if (!path.startsWith(prefix)) return new Response("not found", { status: 404 });
          const file = Bun.file(join(RELEASE, basename(path)));
          return file.size > 0 ? new Response(file) : new Response("not found", { status: 404 });
        },
      });
    });
    afterAll(() => server?.stop(true));

    test("with --version and --dir, into a folder that is on PATH", async () => {
      const dir = join(tempDir("syn-dir-"), "bin");
      const base = `http://127.0.0.1:${server.port}/releases/download/v${pkg.version}`;
      const r = await pipedInstall({ SYNARTESIS_RELEASE_URL: base, PATH: `${dir}:/usr/bin:/bin` }, ["--version", pkg.version, "--dir", dir]);
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      expect(requests).toContain(`/releases/download/v${pkg.version}/${hostAsset()}.tar.gz`);
      expect(requests).toContain(`/releases/download/v${pkg.version}/SHA256SUMS`);
      expect(r.stdout).toContain(`(v${pkg.version}) from ${base}`);
      expect(r.stdout).toContain(`${dir} is on your PATH.`);
      expect(r.stdout).toContain("  synartesis --help");
      expect(existsSync(join(r.home, ".local"))).toBe(false);
      const version = Bun.spawnSync([join(dir, "synartesis"), "--version"]);
      expect(version.stdout.toString()).toStartWith(`synartesis ${pkg.version} (commit `);
    }, 60_000);

    test("a release that is not there fails with the URL and installs nothing", async () => {
      const base = `http://127.0.0.1:${server.port}/releases/download/v0.0.0-missing`;
      const r = await pipedInstall({ SYNARTESIS_RELEASE_URL: base });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`could not download ${base}/${hostAsset()}.tar.gz`);
      expect(existsSync(join(r.home, ".local"))).toBe(false);
      expect(readdirSync(r.tmp)).toEqual([]);
    }, 60_000);
  });

  test("a corrupted archive is refused: non-zero exit, a clear message, nothing installed", async () => {
    const mirror = tempDir("syn-corrupt-");
    const asset = `${hostAsset()}.tar.gz`;
    copyFileSync(join(RELEASE, "SHA256SUMS"), join(mirror, "SHA256SUMS"));
    const bytes = readFileSync(join(RELEASE, asset));
    const middle = Math.floor(bytes.length / 2);
    bytes[middle] = bytes[middle]! ^ 0xff;
    writeFileSync(join(mirror, asset), bytes);

    const r = await pipedInstall({ SYNARTESIS_RELEASE_URL: `file://${mirror}` });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(`checksum did not match for ${asset}`);
    expect(r.stderr).toContain("Nothing was installed.");
    expect(r.stdout).not.toContain("Installed");
    const bin = join(r.home, ".local", "bin");
    expect(existsSync(bin) ? readdirSync(bin) : []).toEqual([]);
    expect(readdirSync(r.tmp)).toEqual([]);
  }, 60_000);
});
