// The toy CRM's state file text (R-SHIP-1), kept up to date change by change,
// must be byte for byte what serialising the whole state would give; the store
// keeps its documented behaviour on a large state, on a failed save and when
// the file is edited by hand, and calls that arrive together share one write
// that holds each of them before any is answered.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { closeSync, openSync, readdirSync, readFileSync, readSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../helpers.ts";
import { CrmError, CrmStore } from "../../src/toy-crm/store.ts";
import { formatId, parseState, StateText, type CrmState, type Customer, type SentEmail } from "../../src/toy-crm/state-file.ts";
import { replacedVersionsRemoved, sameBytes, saveStateFile } from "../../src/toy-crm/state-io.ts";

const PLANS = ["free", "pro", "enterprise"] as const;

/** The straightforward serialisation: sort every customer by id number (then text), JSON.stringify the whole state. */
function straightforward(state: CrmState): string {
  const number = (id: string) => Number(/^c_(\d+)$/.exec(id)![1]);
  const sorted = [...state.customers.values()].sort((a, b) => number(a.id) - number(b.id) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const customers: Record<string, Customer> = {};
  for (const c of sorted) customers[c.id] = { id: c.id, name: c.name, email: c.email, plan: c.plan, notes: c.notes };
  const outbox = state.outbox.map((m) => ({ to: m.to, subject: m.subject, body: m.body, sentAt: m.sentAt }));
  return JSON.stringify({ customers, outbox, lastId: state.lastId }, null, 2) + "\n";
}

// Ids that sort the hard ways: leading zeros (same number, different text), past 999, past 2^53.
const id = fc.oneof(
  fc.integer({ min: 0, max: 1500 }).map(formatId),
  fc.constantFrom("c_0001", "c_001", "c_0000", "c_1000", "c_01000", "c_9007199254740992", "c_9007199254740993", "c_99999999999999999999"),
);
const text = fc.oneof(
  fc.string(),
  fc.string({ unit: "binary" }),
  fc.constantFrom("", "\n", 'say "hi"', "back\\slash", "\u2028\u2029", "\ud800 lone", "tab\there", "é 漢字 😀"),
);
const customer = fc.record({ id, name: text, email: text, plan: fc.constantFrom(...PLANS), notes: text });
const email = fc.record({ to: text, subject: text, body: text, sentAt: text });
const operation = fc.oneof(
  fc.record({ put: customer }),
  fc.record({ remove: id }),
  fc.record({ send: email }),
  fc.record({ lastId: fc.integer({ min: 0, max: 2 ** 40 }) }),
);

describe("the state file's text", () => {
  test("after any sequence of puts, removes and sends it is byte for byte the straightforward serialisation", () => {
    fc.assert(
      fc.property(
        fc.array(customer, { maxLength: 40 }),
        fc.array(email, { maxLength: 3 }),
        fc.array(operation, { maxLength: 60 }),
        (start, sent, operations) => {
          const state: CrmState = { customers: new Map(start.map((c) => [c.id, c])), outbox: [...sent], lastId: 3 };
          const text = new StateText(state);
          expect(text.render(state.lastId)).toBe(straightforward(state));
          for (const op of operations) {
            if ("put" in op) {
              state.customers.set(op.put.id, op.put);
              text.put(op.put);
            } else if ("remove" in op) {
              state.customers.delete(op.remove);
              text.remove(op.remove);
            } else if ("send" in op) {
              state.outbox.push(op.send);
              text.send(op.send);
            } else {
              state.lastId = op.lastId;
            }
            expect(text.render(state.lastId)).toBe(straightforward(state));
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  test("customers by the hundred, added in order, emptied in blocks and put back, keep it byte for byte", () => {
    const state: CrmState = { customers: new Map(), outbox: [], lastId: 0 };
    const text = new StateText(state);
    const customerNumbered = (n: number): Customer => ({ id: formatId(n), name: `N${n}`, email: `${n}@example.com`, plan: PLANS[n % 3]!, notes: "" });
    const put = (n: number) => {
      const c = customerNumbered(n);
      state.customers.set(c.id, c);
      text.put(c);
    };
    const remove = (n: number) => {
      state.customers.delete(formatId(n));
      text.remove(formatId(n));
    };
    const steps: Array<() => void> = [
      ...Array.from({ length: 300 }, (_, i) => () => put(i + 1)),
      ...Array.from({ length: 150 }, (_, i) => () => remove(i + 100)),
      ...Array.from({ length: 150 }, (_, i) => () => put(249 - i)),
      ...Array.from({ length: 300 }, (_, i) => () => remove(300 - i)),
      () => put(7),
    ];
    steps.forEach((step, i) => {
      step();
      if (i % 7 === 0 || i === steps.length - 1) expect(text.render(state.lastId)).toBe(straightforward(state));
    });
    expect(state.customers.size).toBe(1);
  });

  test("an empty CRM is written with {} and []", () => {
    const state: CrmState = { customers: new Map(), outbox: [], lastId: 0 };
    expect(new StateText(state).render(0)).toBe('{\n  "customers": {},\n  "outbox": [],\n  "lastId": 0\n}\n');
    expect(new StateText(state).render(0)).toBe(straightforward(state));
  });
});

/** A state file of `count` customers in the bare documented form (no lastId), as a person would write it. */
function largeState(count: number): string {
  const customers: Record<string, Customer> = {};
  for (let n = 1; n <= count; n++) {
    const id = formatId(n);
    customers[id] = { id, name: `Customer ${n}`, email: `customer${n}@example.com`, plan: PLANS[n % 3]!, notes: n % 5 ? `batch ${n % 7}` : "" };
  }
  return JSON.stringify({ customers, outbox: [] }, null, 2) + "\n";
}

/** A deterministic stream of numbers in [0, 1): the same sequence on every run. */
function numbers(seed: number): () => number {
  let x = seed;
  return () => (x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

/** A store over a state file of 50 customers, saving through a disk that fails with `failure` while `disk.failing`. */
function storeOnDisk(failure = "") {
  const path = join(tempDir(), "crm.json");
  writeFileSync(path, largeState(50));
  const disk = { failing: failure !== "", saves: 0 };
  const store = new CrmStore({
    statePath: path,
    save: (file, chunks) => {
      if (disk.failing) throw new Error(failure);
      disk.saves++;
      writeFileSync(file, Buffer.concat(chunks));
    },
  });
  return { path, before: readFileSync(path, "utf8"), store, disk };
}

describe("saving the file in pieces", () => {
  const bytes = (text: string) => Buffer.from(text, "utf8");

  test("sameBytes: the pieces joined, exactly", () => {
    const chunks = [bytes("ab"), bytes(""), bytes("cdé"), bytes("f")];
    expect(sameBytes(bytes("abcdéf"), chunks)).toBe(true);
    expect(sameBytes(bytes("abcdé"), chunks)).toBe(false);
    expect(sameBytes(bytes("abcdéfg"), chunks)).toBe(false);
    expect(sameBytes(bytes("abXdéf"), chunks)).toBe(false);
    expect(sameBytes(bytes(""), [])).toBe(true);
    // A view into a larger buffer (as the reader gives) compares from its own start.
    expect(sameBytes(bytes("--abcdéf").subarray(2), chunks)).toBe(true);
  });

  test("saveStateFile writes every piece, more than one writev takes, and leaves no temporary file or replaced version", async () => {
    const dir = tempDir();
    const path = join(dir, "crm.json");
    writeFileSync(path, "before");
    const chunks = Array.from({ length: 1500 }, (_, i) => bytes(i % 7 === 0 ? "" : `${i},`.repeat(i % 5)));
    saveStateFile(path, chunks);
    expect(readFileSync(path)).toEqual(Buffer.concat(chunks));
    await replacedVersionsRemoved();
    expect(readdirSync(dir)).toEqual(["crm.json"]);
  });

  test("saveStateFile creates a missing file, replaces it again and again, and a reader of a replaced version still reads it whole", async () => {
    const dir = tempDir();
    const path = join(dir, "crm.json");
    saveStateFile(path, [bytes("first")]);
    const reader = openSync(path, "r");
    try {
      for (const text of ["second", "third", "fourth, longer"]) saveStateFile(path, [bytes(text)]);
      await replacedVersionsRemoved();
      expect(readFileSync(path, "utf8")).toBe("fourth, longer");
      const before = Buffer.alloc(16);
      expect(before.subarray(0, readSync(reader, before, 0, 16, 0)).toString()).toBe("first");
    } finally {
      closeSync(reader);
    }
    expect(readdirSync(dir)).toEqual(["crm.json"]);
  });
});

describe("what a killed save leaves behind", () => {
  test("a new store removes its file's replaced versions and the temporary files of processes that are gone, nothing else", () => {
    const dir = tempDir();
    const path = join(dir, "crm.json");
    const gone = 2147483646;
    const names = {
      removed: [`.crm.json.${gone}.k3x9.old`, `.crm.json.${process.pid}.a1.old`, `.crm.json.${gone}.zz.tmp`],
      kept: ["crm.json", `.crm.json.${process.pid}.b2.tmp`, `.other.json.${gone}.k3x9.old`, ".crm.json.notes.old", "crm.json.1.a.old"],
    };
    for (const name of [...names.removed, ...names.kept])
      writeFileSync(join(dir, name), name === "crm.json" ? JSON.stringify({ customers: {}, outbox: [] }) : "x");
    new CrmStore({ statePath: path });
    expect(readdirSync(dir).sort()).toEqual([...names.kept].sort());
  });
});

describe("the store over a large state file", () => {
  test("creates, updates, deletes, restores and sends over 1000 customers leave exactly the straightforward serialisation", () => {
    const dir = tempDir();
    const path = join(dir, "crm.json");
    writeFileSync(path, largeState(1000));
    let clock = Date.parse("2026-01-01T00:00:00Z");
    const store = new CrmStore({ statePath: path, now: () => new Date((clock += 1000)) });
    // The model follows what each call answered; the file must be its straightforward serialisation.
    const model = parseState(readFileSync(path, "utf8"));
    const random = numbers(20);
    const pick = <T>(items: T[]) => items[Math.floor(random() * items.length)]!;
    const deleted: Customer[] = [];

    for (let i = 1; i <= 400; i++) {
      const ids = [...model.customers.keys()];
      const roll = random();
      if (roll < 0.15) {
        const made = store.create({ name: `New "${i}"`, email: `new${i}@example.com`, plan: pick([...PLANS]), notes: i % 2 ? "line\nbreak" : "" });
        expect(made.id).toBe(formatId(model.lastId + 1));
        model.customers.set(made.id, made);
        model.lastId++;
      } else if (roll < 0.55) {
        const target = pick(ids);
        const patch = { notes: `edit ${i} ✓`, ...(i % 3 ? {} : { plan: pick([...PLANS]) }) };
        const updated = store.update(target, patch);
        expect(updated).toEqual({ ...model.customers.get(target)!, ...patch });
        model.customers.set(target, updated);
      } else if (roll < 0.75) {
        const target = pick(ids);
        expect(store.delete(target)).toEqual(model.customers.get(target)!);
        deleted.push(model.customers.get(target)!);
        model.customers.delete(target);
      } else if (roll < 0.95) {
        // Put back a deleted customer, or one under an id never issued (it counts as issued).
        const back =
          deleted.length > 0 && i % 4
            ? deleted.splice(Math.floor(random() * deleted.length), 1)[0]!
            : { ...model.customers.get(pick(ids))!, id: formatId(1000 + i * 3) };
        expect(store.restore(back)).toEqual(back);
        model.customers.set(back.id, back);
        model.lastId = Math.max(model.lastId, Number(back.id.slice(2)));
      } else {
        const sent: SentEmail = store.sendEmail({ to: `customer${i}@example.com`, subject: "Hello", body: `body ${i}` });
        model.outbox.push(sent);
      }
      expect(readFileSync(path, "utf8")).toBe(straightforward(model));
    }
    expect(store.list()).toEqual([...parseState(straightforward(model)).customers.values()]);
  }, 30_000); // a thousand customers' writes: seconds on a busy machine

  test("a failed save is a tool error and changes nothing; the next change is saved whole", () => {
    const { path, before, store, disk } = storeOnDisk("ENOSPC: no space left on device");
    expect(() => store.update("c_007", { notes: "lost" })).toThrow(new CrmError(`could not save state file ${path}: ENOSPC: no space left on device`));
    expect(() => store.create({ name: "Lost", email: "lost@example.com" })).toThrow(CrmError);
    expect(() => store.delete("c_008")).toThrow(CrmError);
    expect(readFileSync(path, "utf8")).toBe(before);
    expect(store.get("c_007").notes).toBe("batch 0");
    expect(store.get("c_008").id).toBe("c_008");

    disk.failing = false;
    const made = store.create({ name: "Kept", email: "kept@example.com" });
    expect(made.id).toBe("c_051"); // the failed create issued no id
    const model = parseState(before);
    model.customers.set(made.id, made);
    model.lastId = 51;
    expect(readFileSync(path, "utf8")).toBe(straightforward(model));
  });

  test("calls queued in one turn share one write, which holds each of them when it settles", async () => {
    const { path, store, disk } = storeOnDisk();
    const inFile = () => parseState(readFileSync(path, "utf8"));
    const settled = await Promise.all([
      store.queue(() => store.update("c_001", { notes: "one" })).then(() => inFile().customers.get("c_001")?.notes),
      store.queue(() => store.get("c_001")),
      store.queue(() => store.update("c_099", { notes: "none" })).catch((error) => error),
      store.queue(() => store.create({ name: "New", email: "new@example.com" })).then((made) => inFile().customers.get(made.id)?.name),
      store.queue(() => store.delete("c_002")).then(() => inFile().customers.has("c_002")),
    ]);
    expect(settled).toEqual(["one", expect.objectContaining({ id: "c_001", notes: "one" }), new CrmError("no customer with id c_099"), "New", false]);
    expect(disk.saves).toBe(1);
    // Reads alone write nothing.
    await Promise.all([store.queue(() => store.get("c_003")), store.queue(() => store.list())]);
    expect(disk.saves).toBe(1);
  });

  test("a failed write fails its batch from the first change on; what came before it stands, and no key is kept", () => {
    const { path, before, store, disk } = storeOnDisk("EIO: i/o error");
    const outcomes = store.batch([
      () => store.get("c_001").notes,
      () => store.update("c_001", { notes: "lost" }, "key-1").notes,
      () => store.get("c_001").notes,
    ]);
    const lost = new CrmError(`could not save state file ${path}: EIO: i/o error`);
    expect(outcomes).toEqual([
      { ok: true, value: "batch 1" },
      { ok: false, error: lost },
      { ok: false, error: lost },
    ]);
    expect(readFileSync(path, "utf8")).toBe(before);
    expect(store.get("c_001").notes).toBe("batch 1");

    disk.failing = false;
    // The key was never kept: the call under it applies now.
    expect(store.update("c_001", { notes: "kept" }, "key-1").notes).toBe("kept");
    expect(store.update("c_001", { notes: "again" }, "key-1").notes).toBe("kept");
    expect(parseState(readFileSync(path, "utf8")).customers.get("c_001")?.notes).toBe("kept");
  });

  test("a hand edit is seen at the next call, even one that keeps the file's size", () => {
    const dir = tempDir();
    const path = join(dir, "crm.json");
    const store = new CrmStore({ statePath: path });
    store.update("c_003", { notes: "abc" });
    const saved = readFileSync(path, "utf8");
    // Same length, written at once: no size or coarse timestamp would tell the two files apart.
    writeFileSync(path, saved.replace('"notes": "abc"', '"notes": "xyz"'));
    expect(store.get("c_003").notes).toBe("xyz");
    expect(store.update("c_003", { plan: "pro" })).toMatchObject({ notes: "xyz", plan: "pro" });
    writeFileSync(path, "{ not json");
    expect(() => store.get("c_001")).toThrow(CrmError);
    expect(() => store.get("c_001")).toThrow(`state file ${path}: not valid JSON: `);
  });
});
