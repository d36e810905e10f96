// CPU used by `synartesis watch` while nothing happens: it runs in a real
// terminal (a tmux pane) on a journal with one run, and /proc/<pid>/stat is
// read before and after SECONDS (default 20) of idling.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const root = join(import.meta.dir, "..");
const binary = join(root, "dist", "synartesis");
const seconds = Number(process.env.SECONDS_IDLE ?? 20);
const dir = mkdtempSync(join(tmpdir(), "syn-bench-watch-"));
const socket = `syn-bench-watch-${process.pid}`;
const tmux = (...args: string[]) => Bun.spawnSync(["tmux", "-L", socket, ...args], { stdout: "pipe", stderr: "pipe" });

writeFileSync(join(dir, "synartesis.yaml"), readFileSync(join(root, "manifests", "toy-crm.yaml"), "utf8"));
const frames = [
  { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench", version: "1" } } },
  { jsonrpc: "2.0", method: "notifications/initialized" },
  { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "update_customer", arguments: { id: "c_001", plan: "free" } } },
];
Bun.spawnSync([binary, "proxy"], { cwd: dir, stdin: new TextEncoder().encode(frames.map((f) => JSON.stringify(f)).join("\n") + "\n") });

try {
  tmux("new-session", "-d", "-s", "watch", "-x", "120", "-y", "40", `cd ${dir} && ${binary} watch`);
  await Bun.sleep(1500);
  const pid = Number(tmux("list-panes", "-t", "watch", "-F", "#{pane_pid}").stdout.toString().trim());
  const child = Number(
    Bun.spawnSync(["pgrep", "-P", String(pid)])
      .stdout.toString()
      .trim()
      .split("\n")[0] || pid,
  );
  const ticks = () => {
    const stat = readFileSync(`/proc/${child}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(fields[11]) + Number(fields[12]);
  };
  const before = ticks();
  const started = performance.now();
  await Bun.sleep(seconds * 1000);
  const cpuSeconds = (ticks() - before) / 100; // USER_HZ
  const share = cpuSeconds / ((performance.now() - started) / 1000);
  console.log(`synartesis watch, idle for ${seconds} s: ${(share * 100).toFixed(2)}% of one core (target < 2%)`);
} finally {
  tmux("kill-server");
  rmSync(dir, { recursive: true, force: true });
}
