// `synartesis export RUN > run.json`: one run, self-contained — its row, its
// calls, its chain and the manifest rules its calls were recorded under —
// that `synartesis verify --file run.json` checks on any machine (R-VERIFY-2).
import { defineCommand } from "citty";
import { existsSync } from "node:fs";
import { exportSeal, type RunExport } from "../journal/run-export.ts";
import type { Action, Run } from "../journal/types.ts";
import { loadManifest } from "../manifest/load.ts";
import { createMatcher } from "../manifest/match.ts";
import { journalArg, manifestArg, runArg, withExistingJournal, writeLines } from "./shared.ts";

function rulesOf(run: Run, actions: Action[]): Record<string, unknown> {
  if (!run.manifest || !existsSync(run.manifest)) return {};
  try {
    const matcher = createMatcher(loadManifest(run.manifest, process.env, { unsetVariables: "warn" }));
    const rules: Record<string, unknown> = {};
    for (const action of actions) {
      const { rule } = matcher.classify(action.server, action.tool, action.args);
      if (rule) rules[`${action.server}.${action.tool}`] = JSON.parse(JSON.stringify(rule));
    }
    return rules;
  } catch {
    return {};
  }
}

export default defineCommand({
  meta: {
    name: "export",
    description:
      "Write one run as a self-contained JSON file (its calls, its chain, the rules it was recorded under) that synartesis verify --file checks anywhere.",
  },
  args: { ...runArg, ...journalArg, ...manifestArg },
  async run({ args }) {
    await withExistingJournal(args, async (journal) => {
      const run = await journal.findRun(args.run);
      const chain = await journal.chainOf(run.id);
      // Each state as an object: verify --file canonicalises it again, and trusts no text beside it.
      const entries = chain.map(({ stateText: _, ...entry }) => entry);
      const actions = await journal.actionsOfRun(run.id);
      const rules = rulesOf(run, actions);
      const exported: RunExport = {
        format: "synartesis-run",
        version: 1,
        exportedAt: new Date().toISOString(),
        run,
        actions,
        entries,
        rules,
        seal: exportSeal(entries, rules),
      };
      writeLines([JSON.stringify(exported, null, 2)]);
    });
  },
});
