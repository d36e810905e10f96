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
  classify(server: string, tool: string): Classification;
}

export function createMatcher(manifest: Pick<Manifest, "rules">): Matcher {
  const compiled = manifest.rules.map((rule, order) => ({ rule, order, regexp: patternToRegExp(rule.match), rank: specificity(rule.match) }));
  // Ties (equal literal count and wildcards) go to the rule written first.
  compiled.sort((a, b) => b.rank[0] - a.rank[0] || b.rank[1] - a.rank[1] || a.order - b.order);
  const cache = new Map<string, Classification>();
  return {
    classify(server, tool) {
      const name = `${server}.${tool}`;
      const cached = cache.get(name);
      if (cached) return cached;
      const found = compiled.find((c) => c.regexp.test(name))?.rule;
      const result: Classification = found ? { rule: found, class: found.class, gate: found.gate } : { rule: undefined, class: "irreversible", gate: "always" };
      cache.set(name, result);
      return result;
    },
  };
}
