// How the PostgreSQL journal stores action bodies (packing.ts): each tool's
// dictionary found or made once, rows read back with their bodies unpacked
// (the dictionaries they name read first, once each), and the bodies of this
// connection's pending calls kept until they finish.
import type { SQL } from "bun";
import { dictionaryIdOf, ToolDictionaries, type Body } from "../packing.ts";
import type { ActionState } from "../chain.ts";
import { actionOfRow, actionStateOfStoredRow, readBody, rebuiltBody, storedBody, type PendingBody, type Row, type StoredBody } from "../rows.ts";
import type { Action } from "../types.ts";

/**
 * PostgreSQL's text cannot hold U+0000. Text an agent or a server chose (a
 * client's name, a server's error message) is stored with it replaced by
 * U+FFFD, visibly, rather than making the write fail; JSON columns escape it.
 */
export function text(value: string | undefined): string | null {
  return value === undefined ? null : value.includes("\0") ? value.replaceAll("\0", "\uFFFD") : value;
}

export class PostgresBodies {
  private readonly dictionaries = new ToolDictionaries();
  /** The bodies of the pending rows this connection wrote: their outcome is packed with them without reading them back. */
  private readonly pending = new Map<string, PendingBody>();

  constructor(
    private readonly sql: SQL,
    private readonly path: string,
  ) {}

  async action(row: Row): Promise<Action> {
    return (await this.actions([row]))[0]!;
  }

  /** Rows as actions. */
  async actions(rows: Row[]): Promise<Action[]> {
    await this.readDictionaries(rows);
    return rows.map((row) => actionOfRow(row, this.dictionary, this.path));
  }

  /** Rows' states as their chain holds them. */
  async states(rows: Row[]): Promise<ActionState[]> {
    await this.readDictionaries(rows);
    return rows.map((row) => actionStateOfStoredRow(row, this.dictionary, this.path));
  }

  /** How `body` is stored: packed against its tool's dictionary (proposed from samples when it has none), or as text. */
  async stored(server: string, tool: string, body: Body): Promise<StoredBody> {
    let dictionary = this.dictionaries.known(server, tool, body);
    if (dictionary === undefined) {
      const proposal = this.dictionaries.proposal(server, tool, body);
      if (proposal) {
        await this.sql`
          INSERT INTO dictionaries (server, tool, content, created_at) VALUES (${text(server)}, ${text(tool)}, ${proposal}, ${new Date().toISOString()})
          ON CONFLICT (server, tool) DO NOTHING`;
      }
      const [row] = await this.sql`SELECT id, content FROM dictionaries WHERE server = ${text(server)} AND tool = ${text(tool)}`;
      dictionary = row ? { id: Number(row.id), content: row.content } : null;
      this.dictionaries.remember(server, tool, dictionary);
    }
    return storedBody(body, dictionary ?? undefined);
  }

  /** A call's intent was written with `body`. */
  wrotePending(id: string, pending: PendingBody): void {
    this.pending.set(id, pending);
  }

  /** The body of a pending call, as its intent was written (read back when another connection wrote it); undefined when it is not pending. */
  async takePending(id: string): Promise<PendingBody | undefined> {
    const known = this.pending.get(id);
    this.pending.delete(id);
    if (known) return known;
    const [row] = await this.sql`SELECT * FROM actions WHERE id = ${id} AND status = 'pending'`;
    return row ? { server: String(row.server), tool: String(row.tool), body: await this.bodyOf(row) } : undefined;
  }

  /** The stored body of row `id` with its inverse or verification read replaced; undefined when there is no such row. */
  async rebuilt(id: string, change: Parameters<typeof rebuiltBody>[1]): Promise<StoredBody | undefined> {
    const [row] = await this.sql`SELECT * FROM actions WHERE id = ${id}`;
    if (!row) return undefined;
    return this.stored(String(row.server), String(row.tool), rebuiltBody(await this.bodyOf(row), change));
  }

  /** Write a row's body columns (in the caller's transaction `sql`, when it has one). */
  async write(id: string, stored: StoredBody, sql: SQL = this.sql): Promise<void> {
    await sql`
      UPDATE actions SET args = ${stored.args}, snapshot = ${stored.snapshot}, result = ${stored.result}, inverse = ${stored.inverse},
                         post_state = ${stored.post_state}, verify = ${stored.verify}, packed = ${stored.packed}
       WHERE id = ${id}`;
  }

  private async bodyOf(row: Row): Promise<Body> {
    await this.readDictionaries([row]);
    return readBody(row, this.dictionary, this.path);
  }

  /** The content of dictionary `id`, as readDictionaries() read it. */
  private readonly dictionary = (id: number): Uint8Array | undefined => this.dictionaries.contents.get(id);

  private async readDictionaries(rows: Row[]): Promise<void> {
    const missing = new Set<number>();
    for (const row of rows) {
      if (!(row.packed instanceof Uint8Array)) continue;
      let id: number;
      try {
        id = dictionaryIdOf(row.packed);
      } catch {
        continue; // actionOfRow() says what is wrong with it
      }
      if (id !== 0 && !this.dictionaries.contents.has(id)) missing.add(id);
    }
    if (missing.size === 0) return;
    for (const row of await this.sql`SELECT id, content FROM dictionaries WHERE id IN ${this.sql([...missing])}`) {
      this.dictionaries.contents.set(Number(row.id), row.content);
    }
  }
}
