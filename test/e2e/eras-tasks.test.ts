// Calls a 2026-era server runs as tasks (R-ERA-4), with the v2-SDK tasks
// fixture: the row stays pending, saying which task it waits for, while the
// task runs; it becomes applied with its post-read when the task completes;
// undo halts on a task not seen to end, even once the proxy gave up on it.
// A client that takes task handles gets the handle at once and may follow the
// task through the proxy; one that does not gets the call's answer when the
// task ends.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { BIN, connect, LineSession, run, until } from "../helpers.ts";
import { jobsState, release, tasksWorkspace } from "../fixtures/era-kit.ts";
import { journalRows, type Workspace } from "../fixtures/proxy-kit.ts";

// Each file sets its own: the preload's default reaches only the first file bun runs.
setDefaultTimeout(60_000);

const TAKES_TASKS = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": { extensions: { "io.modelcontextprotocol/tasks": {} } },
  "io.modelcontextprotocol/clientInfo": { name: "tasker", version: "1.0.0" },
};

const pendingTask = (ws: Workspace) =>
  until(() => journalRows(ws.journal).find((row) => row.status === "pending" && (row as { task?: string }).task), "the call's row to name its task");

// Each test has its own folder, journal and processes: they run side by side.
describe.concurrent("a call answered with a task handle (R-ERA-4)", () => {
  test("a client that takes tasks gets the handle at once; the row stays pending and names the task until it completes, then is applied with its post-read; undo restores", async () => {
    const ws = tasksWorkspace();
    await using session = new LineSession([BIN, "proxy", "--manifest", ws.manifest, "--log-level", "warn"], { cwd: ws.dir });
    const handle = (await session.request(1, "tools/call", { name: "slow_put", arguments: { key: "plan", text: "ship never" }, _meta: TAKES_TASKS })).result;
    expect(handle).toMatchObject({ resultType: "task", status: "working" });
    const taskId: string = handle.taskId;

    const row = await pendingTask(ws);
    expect((row as { task?: string }).task).toBe(taskId);
    expect(JSON.parse(row.snapshot!)).toEqual({ key: "plan", text: "ship on Friday" });
    const shown = await run(["show", "--journal", ws.journal], { cwd: ws.dir });
    expect(shown.stdout).toContain(`waits for task ${taskId} on jobs: its outcome is known once the task ends`);
    const json = JSON.parse((await run(["show", "--json", "--journal", ws.journal], { cwd: ws.dir })).stdout);
    expect(json.actions[0]).toMatchObject({ status: "pending", task: taskId });

    release(ws, taskId);
    const done = await until(() => journalRows(ws.journal).find((r) => r.status === "applied"), "the task's end to be recorded");
    expect(JSON.parse(done.post_state!)).toEqual({ key: "plan", text: "ship never" });
    expect(JSON.parse(done.result!).structuredContent).toEqual({ key: "plan", text: "ship never" });
    expect(JSON.parse(done.inverse!).args).toEqual({ key: "plan", text: "ship on Friday" });
    // The client follows the task through the proxy, to the same end.
    const polled = (await session.request(2, "tasks/get", { taskId, _meta: TAKES_TASKS })).result;
    expect(polled).toMatchObject({ status: "completed", result: { structuredContent: { key: "plan", text: "ship never" } } });
    expect(await session.close()).toBe(0);

    expect((await run(["undo", "--journal", ws.journal, "--manifest", ws.manifest], { cwd: ws.dir })).code).toBe(0);
    expect(jobsState(ws).notes).toEqual({ plan: "ship on Friday" });
  }, 30_000);

  test("undo halts on a task that never completed: while the proxy follows it, and after the proxy stopped following it", async () => {
    const ws = tasksWorkspace();
    await using session = new LineSession([BIN, "proxy", "--manifest", ws.manifest, "--log-level", "warn", "--drain", "0"], { cwd: ws.dir });
    const { taskId } = (await session.request(1, "tools/call", { name: "slow_put", arguments: { key: "plan", text: "ship never" }, _meta: TAKES_TASKS }))
      .result;
    await pendingTask(ws);
    const undoArgs = ["undo", "--journal", ws.journal, "--manifest", ws.manifest];

    // The run is still being recorded: undo is asked to go ahead anyway.
    const whileFollowed = await run([...undoArgs, "--force"], { cwd: ws.dir });
    expect(whileFollowed.code).toBe(1);
    expect(whileFollowed.stdout + whileFollowed.stderr).toContain(`jobs runs it as task ${taskId}, which had not ended when Synartesis last saw it`);

    // The client leaves; the proxy stops following at once (--drain 0): the outcome stays unknown.
    expect(await session.close()).toBe(0);
    const [row] = journalRows(ws.journal);
    expect(row).toMatchObject({ status: "pending" });
    expect(row!.error).toStartWith(`task ${taskId} had not ended when Synartesis stopped following it`);
    const afterwards = await run(undoArgs, { cwd: ws.dir });
    expect(afterwards.code).toBe(1);
    expect(afterwards.stdout + afterwards.stderr).toContain(`task ${taskId}`);
    // Nothing was reverted: the note is as the task left it (not written yet).
    expect(jobsState(ws).notes).toEqual({ plan: "ship on Friday" });
  }, 30_000);

  test("a task that needs input: a 2025-era client is asked (elicitation), its answer goes to the task (tasks/update), and the call completes as one action", async () => {
    const ws = tasksWorkspace(["--always-task"]);
    const { client } = await connect(BIN, ["proxy", "--manifest", ws.manifest], { cwd: ws.dir, capabilities: { elicitation: {} } });
    const asked: string[] = [];
    client.setRequestHandler(ElicitRequestSchema, async (request) => (asked.push(request.params.message), { action: "accept", content: { confirm: true } }));
    try {
      const done = await client.callTool({ name: "confirmed_put", arguments: { key: "plan", text: "ship never" } });
      expect(done.structuredContent).toEqual({ key: "plan", text: "ship never" });
    } finally {
      await client.close();
    }
    expect(asked).toEqual(['Write "ship never" to note plan?']);
    const rows = journalRows(ws.journal);
    expect(rows.map((row) => [row.tool, row.status])).toEqual([["confirmed_put", "applied"]]);
    expect(JSON.parse(rows[0]!.post_state!)).toEqual({ key: "plan", text: "ship never" });
  }, 30_000);

  test("a client that does not take tasks (2025 era) gets the call's answer when the task ends; one action", async () => {
    const ws = tasksWorkspace(["--always-task"]);
    const { client } = await connect(BIN, ["proxy", "--manifest", ws.manifest], { cwd: ws.dir });
    try {
      const answered = client.callTool({ name: "slow_put", arguments: { key: "plan", text: "ship never" } });
      const row = await pendingTask(ws);
      release(ws, (row as { task?: string }).task!);
      expect((await answered).structuredContent).toEqual({ key: "plan", text: "ship never" });
    } finally {
      await client.close();
    }
    expect(journalRows(ws.journal).map((row) => [row.tool, row.status])).toEqual([["slow_put", "applied"]]);
  }, 30_000);
});
