// manifests/memory.yaml against the real @modelcontextprotocol/server-memory,
// through the built proxy and `synartesis undo` (R-SHIP-2): what the agent
// created is deleted and nothing else, deleted relations, entities and
// observations come back. The state is read from the graph file.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseDocument } from "yaml";
import { NODE_MODULES, ROOT, run, tempDir } from "../helpers.ts";
import { agent as startAgent, endSession } from "./agent-kit.ts";
import { loadManifest } from "../../src/manifest/load.ts";
import { createMatcher } from "../../src/manifest/match.ts";

// The preload's default timeout reaches only the first file bun runs; tests sharing the machine need the room.
setDefaultTimeout(60_000);

const SHIPPED = join(ROOT, "manifests", "memory.yaml");
const SERVER = join(NODE_MODULES, "@modelcontextprotocol", "server-memory", "dist", "index.js");
const SLOW = 120_000;

type Entity = { name: string; entityType: string; observations: string[] };
type Relation = { from: string; to: string; relationType: string };

interface Workspace {
  dir: string;
  manifest: string;
  /** MEMORY_FILE_PATH: the graph, one JSON object per line. */
  graph: string;
}

/** The shipped manifest in a temp folder, pointed at the installed server and an absolute graph file. */
function workspace(entities: Entity[] = [], relations: Relation[] = []): Workspace {
  const dir = tempDir("syn-real-memory-");
  const graph = join(dir, "memory.jsonl");
  const doc = parseDocument(readFileSync(SHIPPED, "utf8"));
  doc.setIn(["servers", "memory", "command"], "node");
  doc.setIn(["servers", "memory", "args"], [SERVER]);
  doc.setIn(["servers", "memory", "env", "MEMORY_FILE_PATH"], graph);
  const manifest = join(dir, "synartesis.yaml");
  writeFileSync(manifest, doc.toString());
  if (entities.length || relations.length) writeFileSync(graph, graphText(entities, relations));
  return { dir, manifest, graph };
}

/** The graph file's text in the form the server writes it (lines joined by \n, no trailing newline). */
function graphText(entities: Entity[], relations: Relation[]): string {
  return [...entities.map((e) => JSON.stringify({ type: "entity", ...e })), ...relations.map((r) => JSON.stringify({ type: "relation", ...r }))].join("\n");
}

function readGraph(ws: Workspace): { entities: Entity[]; relations: Relation[] } {
  const lines = readFileSync(ws.graph, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line));
  return {
    entities: lines.filter((l) => l.type === "entity").map(({ type, ...e }) => e),
    relations: lines.filter((l) => l.type === "relation").map(({ type, ...r }) => r),
  };
}

const agent = (ws: Workspace) => startAgent(ws.dir, "memory-agent");

async function undo(ws: Workspace): Promise<string> {
  const undone = await run(["undo"], { cwd: ws.dir });
  expect(undone.stderr).toBe("");
  expect(undone.code).toBe(0);
  return undone.stdout;
}

const ADA: Entity = { name: "Ada Lovelace", entityType: "person", observations: ["wrote the first program"] };
const BABBAGE: Entity = { name: "Charles Babbage", entityType: "person", observations: ["designed the Analytical Engine"] };
const MENABREA: Entity = { name: "Luigi Menabrea", entityType: "person", observations: ["wrote the paper Ada translated"] };

describe.concurrent("manifests/memory.yaml", () => {
  test(
    "the shipped file needs MEMORY_FILE_PATH, loads with it, and names a rule for each of the server's 9 tools",
    async () => {
      expect(() => loadManifest(SHIPPED, {})).toThrow(/MEMORY_FILE_PATH/);
      const shipped = loadManifest(SHIPPED, { MEMORY_FILE_PATH: "/abs/memory.jsonl" });
      expect(shipped.servers.memory).toMatchObject({ kind: "command", env: { MEMORY_FILE_PATH: "/abs/memory.jsonl" } });
      expect(readFileSync(SHIPPED, "utf8")).toContain("Where this server's abilities end");

      const ws = workspace();
      const checked = await run(["check"], { cwd: ws.dir });
      expect(checked.code).toBe(0);
      expect(checked.stdout).toContain("9 tools");

      const client = await agent(ws);
      const names = (await client.listTools()).tools.map((t) => t.name).sort();
      expect(names).toEqual([
        "add_observations",
        "create_entities",
        "create_relations",
        "delete_entities",
        "delete_observations",
        "delete_relations",
        "open_nodes",
        "read_graph",
        "search_nodes",
      ]);
      const matcher = createMatcher(loadManifest(ws.manifest, {}));
      const classOf = (name: string) => matcher.classify("memory", name);
      for (const name of names) expect(classOf(name).rule?.match).toBe(`memory.${name}`);
      for (const name of ["read_graph", "search_nodes", "open_nodes"]) expect(classOf(name).class).toBe("readonly");
      for (const name of ["create_entities", "create_relations", "delete_relations", "add_observations"]) expect(classOf(name).class).toBe("compensable");
      for (const name of ["delete_entities", "delete_observations"]) expect(classOf(name)).toMatchObject({ class: "reversible", gate: "never" });
    },
    SLOW,
  );

  test(
    "create_entities of an existing and a new entity: undo deletes only the new one",
    async () => {
      const ws = workspace([ADA]);
      const before = readFileSync(ws.graph, "utf8");
      const client = await agent(ws);
      const created = (await client.callTool({
        name: "create_entities",
        arguments: { entities: [{ ...ADA, observations: ["a different note"] }, BABBAGE] },
      })) as any;
      expect(created.isError).toBeFalsy();
      // The server skips the existing name and says so only by leaving it out.
      expect(created.structuredContent).toEqual({ entities: [BABBAGE] });
      await endSession(client);
      expect(readGraph(ws)).toEqual({ entities: [ADA, BABBAGE], relations: [] });

      const shown = JSON.parse((await run(["show", "--json"], { cwd: ws.dir })).stdout);
      expect(shown.actions).toMatchObject([
        { tool: "create_entities", class: "compensable", status: "applied", inverse: { tool: "delete_entities", args: { entityNames: [BABBAGE.name] } } },
      ]);

      const report = await undo(ws);
      expect(report).toContain("[unverified]");
      expect(readFileSync(ws.graph, "utf8")).toBe(before);
    },
    SLOW,
  );

  test(
    "create_relations is undone, and a relation that already existed survives",
    async () => {
      const knows: Relation = { from: ADA.name, to: BABBAGE.name, relationType: "corresponded with" };
      const translated: Relation = { from: ADA.name, to: MENABREA.name, relationType: "translated" };
      const ws = workspace([ADA, BABBAGE, MENABREA], [knows]);
      const before = readFileSync(ws.graph, "utf8");
      const client = await agent(ws);
      const created = (await client.callTool({ name: "create_relations", arguments: { relations: [knows, translated] } })) as any;
      expect(created.isError).toBeFalsy();
      expect(created.structuredContent).toEqual({ relations: [translated] });
      await endSession(client);
      expect(readGraph(ws).relations).toEqual([knows, translated]);

      await undo(ws);
      expect(readFileSync(ws.graph, "utf8")).toBe(before);
    },
    SLOW,
  );

  test(
    "delete_relations is undone by creating the relations again",
    async () => {
      const knows: Relation = { from: ADA.name, to: BABBAGE.name, relationType: "corresponded with" };
      const other: Relation = { from: BABBAGE.name, to: MENABREA.name, relationType: "met" };
      const ws = workspace([ADA, BABBAGE, MENABREA], [knows, other]);
      const client = await agent(ws);
      const deleted = (await client.callTool({ name: "delete_relations", arguments: { relations: [knows] } })) as any;
      expect(deleted.isError).toBeFalsy();
      await endSession(client);
      expect(readGraph(ws).relations).toEqual([other]);

      await undo(ws);
      const after = readGraph(ws);
      expect(after.entities).toEqual([ADA, BABBAGE, MENABREA]);
      // Back, at the end of the list: the server appends.
      expect(after.relations).toEqual([other, knows]);
    },
    SLOW,
  );

  test(
    "a whole session is undone newest first: the new entity and its relation go, the existing entity stays",
    async () => {
      const ws = workspace([ADA]);
      const before = readFileSync(ws.graph, "utf8");
      const client = await agent(ws);
      await client.callTool({ name: "create_entities", arguments: { entities: [ADA, BABBAGE] } });
      await client.callTool({
        name: "create_relations",
        arguments: { relations: [{ from: ADA.name, to: BABBAGE.name, relationType: "corresponded with" }] },
      });
      await endSession(client);
      expect(readGraph(ws).entities).toEqual([ADA, BABBAGE]);
      expect(readGraph(ws).relations).toHaveLength(1);

      const report = await undo(ws);
      expect(report).toContain("rolled back: 2 calls reverted");
      expect(readFileSync(ws.graph, "utf8")).toBe(before);
    },
    SLOW,
  );

  test(
    "add_observations of one existing and two new observations: undo deletes exactly the two new ones",
    async () => {
      const ws = workspace([ADA, BABBAGE]);
      const before = readFileSync(ws.graph, "utf8");
      const client = await agent(ws);
      const added = (await client.callTool({
        name: "add_observations",
        arguments: {
          observations: [
            { entityName: ADA.name, contents: [ADA.observations[0], "translated Menabrea"] },
            { entityName: BABBAGE.name, contents: ["built the Difference Engine"] },
          ],
        },
      })) as any;
      expect(added.isError).toBeFalsy();
      expect(added.structuredContent).toEqual({
        results: [
          { entityName: ADA.name, addedObservations: ["translated Menabrea"] },
          { entityName: BABBAGE.name, addedObservations: ["built the Difference Engine"] },
        ],
      });
      await endSession(client);
      const shown = JSON.parse((await run(["show", "--json"], { cwd: ws.dir })).stdout);
      expect(shown.actions[0].inverse).toEqual({
        server: "memory",
        tool: "delete_observations",
        args: {
          deletions: [
            { entityName: ADA.name, observations: ["translated Menabrea"] },
            { entityName: BABBAGE.name, observations: ["built the Difference Engine"] },
          ],
        },
      });
      const report = await undo(ws);
      expect(report).toContain("rolled back: 1 call reverted");
      expect(readFileSync(ws.graph, "utf8")).toBe(before);
    },
    SLOW,
  );

  test(
    "delete_entities is undone: the entities with their observations, and every relation that touched them, come back",
    async () => {
      const knows: Relation = { from: ADA.name, to: BABBAGE.name, relationType: "corresponded with" };
      const met: Relation = { from: BABBAGE.name, to: MENABREA.name, relationType: "met" };
      const unrelated: Relation = { from: ADA.name, to: MENABREA.name, relationType: "translated" };
      const ws = workspace([ADA, BABBAGE, MENABREA], [knows, met, unrelated]);
      const client = await agent(ws);
      const deleted = (await client.callTool({ name: "delete_entities", arguments: { entityNames: [BABBAGE.name, "Nobody"] } })) as any;
      expect(deleted.isError).toBeFalsy();
      await endSession(client);
      expect(readGraph(ws)).toEqual({ entities: [ADA, MENABREA], relations: [unrelated] });

      const shown = JSON.parse((await run(["show", "--json"], { cwd: ws.dir })).stdout);
      expect(shown.actions[0]).toMatchObject({
        class: "reversible",
        snapshot: { entities: [BABBAGE], relations: [knows, met] },
        inverse: {
          tool: "create_entities",
          args: { entities: [BABBAGE] },
          then: [{ server: "memory", tool: "create_relations", args: { relations: [knows, met] } }],
        },
      });
      const report = await undo(ws);
      expect(report).toContain("rolled back: 1 call reverted");
      expect(report).not.toContain("[unverified]");
      // Whole again; what came back is at the end of the file, where the server appends.
      expect(readGraph(ws)).toEqual({ entities: [ADA, MENABREA, BABBAGE], relations: [unrelated, knows, met] });
    },
    SLOW,
  );

  test(
    "delete_observations is undone with each entity's observations back in their order",
    async () => {
      const ada: Entity = { ...ADA, observations: ["wrote the first program", "translated Menabrea", "was a countess"] };
      const babbage: Entity = { ...BABBAGE, observations: ["designed the Analytical Engine", "built the Difference Engine"] };
      const ws = workspace([ada, babbage]);
      const before = readFileSync(ws.graph, "utf8");
      const client = await agent(ws);
      const deleted = (await client.callTool({
        name: "delete_observations",
        arguments: {
          deletions: [
            { entityName: ADA.name, observations: ["translated Menabrea", "never said"] },
            { entityName: BABBAGE.name, observations: ["designed the Analytical Engine"] },
          ],
        },
      })) as any;
      expect(deleted.isError).toBeFalsy();
      await endSession(client);
      expect(readGraph(ws).entities.map((e) => e.observations)).toEqual([["wrote the first program", "was a countess"], ["built the Difference Engine"]]);
      const report = await undo(ws);
      expect(report).toContain("rolled back: 1 call reverted");
      expect(readFileSync(ws.graph, "utf8")).toBe(before);
    },
    SLOW,
  );

  test(
    "a deleted entity recreated by someone else before the undo is drift: undo stops and changes nothing",
    async () => {
      const ws = workspace([ADA, BABBAGE]);
      const client = await agent(ws);
      await client.callTool({ name: "delete_entities", arguments: { entityNames: [BABBAGE.name] } });
      await endSession(client);
      const someoneElse = { ...BABBAGE, observations: ["someone else's note"] };
      writeFileSync(ws.graph, graphText([ADA, someoneElse], []));
      const undone = await run(["undo"], { cwd: ws.dir });
      expect(undone.code).toBe(1);
      expect(undone.stdout).toContain("DRIFT             memory.delete_entities");
      expect(readGraph(ws).entities).toEqual([ADA, someoneElse]);
    },
    SLOW,
  );
});
