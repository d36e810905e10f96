// `synartesis show [RUN]`: every call of a run with its class, status and the
// exact call that would undo it (R-CLI-4).
import { defineCommand } from "citty";
import { actionJson, runJson } from "../render/json.ts";
import { renderShow } from "../render/runs.ts";
import { styleFor } from "../render/style.ts";
import { decisionCommandFor } from "../self.ts";
import { journalArg, jsonArg, manifestArg, runArg, withExistingJournal, writeJson, writeLines } from "./shared.ts";

export default defineCommand({
  meta: { name: "show", description: "Show every call of a run (default: the most recent) with the exact call that would undo it." },
  args: {
    ...runArg,
    ...jsonArg,
    ...journalArg,
    ...manifestArg,
  },
  async run({ args }) {
    await withExistingJournal(args, async (journal) => {
      const run = await journal.findRun(args.run);
      const actions = await journal.actionsOfRun(run.id);
      if (args.json) return writeJson({ run: runJson(run), actions: actions.map(actionJson) });
      writeLines(renderShow(run, actions, styleFor(), decisionCommandFor(journal.path)));
    });
  },
});
