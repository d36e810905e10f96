// How the SQLite journal stores action bodies (packing.ts): each tool's
// dictionary found or made once, rows read back with their bodies unpacked,
// the bodies of this connection's pending calls kept until they finish, and
// finished bodies committed as text packed a moment later (packLater).
import type { Database } from "bun:sqlite";
import { ToolDictionaries, type Body, type Dictionary } from "./packing.ts";
import { readBody, rebuiltBody, storedBody, textBody, toAction, unpackedRow, type PendingBody, type Row, type StoredBody } from "./rows.ts";
import type { Action } from "./types.ts";

export class SqliteBodies {
  private readonly dictionaries = new ToolDictionaries();
  /** The bodies of the pending rows this connection wrote: their outcome is packed with them without reading them back. */
  private readonly pending = new Map<string, PendingBody>();
  /** Finished bodies committed as text, to be packed (packLater). */
  private readonly unpacked = new Map<string, PendingBody>();
  private packing: ReturnType<typeof setImmediate> | undefined;

  constructor(
    private readonly db: Database,
    private readonly path: string,
    /** Commit a write with the others of this turn of the event loop. */
    private readonly soon: (write: () => unknown) => Promise<unknown>,
  ) {}

  action(row: Row): Action {
    return toAction(unpackedRow(row, this.dictionaryById, this.path));
  }

  /**
   * How `body` is stored: packed against its tool's dictionary, or as text.
   * Call it outside any transaction: a dictionary proposed from samples is
   * committed on its own, before any row names it, so no rollback can take
   * it back from under them.
   */
  stored(server: string, tool: string, body: Body): StoredBody {
    let dictionary = this.dictionaries.known(server, tool, body);
    if (dictionary === undefined) {
      const proposal = this.dictionaries.proposal(server, tool, body);
      if (proposal) {
        this.db
          .query("INSERT INTO dictionaries (server, tool, content, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (server, tool) DO NOTHING")
          .run(server, tool, proposal, new Date().toISOString());
      }
      const row = this.db.query("SELECT id, content FROM dictionaries WHERE server = ? AND tool = ?").get(server, tool) as Dictionary | null;
      dictionary = row && { id: row.id, content: row.content };
      this.dictionaries.remember(server, tool, dictionary);
    }
    return storedBody(body, dictionary ?? undefined);
  }

  /**
   * Row `id` was committed with `finished` as text (its outcome went with the
   * next call's intent, which waited for it: no compression on the way). In
   * the next turn of the event loop, once that call has left, the body is
   * packed and written over the text — unless the row's body is
   * no longer that text. A body never packed stays text, read the same.
   */
  packLater(id: string, finished: PendingBody): void {
    this.unpacked.set(id, finished);
    this.packing ??= setImmediate(() => this.packWaiting());
  }

  /** Pack what packLater keeps waiting, now (the connection is closing). */
  packWaiting(): void {
    clearImmediate(this.packing);
    this.packing = undefined;
    const waiting = [...this.unpacked];
    this.unpacked.clear();
    for (const [id, { server, tool, body }] of waiting) {
      const stored = this.stored(server, tool, body);
      if (stored.packed === null) continue;
      const text = textBody(body);
      const write = () =>
        this.db
          .query(
            `UPDATE actions SET args = ?, snapshot = ?, result = ?, inverse = ?, post_state = ?, verify = ?, packed = ?
              WHERE id = ? AND packed IS NULL AND args = ? AND snapshot IS ? AND result IS ? AND inverse IS ? AND post_state IS ? AND verify IS ?`,
          )
          .run(
            ...[stored.args, stored.snapshot, stored.result, stored.inverse, stored.post_state, stored.verify, stored.packed, id],
            ...[text.args, text.snapshot, text.result, text.inverse, text.post_state, text.verify],
          );
      // A failed write leaves the row as it was: whole, as text.
      void this.soon(write).catch(() => {});
    }
  }

  /** A call's intent was written with `body`. */
  wrotePending(id: string, pending: PendingBody): void {
    this.pending.set(id, pending);
  }

  /** The body of a pending call, as its intent was written (read back when another connection wrote it); undefined when it is not pending. */
  takePending(id: string): PendingBody | undefined {
    const known = this.pending.get(id);
    this.pending.delete(id);
    if (known) return known;
    const row = this.db.query("SELECT * FROM actions WHERE id = ? AND status = 'pending'").get(id) as Row | null;
    return row ? { server: String(row.server), tool: String(row.tool), body: this.bodyOf(row) } : undefined;
  }

  /** The stored body of row `id` with its inverse or verification read replaced; undefined when there is no such row. */
  rebuilt(id: string, change: Parameters<typeof rebuiltBody>[1]): StoredBody | undefined {
    const row = this.db.query("SELECT * FROM actions WHERE id = ?").get(id) as Row | null;
    if (!row) return undefined;
    return this.stored(String(row.server), String(row.tool), rebuiltBody(this.bodyOf(row), change));
  }

  /** Write a row's body columns (inside the caller's transaction, when it has one). */
  write(id: string, stored: StoredBody): void {
    this.db
      .query("UPDATE actions SET args = ?, snapshot = ?, result = ?, inverse = ?, post_state = ?, verify = ?, packed = ? WHERE id = ?")
      .run(stored.args, stored.snapshot, stored.result, stored.inverse, stored.post_state, stored.verify, stored.packed, id);
  }

  private bodyOf(row: Row): Body {
    return readBody(row, this.dictionaryById, this.path);
  }

  /** The content of dictionary `id`, read once. */
  private readonly dictionaryById = (id: number): Uint8Array | undefined => {
    let content = this.dictionaries.contents.get(id);
    if (content === undefined) {
      const row = this.db.query("SELECT content FROM dictionaries WHERE id = ?").get(id) as { content: Uint8Array } | null;
      if (row) this.dictionaries.contents.set(id, (content = row.content));
    }
    return content;
  };
}
