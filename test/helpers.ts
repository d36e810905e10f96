// Shared test plumbing: the built binary, temp folders, processes over real
// pipes, and MCP clients that speak to them.
import { afterAll } from "bun:test";
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

export const ROOT = join(import.meta.dir, "..");
export const BIN = join(ROOT, "dist", "synartesis");
export const NODE_MODULES = join(ROOT, "node_modules");

const made: string[] = [];
afterAll(() => {
  if (process.env.KEEP_TEST_DIRS) return;
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A fresh empty folder (real path, no symlinks), removed after the test file. */
export function tempDir(prefix = "syn-"): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  made.push(dir);
  return dir;
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run the binary to completion. */
export async function run(
  args: string[],
  options: {
    cwd?: string;
    env?: Record<string, string | undefined>;
    stdin?: string;
    bin?: string;
    /** Start from an empty environment instead of this process's (nothing of the test's PATH leaks in). */
    cleanEnv?: boolean;
  } = {},
): Promise<RunResult> {
  const proc = Bun.spawn([options.bin ?? BIN, ...args], {
    cwd: options.cwd ?? ROOT,
    env: { ...(options.cleanEnv ? {} : process.env), NO_COLOR: "1", ...options.env },
    stdin: options.stdin === undefined ? "ignore" : new TextEncoder().encode(options.stdin),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, stdout, stderr };
}

/**
 * Run the binary with stdout on a pseudo-terminal (util-linux `script`), so it
 * sees a TTY. stdout and stderr both reach the terminal: `stdout` holds what it
 * showed, with the terminal's CRLF turned back into LF. Unlike run(), NO_COLOR
 * is not set unless `env` sets it.
 */
export async function runOnTerminal(args: string[], options: { cwd?: string; env?: Record<string, string | undefined> } = {}): Promise<RunResult> {
  const quote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;
  const env: Record<string, string | undefined> = { ...process.env, TERM: "xterm-256color", ...options.env };
  if (options.env?.NO_COLOR === undefined) delete env.NO_COLOR;
  const proc = Bun.spawn(["script", "-qec", [BIN, ...args].map(quote).join(" "), "/dev/null"], {
    cwd: options.cwd ?? ROOT,
    env,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout: stdout.replace(/\r\n/g, "\n"), stderr };
}

/** An SDK client connected over stdio to `command args`. */
export async function connect(
  command: string,
  args: string[],
  options: { cwd?: string; env?: Record<string, string>; capabilities?: Record<string, unknown>; name?: string } = {},
): Promise<{ client: Client; transport: StdioClientTransport; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command,
    args,
    cwd: options.cwd,
    env: { ...(process.env as Record<string, string>), NO_COLOR: "1", ...options.env },
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const client = new Client({ name: options.name ?? "test-agent", version: "1.0.0" }, { capabilities: options.capabilities ?? {} });
  await client.connect(transport);
  return { client, transport, stderr: () => stderr };
}

/** Newline-delimited JSON-RPC over the pipes of a long-running process. */
export class LineSession {
  readonly proc: Bun.Subprocess<"pipe", "pipe", "pipe">;
  private buffer = "";
  /** Lines received and not yet taken by next(). */
  readonly lines: string[] = [];
  private waiters: Array<() => void> = [];
  private stdoutEnded = false;
  stderr = "";

  constructor(argv: string[], options: { cwd?: string; env?: Record<string, string | undefined> } = {}) {
    this.proc = Bun.spawn(argv, {
      cwd: options.cwd ?? ROOT,
      env: { ...process.env, NO_COLOR: "1", ...options.env },
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
    });
    void this.pump(this.proc.stdout, (text) => {
      this.buffer += text;
      let nl: number;
      while ((nl = this.buffer.indexOf("\n")) !== -1) {
        this.lines.push(this.buffer.slice(0, nl));
        this.buffer = this.buffer.slice(nl + 1);
      }
      this.waiters.splice(0).forEach((w) => w());
    });
    void this.pump(this.proc.stderr, (text) => (this.stderr += text));
  }

  private async pump(stream: ReadableStream<Uint8Array>, onText: (text: string) => void) {
    const decoder = new TextDecoder();
    for await (const chunk of stream) onText(decoder.decode(chunk, { stream: true }));
    if (stream === this.proc.stdout) this.stdoutEnded = true;
    this.waiters.splice(0).forEach((w) => w());
  }

  send(message: unknown): void {
    this.proc.stdin.write(typeof message === "string" ? message + "\n" : JSON.stringify(message) + "\n");
    this.proc.stdin.flush();
  }

  /** The next line that satisfies `predicate` (lines before it are kept). */
  async next(predicate: (msg: any) => boolean = () => true, timeoutMs = 20000): Promise<any> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const index = this.lines.findIndex((line) => predicate(JSON.parse(line)));
      if (index !== -1) return JSON.parse(this.lines.splice(index, 1)[0]!);
      const left = deadline - Date.now();
      if (this.stdoutEnded || left <= 0) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    throw new Error(`no matching message; stderr:\n${this.stderr}\nlines:\n${this.lines.join("\n")}`);
  }

  response(id: number | string, timeoutMs?: number): Promise<any> {
    return this.next((m) => m.id === id && (m.result !== undefined || m.error !== undefined), timeoutMs);
  }

  async request(id: number, method: string, params?: unknown): Promise<any> {
    this.send({ jsonrpc: "2.0", id, method, ...(params === undefined ? {} : { params }) });
    return this.response(id);
  }

  async initialize(name = "test-agent"): Promise<any> {
    const result = await this.request(0, "initialize", {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name, version: "1.0.0" },
    });
    this.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    return result;
  }

  async close(): Promise<number> {
    this.proc.stdin.end();
    return this.proc.exited;
  }
}

export function initializeFrame(id = 0, name = "test-agent"): string {
  return JSON.stringify({
    jsonrpc: "2.0",
    id,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name, version: "1.0.0" } },
  });
}
