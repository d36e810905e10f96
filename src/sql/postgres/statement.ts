// One PostgreSQL statement, read twice: by PostgreSQL's own grammar
// (parser.ts: what it is, which table, whether it has a WHERE, a USING, a
// WITH, an ON CONFLICT…) and structurally over its tokens (statement.ts:
// where each clause is in the text, to read its rows and pin it). The two
// readings must agree; where they do not, or the grammar finds what undo does
// not handle, the statement is held with the reason.
import { readStatement, type OnConflict, type Reading, type Statement } from "../statement.ts";
import { hasSideEffects } from "../side-effects.ts";
import { parsePostgres, type ParsedStatement } from "./parser.ts";
import { functionsIn } from "./readonly.ts";

const KINDS: Record<string, Statement["kind"]> = { DeleteStmt: "delete", UpdateStmt: "update", InsertStmt: "insert" };

/** A statement both readings agree on, with its WHERE as the grammar read it (the pinned text's is checked against it). */
export type PostgresReading = Extract<Reading, { statement: Statement }> & { whereTree: unknown };

/** Read `text` as one PostgreSQL statement that changes data, or why it is held. */
export async function readPostgresStatement(text: string): Promise<PostgresReading | { held: string }> {
  const parsed = await parsePostgres(text);
  if ("error" in parsed) return { held: `PostgreSQL would not run it: ${parsed.error}` };
  if (parsed.statements.length === 0) return { held: "there is no statement" };
  if (parsed.statements.length > 1) return { held: "it runs several statements in one call" };
  const node = parsed.statements[0]!;
  const grammar = judgedByGrammar(node);
  if ("held" in grammar) return grammar;
  const reading = readStatement(text, "postgres");
  if ("held" in reading) return reading;
  const disagreement = disagreementWith(grammar, reading.statement);
  if (disagreement) return { held: `Synartesis and PostgreSQL read it differently (${disagreement}): not recorded` };
  return { ...reading, whereTree: (Object.values(node.stmt)[0] as { whereClause?: unknown }).whereClause };
}

/** What PostgreSQL's grammar says the statement is, or why it is held. */
function judgedByGrammar(node: ParsedStatement): Grammar | { held: string } {
  const [type, body] = Object.entries(node.stmt)[0] as [string, Record<string, unknown>];
  const kind = KINDS[type];
  if (type === "TransactionStmt") return { held: "it controls a transaction (BEGIN, COMMIT, ROLLBACK, SAVEPOINT)" };
  if (type === "TruncateStmt") return { held: "TRUNCATE empties tables without their rows being read: not undone" };
  if (body.withClause) return { held: "a statement with a WITH clause is not yet undone by Synartesis" };
  if (!kind) {
    const what = type.replace(/Stmt$/, "");
    return {
      held: /^(Create|Alter|Drop|Rename|Truncate|Comment|Grant|Index|View)/.test(type)
        ? `it changes the schema (${what})`
        : `${what} is not one Synartesis can undo (it undoes INSERT, UPDATE and DELETE)`,
    };
  }
  if (body.usingClause) return { held: "a DELETE … USING (a join) is not yet undone by Synartesis" };
  if (Array.isArray(body.fromClause) && body.fromClause.length) return { held: "an UPDATE … FROM (a join) is not yet undone by Synartesis" };
  // Its rows are read first by its own WHERE (an INSERT … SELECT's counted by its SELECT): a function there that changes something would run twice.
  const writer = functionsIn(body.whereClause ?? body.selectStmt).find(hasSideEffects);
  if (writer) return { held: `it calls ${writer}() where its rows are chosen, which has side effects: reading its rows first would run it again` };
  const relation = body.relation as { relname: string; schemaname?: string; inh?: boolean; alias?: { aliasname: string } };
  return {
    kind,
    table: relation.relname,
    ...(relation.schemaname !== undefined && { schema: relation.schemaname }),
    ...(relation.alias && { alias: relation.alias.aliasname }),
    where: body.whereClause !== undefined,
    returning: Array.isArray((body.returningClause as { exprs?: unknown[] } | undefined)?.exprs) || Array.isArray(body.returningList),
    ...(body.onConflictClause !== undefined && { onConflict: conflictOf(body.onConflictClause as ConflictClause) }),
  };
}

interface ConflictClause {
  action: string;
  infer?: { indexElems?: Array<{ IndexElem?: { name?: string } }>; conname?: string; whereClause?: unknown };
  targetList?: Array<{ ResTarget?: { name?: string } }>;
}

/** The grammar's ON CONFLICT, in the terms of the structural reading (an expression target, which has no name, as "?"). */
function conflictOf(clause: ConflictClause): OnConflict {
  const target = clause.infer?.indexElems?.map((elem) => elem.IndexElem?.name ?? "?");
  return {
    ...(target && { target: clause.infer?.whereClause === undefined ? target : [...target, "WHERE"] }),
    ...(clause.infer?.conname !== undefined && { constraint: clause.infer.conname }),
    action: clause.action === "ONCONFLICT_UPDATE" ? "update" : "nothing",
    columns: (clause.targetList ?? []).map((target) => target.ResTarget?.name ?? "?"),
  };
}

interface Grammar {
  kind: Statement["kind"];
  schema?: string;
  table: string;
  alias?: string;
  where: boolean;
  returning: boolean;
  onConflict?: OnConflict;
}

/** Where the structural reading differs from the grammar's, in words; undefined when they agree. */
function disagreementWith(grammar: Grammar, statement: Statement): string | undefined {
  if (grammar.kind !== statement.kind) return `a ${grammar.kind} or a ${statement.kind}`;
  if (grammar.table !== statement.table.name || grammar.schema !== statement.table.schema) return "which table";
  if (grammar.alias !== statement.table.alias) return "its alias";
  const where = statement.kind === "insert" ? false : statement.where !== undefined;
  if (grammar.where !== where) return "whether it has a WHERE";
  if (grammar.returning !== (statement.returning !== undefined)) return "whether it has a RETURNING";
  const conflict = statement.kind === "insert" ? statement.onConflict : undefined;
  if (JSON.stringify(grammar.onConflict) !== JSON.stringify(conflict)) return "its ON CONFLICT";
  return undefined;
}
