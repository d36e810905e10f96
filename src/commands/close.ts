// `synartesis close [RUN]`: mark an abandoned active run complete.
import { defineCommand } from "citty";
import { SynartesisError } from "../errors.ts";
import { processAlive } from "../processes.ts";
import { shortId } from "../journal/types.ts";
import { printable } from "../render/style.ts";
import { journalArg, manifestArg, runArg, withExistingJournal, writeLines } from "./shared.ts";

export default defineCommand({
  meta: { name: "close", description: "Mark an abandoned active run (its proxy died without a goodbye) complete." },
  args: {
    ...runArg,
    force: { type: "boolean", description: "Mark it complete even though its proxy is still running" },
    ...journalArg,
    ...manifestArg,
  },
  async run({ args }) {
    await withExistingJournal(args, async (journal) => {
      const run = await journal.findRun(args.run);
      if (run.status !== "active") {
        throw new SynartesisError("refused", `run ${shortId(run.id)} is not active (it is ${run.status})`);
      }
      if (processAlive(run.host, run.pid) && !args.force) {
        throw new SynartesisError("refused", `run ${shortId(run.id)} is not abandoned: its proxy (pid ${run.pid}) is still running`, {
          hint: "It is marked complete when its client disconnects. Pass --force to mark it complete anyway.",
        });
      }
      await journal.completeRun(run.id, new Date().toISOString());
      writeLines([`Run ${shortId(run.id)} (${printable(run.label)}) is now marked complete.`]);
    });
  },
});
