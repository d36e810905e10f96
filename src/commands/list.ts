// `synartesis list`: recorded runs, newest first (R-CLI-4).
import { defineCommand } from "citty";
import { runSummaryJson } from "../render/json.ts";
import { renderRunList } from "../render/runs.ts";
import { styleFor } from "../render/style.ts";
import { journalArg, jsonArg, manifestArg, withExistingJournal, writeJson, writeLines } from "./shared.ts";

export default defineCommand({
  meta: { name: "list", description: "List recorded runs, newest first: agent, start time, status, actions, unknown outcomes, waiting approvals." },
  args: { ...jsonArg, ...journalArg, ...manifestArg },
  async run({ args }) {
    const runs = await withExistingJournal(args, (journal) => journal.listRuns());
    if (args.json) writeJson(runs.map(runSummaryJson));
    else writeLines(renderRunList(runs, styleFor()));
  },
});
