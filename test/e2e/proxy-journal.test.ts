// What the proxy writes to the journal under load and with large values
// (R-PROXY-5/6, R-PROXY-11, R-JOURNAL): a burst of 200 writes is serialised,
// each row holds its own call's before and after, and walking the journalled
// inverses backwards restores the state file; several MiB go through exactly.
// The tests are independent: they run side by side.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { BIN, connect, initializeFrame, LineSession, run } from "../helpers.ts";
import { crmStateText, crmWorkspace, INITIALIZED, journalRows, journalRuns, jsonFrame, SEED } from "../fixtures/proxy-kit.ts";

// Each file sets its own: the preload's default reaches only the first file bun runs.
setDefaultTimeout(60_000);

const PLANS = ["free", "pro", "enterprise"];

describe.concurrent("200 update_customer calls piped in at once", () => {
  test("are all answered, journalled in execution order, and undone exactly by their inverses", async () => {
    const original = crmStateText();
    const ws = crmWorkspace(original);
    await using proxy = new LineSession([BIN, "proxy", "--manifest", ws.manifest, "--log-level", "warn"], { cwd: ws.dir });

    const calls = Array.from({ length: 200 }, (_, i) => {
      const id = `c_00${(i % 3) + 1}`;
      const patch: Record<string, string> = { id, notes: `note ${i} of 200: "quoted" \\ back\u00e9` };
      if (i % 2 === 0) patch.plan = PLANS[i % 3]!;
      if (i % 5 === 0) patch.name = `Name ${i}`;
      if (i % 7 === 0) patch.email = `e${i}@example.com`;
      return patch;
    });
    // Every frame in one write: the proxy gets them as fast as the pipe carries them.
    const frames = [
      initializeFrame(0, "burst-agent"),
      INITIALIZED,
      ...calls.map((args, i) => jsonFrame(i + 1, "tools/call", { name: "update_customer", arguments: args })),
    ];
    proxy.proc.stdin.write(frames.join("\n") + "\n");
    proxy.proc.stdin.flush();

    expect((await proxy.response(0)).result.serverInfo.name).toBe("synartesis-toy-crm");
    for (let i = 1; i <= 200; i++) {
      const reply = await proxy.response(i, 60_000);
      expect(reply.result?.isError).toBeFalsy();
      expect(reply.result.structuredContent).toMatchObject(calls[i - 1]!);
    }
    expect(await proxy.close()).toBe(0);

    const [runRow] = journalRuns(ws.journal);
    expect(runRow).toMatchObject({ label: "burst-agent", status: "complete" });
    const rows = journalRows(ws.journal);
    expect(rows).toHaveLength(200);
    expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
    // Each row is one of the 200 calls, each call exactly once.
    expect(rows.map((r) => JSON.parse(r.args)).sort(byNotes)).toEqual([...calls].sort(byNotes));

    // Every snapshot is the previous row's post-state for the same customer,
    // and every post-state is that snapshot with this call's patch applied:
    // pre-read, write and post-read of one call never interleaved with another.
    const last = new Map<string, unknown>(Object.entries(structuredClone(SEED)));
    for (const row of rows) {
      expect(row).toMatchObject({ tool: "update_customer", class: "reversible", status: "applied", error: null, warnings: null });
      const args = JSON.parse(row.args) as Record<string, string>;
      const snapshot = JSON.parse(row.snapshot!);
      const post = JSON.parse(row.post_state!);
      expect({ seq: row.seq, snapshot }).toEqual({ seq: row.seq, snapshot: last.get(args.id!) });
      expect(post).toEqual({ ...snapshot, ...args });
      expect(JSON.parse(row.result!).structuredContent).toEqual(post);
      expect(JSON.parse(row.inverse!)).toEqual({
        server: "crm",
        tool: "update_customer",
        args: { id: args.id, name: snapshot.name, email: snapshot.email, plan: snapshot.plan, notes: snapshot.notes },
      });
      last.set(args.id!, post);
    }
    const afterRun = JSON.parse(readFileSync(ws.state, "utf8"));
    expect(afterRun.customers).toEqual(Object.fromEntries(last));

    // Undo by hand: every journalled inverse, newest first, against a fresh toy CRM on the same file.
    await using crm = await connect(BIN, ["toy-crm", "--state", ws.state]);
    const client = crm.client;
    for (const row of [...rows].reverse()) {
      const inverse = JSON.parse(row.inverse!) as { server: string; tool: string; args: Record<string, unknown> };
      const result = await client.callTool({ name: inverse.tool, arguments: inverse.args });
      expect(result.isError).toBeFalsy();
    }
    await client.close();
    const restored = readFileSync(ws.state, "utf8");
    expect(JSON.parse(restored).customers).toEqual(JSON.parse(original).customers);
    // Inverses sent without _meta leave no idempotency keys: the whole file is as it was.
    expect(restored).toBe(original);
  }, 180_000);
});

function byNotes(a: Record<string, string>, b: Record<string, string>): number {
  return a.notes! < b.notes! ? -1 : a.notes! > b.notes! ? 1 : 0;
}

/** A string of `size` UTF-16 units mixing what JSON escapes, multi-byte text and astral characters. */
function bigText(size: number, seed: string): string {
  const unit = `${seed} \u00e9\u00e8 "q" \\ \n\t \u2028 \ud83d\ude00 / <>&' \u0001 `;
  let text = "";
  while (text.length < size) text += unit + text.length.toString(36) + " ";
  text = text.slice(0, size);
  // Do not end in half a surrogate pair.
  return /[\ud800-\udbff]$/.test(text) ? text.slice(0, -1) + "." : text;
}

describe.concurrent("several MiB through the proxy", () => {
  test("a 4 MiB notes value is carried, journalled exactly, and undone byte for byte by `synartesis undo`", async () => {
    const MiB = 1024 * 1024;
    const before = bigText(4 * MiB, "before");
    const after = bigText(4 * MiB, "after");
    const original = crmStateText({ ...SEED, c_002: { ...SEED.c_002!, notes: before } });
    const ws = crmWorkspace(original);

    // Writing and reading back 4 MiB takes what the machine gives it: the drain is no budget for it.
    const result = await run(["proxy", "--manifest", ws.manifest, "--log-level", "warn", "--drain", "600"], {
      cwd: ws.dir,
      stdin: [
        initializeFrame(0, "big-agent"),
        INITIALIZED,
        jsonFrame(1, "tools/call", { name: "update_customer", arguments: { id: "c_002", notes: after } }),
        jsonFrame(2, "tools/call", { name: "get_customer", arguments: { id: "c_002" } }),
        "",
      ].join("\n"),
    });
    expect(result.code).toBe(0);
    // Both 4 MiB replies arrived whole, although the proxy exited right after them.
    const replies = result.stdout
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    expect(replies.map((r) => r.id)).toEqual(expect.arrayContaining([0, 1, 2]));
    const written = replies.find((r) => r.id === 1).result.structuredContent.notes;
    expect(written === after).toBe(true);
    // A read runs alongside a write (R-PROXY-6), so it sees one value or the other, whole.
    const read = replies.find((r) => r.id === 2).result.structuredContent.notes;
    expect(read === after || read === before).toBe(true);
    expect(JSON.parse(readFileSync(ws.state, "utf8")).customers.c_002.notes === after).toBe(true);

    const rows = journalRows(ws.journal);
    const write = rows.find((r) => r.tool === "update_customer")!;
    expect(write.status).toBe("applied");
    expect(JSON.parse(write.args).notes === after).toBe(true);
    expect(JSON.parse(write.snapshot!).notes === before).toBe(true);
    expect(JSON.parse(write.post_state!).notes === after).toBe(true);
    expect(JSON.parse(write.inverse!).args.notes === before).toBe(true);
    expect(JSON.parse(write.result!).structuredContent.notes === after).toBe(true);

    const undo = await run(["undo", "--manifest", ws.manifest], { cwd: ws.dir });
    expect({ code: undo.code, stderr: undo.stderr }).toEqual({ code: 0, stderr: "" });
    const restored = readFileSync(ws.state, "utf8");
    expect(JSON.parse(restored).customers.c_002.notes === before).toBe(true);
    expect(JSON.parse(restored).customers).toEqual(JSON.parse(original).customers);
  }, 180_000);

  test("a 4 MiB argument to a read is carried and journalled exactly", async () => {
    const ws = crmWorkspace(crmStateText());
    const id = bigText(4 * 1024 * 1024, "id");
    const result = await run(["proxy", "--manifest", ws.manifest, "--log-level", "warn"], {
      cwd: ws.dir,
      stdin: [initializeFrame(0), INITIALIZED, jsonFrame(1, "tools/call", { name: "get_customer", arguments: { id } }), ""].join("\n"),
    });
    expect(result.code).toBe(0);
    const reply = result.stdout
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .find((m) => m.id === 1);
    expect(reply.result.isError).toBe(true);
    expect(reply.result.content[0].text === `no customer with id ${id}`).toBe(true);
    const [row] = journalRows(ws.journal);
    expect(row!.status).toBe("failed");
    expect(JSON.parse(row!.args).id === id).toBe(true);
  }, 120_000);
});

test.concurrent("the journal file is where the manifest is, and one proxy run is one complete run", async () => {
  const ws = crmWorkspace();
  writeFileSync(ws.state, crmStateText());
  const result = await run(["proxy", "--manifest", ws.manifest], {
    cwd: ws.dir,
    stdin: [initializeFrame(0, "label-me"), INITIALIZED, jsonFrame(1, "tools/call", { name: "get_customer", arguments: { id: "c_001" } }), ""].join("\n"),
  });
  expect(result.code).toBe(0);
  const runs = journalRuns(ws.journal);
  expect(runs).toHaveLength(1);
  expect(runs[0]).toMatchObject({ label: "label-me", status: "complete" });
  expect(runs[0]!.ended_at).not.toBeNull();
});
