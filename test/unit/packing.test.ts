// Packed bodies (src/journal/packing.ts): what goes in comes out byte for
// byte, whatever its size or characters; a dictionary of the tool's own
// samples makes small bodies much smaller; a body that cannot be read says why.
import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { deflateRawSync } from "node:zlib";
import {
  BODY_COLUMNS,
  DICTIONARY_SAMPLES,
  dictionaryIdOf,
  encodeBody,
  maySample,
  PACK_THRESHOLD,
  packBody,
  ReusedZlib,
  ToolDictionaries,
  unpackBody,
  type Body,
  type Dictionary,
} from "../../src/journal/packing.ts";

/** A body like the toy CRM's update_customer: the record before, after, in the result twice, in the inverse. */
function crmBody(n: number): Body {
  const before = { id: `c_${n}`, name: `Customer ${n}`, email: `customer${n}@example.com`, plan: "pro", notes: `account opened, batch ${n % 17}` };
  const after = { ...before, plan: "free", notes: `edit ${n} by the agent` };
  return {
    args: JSON.stringify({ id: before.id, plan: "free", notes: after.notes }),
    snapshot: JSON.stringify(before),
    post_state: JSON.stringify(after),
    result: JSON.stringify({ content: [{ type: "text", text: JSON.stringify(after, null, 2) }], structuredContent: after }),
    inverse: JSON.stringify({ server: "crm", tool: "update_customer", args: before }),
    verify: JSON.stringify({ server: "crm", tool: "get_customer", args: { id: before.id }, absentWhen: ["no customer with id"] }),
  };
}

const none = () => undefined;

describe("packing a body", () => {
  test("every column comes back exactly: control characters, U+0000, astral characters, empty strings, a subset of columns", () => {
    const body: Body = { args: '{"notes":"line\\nbreak \\u0000 日本 🦀"}', result: `raw \u0000 text "quoted" \x1b[2J ${"padding ".repeat(20)}`, verify: "" };
    const packed = packBody(body, undefined)!;
    expect(packed).toBeInstanceOf(Uint8Array);
    expect(unpackBody(packed, none)).toEqual(body);
  });

  test("a short body stays as text; one that would not shrink stays as text", () => {
    expect(packBody({ args: '{"id":"c_001"}' }, undefined)).toBeUndefined();
    const random = Array.from({ length: PACK_THRESHOLD + 4 }, () => String.fromCharCode(33 + Math.floor(Math.random() * 90))).join("");
    expect(packBody({ result: random }, undefined)).toBeUndefined();
    expect(PACK_THRESHOLD).toBeGreaterThan(0);
  });

  test("a body of several MiB (a large file's content) comes back exactly, and far smaller", () => {
    const lines = Array.from({ length: 60_000 }, (_, i) => `line ${i}: ${"lorem ipsum dolor ".repeat(i % 7)}`).join("\n");
    const body: Body = {
      args: JSON.stringify({ path: "/tmp/big.txt" }),
      result: JSON.stringify({ content: [{ type: "text", text: lines }] }),
      snapshot: JSON.stringify(lines),
    };
    expect(body.result!.length).toBeGreaterThan(3_000_000);
    const packed = packBody(body, undefined)!;
    expect(packed.length).toBeLessThan(body.result!.length / 10);
    expect(unpackBody(packed, none)).toEqual(body);
  });

  test("against a dictionary of the tool's own samples a record-sized body packs to about a tenth of its text", () => {
    const dictionaries = new ToolDictionaries();
    let content: Uint8Array | undefined;
    for (let n = 1; n <= DICTIONARY_SAMPLES; n++) content = dictionaries.proposal("crm", "update_customer", crmBody(n));
    expect(content).toBeInstanceOf(Uint8Array);
    const dictionary: Dictionary = { id: 7, content: content! };
    const body = crmBody(517);
    const text = BODY_COLUMNS.reduce((size, column) => size + (body[column]?.length ?? 0), 0);
    const alone = packBody(body, undefined)!;
    const against = packBody(body, dictionary)!;
    expect(dictionaryIdOf(against)).toBe(7);
    expect(dictionaryIdOf(alone)).toBe(0);
    expect(against.length).toBeLessThan(alone.length / 2);
    expect(against.length).toBeLessThan(text / 8);
    expect(unpackBody(against, (id) => (id === 7 ? dictionary.content : undefined))).toEqual(body);
  });

  test("a body that cannot be read says why: its dictionary missing, another dictionary, an unknown layout, a cut", () => {
    const dictionary: Dictionary = { id: 3, content: encodeBody(crmBody(1)) };
    const packed = packBody(crmBody(2), dictionary)!;
    expect(() => unpackBody(packed, none)).toThrow("it was compressed against dictionary 3, which the journal does not have");
    expect(() => unpackBody(packed, () => encodeBody(crmBody(900)))).toThrow();
    expect(() => unpackBody(Uint8Array.from([9, 0, 1, 2]), none)).toThrow("its layout (9) is not one this version reads");
    expect(() => unpackBody(packed.subarray(0, packed.length - 5), () => dictionary.content)).toThrow();
    expect(() => unpackBody(packed.subarray(0, packed.length - 1), () => dictionary.content)).toThrow();
  });

  test("bodies of several dictionaries unpacked in turn, damaged ones among them, each come back exactly", () => {
    const dictionaries: Dictionary[] = [1, 2, 3].map((id) => ({ id, content: encodeBody(crmBody(id * 1000)) }));
    const bodies = Array.from({ length: 60 }, (_, n) => ({ body: crmBody(n), dictionary: n % 4 === 3 ? undefined : dictionaries[n % 4] }));
    const packed = bodies.map(({ body, dictionary }) => packBody(body, dictionary)!);
    const content = (id: number) => dictionaries.find((dictionary) => dictionary.id === id)?.content;
    for (const [n, { body }] of bodies.entries()) {
      if (n % 10 === 5) {
        const damaged = Uint8Array.from(packed[n]!);
        damaged.fill(0xff, 4, 9);
        expect(() => unpackBody(damaged, content)).toThrow();
      }
      expect(unpackBody(packed[n]!, content)).toEqual(body);
    }
  });

  test("bodies of more dictionaries than the handles kept, packed and unpacked in turn twice, each come back exactly", () => {
    const dictionaries: Dictionary[] = Array.from({ length: 20 }, (_, n) => ({ id: n + 1, content: encodeBody(crmBody(n * 97)) }));
    const content = (id: number) => dictionaries[id - 1]?.content;
    for (const round of [1, 2]) {
      for (const [n, dictionary] of dictionaries.entries()) {
        const body = crmBody(round * 1000 + n);
        expect(unpackBody(packBody(body, dictionary)!, content)).toEqual(body);
      }
    }
  });

  test("a zlib handle kept for a dictionary works here both ways (not only the streams it falls back to), and says what it left", () => {
    const dictionary = encodeBody(crmBody(7));
    const plain = encodeBody(crmBody(8));
    const compressed = deflateRawSync(plain, { level: 9, dictionary });
    const deflater = ReusedZlib.deflater(dictionary);
    for (const _ of [1, 2]) {
      const out = Buffer.alloc(plain.length);
      const left = deflater.run(plain, out)!;
      expect(left.unread).toBe(0);
      expect(out.subarray(0, out.length - left.unfilled)).toEqual(Buffer.from(compressed));
    }
    const inflater = ReusedZlib.inflater(dictionary);
    const back = Buffer.alloc(plain.length + 1);
    expect(inflater.run(compressed, back)).toEqual({ unfilled: 1, unread: 0 });
    expect(back.subarray(0, plain.length)).toEqual(Buffer.from(plain));
    expect(inflater.run(compressed, Buffer.alloc(plain.length - 1))?.unfilled).toBe(0);
    expect(inflater.run(Uint8Array.from([0xff, 0xff, 0xff, 0xff, 0x12]), Buffer.alloc(plain.length))).toBeUndefined();
    expect(inflater.run(compressed, back)).toEqual({ unfilled: 1, unread: 0 });
    expect(back.subarray(0, plain.length)).toEqual(Buffer.from(plain));
  });
});

describe("a tool's dictionary", () => {
  test("is proposed once DICTIONARY_SAMPLES bodies with an outcome were seen; bodies without one, or too large, are no samples", () => {
    const dictionaries = new ToolDictionaries();
    const { result: _result, ...intent } = crmBody(1);
    expect(maySample(intent)).toBe(false);
    expect(maySample({ ...crmBody(1), result: "x".repeat(20_000) })).toBe(false);
    expect(dictionaries.proposal("crm", "update_customer", intent)).toBeUndefined();
    const proposals = Array.from({ length: DICTIONARY_SAMPLES }, (_, i) => dictionaries.proposal("crm", "update_customer", crmBody(i + 1)));
    expect(proposals.slice(0, -1)).toEqual(Array(DICTIONARY_SAMPLES - 1).fill(undefined));
    expect(proposals.at(-1)!.length).toBe(Array.from({ length: DICTIONARY_SAMPLES }, (_, i) => encodeBody(crmBody(i + 1)).length).reduce((a, b) => a + b));
    // Another tool gathers its own.
    expect(dictionaries.proposal("crm", "delete_customer", crmBody(1))).toBeUndefined();
  });

  test("what is known of it: never asked is a question; none found is asked again only for a body that may be a sample", () => {
    const dictionaries = new ToolDictionaries();
    expect(dictionaries.known("crm", "get_customer", crmBody(1))).toBeUndefined();
    dictionaries.remember("crm", "get_customer", null);
    const { result: _result, ...intent } = crmBody(1);
    expect(dictionaries.known("crm", "get_customer", intent)).toBeNull();
    expect(dictionaries.known("crm", "get_customer", crmBody(1))).toBeUndefined();
    const dictionary = { id: 1, content: encodeBody(crmBody(1)) };
    dictionaries.remember("crm", "get_customer", dictionary);
    expect(dictionaries.known("crm", "get_customer", crmBody(2))).toBe(dictionary);
    expect(dictionaries.contents.get(1)).toBe(dictionary.content);
  });
});

describe("a read's row, packed off the path of its answer", () => {
  const resultText = JSON.stringify({ content: [{ type: "text", text: "a customer record ".repeat(20) }] });

  /** A new journal file with run-1 in it, and how to open it again. */
  async function journalWithRun() {
    const { openSqliteJournal } = await import("../../src/journal/sqlite/journal.ts");
    const path = join(mkdtempSync(join(tmpdir(), "syn-packing-")), "journal.db");
    const journal = openSqliteJournal(path, { create: true });
    await journal.startRun({ id: "run-1", label: "agent", startedAt: "2026-12-02T00:00:00.000Z" });
    return { path, journal, reopen: () => openSqliteJournal(path, { create: false }) };
  }

  test("written as text, readable at once, packed by the time the journal closes (or a moment later)", async () => {
    const { path, journal, reopen } = await journalWithRun();
    const base = { runId: "run-1", server: "crm", tool: "get_customer", args: { id: "c_001" }, ts: "2026-12-02T00:00:01.000Z" };
    const read = await journal.insertAction({ ...base, id: "read-1", class: "readonly", status: "applied", resultText });
    expect((await journal.getAction(read.id))?.resultText).toBe(resultText);
    const raw = new Database(path, { readonly: true });
    expect(raw.query("SELECT packed IS NULL AS text FROM actions WHERE id = 'read-1'").get()).toEqual({ text: 1 });
    await journal.close();
    expect(raw.query("SELECT packed IS NULL AS text, result FROM actions WHERE id = 'read-1'").get()).toEqual({ text: 0, result: null });
    raw.close();
    const again = reopen();
    expect((await again.getAction("read-1"))?.resultText).toBe(resultText);
    await again.close();
  });

  test("packing it copies nothing for the chain (what the row says is the same), and its run still verifies", async () => {
    const { verifyRun } = await import("../../src/journal/chain.ts");
    const { path, journal, reopen } = await journalWithRun();
    // Every copy the journal takes for its chain, as it is taken (a trigger of the file's: it sees every connection's).
    const spy = new Database(path);
    spy.run(`CREATE TABLE copies_seen (id TEXT, packed INTEGER);
             CREATE TRIGGER copy_seen AFTER INSERT ON chain_actions BEGIN INSERT INTO copies_seen VALUES (NEW.id, NEW.packed IS NOT NULL); END`);
    const base = { runId: "run-1", server: "crm", tool: "get_customer", args: { id: "c_001" }, class: "readonly" as const, status: "applied" as const };
    for (const n of [1, 2, 3, 4, 5, 6]) await journal.insertAction({ ...base, id: `read-${n}`, ts: `2026-12-02T00:00:0${n}.000Z`, resultText });
    await journal.close();
    expect(spy.query("SELECT count(*) AS n FROM actions WHERE packed IS NOT NULL").get()).toEqual({ n: 6 });
    expect(spy.query("SELECT id, packed FROM copies_seen ORDER BY id").all()).toEqual([1, 2, 3, 4, 5, 6].map((n) => ({ id: `read-${n}`, packed: 0 })));
    spy.close();
    const again = reopen();
    expect(verifyRun("run-1", await again.getRun("run-1"), await again.actionStatesOf("run-1"), await again.chainOf("run-1"))).toEqual([]);
    await again.close();
  });
});
