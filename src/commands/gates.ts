// `synartesis gates`: everything waiting for a person's decision (R-GATE-2).
import { defineCommand } from "citty";
import { actionJson } from "../render/json.ts";
import { renderGates } from "../render/runs.ts";
import { styleFor } from "../render/style.ts";
import { decisionCommandFor } from "../self.ts";
import { journalArg, jsonArg, manifestArg, withExistingJournal, writeJson, writeLines } from "./shared.ts";

export default defineCommand({
  meta: { name: "gates", description: "List calls held for a person's approval: tool, arguments, class, why, and how to approve or deny." },
  args: { ...jsonArg, ...journalArg, ...manifestArg },
  async run({ args }) {
    const { waiting, path } = await withExistingJournal(args, async (journal) => ({ waiting: await journal.waiting(), path: journal.path }));
    if (args.json) return writeJson(waiting.map(actionJson));
    writeLines(renderGates(waiting, styleFor(), decisionCommandFor(path)));
  },
});
