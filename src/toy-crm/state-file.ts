// The toy CRM's state file: its records and its format (parse, and a text kept
// up to date change by change). Reading and saving it: state-io.ts.

export const PLANS = ["free", "pro", "enterprise"] as const;
export type Plan = (typeof PLANS)[number];

export interface Customer {
  id: string;
  name: string;
  email: string;
  plan: Plan;
  notes: string;
}

export interface SentEmail {
  to: string;
  subject: string;
  body: string;
  sentAt: string;
}

/**
 * The state file is the form R-SHIP-1 documents plus one key of our own:
 *
 *   {"customers": {"c_001": {"id", "name", "email", "plan", "notes"}, …},   sorted by id
 *    "outbox": [{"to", "subject", "body", "sentAt"}, …],
 *    "lastId": 4}                          the highest id number ever issued
 *
 * written as JSON.stringify(that, null, 2) + "\n". `lastId` is what keeps ids
 * from being reused once the highest customer has been deleted and the server
 * restarted; a file without it (the bare documented form) is accepted and the
 * counter resumes after the highest id it holds.
 */
export interface CrmState {
  customers: Map<string, Customer>;
  outbox: SentEmail[];
  lastId: number;
}

const ID_PATTERN = /^c_(\d{3,})$/;

export function formatId(n: number): string {
  return `c_${String(n).padStart(3, "0")}`;
}

/** The number in an id like c_007, or undefined for anything else. */
export function idNumber(id: string): number | undefined {
  const match = ID_PATTERN.exec(id);
  return match ? Number(match[1]) : undefined;
}

export function seedState(): CrmState {
  const customers: Customer[] = [
    { id: "c_001", name: "Ada Lovelace", email: "ada@example.com", plan: "pro", notes: "founding customer" },
    { id: "c_002", name: "Grace Hopper", email: "grace@example.com", plan: "enterprise", notes: "renewal in March" },
    { id: "c_003", name: "Alan Turing", email: "alan@example.com", plan: "free", notes: "" },
  ];
  return { customers: new Map(customers.map((c) => [c.id, c])), outbox: [], lastId: 3 };
}

/** Ids in file order: by number (c_007 before c_1000), then as text (c_0007 before c_007). */
function compareIds(a: string, b: string): number {
  return (idNumber(a) ?? 0) - (idNumber(b) ?? 0) || (a < b ? -1 : a > b ? 1 : 0);
}

export function sortedCustomers(state: CrmState): Customer[] {
  return [...state.customers.values()].sort((a, b) => compareIds(a.id, b.id));
}

// ---- the text ----

/** A value's JSON as it appears two levels deep in the file (inside "customers" or "outbox"). */
function nested(value: object): string {
  // JSON.stringify escapes every newline inside a string, so each "\n" here starts a line.
  return JSON.stringify(value, null, 2).replaceAll("\n", "\n    ");
}

function customerEntry(c: Customer): string {
  return `    ${JSON.stringify(c.id)}: ${nested({ id: c.id, name: c.name, email: c.email, plan: c.plan, notes: c.notes })}`;
}

function emailEntry(m: SentEmail): string {
  return `    ${nested({ to: m.to, subject: m.subject, body: m.body, sentAt: m.sentAt })}`;
}

/** Customers in a run; a longer run is split in two. */
const LONGEST_RUN = 64;

/** Sorted customers, rendered; `bytes` is their entries joined, kept until the run changes. */
interface Run {
  ids: string[];
  entries: string[];
  bytes?: Buffer;
}

const utf8 = (text: string) => Buffer.from(text, "utf8");
const ENTRY_SEPARATOR = utf8(",\n");

/**
 * The state file's text, kept current change by change: each record is
 * rendered when it is written, and customers are kept sorted in short runs
 * whose bytes are cached, so a change costs rendering one run and copying the
 * others rather than a sort and a JSON.stringify of every customer. chunks()
 * joined are exactly the UTF-8 of
 * `JSON.stringify({customers (sorted by id), outbox, lastId}, null, 2) + "\n"`.
 */
export class StateText {
  /** In compareIds order, none empty. */
  private readonly runs: Run[] = [];
  private readonly outbox: string[] = [];
  private outboxBytes: Buffer | undefined;

  constructor(state: CrmState) {
    const sorted = sortedCustomers(state);
    for (let at = 0; at < sorted.length; at += LONGEST_RUN / 2) {
      const customers = sorted.slice(at, at + LONGEST_RUN / 2);
      this.runs.push({ ids: customers.map((c) => c.id), entries: customers.map(customerEntry) });
    }
    for (const email of state.outbox) this.outbox.push(emailEntry(email));
  }

  /** Add a customer, or replace the one with its id. */
  put(customer: Customer): void {
    if (this.runs.length === 0) this.runs.push({ ids: [], entries: [] });
    const { run, runAt, at } = this.find(customer.id);
    run.bytes = undefined;
    if (run.ids[at] === customer.id) {
      run.entries[at] = customerEntry(customer);
      return;
    }
    run.ids.splice(at, 0, customer.id);
    run.entries.splice(at, 0, customerEntry(customer));
    if (run.ids.length > LONGEST_RUN) {
      const half = run.ids.length >>> 1;
      this.runs.splice(runAt + 1, 0, { ids: run.ids.splice(half), entries: run.entries.splice(half) });
    }
  }

  remove(id: string): void {
    if (this.runs.length === 0) return;
    const { run, runAt, at } = this.find(id);
    if (run.ids[at] !== id) return;
    run.bytes = undefined;
    run.ids.splice(at, 1);
    run.entries.splice(at, 1);
    if (run.ids.length === 0) this.runs.splice(runAt, 1);
  }

  send(email: SentEmail): void {
    this.outbox.push(emailEntry(email));
    this.outboxBytes = undefined;
  }

  /** The file's bytes in pieces: the runs' cached bytes are written as they are, not first copied into one buffer. */
  chunks(lastId: number): Buffer[] {
    const parts: Buffer[] = [utf8('{\n  "customers": ')];
    if (this.runs.length === 0) parts.push(utf8("{}"));
    else {
      parts.push(utf8("{\n"));
      this.runs.forEach((run, i) => {
        if (i > 0) parts.push(ENTRY_SEPARATOR);
        parts.push((run.bytes ??= utf8(run.entries.join(",\n"))));
      });
      parts.push(utf8("\n  }"));
    }
    parts.push(utf8(',\n  "outbox": '));
    this.outboxBytes ??= utf8(this.outbox.length === 0 ? "[]" : `[\n${this.outbox.join(",\n")}\n  ]`);
    parts.push(this.outboxBytes, utf8(`,\n  "lastId": ${JSON.stringify(lastId)}\n}\n`));
    return parts;
  }

  /** chunks() as text. */
  render(lastId: number): string {
    return Buffer.concat(this.chunks(lastId)).toString("utf8");
  }

  /** The run `id` is in, or would go in (the last one starting at or before it), and its place there. */
  private find(id: string): { run: Run; runAt: number; at: number } {
    const runAt = Math.max(0, firstAfter(this.runs.length, (i) => compareIds(this.runs[i]!.ids[0]!, id) <= 0) - 1);
    const run = this.runs[runAt]!;
    return { run, runAt, at: firstAfter(run.ids.length, (i) => compareIds(run.ids[i]!, id) < 0) };
  }
}

/** The first index in [0, length) for which `before` is false; `before` must be true for a prefix only. */
function firstAfter(length: number, before: (i: number) => boolean): number {
  let low = 0;
  let high = length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (before(middle)) low = middle + 1;
    else high = middle;
  }
  return low;
}

// ---- parsing ----

/** A state file that cannot be used; the message names the problem, not the file. */
export class StateFileError extends Error {}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function typeName(value: unknown): string {
  return value === null ? "null" : Array.isArray(value) ? "array" : typeof value;
}

function expectKeys(value: unknown, where: string, keys: readonly string[], optional: readonly string[] = []): Record<string, unknown> {
  if (!isObject(value)) throw new StateFileError(`${where} must be an object (got ${typeName(value)})`);
  for (const key of Object.keys(value)) {
    if (!keys.includes(key) && !optional.includes(key)) throw new StateFileError(`${where} has an unknown key "${key}"`);
  }
  for (const key of keys) {
    if (!(key in value)) throw new StateFileError(`${where} is missing "${key}"`);
  }
  return value;
}

function expectString(value: unknown, where: string): string {
  if (typeof value !== "string") throw new StateFileError(`${where} must be a string (got ${typeName(value)})`);
  return value;
}

function parseCustomer(value: unknown, where: string): Customer {
  const record = expectKeys(value, where, ["id", "name", "email", "plan", "notes"]);
  const plan = expectString(record.plan, `${where}.plan`);
  if (!(PLANS as readonly string[]).includes(plan)) {
    throw new StateFileError(`${where}.plan must be one of ${PLANS.join(", ")} (got "${plan}")`);
  }
  return {
    id: expectString(record.id, `${where}.id`),
    name: expectString(record.name, `${where}.name`),
    email: expectString(record.email, `${where}.email`),
    plan: plan as Plan,
    notes: expectString(record.notes, `${where}.notes`),
  };
}

function parseEmail(value: unknown, where: string): SentEmail {
  const record = expectKeys(value, where, ["to", "subject", "body", "sentAt"]);
  return {
    to: expectString(record.to, `${where}.to`),
    subject: expectString(record.subject, `${where}.subject`),
    body: expectString(record.body, `${where}.body`),
    sentAt: expectString(record.sentAt, `${where}.sentAt`),
  };
}

/** Parse a state file's text; throws StateFileError saying what is wrong and where. */
export function parseState(text: string): CrmState {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new StateFileError(`not valid JSON: ${(error as Error).message}`);
  }
  const top = expectKeys(raw, "the top level", ["customers", "outbox"], ["lastId"]);

  if (!isObject(top.customers)) throw new StateFileError(`customers must be an object (got ${typeName(top.customers)})`);
  const customers = new Map<string, Customer>();
  let highest = 0;
  for (const [key, value] of Object.entries(top.customers)) {
    const n = idNumber(key);
    if (n === undefined) throw new StateFileError(`customers has a key "${key}" that is not an id like c_001`);
    const customer = parseCustomer(value, `customers.${key}`);
    if (customer.id !== key) throw new StateFileError(`customers.${key}.id is "${customer.id}", not "${key}"`);
    customers.set(key, customer);
    highest = Math.max(highest, n);
  }

  if (!Array.isArray(top.outbox)) throw new StateFileError(`outbox must be a list (got ${typeName(top.outbox)})`);
  const outbox = top.outbox.map((m, i) => parseEmail(m, `outbox[${i}]`));

  let lastId = highest;
  if (top.lastId !== undefined) {
    if (typeof top.lastId !== "number" || !Number.isSafeInteger(top.lastId) || top.lastId < 0) {
      throw new StateFileError(`lastId must be a whole number ≥ 0 (got ${JSON.stringify(top.lastId)})`);
    }
    lastId = Math.max(lastId, top.lastId);
  }

  return { customers, outbox, lastId };
}
