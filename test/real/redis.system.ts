// manifests/redis.yaml against the real @modelcontextprotocol/server-redis and
// a real redis-server (Debian's; .ci/run installs it), through the built proxy
// and `synartesis undo`: set and delete of keys that existed and keys that
// did not, undone to the same values and the same absences; a key changed
// since stops the undo; what cannot be read first is refused. The state is
// read straight from Redis with Bun's client.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { RedisClient, type Subprocess } from "bun";
import { parse, parseDocument } from "yaml";
import { sameAsShipped } from "../fixtures/shipped-rules.ts";
import { NODE_MODULES, ROOT, run, tempDir } from "../helpers.ts";
import { agent as startAgent, endSession, text } from "./agent-kit.ts";
import { createMatcher } from "../../src/manifest/match.ts";
import { loadManifest } from "../../src/manifest/load.ts";

setDefaultTimeout(60_000);

const SHIPPED = join(ROOT, "manifests", "redis.yaml");
const SERVER = join(NODE_MODULES, "@modelcontextprotocol", "server-redis", "dist", "index.js");

let redis: Subprocess;
let url: string;

beforeAll(async () => {
  const found = Bun.which("redis-server");
  if (!found) throw new Error("redis-server is not installed (Debian package redis-server; .ci/run installs it)");
  // A free port: the kernel picks one, then redis-server takes it.
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  const dir = tempDir("syn-redis-server-");
  redis = Bun.spawn([found, "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir], {
    stdout: "ignore",
    stderr: "inherit",
  });
  url = `redis://127.0.0.1:${port}`;
  for (let tries = 0; ; tries++) {
    try {
      const client = new RedisClient(url, { autoReconnect: false });
      await client.send("PING", []);
      client.close();
      break;
    } catch (error) {
      if (tries > 200 || redis.exitCode !== null) throw new Error(`redis-server did not start on ${url}: ${(error as Error).message}`);
      await Bun.sleep(25);
    }
  }
});

afterAll(() => {
  redis?.kill();
});

let namespaceCount = 0;

/** The shipped manifest pointed at the installed server and this file's redis-server; keys of each test under their own prefix. */
function workspace(): { dir: string; prefix: string } {
  const dir = tempDir("syn-real-redis-");
  const doc = parseDocument(readFileSync(SHIPPED, "utf8"));
  doc.setIn(["servers", "redis", "args"], [SERVER, url]);
  writeFileSync(join(dir, "synartesis.yaml"), doc.toString());
  return { dir, prefix: `t${++namespaceCount}:` };
}

/** Every key under `prefix` with its type and value (strings as they are; a hash as its fields). */
async function state(prefix: string): Promise<Record<string, unknown>> {
  const client = new RedisClient(url);
  try {
    const keys = ((await client.send("KEYS", [`${prefix}*`])) as string[]).sort();
    const out: Record<string, unknown> = {};
    for (const key of keys) {
      const type = (await client.send("TYPE", [key])) as string;
      out[key] = type === "string" ? await client.get(key) : { [type]: await client.send("HGETALL", [key]) };
    }
    return out;
  } finally {
    client.close();
  }
}

async function seed(entries: Record<string, string>): Promise<void> {
  const client = new RedisClient(url);
  for (const [key, value] of Object.entries(entries)) await client.set(key, value);
  client.close();
}

describe.concurrent("manifests/redis.yaml", () => {
  test("names a rule for each of the server's 4 tools: get and list read, set and delete reversible", async () => {
    const ws = workspace();
    const checked = await run(["check"], { cwd: ws.dir });
    expect(checked.stdout).toContain("4 tools");
    expect(checked.stdout).not.toContain("Snapshots without absent_when");
    expect(checked.code).toBe(0);
    const matcher = createMatcher(loadManifest(join(ws.dir, "synartesis.yaml"), {}));
    expect(["get", "list", "set", "delete"].map((tool) => matcher.classify("redis", tool).class)).toEqual(["readonly", "readonly", "reversible", "reversible"]);
  });

  test("init --draft proposes both writes from the server's own tools, equal to the shipped rules once confirmed", async () => {
    const dir = tempDir("syn-real-redis-draft-");
    const drafted = await run(["init", "kv", "--draft", "--", "node", SERVER, url], { cwd: dir });
    expect(drafted.stdout).toContain('2 proposed from the server\'s tools, marked "# draft: confirm"');
    expect(drafted.code).toBe(0);
    expect(sameAsShipped(parse(readFileSync(join(dir, "synartesis.yaml"), "utf8")), "redis.yaml", "kv")).toEqual({ same: 2, of: 2, differ: [] });
  });

  test("set over a value, set of a new key (with an expiry), delete of a key, delete of a missing key: undone, every value and absence as before", async () => {
    const ws = workspace();
    const p = ws.prefix;
    await seed({ [`${p}count`]: "0042", [`${p}doc`]: '{"a": 1}', [`${p}gone`]: "bye" });
    const before = await state(p);
    const client = await startAgent(ws.dir, "redis-agent");
    const calls = [
      { name: "set", arguments: { key: `${p}count`, value: "43" } },
      { name: "set", arguments: { key: `${p}doc`, value: "overwritten" } },
      { name: "set", arguments: { key: `${p}new`, value: "fresh", expireSeconds: 3600 } },
      { name: "delete", arguments: { key: `${p}gone` } },
      { name: "delete", arguments: { key: `${p}never` } },
    ];
    for (const call of calls) expect(((await client.callTool(call)) as any).isError).toBeFalsy();
    await endSession(client);
    expect(await state(p)).toEqual({ [`${p}count`]: "43", [`${p}doc`]: "overwritten", [`${p}new`]: "fresh" });

    const shown = JSON.parse((await run(["show", "--json"], { cwd: ws.dir })).stdout);
    // The value as written, not read as JSON: "0042" stays text.
    expect(shown.actions[0]).toMatchObject({ snapshot: "0042", inverse: { tool: "set", args: { key: `${p}count`, value: "0042" } } });
    expect(shown.actions[2]).toMatchObject({ snapshot: null, inverse: { tool: "delete", args: { key: `${p}new` } } });
    const undone = await run(["undo"], { cwd: ws.dir });
    expect(undone.stderr).toBe("");
    expect(undone.stdout).toContain("rolled back: 5 calls reverted");
    expect(undone.stdout).not.toContain("[unverified]");
    expect(undone.code).toBe(0);
    expect(await state(p)).toEqual(before);
  });

  test("a key someone changed after the agent stops the undo there (drift), and is kept", async () => {
    const ws = workspace();
    const p = ws.prefix;
    await seed({ [`${p}k`]: "original" });
    const client = await startAgent(ws.dir, "redis-agent");
    await client.callTool({ name: "set", arguments: { key: `${p}k`, value: "agent" } });
    await endSession(client);
    await seed({ [`${p}k`]: "someone else" });
    const undone = await run(["undo"], { cwd: ws.dir });
    expect(undone.code).toBe(1);
    expect(undone.stdout).toContain("DRIFT");
    expect(await state(p)).toEqual({ [`${p}k`]: "someone else" });
  });

  test("what cannot be read first is refused, not guessed: a key holding a hash, several keys at once", async () => {
    const ws = workspace();
    const p = ws.prefix;
    const setup = new RedisClient(url);
    await setup.send("HSET", [`${p}h`, "field", "value"]);
    await setup.set(`${p}a`, "1");
    setup.close();
    const before = await state(p);
    const client = await startAgent(ws.dir, "redis-agent");
    const overHash = (await client.callTool({ name: "set", arguments: { key: `${p}h`, value: "x" } })) as any;
    expect(overHash.isError).toBe(true);
    expect(text(overHash)).toContain("Synartesis did not run set, because it could not record the state it would replace");
    expect(text(overHash)).toContain("WRONGTYPE");
    const several = (await client.callTool({ name: "delete", arguments: { key: [`${p}a`, `${p}h`] } })) as any;
    expect(several.isError).toBe(true);
    expect(text(several)).toContain("Synartesis did not run delete");
    await endSession(client);
    expect(await state(p)).toEqual(before);
  });
});
