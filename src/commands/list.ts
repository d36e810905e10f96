// `synartesis list`: recorded runs, newest first (R-CLI-4).
import { defineCommand } from "citty";
import { runSummaryJson } from "../render/json.ts";
import { renderRunList } from "../render/runs.ts";
import { styleFor } from "../render/style.ts";
import { journalArg, jsonArg, manifestArg, openExistingJournal, writeJson, writeLines } from "./shared.ts";

export default defineCommand({
  meta: { name: "list", description: "List recorded runs, newest first: agent, start time, status, actions, unknown outcomes, waiting approvals." },
  args: { ...jsonArg, ...journalArg, ...manifestArg },
  async run({ args }) {
    const journal = await openExistingJournal(args);
    const runs = journal.listRuns();
    journal.close();
    if (args.json) writeJson(runs.map(runSummaryJson));
    else writeLines(renderRunList(runs, styleFor()));
  },
});
