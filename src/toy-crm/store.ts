// The toy CRM's operations over its state (customers, the outbox, the id
// counter), kept in its state file when it has one, with idempotency keys.
import { existsSync, statSync } from "node:fs";
import { dirname } from "node:path";
import { KeysFile, type RememberedResult } from "./keys-file.ts";
import {
  formatId,
  idNumber,
  parseState,
  PLANS,
  seedState,
  sortedCustomers,
  StateFileError,
  StateText,
  type CrmState,
  type Customer,
  type Plan,
  type SentEmail,
} from "./state-file.ts";
import { removeLeftovers, sameBytes, saveStateFile, StateFileReader } from "./state-io.ts";

export { PLANS, StateFileError, type Customer, type Plan, type SentEmail };

/** A failure the agent should see as a tool error (`isError`), never a crash. */
export class CrmError extends Error {}

/** What one operation of a batch came to: its value, or what it threw. */
type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

/** The batch being run: what its changes must still make lasting. */
interface OpenBatch {
  /** The operation running now. */
  at: number;
  /** The first operation that changed something; undefined while none has. */
  firstChange?: number;
  /** Keys of this batch's changes: remembered in memory at once, in the keys file once the state is saved. */
  keys: Array<[string, RememberedResult]>;
}

export interface StoreOptions {
  /** Absolute path of the state file; without one everything stays in memory. */
  statePath?: string;
  now?: () => Date;
  /** How the state file is written (tests make it fail); by default atomically, see saveStateFile. */
  save?: (path: string, chunks: readonly Uint8Array[]) => void;
}

function checkPlan(plan: string): Plan {
  if (!(PLANS as readonly string[]).includes(plan)) {
    throw new CrmError(`unknown plan "${plan}" (allowed: ${PLANS.join(", ")})`);
  }
  return plan as Plan;
}

/**
 * The CRM's operations over its state. With a state file, the file is the
 * truth: it is read before every batch of operations and parsed again when its
 * bytes changed, so two servers on one file (the agent's, and the one `undo`
 * starts) and a person editing it by hand all see the same customers. A call
 * made directly is a batch of one; calls that arrive together are batched by
 * queue(), so a burst of changes costs one write of the file, not one each.
 */
export class CrmStore {
  private state: CrmState;
  /** The state file's text, kept in step with `state` (only with a file). */
  private text: StateText | undefined;
  /** The file's bytes (in pieces) as this process last read or wrote them; null: there was no file; undefined: parse it again. */
  private fileChunks: readonly Uint8Array[] | null | undefined;
  private readonly path: string | undefined;
  private readonly now: () => Date;
  private readonly save: (path: string, chunks: readonly Uint8Array[]) => void;
  private readonly keys = new Map<string, RememberedResult>();
  private readonly keysFile: KeysFile | undefined;
  private readonly reader: StateFileReader | undefined;
  private open: OpenBatch | undefined;
  private readonly queued: Array<{ operation: () => unknown; settle: (outcome: Outcome<unknown>) => void }> = [];
  private turn: ReturnType<typeof setImmediate> | undefined;

  /** Throws StateFileError (naming the file) when the state file cannot be used. */
  constructor(options: StoreOptions = {}) {
    this.path = options.statePath;
    this.now = options.now ?? (() => new Date());
    this.save = options.save ?? saveStateFile;
    this.state = seedState();
    this.keysFile = this.path === undefined ? undefined : new KeysFile(this.path);
    this.reader = this.path === undefined ? undefined : new StateFileReader(this.path);
    if (this.path !== undefined) {
      const folder = dirname(this.path);
      if (!existsSync(folder) || !statSync(folder).isDirectory()) {
        throw new StateFileError(`state file ${this.path}: the folder ${folder} does not exist`);
      }
      removeLeftovers(this.path);
      this.refresh();
    }
  }

  private refresh(): void {
    if (this.reader === undefined) return;
    try {
      const bytes = this.reader.read();
      const known = this.fileChunks;
      const unchanged = known !== undefined && (bytes === null || known === null ? bytes === known : sameBytes(bytes, known));
      if (unchanged) return;
      this.state = bytes === null ? seedState() : parseState(bytes.toString("utf8"));
      this.text = new StateText(this.state);
      this.fileChunks = bytes && [Buffer.from(bytes)]; // a copy: the reader reuses its buffer
    } catch (error) {
      throw new StateFileError(`state file ${this.path}: ${(error as Error).message}`);
    }
  }

  /**
   * Run `operation` in one batch with every other operation queued in this
   * turn of the event loop (see batch()); settles once that batch is over, so
   * once the state file holds what it changed.
   */
  queue<T>(operation: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queued.push({ operation, settle: (outcome) => (outcome.ok ? resolve(outcome.value as T) : reject(outcome.error)) });
      this.turn ??= setImmediate(() => {
        this.turn = undefined;
        const taken = this.queued.splice(0);
        this.batch(taken.map((queued) => queued.operation)).forEach((outcome, i) => taken[i]!.settle(outcome));
      });
    });
  }

  /**
   * Run `operations` in order as one: the state file is read once before them
   * and, when any of them changed something, written once after them. Nothing
   * an operation returned may be told before the batch is over: when the write
   * fails, every operation from the first change on fails with that error (a
   * read after a change saw what the file never got).
   */
  batch<T>(operations: Array<() => T>): Outcome<T>[] {
    if (this.open) throw new Error("CrmStore batches do not nest");
    try {
      this.refresh();
    } catch (error) {
      // A broken file is a tool error for every call, not a crash.
      const broken = new CrmError((error as Error).message);
      return operations.map(() => ({ ok: false, error: broken }));
    }
    const open: OpenBatch = { at: 0, keys: [] };
    this.open = open;
    let outcomes: Outcome<T>[];
    try {
      outcomes = operations.map((operation, at) => {
        open.at = at;
        try {
          return { ok: true, value: operation() };
        } catch (error) {
          return { ok: false, error };
        }
      });
    } finally {
      this.open = undefined;
    }
    const { firstChange } = open;
    if (firstChange === undefined) return outcomes;
    try {
      this.persist(open);
    } catch (error) {
      return outcomes.map((outcome, at) => (at < firstChange ? outcome : { ok: false, error }));
    }
    return outcomes;
  }

  /** `operation` alone, as a batch of one; or as part of the batch running now. */
  private one<T>(operation: () => T): T {
    if (this.open) return operation();
    const [outcome] = this.batch([operation]);
    if (!outcome!.ok) throw outcome!.error;
    return outcome!.value;
  }

  /** Save the state a batch changed, then append its keys; a failed save leaves the CRM as the file still has it. */
  private persist(batch: OpenBatch): void {
    if (this.path !== undefined) {
      const chunks = this.text!.chunks(this.state.lastId);
      try {
        this.save(this.path, chunks);
      } catch (error) {
        // The file still holds the state from before this batch: take it from there at the next one.
        this.fileChunks = undefined;
        for (const [key] of batch.keys) this.keys.delete(key);
        throw new CrmError(`could not save state file ${this.path}: ${(error as Error).message}`);
      }
      this.fileChunks = chunks;
    }
    if (batch.keys.length === 0) return;
    try {
      this.keysFile?.append(batch.keys);
    } catch (error) {
      // The changes are saved; only their keys could not be: a retry would apply them again.
      process.stderr.write(`toy-crm: could not remember idempotency keys in ${this.keysFile?.path}: ${(error as Error).message}\n`);
    }
  }

  get(id: string): Customer {
    return this.one(() => {
      const customer = this.state.customers.get(id);
      if (!customer) throw new CrmError(`no customer with id ${id}`);
      return { ...customer };
    });
  }

  list(): Customer[] {
    return this.one(() => sortedCustomers(this.state).map((c) => ({ ...c })));
  }

  outbox(): SentEmail[] {
    return this.one(() => this.state.outbox.map((m) => ({ ...m })));
  }

  /**
   * Run `fn` on the state, in the batch that saves it. `fn` checks everything
   * before it changes anything, and changes the state only through
   * put/remove/send (which keep the text in step) and `state.lastId`. A call
   * carrying an idempotency key that was seen before returns what it returned
   * then and changes nothing; only changes that succeeded are remembered (a
   * failed call changed nothing, so retrying it is harmless).
   */
  private change<T extends Customer | SentEmail>(tool: string, key: string | undefined, fn: (state: CrmState) => T): T {
    return this.one(() => {
      if (key !== undefined) {
        const seen = this.rememberedKeys().get(key);
        if (seen && seen.tool !== tool) throw new CrmError(`idempotency key "${key}" was already used for ${seen.tool}`);
        if (seen) return { ...seen.result } as T;
      }
      const result = fn(this.state);
      const batch = this.open!;
      batch.firstChange ??= batch.at;
      if (key !== undefined) {
        const remembered = { tool, result: { ...result } };
        this.keys.set(key, remembered);
        batch.keys.push([key, remembered]);
      }
      return { ...result };
    });
  }

  private put(customer: Customer): void {
    this.state.customers.set(customer.id, customer);
    this.text?.put(customer);
  }

  private remove(id: string): void {
    this.state.customers.delete(id);
    this.text?.remove(id);
  }

  private send(email: SentEmail): void {
    this.state.outbox.push(email);
    this.text?.send(email);
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
    return this.change("create_customer", key, (state) => {
      state.lastId++;
      const customer: Customer = { id: formatId(state.lastId), name: input.name, email: input.email, plan, notes: input.notes ?? "" };
      this.put(customer);
      return customer;
    });
  }

  update(id: string, patch: { name?: string; email?: string; plan?: string; notes?: string }, key?: string): Customer {
    const plan = patch.plan === undefined ? undefined : checkPlan(patch.plan);
    return this.change("update_customer", key, (state) => {
      const existing = state.customers.get(id);
      if (!existing) throw new CrmError(`no customer with id ${id}`);
      const updated: Customer = {
        id,
        name: patch.name ?? existing.name,
        email: patch.email ?? existing.email,
        plan: plan ?? existing.plan,
        notes: patch.notes ?? existing.notes,
      };
      this.put(updated);
      return updated;
    });
  }

  delete(id: string, key?: string): Customer {
    return this.change("delete_customer", key, (state) => {
      const existing = state.customers.get(id);
      if (!existing) throw new CrmError(`no customer with id ${id}`);
      this.remove(id);
      return existing;
    });
  }

  restore(customer: { id: string; name: string; email: string; plan: string; notes: string }, key?: string): Customer {
    const n = idNumber(customer.id);
    if (n === undefined) throw new CrmError(`argument "id" must be an id like c_001 (got "${customer.id}")`);
    const plan = checkPlan(customer.plan);
    return this.change("restore_customer", key, (state) => {
      const restored: Customer = { id: customer.id, name: customer.name, email: customer.email, plan, notes: customer.notes };
      this.put(restored);
      // A restored id counts as issued, so a later create never collides with it.
      state.lastId = Math.max(state.lastId, n);
      return restored;
    });
  }

  sendEmail(email: { to: string; subject: string; body: string }, key?: string): SentEmail {
    return this.change("send_email", key, (state) => {
      const sent: SentEmail = { to: email.to, subject: email.subject, body: email.body, sentAt: this.now().toISOString() };
      this.send(sent);
      return sent;
    });
  }
}
