// How the SQLite journal stores action bodies (packing.ts): each tool's
// dictionary found or made once, rows read back with their bodies unpacked,
// and the bodies of this connection's pending calls kept until they finish.
import type { Database } from "bun:sqlite";
import { ToolDictionaries, type Body, type Dictionary } from "../packing.ts";
import type { ActionState } from "../chain.ts";
import { actionOfRow, actionStateOfStoredRow, readBody, rebuiltBody, storedBody, type PendingBody, type Row, type StoredBody } from "../rows.ts";
import type { Action } from "../types.ts";

export class SqliteBodies {
  private readonly dictionaries = new ToolDictionaries();
  /** The bodies of the pending rows this connection wrote: their outcome is packed with them without reading them back. */
  private readonly pending = new Map<string, PendingBody>();

  constructor(
    private readonly db: Database,
    private readonly path: string,
  ) {}

  action(row: Row): Action {
    return actionOfRow(row, this.dictionaryById, this.path);
  }

  /** A row's state as its chain holds it. */
  state(row: Row): ActionState {
    return actionStateOfStoredRow(row, this.dictionaryById, this.path);
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

  /** Write a row's body columns (inside the caller's transaction, when it has one); `onlyIfText`: unless it was packed meanwhile. */
  write(id: string, stored: StoredBody, options: { onlyIfText?: boolean } = {}): void {
    this.db
      .query(
        `UPDATE actions SET args = ?, snapshot = ?, result = ?, inverse = ?, post_state = ?, verify = ?, packed = ? WHERE id = ?${options.onlyIfText ? " AND packed IS NULL" : ""}`,
      )
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
