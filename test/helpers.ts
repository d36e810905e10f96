// Shared test plumbing: the built binary, temp folders, processes over real
// pipes, MCP clients that speak to them, the one polling helper, manifests
// written from data, and Streamable HTTP servers made in the test.
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult, type Tool } from "@modelcontextprotocol/sdk/types.js";
import { serveSessions, type HttpFront } from "./fixtures/http-front.ts";
import { afterTestRun } from "./fixtures/test-run.ts";

export { manifestText, type ManifestSpec } from "./fixtures/manifest-text.ts";

export const ROOT = join(import.meta.dir, "..");
export const BIN = join(ROOT, "dist", "synartesis");
export const NODE_MODULES = join(ROOT, "node_modules");

/**
 * How the binary names itself in a command for a person to paste (self.ts):
 * the bare name when this test's PATH finds this very binary (install.sh's
 * link), else its path.
 */
export const PASTE_COMMAND = (() => {
  const onPath = Bun.which("synartesis");
  try {
    return onPath && realpathSync(onPath) === realpathSync(BIN) ? "synartesis" : BIN;
  } catch {
    return BIN;
  }
})();

const made: string[] = [];
afterTestRun(() => {
  if (process.env.KEEP_TEST_DIRS) return;
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * Poll until `check` gives something truthy, and return it. No timing is
 * asserted: `limitMs` only bounds a hang, and the error names `what` (and the
 * check's last error). A check that throws counts as "not yet" (a file not
 * written, a journal not created).
 */
export async function until<T>(check: () => T | undefined | null | false | Promise<T | undefined | null | false>, what: string, limitMs = 30_000): Promise<T> {
  const deadline = Date.now() + limitMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${lastError ? ` (last error: ${(lastError as Error).message ?? lastError})` : ""}`);
    }
    await Bun.sleep(20);
  }
}

/** A fresh empty folder (real path, no symlinks), removed when the test run ends. */
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
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

/**
 * Run the binary on a pseudo-terminal of Bun's own (Bun.Terminal), so it sees a
 * TTY on stdin, stdout and stderr. `stdout` holds all it showed, read to the
 * terminal's end, with the terminal's CRLF turned back into LF. Unlike run(),
 * NO_COLOR is not set unless `env` sets it.
 */
export async function runOnTerminal(args: string[], options: { cwd?: string; env?: Record<string, string | undefined> } = {}): Promise<RunResult> {
  const env: Record<string, string | undefined> = { ...process.env, TERM: "xterm-256color", ...options.env };
  if (options.env?.NO_COLOR === undefined) delete env.NO_COLOR;
  const chunks: Uint8Array[] = [];
  const { promise: drained, resolve: endOfTerminal } = Promise.withResolvers<void>();
  const proc = Bun.spawn([BIN, ...args], {
    cwd: options.cwd ?? ROOT,
    env,
    terminal: {
      cols: 120,
      name: env.TERM ?? "xterm-256color",
      data: (_terminal, data) => void chunks.push(data.slice()),
      exit: () => endOfTerminal(),
    },
  });
  const code = await proc.exited;
  await drained;
  proc.terminal?.close();
  const stdout = new TextDecoder().decode(Buffer.concat(chunks));
  return { code, stdout: stdout.replace(/\r\n/g, "\n"), stderr: "" };
}

/** An SDK client connected over stdio to `command args`. */
export async function connect(
  command: string,
  args: string[],
  options: { cwd?: string; env?: Record<string, string>; capabilities?: Record<string, unknown>; name?: string } = {},
): Promise<{ client: Client; transport: StdioClientTransport; stderr: () => string } & AsyncDisposable> {
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
  // `await using` closes the client (and so ends the process) when the test's scope ends.
  return { client, transport, stderr: () => stderr, [Symbol.asyncDispose]: () => client.close().catch(() => {}) };
}

/** Newline-delimited JSON-RPC over the pipes of a long-running process. */
export class LineSession {
  readonly proc: Bun.Subprocess<"pipe", "pipe", "pipe">;
  private buffer = "";
  /** Lines received and not yet taken by next(). */
  readonly lines: string[] = [];
  private waiters: Array<() => void> = [];
  private stdoutEnded = false;
  /** Settles once everything the process wrote to stdout has been read into `lines`. */
  private readonly stdoutRead: Promise<void>;
  stderr = "";

  constructor(argv: string[], options: { cwd?: string; env?: Record<string, string | undefined> } = {}) {
    this.proc = Bun.spawn(argv, {
      cwd: options.cwd ?? ROOT,
      env: { ...process.env, NO_COLOR: "1", ...options.env },
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
    });
    this.stdoutRead = this.pump(this.proc.stdout, (text) => {
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

  /** End stdin; the exit code, once the process has exited and its output is all in `lines`. */
  async close(): Promise<number> {
    this.proc.stdin.end();
    return this.exited();
  }

  /** The exit code, once the process has exited and its output is all in `lines`. */
  async exited(): Promise<number> {
    const code = await this.proc.exited;
    await this.stdoutRead;
    return code;
  }

  /** At the end of a test's scope (`await using`), pass or fail: a process still running is killed. */
  async [Symbol.asyncDispose](): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    this.proc.kill("SIGKILL");
    await this.proc.exited;
  }
}

/** A process the test did not start itself (a server under a proxy), killed at the end of the test's scope if it is still there. */
export function reap(pid: number): AsyncDisposable & { pid: number } {
  return {
    pid,
    async [Symbol.asyncDispose]() {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Gone already.
      }
    },
  };
}

export interface TestTool {
  name: string;
  description?: string;
  inputSchema?: Tool["inputSchema"];
  annotations?: Tool["annotations"];
  /** What a call returns (default: one text block "ok"). */
  call?: (args: Record<string, unknown>) => CallToolResult | Promise<CallToolResult>;
}

/** An MCP server called `name` that offers these tools and nothing else. */
export function toolServer(name: string, tools: TestTool[]): Server {
  const server = new Server({ name, version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: tools.map(({ call: _, inputSchema, ...tool }) => ({ ...tool, inputSchema: inputSchema ?? { type: "object" as const } })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async ({ params }) => {
    const tool = tools.find((t) => t.name === params.name);
    if (!tool) return { isError: true, content: [{ type: "text" as const, text: `no tool ${params.name}` }] };
    return tool.call ? tool.call(params.arguments ?? {}) : { content: [{ type: "text" as const, text: "ok" }] };
  });
  return server;
}

const httpServers: HttpFront[] = [];
afterTestRun(() => Promise.all(httpServers.splice(0).map((server) => server.stop())).then(() => {}));

/**
 * A Streamable HTTP MCP server on 127.0.0.1, answering with JSON, stopped
 * after the test file. `newServer` makes the MCP server: for each request
 * (stateless, the default), or for each session (`stateful`: an
 * Mcp-Session-Id the server may forget). `before` sees each request first and
 * may answer it itself.
 */
export function serveMcp(
  newServer: () => Server,
  options: { stateful?: boolean; before?: (request: Request) => Response | undefined | Promise<Response | undefined> } = {},
): HttpFront {
  const server = serveSessions((transport) => newServer().connect(transport), {
    stateless: !options.stateful,
    json: true,
    checkHost: false,
    announce: false,
    ...(options.before ? { before: options.before } : {}),
  });
  httpServers.push(server);
  return server;
}

export function initializeFrame(id = 0, name = "test-agent"): string {
  return JSON.stringify({
    jsonrpc: "2.0",
    id,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name, version: "1.0.0" } },
  });
}

/** The operating-system account these tests run as: the one a decision (approve, deny) is recorded under. */
export const ACCOUNT = Bun.spawnSync(["id", "-un"]).stdout.toString().trim();

/** Every command, as `synartesis --help` lists them. */
export const COMMANDS = [
  "proxy",
  "init",
  "wrap",
  "unwrap",
  "check",
  "list",
  "show",
  "undo",
  "gates",
  "approve",
  "deny",
  "watch",
  "ui",
  "login",
  "logout",
  "settle",
  "verify",
  "export",
  "close",
  "toy-crm",
];
