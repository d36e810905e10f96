// Which rule governs a tool (R-MAN-4, R-CLASS-1): "*" within one dot segment, the
// most specific pattern wins whatever the order (most literal characters, then fewer
// wildcards, then the rule written first), and an unmatched tool is irreversible, gated.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { createMatcher, patternToRegExp } from "../../src/manifest/match.ts";
import type { Gate, Rule, ToolClass } from "../../src/manifest/types.ts";

function rule(match: string, cls: ToolClass = "readonly", gate: Gate = cls === "irreversible" ? "always" : "never"): Rule {
  return { match, class: cls, gate, line: 0 };
}

/** The pattern of the rule that governs server.tool under these rules, or undefined. */
function winner(patterns: string[], name: string): string | undefined {
  const dot = name.indexOf(".");
  return createMatcher({ rules: patterns.map((p) => rule(p)) }).classify(name.slice(0, dot), name.slice(dot + 1)).rule?.match;
}

function permutations<T>(items: T[]): T[][] {
  if (items.length <= 1) return [items];
  return items.flatMap((item, i) => permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]));
}

describe("patterns (R-MAN-4)", () => {
  test('"*" matches within one dot-separated segment', () => {
    const send = patternToRegExp("crm.send_*");
    expect(send.test("crm.send_email")).toBe(true);
    expect(send.test("crm.send_")).toBe(true);
    expect(send.test("crm.send_a.b")).toBe(false);
    expect(send.test("crm.send")).toBe(false);
    expect(send.test("crm.a.b")).toBe(false);
    const any = patternToRegExp("crm.*");
    expect(any.test("crm.get_customer")).toBe(true);
    expect(any.test("crm.a.b")).toBe(false);
    expect(any.test("crm.")).toBe(true);
  });

  test("patterns are anchored at both ends and case-sensitive", () => {
    const re = patternToRegExp("crm.get");
    expect(re.test("crm.get")).toBe(true);
    expect(re.test("xcrm.get")).toBe(false);
    expect(re.test("crm.getx")).toBe(false);
    expect(re.test("CRM.get")).toBe(false);
  });

  test("every character but * is literal, including . and regular-expression syntax", () => {
    expect(patternToRegExp("crm.a.b").test("crmXaXb")).toBe(false);
    expect(patternToRegExp("crm.get(1)+").test("crm.get(1)+")).toBe(true);
    expect(patternToRegExp("crm.get(1)+").test("crm.get11")).toBe(false);
    expect(patternToRegExp("db.a?[x]|^$\\").test("db.a?[x]|^$\\")).toBe(true);
    expect(patternToRegExp("db.a?").test("db.a")).toBe(false);
  });

  test("a * server segment matches every server, one segment only", () => {
    expect(patternToRegExp("*.get_*").test("crm.get_customer")).toBe(true);
    expect(patternToRegExp("*.get_*").test("mail.get_inbox")).toBe(true);
    expect(patternToRegExp("*.get_*").test("a.b.get_x")).toBe(false);
    expect(patternToRegExp("c*.list").test("crm.list")).toBe(true);
    expect(patternToRegExp("c*.list").test("mail.list")).toBe(false);
  });
});

describe("the most specific rule wins, in any order (R-MAN-4)", () => {
  test("exact beats pattern beats broader pattern, for every order of the rules", () => {
    const patterns = ["crm.*", "crm.send_*", "crm.send_email", "*.*"];
    for (const order of permutations(patterns)) {
      expect(winner(order, "crm.send_email")).toBe("crm.send_email");
      expect(winner(order, "crm.send_sms")).toBe("crm.send_*");
      expect(winner(order, "crm.get_customer")).toBe("crm.*");
      expect(winner(order, "mail.read")).toBe("*.*");
    }
  });

  test("more literal characters win even with a wildcard elsewhere", () => {
    for (const order of permutations(["crm.send_*", "crm.*_email", "*.send_email"])) {
      // *.send_email has 11 literal characters, crm.*_email 10, crm.send_* 9.
      expect(winner(order, "crm.send_email")).toBe("*.send_email");
      expect(winner(order, "crm.bulk_email")).toBe("crm.*_email");
      expect(winner(order, "crm.send_sms")).toBe("crm.send_*");
    }
  });

  test("equal literal characters: fewer wildcards win", () => {
    for (const order of permutations(["crm.*a*b", "crm.a*b", "crm.*"])) {
      // Six literal characters each (c r m . a b); one wildcard beats two.
      expect(winner(order, "crm.ab")).toBe("crm.a*b");
      expect(winner(order, "crm.axb")).toBe("crm.a*b");
      expect(winner(order, "crm.xab")).toBe("crm.*a*b");
      expect(winner(order, "crm.x")).toBe("crm.*");
    }
  });

  test("equal literal characters and wildcards: the rule written first wins", () => {
    expect(winner(["crm.a*", "crm.*a"], "crm.aa")).toBe("crm.a*");
    expect(winner(["crm.*a", "crm.a*"], "crm.aa")).toBe("crm.*a");
    expect(winner(["*.get", "crm.*"], "crm.get")).toBe("*.get");
    expect(winner(["crm.*", "*.get"], "crm.get")).toBe("crm.*");
  });

  test("a * server segment loses to the server's own rule of the same tool", () => {
    for (const order of permutations(["*.delete_*", "crm.delete_*", "crm.delete_customer"])) {
      expect(winner(order, "crm.delete_customer")).toBe("crm.delete_customer");
      expect(winner(order, "crm.delete_note")).toBe("crm.delete_*");
      expect(winner(order, "files.delete_file")).toBe("*.delete_*");
    }
  });

  test("the matched rule's class and gate are returned", () => {
    const matcher = createMatcher({ rules: [rule("db.query", "readonly", "on_write"), rule("crm.send_*", "irreversible"), rule("crm.update", "reversible")] });
    expect(matcher.classify("db", "query")).toMatchObject({ class: "readonly", gate: "on_write" });
    expect(matcher.classify("crm", "send_email")).toMatchObject({ class: "irreversible", gate: "always" });
    expect(matcher.classify("crm", "update")).toMatchObject({ class: "reversible", gate: "never" });
    expect(matcher.classify("crm", "update").rule!.match).toBe("crm.update");
  });
});

describe("unmatched tools (R-CLASS-1)", () => {
  test("a tool no rule matches is irreversible with gate always, and has no rule", () => {
    const matcher = createMatcher({ rules: [rule("crm.get_*"), rule("crm.send_*", "irreversible", "never")] });
    expect(matcher.classify("crm", "drop_database")).toEqual({ rule: undefined, class: "irreversible", gate: "always" });
    expect(matcher.classify("mail", "get_inbox")).toEqual({ rule: undefined, class: "irreversible", gate: "always" });
    // A dotted tool name is not matched by a one-segment *.
    expect(matcher.classify("crm", "get_x.y")).toEqual({ rule: undefined, class: "irreversible", gate: "always" });
  });

  test("a manifest with no rules gates everything", () => {
    expect(createMatcher({ rules: [] }).classify("crm", "get_customer")).toEqual({ rule: undefined, class: "irreversible", gate: "always" });
  });

  test("a tool whose name has a dot is matched by its literal name", () => {
    expect(winner(["crm.v2.get", "crm.*"], "crm.v2.get")).toBe("crm.v2.get");
    expect(winner(["crm.*.get"], "crm.v2.get")).toBe("crm.*.get");
  });

  test("asking twice gives the same answer", () => {
    const matcher = createMatcher({ rules: [rule("crm.*")] });
    expect(matcher.classify("crm", "a")).toBe(matcher.classify("crm", "a"));
    expect(matcher.classify("x", "a")).toEqual(matcher.classify("x", "a"));
  });
});

describe("properties", () => {
  // A reference matcher written independently of the regular expression: * eats
  // any run of characters that contains no dot.
  function globMatches(pattern: string, name: string): boolean {
    if (pattern === "") return name === "";
    if (pattern[0] === "*") {
      for (let i = 0; i <= name.length && (i === 0 || name[i - 1] !== "."); i++) {
        if (globMatches(pattern.slice(1), name.slice(i))) return true;
      }
      return false;
    }
    return name !== "" && pattern[0] === name[0] && globMatches(pattern.slice(1), name.slice(1));
  }
  const rank = (p: string) => [p.replaceAll("*", "").length, -(p.split("*").length - 1)] as const;
  function expected(patterns: string[], name: string): string | undefined {
    let best: string | undefined;
    for (const p of patterns) {
      if (!globMatches(p, name)) continue;
      if (best === undefined) best = p;
      else {
        const [a, b] = [rank(p), rank(best)];
        if (a[0] > b[0] || (a[0] === b[0] && a[1] > b[1])) best = p;
      }
    }
    return best;
  }

  const segment = fc.string({ unit: fc.constantFrom("a", "b", "*"), minLength: 0, maxLength: 4 });
  const pattern = fc.tuple(segment, segment).map(([s, t]) => `${s || "a"}.${t || "*"}`);
  const toolName = fc.tuple(
    fc.string({ unit: fc.constantFrom("a", "b"), minLength: 1, maxLength: 3 }),
    fc.string({ unit: fc.constantFrom("a", "b", "."), maxLength: 5 }),
  );

  test("property: the matcher agrees with an independent glob and the specificity order", () => {
    fc.assert(
      fc.property(fc.uniqueArray(pattern, { maxLength: 6 }), toolName, (patterns, [server, tool]) => {
        expect(winner(patterns, `${server}.${tool}`)).toBe(expected(patterns, `${server}.${tool}`));
      }),
      { numRuns: 1000 },
    );
  });

  test("property: reordering the rules never changes the winner's specificity, nor the winner when it is unique", () => {
    fc.assert(
      fc.property(
        fc
          .uniqueArray(pattern, { minLength: 1, maxLength: 6 })
          .chain((patterns) => fc.tuple(fc.constant(patterns), fc.shuffledSubarray(patterns, { minLength: patterns.length }), toolName)),
        ([patterns, shuffled, [server, tool]]) => {
          const name = `${server}.${tool}`;
          const a = winner(patterns, name);
          const b = winner(shuffled, name);
          expect(a === undefined).toBe(b === undefined);
          if (a === undefined || b === undefined) return;
          expect(rank(a)).toEqual(rank(b));
          const tied = patterns.filter((p) => globMatches(p, name) && rank(p)[0] === rank(a)[0] && rank(p)[1] === rank(a)[1]);
          if (tied.length === 1) expect(b).toBe(a);
        },
      ),
      { numRuns: 1000 },
    );
  });
});

describe("when: rules for some of a tool's calls, by their arguments", () => {
  const matcher = createMatcher({
    rules: [
      rule("git.git_branch", "irreversible"),
      { ...rule("git.git_branch", "compensable"), when: [["mode", ["create"]]] },
      { ...rule("git.git_branch", "readonly"), when: [["mode", ["list", "show"]]] },
      { ...rule("git.git_add", "compensable"), when: [["all", [null, false]]] },
      rule("git.*", "irreversible"),
    ],
  });
  test("the rule whose when the arguments meet, else the one without", () => {
    expect(matcher.classify("git", "git_branch", { mode: "create", branchName: "x" }).class).toBe("compensable");
    expect(matcher.classify("git", "git_branch", { mode: "show" }).class).toBe("readonly");
    expect(matcher.classify("git", "git_branch", { mode: "rename" }).class).toBe("irreversible");
    expect(matcher.classify("git", "git_branch", {}).class).toBe("irreversible");
  });
  test("null stands for an argument not given (or given as null)", () => {
    expect(matcher.classify("git", "git_add", { paths: ["a"] }).class).toBe("compensable");
    expect(matcher.classify("git", "git_add", { paths: ["a"], all: false }).class).toBe("compensable");
    expect(matcher.classify("git", "git_add", { all: true }).class).toBe("irreversible");
  });
  test("without arguments (a tool listed, not called) only rules without when apply", () => {
    expect(matcher.classify("git", "git_branch").class).toBe("irreversible");
    expect(matcher.classify("git", "git_add").rule?.match).toBe("git.*");
  });
});
