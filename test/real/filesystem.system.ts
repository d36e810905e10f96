// manifests/filesystem.yaml against the real @modelcontextprotocol/server-filesystem,
// through the built proxy and `synartesis undo` (R-SHIP-2): overwrites and
// edits come back byte for byte, a new file and the irreversible tools are
// held, and undo refuses to overwrite a person's later edit.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseDocument } from "yaml";
import { NODE_MODULES, ROOT, run, tempDir, ACCOUNT } from "../helpers.ts";
import { agent as startAgent, endSession, text } from "./agent-kit.ts";
import { loadManifest } from "../../src/manifest/load.ts";
import { createMatcher } from "../../src/manifest/match.ts";

// The preload's default timeout reaches only the first file bun runs; tests sharing the machine need the room.
setDefaultTimeout(60_000);

const SHIPPED = join(ROOT, "manifests", "filesystem.yaml");
const SERVER = join(NODE_MODULES, "@modelcontextprotocol", "server-filesystem", "dist", "index.js");
const SLOW = 120_000;

const READS = [
  "read_file",
  "read_text_file",
  "read_media_file",
  "read_multiple_files",
  "list_directory",
  "list_directory_with_sizes",
  "directory_tree",
  "search_files",
  "get_file_info",
  "list_allowed_directories",
];

interface Workspace {
  dir: string;
  /** The one folder the server may touch. */
  root: string;
  manifest: string;
}

/** The shipped manifest in a temp folder, its server block pointed at the installed server and a real root. */
function workspace(): Workspace {
  const dir = tempDir("syn-real-fs-");
  const root = join(dir, "root");
  mkdirSync(root);
  const doc = parseDocument(readFileSync(SHIPPED, "utf8"));
  doc.setIn(["servers", "filesystem", "command"], "node");
  doc.setIn(["servers", "filesystem", "args"], [SERVER, root]);
  const manifest = join(dir, "synartesis.yaml");
  writeFileSync(manifest, doc.toString());
  return { dir, root, manifest };
}

const agent = (ws: Workspace, name = "fs-agent") => startAgent(ws.dir, name);

function expectHeld(result: any): string {
  expect(result.isError).toBe(true);
  expect(text(result)).toStartWith("HELD FOR APPROVAL");
  return /Action id: ([0-9a-f]+)/.exec(text(result))![1]!;
}

async function showJson(ws: Workspace): Promise<any> {
  const shown = await run(["show", "--json"], { cwd: ws.dir });
  expect(shown.code).toBe(0);
  return JSON.parse(shown.stdout);
}

describe.concurrent("manifests/filesystem.yaml", () => {
  test(
    "the shipped file loads, says where the server stops, and names a rule for each of the server's 14 tools",
    async () => {
      const shipped = loadManifest(SHIPPED, {});
      expect(Object.keys(shipped.servers)).toEqual(["filesystem"]);
      const source = readFileSync(SHIPPED, "utf8");
      expect(source).toContain("Where this server's abilities end");
      expect(source).toContain("/ABSOLUTE/PATH/TO/THE/FOLDER/THE/AGENT/MAY/CHANGE");

      const ws = workspace();
      const checked = await run(["check"], { cwd: ws.dir });
      expect(checked.stderr).toBe("");
      expect(checked.code).toBe(0);
      expect(checked.stdout).toContain("14 tools");

      const client = await agent(ws);
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name).sort();
      expect(names).toEqual([...READS, "create_directory", "edit_file", "move_file", "write_file"].sort());

      const manifest = loadManifest(ws.manifest, {});
      const matcher = createMatcher(manifest);
      const classes = Object.fromEntries(names.map((name) => [name, matcher.classify("filesystem", name)]));
      for (const name of names) expect(classes[name]!.rule?.match).toBe(`filesystem.${name}`);
      for (const name of READS) expect(classes[name]!.class).toBe("readonly");
      expect(classes.write_file!.class).toBe("reversible");
      expect(classes.edit_file!.class).toBe("reversible");
      expect(classes.move_file!.class).toBe("compensable");
      expect(classes.create_directory).toMatchObject({ class: "irreversible", rule: { gate: "always" } });
      // The server marks exactly these four as not read-only.
      for (const tool of tools) expect(tool.annotations?.readOnlyHint === true).toBe(READS.includes(tool.name));
    },
    SLOW,
  );

  test(
    "write_file over an existing file and edit_file are undone byte for byte",
    async () => {
      const ws = workspace();
      const notes = join(ws.root, "notes.md");
      const config = join(ws.root, "config.ini");
      const notesBefore = "# Notes\n\nkeep this — café ✓\n";
      // CRLF on purpose: edit_file rewrites the whole file with \n, undo must bring \r\n back.
      const configBefore = "[main]\r\nmode = safe\r\nretries = 3\r\n";
      writeFileSync(notes, notesBefore);
      writeFileSync(config, configBefore);

      const client = await agent(ws);
      // A read goes straight through.
      const read = (await client.callTool({ name: "read_text_file", arguments: { path: notes } })) as any;
      expect(read.structuredContent).toEqual({ content: notesBefore });
      const wrote = (await client.callTool({ name: "write_file", arguments: { path: notes, content: "overwritten by the agent\n" } })) as any;
      expect(wrote.isError).toBeFalsy();
      const edited = (await client.callTool({
        name: "edit_file",
        arguments: { path: config, edits: [{ oldText: "mode = safe", newText: "mode = reckless" }] },
      })) as any;
      expect(edited.isError).toBeFalsy();
      expect(text(edited)).toContain("+mode = reckless");
      await endSession(client);

      expect(readFileSync(notes, "utf8")).toBe("overwritten by the agent\n");
      expect(readFileSync(config, "utf8")).toBe("[main]\nmode = reckless\nretries = 3\n");

      const shown = await showJson(ws);
      expect(shown.actions.map((a: any) => [a.tool, a.class, a.status])).toEqual([
        ["read_text_file", "readonly", "applied"],
        ["write_file", "reversible", "applied"],
        ["edit_file", "reversible", "applied"],
      ]);
      expect(shown.actions[1].inverse).toEqual({ server: "filesystem", tool: "write_file", args: { path: notes, content: notesBefore } });
      expect(shown.actions[2].inverse).toEqual({ server: "filesystem", tool: "write_file", args: { path: config, content: configBefore } });

      const dry = await run(["undo", "--dry-run"], { cwd: ws.dir });
      expect(dry.code).toBe(0);
      expect(readFileSync(notes, "utf8")).toBe("overwritten by the agent\n");

      const undone = await run(["undo"], { cwd: ws.dir });
      expect(undone.stderr).toBe("");
      expect(undone.code).toBe(0);
      expect(undone.stdout).toContain("rolled back: 2 calls reverted");
      expect(undone.stdout).not.toContain("[unverified]");
      expect(readFileSync(notes, "utf8")).toBe(notesBefore);
      expect(readFileSync(config, "utf8")).toBe(configBefore);
      expect(readdirSync(ws.root).sort()).toEqual(["config.ini", "notes.md"]);
    },
    SLOW,
  );

  test(
    "write_file to a path that does not exist is held; approved, show and undo say plainly that undo leaves the new file",
    async () => {
      const ws = workspace();
      const fresh = join(ws.root, "fresh.txt");
      const client = await agent(ws);
      const result = await client.callTool({ name: "write_file", arguments: { path: fresh, content: "new\n" } });
      const held = expectHeld(result);
      expect(text(result)).toContain("found nothing to restore (ENOENT: no such file or directory");
      expect(existsSync(fresh)).toBe(false);

      const gates = await run(["gates", "--json"], { cwd: ws.dir });
      expect(gates.code).toBe(0);
      expect(JSON.parse(gates.stdout)).toMatchObject([{ tool: "write_file", class: "reversible", status: "gated", args: { path: fresh } }]);

      expect((await run(["approve", held], { cwd: ws.dir })).code).toBe(0);
      const retried = (await client.callTool({ name: "write_file", arguments: { path: fresh, content: "new\n" } })) as any;
      expect(retried.isError).toBeFalsy();
      await endSession(client);
      expect(readFileSync(fresh, "utf8")).toBe("new\n");

      const leaves =
        "there was nothing there before filesystem.write_file ran, and its rule's inverse can only write back a state from before; undo leaves what it created in place (remove it by hand if it must go)";
      const shown = await run(["show"], { cwd: ws.dir });
      expect(shown.stdout).toContain(`undo     ${leaves}`);
      expect(shown.stdout).not.toContain("warning");
      expect(shown.stdout).not.toContain("could not be resolved");
      const undone = await run(["undo"], { cwd: ws.dir });
      expect(undone.code).toBe(0);
      expect(undone.stdout).toContain(leaves);
      expect(readFileSync(fresh, "utf8")).toBe("new\n");
    },
    SLOW,
  );

  test(
    "create_directory is held; once approved and run, undo leaves it in place and says so",
    async () => {
      const ws = workspace();
      const folder = join(ws.root, "made-by-agent");
      const client = await agent(ws);
      const held = expectHeld(await client.callTool({ name: "create_directory", arguments: { path: folder } }));
      expect(existsSync(folder)).toBe(false);

      const approved = await run(["approve", held], { cwd: ws.dir });
      expect(approved.code).toBe(0);
      const retried = (await client.callTool({ name: "create_directory", arguments: { path: folder } })) as any;
      expect(retried.isError).toBeFalsy();
      expect(existsSync(folder)).toBe(true);
      await endSession(client);

      const undone = await run(["undo"], { cwd: ws.dir });
      expect(undone.code).toBe(0);
      expect(undone.stdout).toContain(`filesystem.create_directory is irreversible and ran (approved by ${ACCOUNT}); left in place`);
      expect(existsSync(folder)).toBe(true);
    },
    SLOW,
  );

  test(
    "move_file runs unattended and undo moves it back, a file and a directory; onto a path that exists the server refuses",
    async () => {
      const ws = workspace();
      const [source, target] = [join(ws.root, "a.txt"), join(ws.root, "b.txt")];
      const [folder, moved] = [join(ws.root, "reports"), join(ws.root, "archive")];
      writeFileSync(source, "a\n");
      mkdirSync(folder);
      writeFileSync(join(folder, "q1.txt"), "q1\n");
      writeFileSync(join(ws.root, "taken.txt"), "taken\n");

      const client = await agent(ws);
      expect(((await client.callTool({ name: "move_file", arguments: { source, destination: target } })) as any).isError).toBeFalsy();
      expect(((await client.callTool({ name: "move_file", arguments: { source: folder, destination: moved } })) as any).isError).toBeFalsy();
      const refused = (await client.callTool({ name: "move_file", arguments: { source: target, destination: join(ws.root, "taken.txt") } })) as any;
      expect(refused.isError).toBe(true);
      await endSession(client);
      expect([existsSync(source), readFileSync(target, "utf8"), readFileSync(join(moved, "q1.txt"), "utf8")]).toEqual([false, "a\n", "q1\n"]);

      const undone = await run(["undo"], { cwd: ws.dir });
      expect(undone.stderr).toBe("");
      expect(undone.code).toBe(0);
      expect(undone.stdout).toContain("rolled back: 2 calls reverted");
      expect([readFileSync(source, "utf8"), existsSync(target), readFileSync(join(folder, "q1.txt"), "utf8"), existsSync(moved)]).toEqual([
        "a\n",
        false,
        "q1\n",
        false,
      ]);
      expect(readFileSync(join(ws.root, "taken.txt"), "utf8")).toBe("taken\n");
    },
    SLOW,
  );

  test(
    "a move is not taken back when something has been put at its source since: the server refuses, undo stops, nothing is overwritten",
    async () => {
      const ws = workspace();
      const [source, target] = [join(ws.root, "a.txt"), join(ws.root, "b.txt")];
      writeFileSync(source, "a\n");
      const client = await agent(ws);
      expect(((await client.callTool({ name: "move_file", arguments: { source, destination: target } })) as any).isError).toBeFalsy();
      await endSession(client);
      writeFileSync(source, "a person's new file\n");

      // The server refuses to move back onto it: undo stops there.
      const undone = await run(["undo"], { cwd: ws.dir });
      expect(undone.code).toBe(1);
      expect(undone.stdout).toContain("Destination already exists");
      expect([readFileSync(source, "utf8"), readFileSync(target, "utf8")]).toEqual(["a person's new file\n", "a\n"]);
    },
    SLOW,
  );

  test(
    "undo refuses when a person edited the file after the agent, shows both texts, and keeps the person's",
    async () => {
      const ws = workspace();
      const page = join(ws.root, "page.txt");
      writeFileSync(page, "original text\n");

      const client = await agent(ws);
      const wrote = (await client.callTool({ name: "write_file", arguments: { path: page, content: "agent text\n" } })) as any;
      expect(wrote.isError).toBeFalsy();
      await endSession(client);

      writeFileSync(page, "human text\n");
      const undone = await run(["undo"], { cwd: ws.dir });
      expect(undone.code).toBe(1);
      expect(undone.stdout).toContain("DRIFT");
      // The file's text is shown as its lines, side by side.
      expect(undone.stdout).toMatch(/"content": \|\s+│\s+"content": \|/);
      expect(undone.stdout).toMatch(/≠\s+agent text\s+│\s+human text\n/);
      expect(undone.stdout).toContain("marked partial");
      expect(readFileSync(page, "utf8")).toBe("human text\n");

      // Put back by hand to what the agent left, the same undo goes through.
      writeFileSync(page, "agent text\n");
      const again = await run(["undo"], { cwd: ws.dir });
      expect(again.code).toBe(0);
      expect(readFileSync(page, "utf8")).toBe("original text\n");
    },
    SLOW,
  );

  test(
    "a write outside the allowed folder is refused by the pre-read and never forwarded",
    async () => {
      const ws = workspace();
      const outside = join(ws.dir, "outside.txt");
      writeFileSync(outside, "outside\n");
      const client = await agent(ws);
      const result = (await client.callTool({ name: "write_file", arguments: { path: outside, content: "x" } })) as any;
      expect(result.isError).toBe(true);
      expect(text(result)).toContain("Access denied");
      await endSession(client);
      expect(readFileSync(outside, "utf8")).toBe("outside\n");
      const shown = await showJson(ws);
      expect(shown.actions).toMatchObject([{ tool: "write_file", status: "failed" }]);
    },
    SLOW,
  );
});
