// How long the proxy takes to exit once its client is done (R-PROXY-9: under
// 0.5 s after the last reply), after a long run of reads: N sequential
// get_customer calls (JSON-RPC lines over stdio, each sent once the one
// before was answered), then stdin closed. A read's row is written as text
// and packed a moment later; what is still waiting when stdin closes is packed
// before the proxy exits. Checks as it goes: every call answered, exit code 0,
// and every read's row packed in the journal it leaves.
//
//   bun bench/closing.ts               20,000 reads, this build
//   CALLS=5000 bun bench/closing.ts --bin PATH
import { Database } from "bun:sqlite";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { BINARY, ROOT, SEED_STATE } from "./calls.ts";

await import("../test/preload.ts"); // rebuilds dist/synartesis when the sources are newer

const CALLS = Number(process.env.CALLS ?? 20_000);
const binary = process.argv.includes("--bin") ? resolve(process.argv[process.argv.indexOf("--bin") + 1]!) : BINARY;
const dir = mkdtempSync(join(tmpdir(), "syn-closing-"));
writeFileSync(join(dir, "crm.json"), JSON.stringify(SEED_STATE, null, 2) + "\n");
const policy = readFileSync(join(ROOT, "manifests", "toy-crm.yaml"), "utf8");
writeFileSync(join(dir, "synartesis.yaml"), policy.replace(/^(\s+)command: synartesis$/m, `$1command: ${JSON.stringify(BINARY)}`));

const proxy = Bun.spawn([binary, "proxy", "--manifest", "synartesis.yaml"], { cwd: dir, stdin: "pipe", stdout: "pipe", stderr: "ignore" });
const lines = proxy.stdout.pipeThrough(new TextDecoderStream()).getReader();
let pending = "";
async function answer(): Promise<{ id?: number; error?: unknown; result?: { isError?: boolean } }> {
  for (;;) {
    const end = pending.indexOf("\n");
    if (end >= 0) {
      const line = pending.slice(0, end);
      pending = pending.slice(end + 1);
      return JSON.parse(line);
    }
    const { value, done } = await lines.read();
    if (done) throw new Error("the proxy closed its output before answering");
    pending += value;
  }
}
function send(message: object): void {
  proxy.stdin.write(`${JSON.stringify(message)}\n`);
  proxy.stdin.flush();
}

send({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench", version: "1" } } });
await answer();
send({ jsonrpc: "2.0", method: "notifications/initialized" });
const start = Bun.nanoseconds();
for (let id = 1; id <= CALLS; id++) {
  send({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "get_customer", arguments: { id: `c_00${(id % 3) + 1}` } } });
  const reply = await answer();
  if (reply.id !== id || reply.error || reply.result?.isError) throw new Error(`call ${id} was not answered as a read: ${JSON.stringify(reply)}`);
}
const lastReply = Bun.nanoseconds();
proxy.stdin.end();
const code = await proxy.exited;
const exited = Bun.nanoseconds();
if (code !== 0) throw new Error(`the proxy exited with ${code}`);

const journal = new Database(join(dir, "synartesis.db"), { readonly: true });
const { rows, text } = journal.query("SELECT count(*) AS rows, count(*) FILTER (WHERE packed IS NULL) AS text FROM actions").get() as {
  rows: number;
  text: number;
};
journal.close();
rmSync(dir, { recursive: true, force: true });
if (rows !== CALLS || text !== 0) throw new Error(`the journal has ${rows} rows for ${CALLS} reads, ${text} of them not packed`);

console.log(`closing bench: ${CALLS} sequential reads through the proxy (toy CRM), then stdin closed (${process.platform}-${process.arch})`);
console.log(
  `  the reads                          ${((lastReply - start) / 1e6).toFixed(0).padStart(6)} ms  ${((lastReply - start) / 1e3 / CALLS).toFixed(0)} µs/call`,
);
console.log(`  last reply → the proxy exited      ${((exited - lastReply) / 1e6).toFixed(0).padStart(6)} ms  every row packed`);
