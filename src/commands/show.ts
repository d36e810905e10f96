// `synartesis show [RUN]`: every call of a run with its class, status and the
// exact call that would undo it (R-CLI-4).
import { defineCommand } from "citty";
import { actionJson, runJson } from "../render/json.ts";
import { renderShow } from "../render/runs.ts";
import { styleFor } from "../render/style.ts";
import { selfCommandText, shellQuote } from "../self.ts";
import { journalArg, jsonArg, manifestArg, openExistingJournal, writeJson, writeLines } from "./shared.ts";

export default defineCommand({
  meta: { name: "show", description: "Show every call of a run (default: the most recent) with the exact call that would undo it." },
  args: {
    run: { type: "positional", required: false, description: "Run id or any unique prefix of it (default: the most recent run)" },
    ...jsonArg,
    ...journalArg,
    ...manifestArg,
  },
  async run({ args }) {
    const journal = await openExistingJournal(args);
    try {
      const run = journal.findRun(args.run);
      const actions = journal.actionsOfRun(run.id);
      if (args.json) return writeJson({ run: runJson(run), actions: actions.map(actionJson) });
      const command = selfCommandText();
      writeLines(renderShow(run, actions, styleFor(), (id8) => `${command} approve ${id8} --journal ${shellQuote(journal.path)}`));
    } finally {
      journal.close();
    }
  },
});
