// `synartesis deny`: refuse a held call; the agent is told by whom and why (R-GATE-4).
import { defineCommand } from "citty";
import { decide, decisionArgs } from "./decide.ts";
import { journalArg, manifestArg } from "./shared.ts";

export default defineCommand({
  meta: {
    name: "deny",
    description:
      "Deny a held call, as the account running this command (a rule's approvers say whose decisions count). The agent's next identical call is told it was denied, by whom and why.",
  },
  args: { ...decisionArgs, reason: { type: "string", valueHint: "text", description: "Why (shown to the agent)" }, ...journalArg, ...manifestArg },
  run: ({ args }) => decide("deny", args),
});
