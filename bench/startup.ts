// Wall time of `dist/synartesis --help` (the binary's start-up cost), median of 50 runs.
import { join } from "node:path";

const binary = join(import.meta.dir, "..", "dist", "synartesis");
const runs = Number(process.env.RUNS ?? 50);
const times: number[] = [];
for (let i = 0; i < runs + 5; i++) {
  const start = Bun.nanoseconds();
  const proc = Bun.spawnSync([binary, "--help"], { stdout: "ignore", stderr: "ignore" });
  const elapsed = (Bun.nanoseconds() - start) / 1e6;
  if (proc.exitCode !== 0) throw new Error(`${binary} --help exited with ${proc.exitCode}`);
  if (i >= 5) times.push(elapsed);
}
times.sort((a, b) => a - b);
const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!.toFixed(1);
console.log(`synartesis --help: median ${at(0.5)} ms, p95 ${at(0.95)} ms, min ${times[0]!.toFixed(1)} ms over ${runs} runs`);
