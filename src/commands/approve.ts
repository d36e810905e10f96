// `synartesis approve`: let a held call run once, on the agent's next identical try (R-GATE-2/3).
import { defineCommand } from "citty";
import { decide, decisionArgs } from "./decide.ts";
import { journalArg, manifestArg } from "./shared.ts";

export default defineCommand({
  meta: {
    name: "approve",
    description:
      "Approve a held call, as the account running this command (a rule's approvers say whose decisions count). It runs once when the agent retries exactly the same call, in any session, within one hour.",
  },
  args: { ...decisionArgs, ...journalArg, ...manifestArg },
  run: ({ args }) => decide("approve", args),
});
