// What undo does to a run as a whole, through the built binary: it withdraws
// the run's open requests for approval (R-GATE-7), says when and by whom a run
// was already rolled back, and refuses a run its proxy is still recording
// unless --force (issue 13 item 11).
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { agent, cli, crmFolder, json, outbox, resultText, SEED, state } from "../fixtures/counting-support.ts";
import { BIN, LineSession, ACCOUNT } from "../helpers.ts";

// The preload's default timeout reaches only the first file bun runs; tests sharing the machine need the room.
setDefaultTimeout(60_000);

const EMAIL = { to: "ada@example.com", subject: "Plan", body: "You are on free now." };
const heldId = (reply: any) => /^Action id: ([0-9a-f]{8})\.$/m.exec(resultText(reply))![1]!;

describe.concurrent("undo withdraws the run's requests for approval", () => {
  test("gates no longer lists them, approving one says it was withdrawn by the undo, and a retry asks afresh", async () => {
    const dir = crmFolder();
    const replies = await agent(dir, [
      ["update_customer", { id: "c_001", plan: "free" }],
      ["send_email", EMAIL],
    ]);
    const id = heldId(replies.get(2));
    const runId: string = (await json(dir, ["list"]))[0].id;
    expect((await json(dir, ["gates"])).map((a: any) => a.id.slice(0, 8))).toEqual([id]);

    const undone = await cli(dir, ["undo"], { USER: "jo" });
    expect(undone.code).toBe(0);
    // Mutating calls are numbered as they ran; the request was raised at once, before the update's write.
    expect(undone.stdout).toMatch(new RegExp(`#\\d  skip {14}crm\\.send_email ${JSON.stringify(EMAIL).replace(/[.{}]/g, "\\$&")}`));
    expect(undone.stdout).toMatch(/its request for approval was withdrawn by an undo \(jo, \d{4}-\d\d-\d\dT[^)]*\); it never ran/);
    expect(undone.stdout).toContain(`Run ${runId.slice(0, 8)} is rolled back: 1 call reverted.`);
    expect(state(dir).customers).toEqual(SEED);

    const gates = await cli(dir, ["gates"]);
    expect(gates.stdout).toBe("Nothing is waiting for approval.\n");
    expect((await json(dir, ["list"]))[0]).toMatchObject({ status: "rolled_back", undoneBy: "jo" });
    const approve = await cli(dir, ["approve", id]);
    expect(approve.code).toBe(1);
    expect(approve.stderr).toMatch(
      new RegExp(
        `^synartesis: ${id} is no longer awaiting approval: it was withdrawn by the undo of run ${runId.slice(0, 8)} \\(jo at \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d\\)\\n$`,
      ),
    );
    const shown = await cli(dir, ["show"]);
    expect(shown.stdout).toMatch(/#\d  ⚠ irreversible  withdrawn\s+crm\.send_email/);
    expect(shown.stdout).toMatch(/withdrawn by the undo of this run \(jo at [^)]+\); it never ran/);
    expect((await json(dir, ["show"])).actions.find((a: any) => a.tool === "send_email")).toMatchObject({ status: "withdrawn", withdrawnBy: "jo" });

    // The agent trying again is neither told "denied" nor let through: a new request is raised.
    const retry = await agent(dir, [["send_email", EMAIL]]);
    expect(resultText(retry.get(1))).toStartWith("HELD FOR APPROVAL");
    expect(heldId(retry.get(1))).not.toBe(id);
    expect(outbox(dir)).toEqual([]);
  });

  test("an approval given and never used is withdrawn too: after the undo, the agent's retry in a new session is held again and nothing is sent", async () => {
    const dir = crmFolder();
    const replies = await agent(dir, [
      ["update_customer", { id: "c_001", plan: "free" }],
      ["send_email", EMAIL],
    ]);
    const id = heldId(replies.get(2));
    expect((await cli(dir, ["approve", id])).code).toBe(0);
    const dry = await cli(dir, ["undo", "--dry-run"]);
    expect(dry.stdout).toContain("approved, but never retried; it never ran (a real undo withdraws the approval)");
    const undone = await cli(dir, ["undo"], { USER: "jo" });
    expect(undone.code).toBe(0);
    expect(undone.stdout).toMatch(new RegExp(`its approval \\(by ${ACCOUNT}, never used\\) was withdrawn by an undo \\(jo, [^)]+\\); it never ran`));
    expect(state(dir).customers).toEqual(SEED);
    const shown = await cli(dir, ["show"]);
    expect(shown.stdout).toMatch(new RegExp(`approved by ${ACCOUNT} and never used, then withdrawn by the undo of this run \\(jo at [^)]+\\); it never ran`));

    const retry = await agent(dir, [["send_email", EMAIL]]);
    expect(resultText(retry.get(1))).toStartWith("HELD FOR APPROVAL");
    expect(heldId(retry.get(1))).not.toBe(id);
    expect(outbox(dir)).toEqual([]);
  });

  test("a run that only raised a request: undo withdraws it and marks the run rolled back", async () => {
    const dir = crmFolder();
    const replies = await agent(dir, [["send_email", EMAIL]]);
    const id = heldId(replies.get(1));
    const dry = await cli(dir, ["undo", "--dry-run"]);
    expect(dry.stdout).toContain(`Would withdraw the request for approval of #1 crm.send_email ${JSON.stringify(EMAIL)}.`);
    expect((await json(dir, ["gates"])).length).toBe(1);
    const undone = await cli(dir, ["undo"]);
    expect(undone.code).toBe(0);
    expect(undone.stdout).toContain(`Withdrew the request for approval of #1 crm.send_email ${JSON.stringify(EMAIL)}: it will not run.`);
    expect(undone.stdout).toContain("Nothing else to undo: no call in this run changed anything.");
    expect(await json(dir, ["gates"])).toEqual([]);
    expect((await cli(dir, ["approve", id])).stderr).toContain("it was withdrawn by the undo of run");
    expect((await json(dir, ["list"]))[0].status).toBe("rolled_back");
  });
});

test.concurrent("undo of a run already rolled back says so, when and by whom", async () => {
  const dir = crmFolder();
  await agent(dir, [["update_customer", { id: "c_001", plan: "free" }]]);
  expect((await cli(dir, ["undo"], { USER: "ada" })).code).toBe(0);
  const again = await cli(dir, ["undo"], { USER: "grace" });
  expect(again.code).toBe(0);
  expect(again.stdout).toMatch(/\nNothing to undo: run [0-9a-f]{8} was already rolled back at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d by ada\.\n$/);
  expect(again.stdout).not.toContain("no call in this run changed anything");
});

test.concurrent("undo refuses a run whose proxy is still recording it, unless --force; a dry run is allowed", async () => {
  const dir = crmFolder();
  const session = new LineSession([BIN, "proxy"], { cwd: dir });
  try {
    await session.initialize("live-agent");
    const reply = await session.request(1, "tools/call", { name: "update_customer", arguments: { id: "c_001", plan: "free" } });
    expect(reply.result.isError).toBeUndefined();
    const run = (await json(dir, ["list"]))[0];
    expect(run.status).toBe("active");

    const refused = await cli(dir, ["undo"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      `synartesis: run ${run.id.slice(0, 8)} is still being recorded: its proxy (pid ${session.proc.pid}) is running\n` +
        "Undo it once its client has disconnected (the run is then complete), or pass --force to undo what it has recorded so far.\n",
    );
    expect(state(dir).customers.c_001.plan).toBe("free");
    expect((await json(dir, ["list"]))[0].status).toBe("active");
    expect((await cli(dir, ["undo", "--dry-run"])).code).toBe(0);

    const forced = await cli(dir, ["undo", "--force"]);
    expect(forced.code).toBe(0);
    expect(state(dir).customers).toEqual(SEED);
  } finally {
    expect(await session.close()).toBe(0);
  }
});
