// Which rule governs a tool (R-MAN-4, R-CLASS-1): "*" matches within one
// dot-separated part; the most specific pattern wins whatever the rule order.
import type { Manifest, Rule } from "./types.ts";

export function patternToRegExp(pattern: string): RegExp {
  const body = pattern
    .split("*")
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
    .join("[^.]*");
  return new RegExp(`^${body}$`);
}

/** Higher is more specific: literal characters first, then fewer wildcards. */
function specificity(pattern: string): [number, number] {
  const wildcards = pattern.split("*").length - 1;
  return [pattern.length - wildcards, -wildcards];
}

export interface Classification {
  /** The rule that matched, or undefined when none did (then: irreversible, gate always). */
  rule: Rule | undefined;
  class: Rule["class"];
  gate: Rule["gate"];
}

export interface Matcher {
  /**
   * The rule for a call of `server.tool`. With `args`, a rule with `when`
   * applies when every argument it names has one of its values; without them
   * (a tool listed, not called) only rules without `when` apply.
   */
  classify(server: string, tool: string, args?: unknown): Classification;
}

/** Whether a call's arguments meet a rule's `when`: each named argument has one of its values (null: the argument is not given). */
function meetsWhen(when: Rule["when"], args: unknown): boolean {
  if (!when) return true;
  const given = args !== null && typeof args === "object" && !Array.isArray(args) ? (args as Record<string, unknown>) : {};
  return when.every(([name, values]) => values.some((value) => (value === null ? !Object.hasOwn(given, name) || given[name] === null : given[name] === value)));
}

const NONE: Classification = { rule: undefined, class: "irreversible", gate: "always" };

export function createMatcher(manifest: Pick<Manifest, "rules">): Matcher {
  const compiled = manifest.rules.map((rule, order) => ({ rule, order, regexp: patternToRegExp(rule.match), rank: specificity(rule.match) }));
  // Ties (equal literal count and wildcards) go to a rule with conditions (when), then to the rule written first.
  const conditioned = (rule: Rule) => (rule.when ? 1 : 0);
  compiled.sort((a, b) => b.rank[0] - a.rank[0] || b.rank[1] - a.rank[1] || conditioned(b.rule) - conditioned(a.rule) || a.order - b.order);
  // One classification per rule, the same object each time: the call path classifies every call.
  const classified = new Map(manifest.rules.map((rule) => [rule, { rule, class: rule.class, gate: rule.gate } as Classification]));
  // Per tool, the rules whose pattern matches it, most specific first.
  const candidates = new Map<string, Rule[]>();
  return {
    classify(server, tool, args) {
      const name = `${server}.${tool}`;
      let rules = candidates.get(name);
      if (!rules) {
        rules = compiled.filter((c) => c.regexp.test(name)).map((c) => c.rule);
        candidates.set(name, rules);
      }
      const found = rules.find((rule) => (rule.when ? args !== undefined && meetsWhen(rule.when, args) : true));
      return found ? classified.get(found)! : NONE;
    },
  };
}
