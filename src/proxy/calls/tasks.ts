// Calls a 2026-era server runs as tasks (R-ERA-4, the tasks extension): the
// answer is a task handle, and the call's outcome is known only when the task
// ends. Synartesis follows the task with tasks/get (at the server's poll
// interval, sooner when a task notification says it changed) until it is
// completed, failed or cancelled; a task that needs input asks the client and
// answers with tasks/update. What follows the end is the call's ordinary
// answer, as if the server had given it at once.
import { ErrorCode } from "../../jsonrpc/messages.ts";
import { TASKS_EXTENSION, type Envelope } from "../../jsonrpc/eras.ts";
import { errorOf, frameOf, isRecord, resultOf, type Response } from "../../jsonrpc/frames.ts";
import { rawMember } from "../../jsonrpc/raw-json.ts";
import { UpstreamError, type Reply, type Upstream } from "../../servers/upstream.ts";
import type { ClientRequest, InputRequests } from "../session/client-request.ts";

/** Bounds on the server's suggested poll interval: not a busy loop, not minutes between looks. */
const MIN_POLL_MS = 10;
const MAX_POLL_MS = 5000;

export interface TaskHandle {
  taskId: string;
  pollIntervalMs?: number;
}

/** The task a result stands for, when it is a task handle (resultType "task"). */
export function taskOf(reply: Response): TaskHandle | undefined {
  const result = resultOf(reply);
  if (result?.resultType !== "task" || typeof result.taskId !== "string") return undefined;
  return { taskId: result.taskId, ...(typeof result.pollIntervalMs === "number" ? { pollIntervalMs: result.pollIntervalMs } : {}) };
}

/** Whether the client takes task handles itself (a 2026-era client that declared the tasks extension). */
export function takesTasks(envelope: Envelope): boolean {
  const extensions = envelope.clientCapabilities.extensions;
  return isRecord(extensions) && isRecord(extensions[TASKS_EXTENSION]);
}

/** How a followed task ended: the call's answer (a result or an error), or why its outcome is unknown. */
export type TaskEnd = { reply: Reply } | { unknown: string };

export interface FollowOptions {
  origin: ClientRequest;
  /** Ask the client for the input the task needs (false: the client follows the task itself and answers). */
  askClient: boolean;
  /** Aborts when Synartesis must stop following (the session is ending), its reason saying why. */
  stop: AbortSignal;
  /** Wakes the follower when a notification says the task changed. */
  nudges: (taskId: string, wake: () => void) => () => void;
}

/** The answer to the call, built from the task's terminal state (its result, or its error as a JSON-RPC error). */
function endReply(raw: string, taskId: string): Reply {
  const task = rawMember(raw, "result")!;
  const result = rawMember(task, "result");
  const error = rawMember(task, "error");
  const line =
    result !== undefined
      ? `{"jsonrpc":"2.0","id":0,"result":${result}}`
      : `{"jsonrpc":"2.0","id":0,"error":${error ?? JSON.stringify({ code: ErrorCode.InternalError, message: `task ${taskId} failed` })}}`;
  const frame = frameOf(JSON.parse(line), line);
  if (frame.kind !== "response") throw new UpstreamError(`the server ended task ${taskId} with a result that is not a valid answer`, "closed");
  return { raw: line, msg: frame.msg };
}

export async function followTask(upstream: Upstream, handle: TaskHandle, options: FollowOptions): Promise<TaskEnd> {
  const { taskId } = handle;
  let wake: () => void = () => {};
  const stopNudges = options.nudges(taskId, () => wake());
  const stopFollowing = () => wake();
  options.stop.addEventListener("abort", stopFollowing, { once: true });
  const stopped = () => (options.stop.aborted ? String(options.stop.reason) : undefined);
  let interval = handle.pollIntervalMs;
  try {
    for (;;) {
      const delay = Math.min(Math.max(interval ?? 1000, MIN_POLL_MS), MAX_POLL_MS);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      const gaveUp = () => ({ unknown: `task ${taskId} had not ended when Synartesis stopped following it (${stopped()})` });
      if (stopped()) return gaveUp();
      let reply: Reply;
      try {
        reply = await upstream.ask("tasks/get", { taskId }, options.origin, options.origin.envelope);
      } catch (error) {
        if (!(error instanceof UpstreamError)) throw error;
        // A look refused because the session is ending is the session giving up, not the server.
        return stopped() ? gaveUp() : { unknown: `Synartesis could not follow task ${taskId} (${error.message})` };
      }
      const refusal = errorOf(reply.msg);
      if (refusal) return { unknown: `the server answered tasks/get for task ${taskId} with an error (${refusal.message})` };
      const task = resultOf(reply.msg) ?? {};
      if (typeof task.pollIntervalMs === "number") interval = task.pollIntervalMs;
      switch (task.status) {
        case "completed":
        case "failed":
          return { reply: endReply(reply.raw, taskId) };
        case "cancelled":
          return { unknown: `task ${taskId} was cancelled, and what it did before it stopped is not known` };
        case "input_required":
          if (options.askClient && isRecord(task.inputRequests)) {
            const unknown = await answerInput(upstream, taskId, task.inputRequests as InputRequests, options.origin);
            if (unknown) return { unknown };
          }
      }
    }
  } finally {
    stopNudges();
    options.stop.removeEventListener("abort", stopFollowing);
  }
}

/** A task waits for input: ask the client, and hand its answers to the task (tasks/update). */
async function answerInput(upstream: Upstream, taskId: string, requests: InputRequests, origin: ClientRequest): Promise<string | undefined> {
  let asked;
  try {
    asked = await origin.ask(requests);
  } catch (error) {
    return `task ${taskId} needs input and ${(error as Error).message}`;
  }
  if (asked.refused) return `task ${taskId} needs input and ${asked.refused}`;
  try {
    const reply = await upstream.ask("tasks/update", { taskId, inputResponses: asked.responses }, origin, origin.envelope);
    const refusal = errorOf(reply.msg);
    return refusal ? `the server refused the input for task ${taskId} (${refusal.message})` : undefined;
  } catch (error) {
    if (!(error instanceof UpstreamError)) throw error;
    return `the input for task ${taskId} did not reach the server (${error.message})`;
  }
}
