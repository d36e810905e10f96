// Whether SQL text only reads, as PostgreSQL's own grammar reads it: the
// second reading of `gate: on_write` (the first, over tokens and in three
// dialects, is proxy/policy/readonly-sql.ts). A text passes only when both
// say it reads: one SELECT (no INTO, no FOR UPDATE/SHARE, every WITH query a
// SELECT too), a plain EXPLAIN, or SHOW — and no function in it that changes
// something. Text PostgreSQL cannot read (another dialect's: SQLite's GLOB,
// MySQL's backticks) is left to the first reading, whose cross-checks are
// made for other dialects.
import { hasSideEffects } from "../side-effects.ts";
import { parsePostgres } from "./parser.ts";

export type GrammarVerdict = { readOnly: true } | { readOnly: false; reason: string } | { unreadable: string };

export async function grammarReadsOnly(sql: string): Promise<GrammarVerdict> {
  const parsed = await parsePostgres(sql);
  if ("error" in parsed) return { unreadable: parsed.error };
  if (parsed.statements.length !== 1) return { readOnly: false, reason: `it holds ${parsed.statements.length} statements` };
  const [type, body] = Object.entries(parsed.statements[0]!.stmt)[0] as [string, Record<string, unknown>];
  const shape = statementReads(type, body);
  if (shape) return { readOnly: false, reason: shape };
  const writer = functionsIn(body).find(hasSideEffects);
  return writer ? { readOnly: false, reason: `it calls ${writer}(), which has side effects` } : { readOnly: true };
}

/** Why a statement is not a read, or undefined when its shape is one. */
function statementReads(type: string, body: Record<string, unknown>): string | undefined {
  switch (type) {
    case "SelectStmt":
      return selectReads(body);
    case "ExplainStmt": {
      const options = (body.options as Array<{ DefElem?: { defname?: string } }> | undefined) ?? [];
      return options.some((option) => option.DefElem?.defname === "analyze") ? "EXPLAIN ANALYZE runs the statement" : undefined;
    }
    case "VariableShowStmt":
      return undefined;
    default:
      return `${type.replace(/Stmt$/, "")} is not a read`;
  }
}

function selectReads(select: Record<string, unknown>): string | undefined {
  if (select.intoClause) return "SELECT … INTO creates a table";
  if (Array.isArray(select.lockingClause) && select.lockingClause.length) return "SELECT … FOR UPDATE/SHARE locks rows";
  const ctes = ((select.withClause as { ctes?: unknown[] } | undefined)?.ctes ?? []) as Array<{ CommonTableExpr?: { ctequery?: Record<string, unknown> } }>;
  for (const cte of ctes) {
    const [type, body] = Object.entries(cte.CommonTableExpr?.ctequery ?? {})[0] ?? ["", {}];
    if (type !== "SelectStmt") return `its WITH clause runs a ${type.replace(/Stmt$/, "") || "statement"}`;
    const inner = selectReads(body as Record<string, unknown>);
    if (inner) return inner;
  }
  for (const side of ["larg", "rarg"] as const) {
    const arm = select[side] as Record<string, unknown> | undefined;
    const inner = arm && selectReads(arm);
    if (inner) return inner;
  }
  return undefined;
}

/** The name of every function called anywhere in a parse tree (the last part of a qualified name). */
export function functionsIn(node: unknown, found: string[] = []): string[] {
  if (Array.isArray(node)) {
    for (const item of node) functionsIn(item, found);
  } else if (node !== null && typeof node === "object") {
    const call = (node as { FuncCall?: { funcname?: Array<{ String?: { sval?: string } }> } }).FuncCall;
    const name = call?.funcname?.at(-1)?.String?.sval;
    if (name) found.push(name);
    for (const value of Object.values(node)) functionsIn(value, found);
  }
  return found;
}
