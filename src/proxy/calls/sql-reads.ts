// What recording a statement of SQL needs of its server, whatever the
// dialect (sql-call.ts for SQLite, sql-postgres.ts for PostgreSQL): one value
// asked of the database through the rule's read tool, the read undo repeats
// for drift, and the request line that carries the statement as pinned.
import { canonicalJson } from "../../canonical.ts";
import { readFailed, type Observation, type ResolvedCall, type VerifyCall, type Inverse } from "../../journal/types.ts";
import { inverseOf } from "../../manifest/inverse.ts";
import type { SqlSpec } from "../../manifest/types.ts";
import { readState } from "../../servers/observe.ts";
import { valueNamed } from "../../sql/plan.ts";
import type { CallContext, ToolCall } from "./call-types.ts";

/** A read of Synartesis's own fails as a read: no error of the tool means "absent" here. */
const NO_ABSENCE = ["\u0000"];

/** One value Synartesis asked the database for (a JSON text in column `column`), and the read's whole answer, read through the rule's read tool. */
export async function readValue(
  ctx: CallContext,
  call: ToolCall,
  spec: SqlSpec,
  sql: string,
  column: string,
): Promise<{ value: string; payload: unknown } | { error: string }> {
  const read: VerifyCall = { ...readCall(spec, sql), absentWhen: NO_ABSENCE };
  const { read: state } = await readState(ctx.upstream(spec.read.server), read, call.origin);
  if (readFailed(state)) return { error: `${spec.read.server}.${spec.read.tool} failed: ${state.error}` };
  if (state.absent) return { error: `${spec.read.server}.${spec.read.tool} found nothing` };
  const value = valueNamed(state.payload, column);
  return value === undefined ? { error: `${spec.read.server}.${spec.read.tool} did not answer with the column ${column}` } : { value, payload: state.payload };
}

export function readCall(spec: SqlSpec, sql: string): ResolvedCall {
  return { server: spec.read.server, tool: spec.read.tool, args: { ...spec.read.args, [spec.read.arg]: sql } };
}

/** Undo's check for drift: the same read; an error that says the table is gone (`gone`) means it is. */
export function verifyCall(spec: SqlSpec, sql: string, gone: string): VerifyCall {
  return { ...readCall(spec, sql), absentWhen: [gone] };
}

/** The request line to forward: the statement as `sent` (pinned), the arguments otherwise the agent's. */
export function statementLine(call: ToolCall, spec: SqlSpec, sent: string): string {
  const args = { ...call.args, [spec.statementArg]: sent };
  const rest = JSON.stringify(call.otherParams).slice(1, -1);
  return `{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":${JSON.stringify(call.tool)},"arguments":${canonicalJson(args)}${rest ? `,${rest}` : ""}}}`;
}

/** The call that runs `statement` through the same tool as `call`. */
export function statementCall(call: ToolCall, spec: SqlSpec, statement: string): ResolvedCall {
  return { server: call.server, tool: call.tool, args: { ...call.args, [spec.statementArg]: statement } };
}

/** The statements that put rows back, each run through the same tool as `call`, in order; undefined when there are none. */
export function statementsInverse(call: ToolCall, spec: SqlSpec, statements: string[]): Inverse | undefined {
  return inverseOf(statements.map((statement) => statementCall(call, spec, statement)));
}

/** A read of the rows a statement left, as undo will make it again. */
export async function readAfter(ctx: CallContext, call: ToolCall, verify: VerifyCall): Promise<{ absent: false; payload: unknown } | { error: string }> {
  const { read } = await readState(ctx.upstream(verify.server), verify, call.origin);
  if (readFailed(read)) return { error: read.error };
  return read.absent ? { error: "the table is gone" } : read;
}

/** What the statement left, and how to put it back. */
export interface SqlAfter {
  postState?: Observation;
  verify?: VerifyCall;
  inverse?: Inverse;
  warnings: string[];
}

/** How a statement is to be run: as a read, held for a person (why), or recorded for undo. */
export type SqlDecision = { readOnly: true } | { held: string } | { sql: StatementRecording };

/** What the server answered the statement: its result's payload and text (a server may say there how many rows it changed). */
export interface StatementAnswer {
  payload: unknown;
  text: string;
}

/** A statement being recorded, in its dialect: read before (and pinned), forwarded, read after. */
export interface StatementRecording {
  preRead(): Promise<{ snapshot: Observation; verify?: VerifyCall } | { held: string } | { failed: string }>;
  line(): string;
  afterWrite(verify: VerifyCall | undefined, answer: StatementAnswer): Promise<SqlAfter>;
}
