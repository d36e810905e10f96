// The toy CRM server (R-SHIP-1) through the built binary over real pipes:
// tools, errors, the state file, the id counter, idempotency keys, resources, exit.
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { BIN, connect, initializeFrame, LineSession, reap, run, tempDir, until } from "../helpers.ts";
import { VERSION } from "../../src/version.ts";

const ADA = { id: "c_001", name: "Ada Lovelace", email: "ada@example.com", plan: "pro", notes: "founding customer" };
const GRACE = { id: "c_002", name: "Grace Hopper", email: "grace@example.com", plan: "enterprise", notes: "renewal in March" };
const ALAN = { id: "c_003", name: "Alan Turing", email: "alan@example.com", plan: "free", notes: "" };
const SEED = { c_001: ADA, c_002: GRACE, c_003: ALAN };
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const KEY = "synartesis/idempotency-key";

// The preload's default timeout reaches only the first file bun runs; tests sharing the machine need the room.
setDefaultTimeout(60_000);

// Closed at the end of the file: the tests run concurrently, so one test's cleanup must not close another's clients.
const clients: Client[] = [];
afterAll(async () => {
  for (const client of clients.splice(0)) await client.close();
});

async function crm(args: string[] = [], cwd?: string): Promise<Client> {
  const { client } = await connect(BIN, ["toy-crm", ...args], { cwd });
  clients.push(client);
  return client;
}

async function call(client: Client, name: string, args: Record<string, unknown>, meta?: Record<string, unknown>): Promise<any> {
  return client.callTool({ name, arguments: args, ...(meta ? { _meta: meta } : {}) });
}

/** A success result carries the record both as structuredContent and as one text block of its JSON. */
function record(result: any): any {
  expect(result.isError).toBeFalsy();
  expect(result.content).toHaveLength(1);
  expect(result.content[0].type).toBe("text");
  expect(JSON.parse(result.content[0].text)).toEqual(result.structuredContent);
  return result.structuredContent;
}

function errorText(result: any): string {
  expect(result.isError).toBe(true);
  expect(result.content).toHaveLength(1);
  return result.content[0].text;
}

/** The exact text the state file must have: two-space indentation, keys in this order, trailing newline. */
function fileText(customers: Record<string, unknown>, outbox: unknown[], lastId: number): string {
  return JSON.stringify({ customers, outbox, lastId }, null, 2) + "\n";
}

describe.concurrent("toy-crm over stdio", () => {
  test("identifies itself and lists six annotated tools", async () => {
    const client = await crm();
    expect(client.getServerVersion()).toMatchObject({ name: "synartesis-toy-crm", version: VERSION });
    expect(client.getInstructions()).toStartWith("A toy CRM for trying Synartesis");
    expect(client.getServerCapabilities()).toMatchObject({ tools: {}, resources: {} });

    const { tools } = await client.listTools();
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    expect(Object.keys(byName).sort()).toEqual(["create_customer", "delete_customer", "get_customer", "restore_customer", "send_email", "update_customer"]);
    for (const tool of tools) {
      expect(tool.description!.length).toBeGreaterThan(20);
      expect(tool.inputSchema.type).toBe("object");
      expect(tool.outputSchema?.type).toBe("object");
    }
    expect(byName.get_customer!.annotations).toMatchObject({ readOnlyHint: true });
    expect(byName.get_customer!.inputSchema.required).toEqual(["id"]);
    expect(byName.create_customer!.inputSchema.required).toEqual(["name", "email"]);
    expect(byName.update_customer!.inputSchema.required).toEqual(["id"]);
    expect(byName.restore_customer!.inputSchema.required).toEqual(["id", "name", "email", "plan", "notes"]);
    expect(byName.delete_customer!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    expect(byName.send_email!.annotations).toMatchObject({ readOnlyHint: false, openWorldHint: true, idempotentHint: false });
    for (const name of ["create_customer", "update_customer", "delete_customer", "restore_customer", "send_email"]) {
      expect(byName[name]!.annotations?.readOnlyHint).toBe(false);
    }
    expect(byName.get_customer!.outputSchema!.required).toEqual(["id", "name", "email", "plan", "notes"]);
    expect(byName.send_email!.outputSchema!.required).toEqual(["to", "subject", "body", "sentAt"]);
  });

  test("serves the seed customers", async () => {
    const client = await crm();
    expect(record(await call(client, "get_customer", { id: "c_001" }))).toEqual(ADA);
    expect(record(await call(client, "get_customer", { id: "c_002" }))).toEqual(GRACE);
    expect(record(await call(client, "get_customer", { id: "c_003" }))).toEqual(ALAN);
  });

  test("a missing customer is a tool error with exactly that text", async () => {
    const client = await crm();
    expect(errorText(await call(client, "get_customer", { id: "c_999" }))).toBe("no customer with id c_999");
    expect(errorText(await call(client, "update_customer", { id: "c_042", name: "X" }))).toBe("no customer with id c_042");
    expect(errorText(await call(client, "delete_customer", { id: "nope" }))).toBe("no customer with id nope");
  });

  test("missing, wrongly typed and unknown arguments are tool errors naming the argument", async () => {
    const client = await crm();
    expect(errorText(await call(client, "get_customer", {}))).toBe('missing required argument "id"');
    expect(errorText(await call(client, "get_customer", { id: 1 }))).toBe('argument "id" must be a string (got number)');
    expect(errorText(await call(client, "create_customer", { name: "Kay" }))).toBe('missing required argument "email"');
    expect(errorText(await call(client, "update_customer", { id: "c_001", notes: null }))).toBe('argument "notes" must be a string (got null)');
    expect(errorText(await call(client, "send_email", { to: "a@b", subject: "s", body: ["x"] }))).toBe('argument "body" must be a string (got array)');
    expect(errorText(await call(client, "update_customer", { id: "c_001", plan_name: "pro" }))).toBe(
      'unknown argument "plan_name" (update_customer takes: id, name, email, plan, notes)',
    );
    expect(errorText(await call(client, "restore_customer", { ...ADA, id: "bob" }))).toBe('argument "id" must be an id like c_001 (got "bob")');
    // Nothing of that changed anything.
    expect(record(await call(client, "get_customer", { id: "c_001" }))).toEqual(ADA);
  });

  test("an unknown plan is a tool error naming the plan and the allowed values", async () => {
    const client = await crm();
    const expected = 'unknown plan "gold" (allowed: free, pro, enterprise)';
    expect(errorText(await call(client, "create_customer", { name: "Kay", email: "kay@example.com", plan: "gold" }))).toBe(expected);
    expect(errorText(await call(client, "update_customer", { id: "c_001", plan: "gold" }))).toBe(expected);
    expect(errorText(await call(client, "restore_customer", { ...ADA, plan: "gold" }))).toBe(expected);
    // The refused create did not use up an id.
    expect(record(await call(client, "create_customer", { name: "Kay", email: "kay@example.com" })).id).toBe("c_004");
  });

  test("without --state everything stays in memory", async () => {
    const dir = tempDir();
    const client = await crm([], dir);
    expect(record(await call(client, "create_customer", { name: "Kay", email: "kay@example.com" })).id).toBe("c_004");
    await client.close();
    const again = await crm([], dir);
    expect(errorText(await call(again, "get_customer", { id: "c_004" }))).toBe("no customer with id c_004");
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe.concurrent("toy-crm --state", () => {
  test("rewrites the file after every change, in the documented form", async () => {
    const dir = tempDir();
    const path = join(dir, "crm.json");
    const client = await crm(["--state", "crm.json"], dir); // relative to the cwd
    const state = () => readFileSync(path, "utf8");

    // Reads change nothing and write nothing.
    record(await call(client, "get_customer", { id: "c_001" }));
    expect(existsSync(path)).toBe(false);

    const kay = { id: "c_004", name: "Kay Moss", email: "kay@example.com", plan: "free", notes: "" };
    expect(record(await call(client, "create_customer", { name: "Kay Moss", email: "kay@example.com" }))).toEqual(kay);
    expect(state()).toBe(fileText({ ...SEED, c_004: kay }, [], 4));

    const kay2 = { ...kay, plan: "enterprise", notes: "upgraded" };
    expect(record(await call(client, "update_customer", { id: "c_004", plan: "enterprise", notes: "upgraded" }))).toEqual(kay2);
    expect(state()).toBe(fileText({ ...SEED, c_004: kay2 }, [], 4));

    const ada2 = { ...ADA, email: "ada@analytical.engine" };
    expect(record(await call(client, "update_customer", { id: "c_001", email: "ada@analytical.engine" }))).toEqual(ada2);
    expect(state()).toBe(fileText({ c_001: ada2, c_002: GRACE, c_003: ALAN, c_004: kay2 }, [], 4));

    expect(record(await call(client, "delete_customer", { id: "c_002" }))).toEqual(GRACE);
    expect(state()).toBe(fileText({ c_001: ada2, c_003: ALAN, c_004: kay2 }, [], 4));
    expect(errorText(await call(client, "get_customer", { id: "c_002" }))).toBe("no customer with id c_002");

    // restore_customer puts a deleted record back under its id, and overwrites a live one.
    expect(record(await call(client, "restore_customer", GRACE))).toEqual(GRACE);
    expect(record(await call(client, "restore_customer", ADA))).toEqual(ADA);
    expect(state()).toBe(fileText({ ...SEED, c_004: kay2 }, [], 4));

    const sent = record(await call(client, "send_email", { to: "kay@example.com", subject: "Welcome", body: "Hello Kay" }));
    expect(sent).toMatchObject({ to: "kay@example.com", subject: "Welcome", body: "Hello Kay" });
    expect(Object.keys(sent)).toEqual(["to", "subject", "body", "sentAt"]);
    expect(sent.sentAt).toMatch(ISO);
    expect(state()).toBe(fileText({ ...SEED, c_004: kay2 }, [sent], 4));

    // Indentation and order, checked directly as well.
    const lines = state().split("\n");
    expect(lines[1]).toBe('  "customers": {');
    expect(lines[2]).toBe('    "c_001": {');
    expect(lines[3]).toBe('      "id": "c_001",');
    expect(Object.keys(JSON.parse(state()))).toEqual(["customers", "outbox", "lastId"]);
    expect(Object.keys(JSON.parse(state()).customers)).toEqual(["c_001", "c_002", "c_003", "c_004"]);
  });

  test("customers are sorted by id in the file, however they were written", async () => {
    const dir = tempDir();
    const path = join(dir, "crm.json");
    const client = await crm(["--state", path]);
    record(await call(client, "delete_customer", { id: "c_001" }));
    record(await call(client, "create_customer", { name: "Kay", email: "kay@example.com" }));
    record(await call(client, "restore_customer", ADA));
    expect(Object.keys(JSON.parse(readFileSync(path, "utf8")).customers)).toEqual(["c_001", "c_002", "c_003", "c_004"]);
  });

  test("ids are never reused, also across restarts after the highest was deleted", async () => {
    const dir = tempDir();
    const path = join(dir, "crm.json");
    let client = await crm(["--state", path]);
    expect(record(await call(client, "create_customer", { name: "A", email: "a@example.com" })).id).toBe("c_004");
    record(await call(client, "delete_customer", { id: "c_004" }));
    expect(record(await call(client, "create_customer", { name: "B", email: "b@example.com" })).id).toBe("c_005");
    await client.close();

    client = await crm(["--state", path]);
    expect(record(await call(client, "get_customer", { id: "c_005" })).name).toBe("B");
    record(await call(client, "delete_customer", { id: "c_005" }));
    await client.close();
    expect(JSON.parse(readFileSync(path, "utf8")).lastId).toBe(5);
    expect(Object.keys(JSON.parse(readFileSync(path, "utf8")).customers)).toEqual(["c_001", "c_002", "c_003"]);

    client = await crm(["--state", path]);
    expect(record(await call(client, "create_customer", { name: "C", email: "c@example.com" })).id).toBe("c_006");
  });

  test("a file in the bare documented form (no lastId) resumes after its highest id, beyond 999 too", async () => {
    const dir = tempDir();
    const path = join(dir, "crm.json");
    const far = { id: "c_1000", name: "Far", email: "far@example.com", plan: "pro", notes: "" };
    writeFileSync(path, JSON.stringify({ customers: { c_001: ADA, c_1000: far, c_007: { ...ALAN, id: "c_007" } }, outbox: [] }, null, 2));
    const client = await crm(["--state", path]);
    expect(record(await call(client, "get_customer", { id: "c_1000" }))).toEqual(far);
    const next = { id: "c_1001", name: "Next", email: "next@example.com", plan: "free", notes: "" };
    expect(record(await call(client, "create_customer", { name: "Next", email: "next@example.com" }))).toEqual(next);
    // Rewritten sorted by id number (c_007 before c_1000), with the counter added.
    expect(readFileSync(path, "utf8")).toBe(fileText({ c_001: ADA, c_007: { ...ALAN, id: "c_007" }, c_1000: far, c_1001: next }, [], 1001));
  });

  test("over 1000 customers, every change leaves the file exactly as serialising the whole state would", async () => {
    const dir = tempDir();
    const path = join(dir, "crm.json");
    const model = new Map<string, any>();
    for (let n = 1; n <= 1000; n++) {
      const id = `c_${String(n).padStart(3, "0")}`;
      model.set(id, { id, name: `Customer ${n}`, email: `c${n}@example.com`, plan: ["free", "pro", "enterprise"][n % 3], notes: `note ${n}` });
    }
    const sorted = () => Object.fromEntries([...model.entries()].sort(([a], [b]) => Number(a.slice(2)) - Number(b.slice(2))));
    writeFileSync(path, JSON.stringify({ customers: sorted(), outbox: [] }, null, 2) + "\n");
    const client = await crm(["--state", path]);
    let lastId = 1000;
    const outbox: unknown[] = [];
    for (let i = 1; i <= 120; i++) {
      const target = `c_${String(((i * 37) % 1000) + 1).padStart(3, "0")}`;
      let changed: any;
      switch (i % 6) {
        case 0:
          changed = record(await call(client, "create_customer", { name: `New ${i}`, email: `new${i}@example.com`, notes: 'with "quotes"\nand a line' }));
          expect(changed.id).toBe(`c_${++lastId}`);
          model.set(changed.id, changed);
          break;
        case 1:
        case 2:
          if (!model.has(target)) continue;
          changed = record(await call(client, "update_customer", { id: target, notes: `edit ${i} — ✓`, plan: "enterprise" }));
          expect(changed).toEqual({ ...model.get(target), notes: `edit ${i} — ✓`, plan: "enterprise" });
          model.set(target, changed);
          break;
        case 3:
          if (!model.has(target)) continue;
          expect(record(await call(client, "delete_customer", { id: target }))).toEqual(model.get(target));
          model.delete(target);
          break;
        case 4: {
          // Back under an id of its own, beyond every one issued so far: the counter follows.
          const back = { id: `c_${1100 + i}`, name: `Back ${i}`, email: "back@example.com", plan: "pro", notes: "" };
          expect(record(await call(client, "restore_customer", back))).toEqual(back);
          model.set(back.id, back);
          lastId = 1100 + i;
          break;
        }
        case 5:
          outbox.push(record(await call(client, "send_email", { to: "x@example.com", subject: `S${i}`, body: "B" })));
          break;
      }
      expect(readFileSync(path, "utf8")).toBe(fileText(sorted(), outbox, lastId));
    }
  });

  test("changes piped at once are each in the file when answered, also when the server is killed (-9) right after", async () => {
    const dir = tempDir();
    const path = join(dir, "crm.json");
    const customers: Record<string, unknown> = {};
    for (let n = 1; n <= 300; n++) {
      const id = `c_${String(n).padStart(3, "0")}`;
      customers[id] = { id, name: `Customer ${n}`, email: `c${n}@example.com`, plan: "free", notes: "" };
    }
    writeFileSync(path, fileText(customers, [], 300));
    await using session = new LineSession([BIN, "toy-crm", "--state", path]);
    await session.initialize();
    // Each call changes its own customer: what its answer promises can be looked for in the file.
    const frames = Array.from({ length: 300 }, (_, i) => {
      const id = `c_${String(i + 1).padStart(3, "0")}`;
      const [name, args] =
        i % 3 === 0
          ? ["delete_customer", { id }]
          : i % 3 === 1
            ? ["update_customer", { id, notes: `edit ${i + 1}` }]
            : ["create_customer", { name: `New ${i + 1}`, email: "new@example.com" }];
      return JSON.stringify({ jsonrpc: "2.0", id: i + 1, method: "tools/call", params: { name, arguments: args } });
    });
    session.proc.stdin.write(frames.join("\n") + "\n");
    session.proc.stdin.flush();
    const first = await session.next((m) => m.id > 0);
    session.proc.kill("SIGKILL");
    await session.exited();

    const answers = [first, ...session.lines.map((line) => JSON.parse(line)).filter((m) => m.id > 0)];
    const file = JSON.parse(readFileSync(path, "utf8")); // whole: written atomically
    for (const answer of answers) {
      const changed = answer.result.structuredContent;
      const kind = (answer.id - 1) % 3;
      if (kind === 0) expect(file.customers[changed.id]).toBeUndefined();
      else expect(file.customers[changed.id]).toEqual(changed);
      if (kind === 1) expect(changed.notes).toBe(`edit ${answer.id}`);
    }
  });

  test("a restored id counts as issued", async () => {
    const dir = tempDir();
    const client = await crm(["--state", join(dir, "crm.json")]);
    record(await call(client, "restore_customer", { ...ALAN, id: "c_010" }));
    expect(record(await call(client, "create_customer", { name: "K", email: "k@example.com" })).id).toBe("c_011");
  });

  test("a malformed state file stops the server with exit 2, naming the file and the problem, and is left alone", async () => {
    const dir = tempDir();
    const path = join(dir, "crm.json");
    const cases: Array<[string, string]> = [
      ['{"customers": {', "not valid JSON"],
      [
        JSON.stringify({ customers: { c_001: { ...ADA, plan: "gold" } }, outbox: [] }),
        'customers.c_001.plan must be one of free, pro, enterprise (got "gold")',
      ],
      [JSON.stringify({ customers: { c_001: { ...ADA, id: "c_002" } }, outbox: [] }), 'customers.c_001.id is "c_002", not "c_001"'],
      [JSON.stringify({ customers: SEED }), 'the top level is missing "outbox"'],
      [JSON.stringify({ customers: SEED, outbox: [{ to: "x" }] }), 'outbox[0] is missing "subject"'],
      [JSON.stringify({ customers: SEED, outbox: [], extra: 1 }), 'the top level has an unknown key "extra"'],
      [JSON.stringify([1, 2]), "the top level must be an object (got array)"],
    ];
    for (const [text, problem] of cases) {
      writeFileSync(path, text);
      const result = await run(["toy-crm", "--state", "crm.json"], { cwd: dir, stdin: "" });
      expect(result.code).toBe(2);
      expect(result.stdout).toBe("");
      expect(result.stderr).toContain(`synartesis: state file ${path}: ${problem}`);
      expect(readFileSync(path, "utf8")).toBe(text);
    }
  });

  test("a state file in a folder that does not exist is a configuration error", async () => {
    const dir = tempDir();
    const result = await run(["toy-crm", "--state", join(dir, "missing", "crm.json")], { stdin: "" });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`the folder ${join(dir, "missing")} does not exist`);
  });

  test("two servers on one file see each other's changes", async () => {
    const dir = tempDir();
    const path = join(dir, "crm.json");
    const agent = await crm(["--state", path]);
    const undo = await crm(["--state", path]);
    record(await call(agent, "update_customer", { id: "c_001", notes: "damaged" }));
    expect(record(await call(undo, "get_customer", { id: "c_001" })).notes).toBe("damaged");
    record(await call(undo, "restore_customer", ADA));
    expect(record(await call(agent, "get_customer", { id: "c_001" }))).toEqual(ADA);
    expect(record(await call(agent, "create_customer", { name: "K", email: "k@example.com" })).id).toBe("c_004");
    expect(record(await call(undo, "create_customer", { name: "L", email: "l@example.com" })).id).toBe("c_005");
    expect(Object.keys(JSON.parse(readFileSync(path, "utf8")).customers)).toEqual(["c_001", "c_002", "c_003", "c_004", "c_005"]);
  });
});

describe.concurrent("toy-crm idempotency keys", () => {
  test("a repeated key returns the first result and changes nothing again, across restarts", async () => {
    const dir = tempDir();
    const path = join(dir, "crm.json");
    let client = await crm(["--state", path]);
    const email = { to: "ada@example.com", subject: "Hi", body: "Once" };
    const first = await call(client, "send_email", email, { [KEY]: "k-1" });
    const again = await call(client, "send_email", email, { [KEY]: "k-1" });
    expect(again).toEqual(first);
    const sent = record(first);
    expect(JSON.parse(readFileSync(path, "utf8")).outbox).toEqual([sent]);

    const created = record(await call(client, "create_customer", { name: "K", email: "k@example.com" }, { [KEY]: "k-2" }));
    expect(created.id).toBe("c_004");
    await client.close();

    // The state file keeps its documented form; the keys are appended beside it.
    expect(readFileSync(path, "utf8")).toBe(fileText({ ...SEED, c_004: created }, [sent], 4));
    expect(readFileSync(`${path}.keys.jsonl`, "utf8")).toBe(
      [JSON.stringify({ key: "k-1", tool: "send_email", result: sent }), JSON.stringify({ key: "k-2", tool: "create_customer", result: created }), ""].join(
        "\n",
      ),
    );

    client = await crm(["--state", path]);
    expect(record(await call(client, "send_email", email, { [KEY]: "k-1" }))).toEqual(sent);
    expect(record(await call(client, "create_customer", { name: "K", email: "k@example.com" }, { [KEY]: "k-2" }))).toEqual(created);
    expect(JSON.parse(readFileSync(path, "utf8")).outbox).toHaveLength(1);
    expect(Object.keys(JSON.parse(readFileSync(path, "utf8")).customers)).toEqual(["c_001", "c_002", "c_003", "c_004"]);

    // Without a key, or with a new one, the call applies again.
    expect(record(await call(client, "send_email", email)).body).toBe("Once");
    expect(record(await call(client, "send_email", email, { [KEY]: "k-3" })).body).toBe("Once");
    expect(JSON.parse(readFileSync(path, "utf8")).outbox).toHaveLength(3);
  });

  test("a delete retried under its key returns the deleted record instead of an error", async () => {
    const client = await crm();
    const first = record(await call(client, "delete_customer", { id: "c_003" }, { [KEY]: "undo-1" }));
    expect(first).toEqual(ALAN);
    expect(record(await call(client, "delete_customer", { id: "c_003" }, { [KEY]: "undo-1" }))).toEqual(ALAN);
    expect(errorText(await call(client, "delete_customer", { id: "c_003" }))).toBe("no customer with id c_003");
  });

  test("a failed call is not remembered, a key reused for another tool is refused, a non-string key is refused", async () => {
    const client = await crm();
    expect(errorText(await call(client, "update_customer", { id: "c_009", notes: "x" }, { [KEY]: "k" }))).toBe("no customer with id c_009");
    record(await call(client, "restore_customer", { ...ALAN, id: "c_009" }));
    expect(record(await call(client, "update_customer", { id: "c_009", notes: "x" }, { [KEY]: "k" })).notes).toBe("x");
    expect(errorText(await call(client, "delete_customer", { id: "c_009" }, { [KEY]: "k" }))).toBe('idempotency key "k" was already used for update_customer');
    expect(errorText(await call(client, "delete_customer", { id: "c_009" }, { [KEY]: 7 }))).toBe(
      '_meta "synartesis/idempotency-key" must be a string (got number)',
    );
    expect(record(await call(client, "get_customer", { id: "c_009" })).notes).toBe("x");
  });
});

/** A resource read returns one JSON text content under the URI asked for. */
async function readJson(client: Client, uri: string): Promise<unknown> {
  const { contents } = await client.readResource({ uri });
  expect(contents).toHaveLength(1);
  const content = contents[0] as { uri: string; mimeType?: string; text?: string };
  expect(content.uri).toBe(uri);
  expect(content.mimeType).toBe("application/json");
  return JSON.parse(content.text!);
}

describe.concurrent("toy-crm resources", () => {
  test("crm://customers lists everyone; crm://customers/{id} reads one; a missing id is a JSON-RPC error", async () => {
    const client = await crm();
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toEqual(["crm://customers", "crm://customers/c_001", "crm://customers/c_002", "crm://customers/c_003"]);
    expect(resources.every((r) => r.mimeType === "application/json")).toBe(true);

    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates).toHaveLength(1);
    expect(resourceTemplates[0]!.uriTemplate).toBe("crm://customers/{id}");

    expect(await readJson(client, "crm://customers")).toEqual([ADA, GRACE, ALAN]);
    expect(await readJson(client, "crm://customers/c_002")).toEqual(GRACE);

    record(await call(client, "delete_customer", { id: "c_002" }));
    const error = await client.readResource({ uri: "crm://customers/c_002" }).then(
      () => undefined,
      (e) => e,
    );
    expect(error?.code).toBe(-32002);
    expect(error?.message).toContain("no customer with id c_002");
    expect(await readJson(client, "crm://customers")).toEqual([ADA, ALAN]);
  });
});

describe.concurrent("toy-crm process", () => {
  const frame = (id: number, method: string, params?: unknown) => JSON.stringify({ jsonrpc: "2.0", id, method, ...(params === undefined ? {} : { params }) });

  /** Send every frame, close stdin, and collect the replies by id once the process has exited. */
  async function exchange(frames: string[]): Promise<{ code: number; replies: Map<number | null, any>; stderr: string }> {
    const result = await run(["toy-crm"], { stdin: [initializeFrame(), ...frames].join("\n") + "\n" });
    const lines = result.stdout.split("\n");
    expect(lines.pop()).toBe(""); // every frame ends with a newline
    const replies = new Map<number | null, any>();
    for (const line of lines) {
      const message = JSON.parse(line);
      expect(message.jsonrpc).toBe("2.0");
      replies.set(message.id, message);
    }
    return { code: result.code, replies, stderr: result.stderr };
  }

  test("writes only protocol frames, answers everything that arrived, and exits 0 when stdin closes", async () => {
    const { code, replies } = await exchange([
      frame(1, "tools/call", { name: "get_customer", arguments: { id: "c_001" } }),
      frame(2, "tools/list"),
      frame(3, "no/such/method"),
      // Non-object arguments are a JSON-RPC error, not a crash.
      frame(4, "tools/call", { name: "get_customer", arguments: "c_001" }),
      frame(5, "tools/call", { name: "no_such_tool", arguments: {} }),
      frame(6, "tools/call", { name: "get_customer", arguments: { id: "c_003" } }),
    ]);
    expect(code).toBe(0);
    expect([...replies.keys()].sort()).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(replies.get(1).result.structuredContent).toEqual(ADA);
    expect(replies.get(2).result.tools).toHaveLength(6);
    expect(replies.get(3).error.code).toBe(-32601);
    expect(replies.get(4).error.message).toContain("arguments");
    expect(replies.get(5).error).toEqual({ code: -32602, message: 'unknown tool "no_such_tool"' });
    expect(replies.get(6).result.structuredContent).toEqual(ALAN);
  });

  test("speaks JSON-RPC as a 2025 server: the client's revision or the newest, ping, malformed lines answered, notifications and cancelled calls not", async () => {
    const { code, replies, stderr } = await exchange([
      frame(1, "initialize", { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "old", version: "1" } }),
      frame(2, "initialize", { protocolVersion: "1999-01-01", capabilities: {}, clientInfo: { name: "odd", version: "1" } }),
      frame(3, "ping"),
      "this is not JSON",
      JSON.stringify({ jsonrpc: "2.0", id: 4 }),
      frame(5, "tools/call", { name: 5, arguments: {} }),
      frame(6, "resources/read", {}),
      JSON.stringify({ jsonrpc: "2.0", method: "notifications/whatever" }),
      // A call and its cancellation in one line (a batch), so they arrive together: the call's answer is never sent.
      JSON.stringify([
        { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "get_customer", arguments: { id: "c_001" } } },
        { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 7, reason: "changed my mind" } },
      ]),
      frame(8, "tools/call", { name: "get_customer", arguments: { id: "c_002" } }),
    ]);
    expect(code).toBe(0);
    expect(stderr).toBe("");
    expect([...replies.keys()].sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 8, null]);
    expect(replies.get(0).result.protocolVersion).toBe("2025-06-18");
    expect(replies.get(1).result.protocolVersion).toBe("2025-03-26");
    expect(replies.get(2).result).toEqual({
      protocolVersion: "2025-11-25",
      capabilities: { tools: {}, resources: {} },
      serverInfo: { name: "synartesis-toy-crm", title: "Synartesis toy CRM", version: VERSION },
      instructions: expect.stringContaining("A toy CRM"),
    });
    expect(replies.get(3).result).toEqual({});
    expect(replies.get(null).error).toEqual({ code: -32700, message: "Parse error: the line is not valid JSON" });
    expect(replies.get(4).error).toEqual({ code: -32600, message: "Invalid Request: no method" });
    expect(replies.get(5).error).toEqual({ code: -32602, message: 'tools/call needs "name", a tool name (got number)' });
    expect(replies.get(6).error).toEqual({ code: -32602, message: 'resources/read needs "uri", a string (got undefined)' });
    expect(replies.get(8).result.structuredContent).toEqual(GRACE);
  });

  test("an error answer is written before exit even when stdin closes right after the line it answers", async () => {
    for (const line of ["{bad", JSON.stringify({ jsonrpc: "2.0", id: 7 }), frame(8, "tools/call", 5)]) {
      const result = await run(["toy-crm"], { stdin: line + "\n" });
      expect(result.code).toBe(0);
      const [answer, ...more] = result.stdout
        .trimEnd()
        .split("\n")
        .map((text) => JSON.parse(text));
      expect(more).toEqual([]);
      expect(answer.error.code).toBeOneOf([-32700, -32600, -32602]);
    }
  });

  test("a cancelled call is not answered, also under an id beyond 2^53 (written as sent)", async () => {
    const big = "9007199254740993";
    const line =
      `[{"jsonrpc":"2.0","id":${big},"method":"tools/call","params":{"name":"get_customer","arguments":{"id":"c_001"}}},` +
      `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":${big}}}]`;
    const result = await run(["toy-crm"], { stdin: [initializeFrame(), line, frame(2, "ping")].join("\n") + "\n" });
    expect(result.code).toBe(0);
    expect(result.stdout).not.toContain(big);
    expect(
      result.stdout
        .trimEnd()
        .split("\n")
        .map((text) => JSON.parse(text).id),
    ).toEqual([0, 2]);
  });

  test("large replies still pending at stdin EOF are all delivered before exit", async () => {
    const notes = "x".repeat(200_000);
    const frames = Array.from({ length: 20 }, (_, i) =>
      frame(i + 1, "tools/call", { name: "create_customer", arguments: { name: `N${i + 1}`, email: "n@example.com", notes } }),
    );
    const { code, replies, stderr } = await exchange([...frames, frame(99, "resources/read", { uri: "crm://customers" })]);
    expect(code).toBe(0);
    expect(stderr).toBe("");
    for (let i = 1; i <= 20; i++) expect(replies.get(i).result.structuredContent.id).toBe(`c_${String(i + 3).padStart(3, "0")}`);
    const list = JSON.parse(replies.get(99).result.contents[0].text);
    expect(list).toHaveLength(23);
    expect(list[22]).toEqual({ id: "c_023", name: "N20", email: "n@example.com", plan: "free", notes });
  });

  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    test(`exits 0 on ${signal}`, async () => {
      const session = new LineSession([BIN, "toy-crm"]);
      await session.initialize();
      session.proc.kill(signal);
      expect(await session.proc.exited).toBe(0);
    });
  }

  test("--help describes --state", async () => {
    const result = await run(["toy-crm", "--help"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("--state");
    expect(result.stdout).toContain("toy-crm");
  });
});

describe.concurrent("the toy is never left behind", () => {
  test("when the process that started it is killed -9 while answers are owed and nobody reads them, it exits by itself", async () => {
    const dir = tempDir();
    // The shell starts the toy on its own stdin (an asynchronous command would get /dev/null) and waits;
    // the test keeps the pipes, so only the parent's death can tell the toy.
    const shell = Bun.spawn(["sh", "-c", `exec 3<&0; "${BIN}" toy-crm --state ./crm.json <&3 3<&- & echo $!; wait`], {
      cwd: dir,
      stdin: "pipe",
      stdout: "pipe",
      stderr: "ignore",
    });
    const reader = shell.stdout.getReader();
    let printed = "";
    while (!printed.includes("\n")) printed += new TextDecoder().decode((await reader.read()).value);
    await using toy = reap(Number(printed.trim()));
    const alive = () => {
      try {
        process.kill(toy.pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    expect(alive()).toBe(true);
    // More answers than a pipe holds, which nobody will read: the toy cannot finish them.
    const requests = Array.from({ length: 3000 }, (_, i) =>
      JSON.stringify({ jsonrpc: "2.0", id: i + 1, method: "tools/call", params: { name: "get_customer", arguments: { id: "c_001" } } }),
    );
    shell.stdin.write([initializeFrame(0), ...requests, ""].join("\n"));
    await shell.stdin.flush();
    shell.kill("SIGKILL");
    await shell.exited;
    await until(() => !alive(), "the orphaned toy to exit");
    shell.stdin.end();
    reader.releaseLock();
  });
});
