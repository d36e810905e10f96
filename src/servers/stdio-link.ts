// A server started as a child process, speaking JSON-RPC lines over its
// stdin/stdout; its stderr lines are passed on (they explain a failed start).
import { existsSync } from "node:fs";
import type { Logger } from "../log.ts";
import { readLines } from "../jsonrpc/lines.ts";
import type { ServerSpec } from "../manifest/types.ts";
import { childEnvironment } from "../jit.ts";
import { selfArgv } from "../self.ts";
import { LineBatch } from "../jsonrpc/line-batch.ts";
import type { Link, LinkEvents } from "./link-types.ts";

/** After a failed write, how long a server that closed its input gets to exit by itself before it is stopped. */
const DEAF_GRACE_MS = 200;

/** Spawn the server; throws (a plain Error saying why) when it cannot be started at all. */
export function stdioLink(spec: Extract<ServerSpec, { kind: "command" }>, events: LinkEvents, log: Logger): Link {
  const argv = spec.command === "synartesis" ? [...selfArgv(), ...spec.args] : [spec.command, ...spec.args];
  if (!existsSync(spec.cwd)) throw new Error(`its working directory ${spec.cwd} does not exist`);
  let proc: Bun.Subprocess<"pipe", "pipe", "pipe">;
  try {
    proc = Bun.spawn(argv, {
      cwd: spec.cwd,
      // SYNARTESIS_JOURNAL may carry the journal's password: a server has no business with it (R-TEAM-5).
      env: { ...childEnvironment(process.env), SYNARTESIS_JOURNAL: undefined, ...spec.env },
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
    });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new Error(code === "ENOENT" ? `command not found: ${argv[0]}` : (error as Error).message);
  }
  void readLines(proc.stdout, events.onLine);
  void readLines(proc.stderr, (line) => {
    events.onStderr(line);
    log.debug("server stderr", { server: spec.name, line });
  });
  let closing = false;
  let deaf = false;
  void proc.exited.then((code) => {
    const reason = deaf ? "stopped reading its input (EPIPE)" : proc.signalCode ? `was killed by ${proc.signalCode}` : `exited with code ${code}`;
    events.onClose(closing ? "stopped" : reason);
  });
  const exitedWithin = (ms: number) => Promise.race([proc.exited.then(() => true), Bun.sleep(ms).then(() => false)]);
  const stop = async (graceMs: number) => {
    proc.kill("SIGTERM");
    if (!(await exitedWithin(graceMs))) proc.kill("SIGKILL");
    await proc.exited;
  };
  const exited = () => proc.exitCode !== null || proc.signalCode !== null;
  // A large write, or its flush, finishes later: either may fail then. A server that closed its
  // input fails the write (EPIPE): every caller whose line it carried learns it did not get it.
  const batch = new LineBatch((text) => {
    if (exited()) return;
    const later = [proc.stdin.write(text), proc.stdin.flush()].filter((step) => step instanceof Promise);
    return later.length ? Promise.all(later).then(() => {}) : undefined;
  });
  return {
    send(line) {
      if (exited()) return;
      return batch.add(line);
    },
    async close(quick = false) {
      closing = true;
      // What was sent before the close still reaches the server (a cancellation, a last notification).
      batch.flush(true);
      try {
        void Promise.resolve(proc.stdin.end()).catch(() => {});
      } catch {}
      if (!quick && (await exitedWithin(250))) return;
      await stop(quick ? 50 : 150);
    },
    async closedInput() {
      // A server that is exiting is reported as what it is (its exit code, its stderr); one that
      // stays alive without reading is of no use: stop it, so the next call starts a fresh one.
      if (await exitedWithin(DEAF_GRACE_MS)) return;
      deaf = true;
      await stop(150);
    },
  };
}
