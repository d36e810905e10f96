// Which run a bare `synartesis undo` takes: the most recent, except that an
// empty newest run (a client that reconnected) is not silently "undone".
import { expect, setDefaultTimeout, test } from "bun:test";
import { renameSync } from "node:fs";
import { join } from "node:path";
import { agent, cli, crmFolder, SEED, state } from "../fixtures/counting-support.ts";
import { BIN, LineSession } from "../helpers.ts";

// The preload's default timeout reaches only the first file bun runs; tests sharing the machine need the room.
setDefaultTimeout(60_000);

test.concurrent("a bare undo after a reconnect points at the run with the damage; an explicit empty run has nothing to undo", async () => {
  const dir = crmFolder();
  await agent(dir, [["update_customer", { id: "c_001", plan: "free" }]], { name: "damaging-agent" });
  await agent(dir, [["get_customer", { id: "c_001" }]], { name: "reconnected-agent" });
  const runs = JSON.parse((await cli(dir, ["list", "--json"])).stdout);
  const [newest, damaging] = runs;
  expect(newest.label).toBe("reconnected-agent");

  const bare = await cli(dir, ["undo"]);
  expect(bare.code).toBe(1);
  expect(bare.stderr).toContain(`the most recent run ${newest.id.slice(0, 8)} (reconnected-agent, complete) has nothing to undo`);
  expect(bare.stderr).toContain(`The most recent run with something to undo is ${damaging.id.slice(0, 8)} (damaging-agent`);
  expect(bare.stderr).toContain(`synartesis undo ${damaging.id.slice(0, 8)}`);
  expect(state(dir).customers.c_001.plan).toBe("free");

  const explicit = await cli(dir, ["undo", newest.id.slice(0, 8)]);
  expect(explicit.code).toBe(0);
  expect(explicit.stdout).toContain("Nothing to undo: no call in this run changed anything.");
  expect(JSON.parse((await cli(dir, ["list", "--json"])).stdout)[0].status).toBe("complete");

  const real = await cli(dir, ["undo", damaging.id.slice(0, 8)]);
  expect(real.code).toBe(0);
  expect(state(dir).customers).toEqual(SEED);
});

test.concurrent("undo --journal from another project's folder uses the manifest the run was recorded with", async () => {
  const projectA = crmFolder();
  const projectB = crmFolder();
  await agent(projectA, [["create_customer", { name: "Agent Junk", email: "junk@example.com" }]]);
  await agent(projectB, [["create_customer", { name: "Real Customer", email: "real@example.com" }]]);
  const undone = await cli(projectB, ["undo", "--journal", join(projectA, "synartesis.db")]);
  expect(undone.code).toBe(0);
  expect(state(projectA).customers.c_004).toBeUndefined();
  expect(state(projectB).customers.c_004.name).toBe("Real Customer");

  // A run recorded with a manifest that has since gone is refused, naming it.
  await agent(projectA, [["create_customer", { name: "More Junk", email: "junk2@example.com" }]]);
  renameSync(join(projectA, "synartesis.yaml"), join(projectA, "moved.yaml"));
  const gone = await cli(projectB, ["undo", "--journal", join(projectA, "synartesis.db")]);
  expect(gone.code).toBe(2);
  expect(gone.stderr).toContain(`was recorded with the manifest ${join(projectA, "synartesis.yaml")}, which is not there any more`);
  expect(state(projectA).customers.c_005.name).toBe("More Junk");
});

test.concurrent("--to past the last call is refused", async () => {
  const dir = crmFolder();
  await agent(dir, [["update_customer", { id: "c_001", plan: "free" }]]);
  const past = await cli(dir, ["undo", "--to", "9"]);
  expect(past.code).toBe(2);
  expect(past.stderr).toContain("--to 9 is past the last call of run");
});

test.concurrent("close refuses a run whose proxy is still running, unless --force", async () => {
  const dir = crmFolder();
  const session = new LineSession([BIN, "proxy"], { cwd: dir });
  try {
    await session.initialize("live-agent");
    // The run exists from the session's first call (R-PROXY-16).
    await session.request(1, "tools/call", { name: "get_customer", arguments: { id: "c_001" } });
    const refused = await cli(dir, ["close"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`is not abandoned: its proxy (pid ${session.proc.pid}) is still running`);
    const forced = await cli(dir, ["close", "--force"]);
    expect(forced.code).toBe(0);
    expect(forced.stdout).toContain("(live-agent) is now marked complete.");
  } finally {
    await session.close();
  }
});
