// Which run a bare `synartesis undo` takes: the most recent, except that an
// empty newest run (a client that reconnected) is not silently "undone".
import { expect, test } from "bun:test";
import { agent, cli, crmFolder, SEED, state } from "../fixtures/counting-support.ts";

test("a bare undo after a reconnect points at the run with the damage; an explicit empty run has nothing to undo", async () => {
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
