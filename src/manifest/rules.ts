// The `tools:` section: each rule's match, class and gate, and its snapshot
// and inverse calls with the references they may use (R-MAN-3, R-CLASS-2).
import type { SectionContext } from "./context.ts";
import { patternToRegExp } from "./match.ts";
import type { Path } from "./problems.ts";
import { parseTemplate, refsOf, type Namespace, type Template } from "./refs.ts";
import type { RawCall, RawRule } from "./schema.ts";
import { DEFAULT_MAX_ROWS, DRAFT_MARK, type CallSpec, type Rule, type SqlSpec, type WhenValue } from "./types.ts";

const withArticle = (word: string) => (/^[aeiou]/.test(word) ? `an ${word}` : `a ${word}`);

function splitTool(qualified: string): { server: string; tool: string } | undefined {
  const dot = qualified.indexOf(".");
  if (dot <= 0 || dot === qualified.length - 1) return undefined;
  return { server: qualified.slice(0, dot), tool: qualified.slice(dot + 1) };
}

type CallPart = "snapshot" | "inverse" | "when_absent";

const ALLOWED_NAMESPACES: Record<CallPart, (hasSnapshot: boolean) => Namespace[]> = {
  snapshot: () => ["args"],
  inverse: (hasSnapshot) => (hasSnapshot ? ["args", "result", "snapshot"] : ["args", "result"]),
  // Used when the snapshot found nothing: there is no snapshot to read.
  when_absent: () => ["args", "result"],
};

const NAMESPACE_TEXT: Record<Namespace, string> = { args: "$.", result: "$result", snapshot: "$snapshot", item: "$item" };

/**
 * The rules whose shape was right, checked against each other and against
 * `serverNames`. With no servers (already reported) every rule would name an
 * undeclared one, so names are checked only when there are some.
 */
export function parseRules(raw: RawRule[], serverNames: string[], ctx: SectionContext, groupNames: string[] = []): Rule[] {
  const rules: Rule[] = [];
  const seen = new Map<string, number>();
  raw.forEach((rule, index) => {
    const path: Path = ["tools", index];
    const line = ctx.position(path).line;
    // Before the shape check: a rule with a wrong class still takes its match (two rules may share one with different `when`s).
    if (typeof rule?.match === "string") {
      const key = `${rule.match}\u0000${JSON.stringify(rule.when ?? null)}`;
      const previous = seen.get(key);
      const what = rule.when ? `match "${rule.match}" with the same when` : `match "${rule.match}"`;
      if (previous !== undefined) ctx.report([...path, "match"], `duplicate ${what} (already used by the rule at line ${previous})`);
      else seen.set(key, line);
    }
    if (!ctx.shapeOk(...path)) return;
    checkMatch(rule.match, [...path, "match"], serverNames, ctx);
    const when = rule.when === undefined ? undefined : parseWhen(rule.when, [...path, "when"], ctx);
    rule.approvers?.forEach((approver, i) => {
      const group = approver.startsWith("group:") ? approver.slice("group:".length) : undefined;
      if (group !== undefined && !groupNames.includes(group)) {
        ctx.report(
          [...path, "approvers", i],
          `approver "${approver}" names a group the manifest's groups: does not define${groupNames.length ? ` (defined: ${groupNames.join(", ")})` : ""}`,
        );
      }
    });
    // A rule init proposed and nobody confirmed yet (its mark) is kept as written, and every call of it waits for a person.
    const extra = {
      ...(ctx.comment(path)?.includes(DRAFT_MARK) && ({ draft: true, gate: "always" } as const)),
      ...(when && { when }),
      ...(rule.approvers && { approvers: rule.approvers }),
    };
    if (rule.sql) {
      const sql = parseSql(rule, path, serverNames, ctx);
      if (sql) rules.push({ match: rule.match, class: rule.class, gate: rule.gate ?? "never", sql, line, ...extra });
      return;
    }
    checkClass(rule, path, ctx);
    const parsed: Rule = {
      match: rule.match,
      class: rule.class,
      gate: rule.gate ?? (rule.class === "irreversible" ? "always" : "never"),
      idempotent: rule.idempotent === true,
      line,
      ...extra,
    };
    if (rule.snapshot) parsed.snapshot = parseCall(rule.snapshot, "snapshot", rule, [...path, "snapshot"], serverNames, ctx);
    if (rule.inverse) parsed.inverse = parseCalls(rule.inverse, "inverse", rule, path, serverNames, ctx);
    if (rule.when_absent) parsed.whenAbsent = parseCalls(rule.when_absent, "when_absent", rule, path, serverNames, ctx);
    rules.push(parsed);
  });
  return rules;
}

/** A rule's `when`: each argument with a value or a list of values, each a string, number, true/false, or null (the argument not given). */
function parseWhen(raw: Record<string, unknown>, path: Path, ctx: SectionContext): Array<[string, WhenValue[]]> {
  const scalar = (value: unknown): value is WhenValue => value === null || ["string", "number", "boolean"].includes(typeof value);
  return Object.entries(raw).flatMap(([name, value]): Array<[string, WhenValue[]]> => {
    const values = Array.isArray(value) ? value : [value];
    if (values.length === 0 || !values.every(scalar)) {
      ctx.report(
        [...path, name],
        `"when" gives each argument a value or a list of values (a string, a number, true or false, or null for "not given"); found ${JSON.stringify(value)}`,
      );
      return [];
    }
    return [[name, values]];
  });
}

function checkMatch(match: string, path: Path, serverNames: string[], ctx: SectionContext): void {
  const split = splitTool(match);
  if (!split) {
    ctx.report(path, `match "${match}" must look like "server.tool" (a "*" matches within one part)`);
  } else if (serverNames.length) {
    const serverPattern = patternToRegExp(split.server);
    if (!serverNames.some((s) => serverPattern.test(s))) {
      ctx.report(path, `match "${match}" names no declared server (declared: ${serverNames.join(", ")})`);
    }
  }
}

/** What a rule's class requires and forbids. */
function checkClass(rule: RawRule, path: Path, ctx: SectionContext): void {
  const needsInverse = rule.class === "reversible" || rule.class === "compensable";
  if (needsInverse && !rule.inverse) {
    ctx.report(path, `${withArticle(rule.class)} rule needs an "inverse" (the call that puts the state back)`);
  }
  if (!needsInverse && rule.inverse) {
    ctx.report([...path, "inverse"], `${withArticle(rule.class)} rule has no inverse; remove it or change the class`, true);
  }
  if (rule.class === "readonly" && rule.snapshot) {
    ctx.report([...path, "snapshot"], `a readonly rule changes nothing, so it takes no snapshot`, true);
  }
  if (rule.class === "reversible" && !rule.snapshot) {
    ctx.report(path, `a reversible rule needs a "snapshot" (the read that captures the state it replaces); without one, make it compensable`);
  }
  if (rule.idempotent !== undefined && !needsInverse) {
    ctx.report([...path, "idempotent"], `"idempotent" says undo may resend this rule's inverse, and ${withArticle(rule.class)} rule has none`, true);
  }
  if (rule.when_absent !== undefined && rule.class !== "reversible") {
    ctx.report(
      [...path, "when_absent"],
      `"when_absent" undoes a reversible call whose snapshot found nothing; ${withArticle(rule.class)} rule has no snapshot to find nothing`,
      true,
    );
  } else if (rule.when_absent !== undefined && !rule.snapshot) {
    ctx.report([...path, "when_absent"], `"when_absent" needs a "snapshot" (the read that may find nothing)`);
  }
  // How a read is understood belongs to the snapshot (the read), not to the calls that put the state back.
  for (const part of ["inverse", "when_absent"] as const) {
    const raw = rule[part];
    [raw ?? []].flat().forEach((call, i) => {
      for (const key of ["absent_when", "absent_text", "as_text"] as const) {
        if (call[key] === undefined) continue;
        const read = key === "absent_when" ? "the read that may find nothing" : "the read of the state";
        ctx.report(
          [...path, part, ...(Array.isArray(raw) ? [i] : []), key],
          `"${key}" belongs to a snapshot (${read}), not to ${part === "inverse" ? "an inverse" : "when_absent"}`,
          true,
        );
      }
    });
  }
}

/** An inverse (or when_absent) of one call or of several in order. */
function parseCalls(
  raw: RawCall | RawCall[],
  part: "inverse" | "when_absent",
  rule: RawRule,
  rulePath: Path,
  serverNames: string[],
  ctx: SectionContext,
): CallSpec[] {
  const calls: Array<[RawCall, Path]> = Array.isArray(raw) ? raw.map((call, i) => [call, [...rulePath, part, i]]) : [[raw, [...rulePath, part]]];
  return calls.map(([call, at]) => parseCall(call, part, rule, at, serverNames, ctx));
}

/** A rule's snapshot or one call of its inverse (at `path`): one concrete tool, and args whose references that part may use. */
function parseCall(raw: RawCall, part: CallPart, rule: RawRule, path: Path, serverNames: string[], ctx: SectionContext): CallSpec {
  const target = splitTool(raw.tool);
  if (!target || raw.tool.includes("*")) {
    ctx.report([...path, "tool"], `${part} tool "${raw.tool}" must name one tool as "server.tool" (no "*")`);
  } else if (serverNames.length && !serverNames.includes(target.server)) {
    ctx.report([...path, "tool"], `${part} tool "${raw.tool}" names an undeclared server "${target.server}" (declared: ${serverNames.join(", ")})`);
  }
  const refProblems: Array<{ at: Path; message: string }> = [];
  const args = parseTemplate(raw.args ?? {}, refProblems);
  for (const problem of refProblems) ctx.report([...path, "args", ...problem.at], problem.message);
  const allowed = ALLOWED_NAMESPACES[part](rule.snapshot !== undefined);
  for (const { ref, at } of refsOf(args)) {
    if (allowed.includes(ref.namespace)) continue;
    const why =
      ref.namespace === "snapshot" && part === "inverse"
        ? `${ref.text} reads the snapshot, but this rule declares no "snapshot"`
        : `${ref.text} cannot be used in ${part} args (allowed here: ${allowed.map((n) => NAMESPACE_TEXT[n]).join(", ")})`;
    ctx.report([...path, "args", ...at], why);
  }
  const absent = raw.absent_when;
  const toolPos = ctx.position([...path, "tool"]);
  return {
    at: { line: toolPos.line, col: toolPos.col },
    server: target?.server ?? "",
    tool: target?.tool ?? "",
    args,
    absentWhen: absent === undefined ? [] : [absent].flat(),
    ...(raw.absent_text !== undefined && part === "snapshot" && { absentText: absentTextOf(raw.absent_text, [...path, "absent_text"], ctx) }),
    ...(raw.as_text === true && part === "snapshot" && { asText: true }),
  };
}

/** A snapshot's absent_text: text that may name the call's arguments ("Key not found: $.key"), nothing else. */
function absentTextOf(text: string, path: Path, ctx: SectionContext): Template {
  const problems: Array<{ at: Path; message: string }> = [];
  const template = parseTemplate(text, problems);
  for (const problem of problems) ctx.report(path, problem.message);
  for (const { ref } of refsOf(template)) {
    if (ref.namespace !== "args") ctx.report(path, `${ref.text} cannot be used in absent_text (allowed here: $.)`);
  }
  return template;
}

/**
 * A rule's `sql:` block: its snapshot and inverse come from each statement,
 * so the rule declares neither; it is reversible (what cannot be undone is
 * held statement by statement).
 */
function parseSql(rule: RawRule, rulePath: Path, serverNames: string[], ctx: SectionContext): SqlSpec | undefined {
  const raw = rule.sql!;
  const path: Path = [...rulePath, "sql"];
  let ok = true;
  const report = (at: Path, message: string) => {
    ctx.report(at, message);
    ok = false;
  };
  for (const part of ["snapshot", "inverse"] as const) {
    if (rule[part]) report([...rulePath, part], `a rule with "sql" takes no "${part}": it comes from each statement`);
  }
  if (rule.class !== "reversible")
    report([...rulePath, "class"], `a rule with "sql" is reversible (a statement that cannot be undone is held): set class: reversible`);
  const arg = /^\$\.([A-Za-z_][\w-]*)$/.exec(raw.statement)?.[1];
  if (!arg) report([...path, "statement"], `statement "${raw.statement}" must name the argument that carries the SQL, as "$.name" (e.g. "$.query")`);
  const target = splitTool(raw.read.tool);
  if (!target || raw.read.tool.includes("*")) {
    report([...path, "read", "tool"], `read tool "${raw.read.tool}" must name one tool as "server.tool" (no "*")`);
  } else if (serverNames.length && !serverNames.includes(target.server)) {
    report([...path, "read", "tool"], `read tool "${raw.read.tool}" names an undeclared server "${target.server}" (declared: ${serverNames.join(", ")})`);
  }
  if (!ok || !arg || !target) return undefined;
  return {
    dialect: raw.dialect,
    statementArg: arg,
    read: { server: target.server, tool: target.tool, arg: raw.read.arg, args: raw.read.args ?? {} },
    maxRows: raw.max_rows ?? DEFAULT_MAX_ROWS,
  };
}
