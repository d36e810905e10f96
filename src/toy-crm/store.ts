// The toy CRM's data: customers, the outbox and the id counter, with the state
// file's format (parse, serialise, atomic save), and remembered idempotency keys.
import { appendFileSync, closeSync, existsSync, openSync, readFileSync, readSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";

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

/** What a mutating call returned, kept under its idempotency key. */
export interface RememberedResult {
  tool: string;
  result: Customer | SentEmail;
}

/**
 * The state file is the form R-SHIP-1 documents plus one key of our own:
 *
 *   {"customers": {"c_001": {"id", "name", "email", "plan", "notes"}, …},   sorted by id
 *    "outbox": [{"to", "subject", "body", "sentAt"}, …],
 *    "lastId": 4}                          the highest id number ever issued
 *
 * `lastId` is what keeps ids from being reused once the highest customer has
 * been deleted and the server restarted; a file without it (the bare documented
 * form) is accepted and the counter resumes after the highest id it holds.
 *
 * Idempotency keys live beside it, in `<state file>.keys.jsonl`, one
 * `{"key", "tool", "result"}` per line, appended and never rewritten: a
 * retried undo step reaching a freshly started server (undo starts its own)
 * is still recognised, and remembering a key costs one short append.
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

export function cloneState(state: CrmState): CrmState {
  return structuredClone(state);
}

function compareIds(a: string, b: string): number {
  return (idNumber(a) ?? 0) - (idNumber(b) ?? 0) || (a < b ? -1 : a > b ? 1 : 0);
}

export function sortedCustomers(state: CrmState): Customer[] {
  return [...state.customers.values()].sort((a, b) => compareIds(a.id, b.id));
}

export function serializeState(state: CrmState): string {
  const customers: Record<string, Customer> = {};
  for (const c of sortedCustomers(state)) {
    customers[c.id] = { id: c.id, name: c.name, email: c.email, plan: c.plan, notes: c.notes };
  }
  const outbox = state.outbox.map((m) => ({ to: m.to, subject: m.subject, body: m.body, sentAt: m.sentAt }));
  return JSON.stringify({ customers, outbox, lastId: state.lastId }, null, 2) + "\n";
}

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

/** The file's text, or undefined when there is no file. */
export function readStateText(path: string): string | undefined {
  if (!existsSync(path)) return undefined;
  if (statSync(path).isDirectory()) throw new StateFileError("is a folder, not a file");
  return readFileSync(path, "utf8");
}

/** Write the whole state next to `path` under a temporary name, then rename it over `path`. */
/** The idempotency keys remembered beside a state file. */
export class KeysFile {
  readonly path: string;
  private readBytes = 0;
  private partial = "";

  constructor(statePath: string) {
    this.path = `${statePath}.keys.jsonl`;
  }

  /** Lines appended since the last read (by this process or another one). */
  readNew(): Array<{ key: string } & RememberedResult> {
    if (!existsSync(this.path)) return [];
    const size = statSync(this.path).size;
    if (size <= this.readBytes) return [];
    const buffer = Buffer.alloc(size - this.readBytes);
    const fd = openSync(this.path, "r");
    try {
      readSync(fd, buffer, 0, buffer.length, this.readBytes);
    } finally {
      closeSync(fd);
    }
    this.readBytes = size;
    const lines = (this.partial + buffer.toString("utf8")).split("\n");
    this.partial = lines.pop() ?? "";
    return lines.filter((line) => line.trim() !== "").map((line) => JSON.parse(line));
  }

  append(key: string, remembered: RememberedResult): void {
    appendFileSync(this.path, JSON.stringify({ key, tool: remembered.tool, result: remembered.result }) + "\n");
  }
}

export function saveStateFile(path: string, text: string): void {
  const temp = join(dirname(path), `.${basename(path)}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`);
  try {
    writeFileSync(temp, text);
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}

/** A failure the agent should see as a tool error (`isError`), never a crash. */
export class CrmError extends Error {}

export interface StoreOptions {
  /** Absolute path of the state file; without one everything stays in memory. */
  statePath?: string;
  now?: () => Date;
}

function checkPlan(plan: string): Plan {
  if (!(PLANS as readonly string[]).includes(plan)) {
    throw new CrmError(`unknown plan "${plan}" (allowed: ${PLANS.join(", ")})`);
  }
  return plan as Plan;
}

/**
 * The CRM's operations over its state. With a state file, the file is the
 * truth: it is re-read before every operation when its text changed, so two
 * servers on one file (the agent's, and the one `undo` starts) and a person
 * editing it by hand all see the same customers.
 */
export class CrmStore {
  private state: CrmState;
  /** The file's text as this process last read or wrote it (undefined: no file). */
  private fileText: string | undefined;
  private readonly path: string | undefined;
  private readonly now: () => Date;
  private readonly keys = new Map<string, RememberedResult>();
  private readonly keysFile: KeysFile | undefined;

  /** Throws StateFileError (naming the file) when the state file cannot be used. */
  constructor(options: StoreOptions = {}) {
    this.path = options.statePath;
    this.now = options.now ?? (() => new Date());
    this.state = seedState();
    this.keysFile = this.path === undefined ? undefined : new KeysFile(this.path);
    if (this.path !== undefined) {
      const folder = dirname(this.path);
      if (!existsSync(folder) || !statSync(folder).isDirectory()) {
        throw new StateFileError(`state file ${this.path}: the folder ${folder} does not exist`);
      }
      this.refresh();
    }
  }

  private refresh(): void {
    if (this.path === undefined) return;
    let text: string | undefined;
    try {
      text = readStateText(this.path);
      if (text === this.fileText) return;
      this.state = text === undefined ? seedState() : parseState(text);
      this.fileText = text;
    } catch (error) {
      throw new StateFileError(`state file ${this.path}: ${(error as Error).message}`);
    }
  }

  /** Reads see the file as it is now; a broken file is a tool error, not a crash. */
  private current(): CrmState {
    try {
      this.refresh();
    } catch (error) {
      throw new CrmError((error as Error).message);
    }
    return this.state;
  }

  get(id: string): Customer {
    const customer = this.current().customers.get(id);
    if (!customer) throw new CrmError(`no customer with id ${id}`);
    return { ...customer };
  }

  list(): Customer[] {
    return sortedCustomers(this.current()).map((c) => ({ ...c }));
  }

  outbox(): SentEmail[] {
    return this.current().outbox.map((m) => ({ ...m }));
  }

  /**
   * Apply `fn` to a copy of the state, save it, and only then keep it: a failed
   * save leaves the CRM as it was. A call carrying an idempotency key that was
   * seen before returns what it returned then and changes nothing; only changes
   * that succeeded are remembered (a failed call changed nothing, so retrying
   * it is harmless).
   */
  private change<T extends Customer | SentEmail>(tool: string, key: string | undefined, fn: (draft: CrmState) => T): T {
    const state = this.current();
    if (key !== undefined) {
      const seen = this.rememberedKeys().get(key);
      if (seen && seen.tool !== tool) throw new CrmError(`idempotency key "${key}" was already used for ${seen.tool}`);
      if (seen) return structuredClone(seen.result) as T;
    }
    const draft = cloneState(state);
    const result = fn(draft);
    if (this.path !== undefined) {
      const text = serializeState(draft);
      try {
        saveStateFile(this.path, text);
      } catch (error) {
        throw new CrmError(`could not save state file ${this.path}: ${(error as Error).message}`);
      }
      this.fileText = text;
    }
    this.state = draft;
    if (key !== undefined) {
      const remembered = { tool, result: structuredClone(result) };
      this.keys.set(key, remembered);
      try {
        this.keysFile?.append(key, remembered);
      } catch (error) {
        // The change is saved; only its key could not be: a retry would apply it again.
        process.stderr.write(`toy-crm: could not remember idempotency key in ${this.keysFile?.path}: ${(error as Error).message}\n`);
      }
    }
    return structuredClone(result);
  }

  /** Keys this process remembered, plus any another process appended since. */
  private rememberedKeys(): Map<string, RememberedResult> {
    try {
      for (const entry of this.keysFile?.readNew() ?? []) this.keys.set(entry.key, { tool: entry.tool, result: entry.result });
    } catch (error) {
      throw new CrmError(`cannot read idempotency keys from ${this.keysFile?.path}: ${(error as Error).message}`);
    }
    return this.keys;
  }

  create(input: { name: string; email: string; plan?: string; notes?: string }, key?: string): Customer {
    const plan = checkPlan(input.plan ?? "free");
    return this.change("create_customer", key, (draft) => {
      draft.lastId++;
      const customer: Customer = { id: formatId(draft.lastId), name: input.name, email: input.email, plan, notes: input.notes ?? "" };
      draft.customers.set(customer.id, customer);
      return customer;
    });
  }

  update(id: string, patch: { name?: string; email?: string; plan?: string; notes?: string }, key?: string): Customer {
    const plan = patch.plan === undefined ? undefined : checkPlan(patch.plan);
    return this.change("update_customer", key, (draft) => {
      const existing = draft.customers.get(id);
      if (!existing) throw new CrmError(`no customer with id ${id}`);
      const updated: Customer = {
        id,
        name: patch.name ?? existing.name,
        email: patch.email ?? existing.email,
        plan: plan ?? existing.plan,
        notes: patch.notes ?? existing.notes,
      };
      draft.customers.set(id, updated);
      return updated;
    });
  }

  delete(id: string, key?: string): Customer {
    return this.change("delete_customer", key, (draft) => {
      const existing = draft.customers.get(id);
      if (!existing) throw new CrmError(`no customer with id ${id}`);
      draft.customers.delete(id);
      return existing;
    });
  }

  restore(customer: { id: string; name: string; email: string; plan: string; notes: string }, key?: string): Customer {
    const n = idNumber(customer.id);
    if (n === undefined) throw new CrmError(`argument "id" must be an id like c_001 (got "${customer.id}")`);
    const plan = checkPlan(customer.plan);
    return this.change("restore_customer", key, (draft) => {
      const restored: Customer = { id: customer.id, name: customer.name, email: customer.email, plan, notes: customer.notes };
      draft.customers.set(restored.id, restored);
      // A restored id counts as issued, so a later create never collides with it.
      draft.lastId = Math.max(draft.lastId, n);
      return restored;
    });
  }

  sendEmail(email: { to: string; subject: string; body: string }, key?: string): SentEmail {
    return this.change("send_email", key, (draft) => {
      const sent: SentEmail = { to: email.to, subject: email.subject, body: email.body, sentAt: this.now().toISOString() };
      draft.outbox.push(sent);
      return sent;
    });
  }
}
