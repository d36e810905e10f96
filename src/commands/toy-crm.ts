import { defineCommand } from "citty";
import { SynartesisError } from "../errors.ts";

export default defineCommand({
  meta: { name: "toy-crm", description: "not built yet" },
  args: {},
  run() {
    throw new SynartesisError("not_implemented", "synartesis toy-crm is not built yet");
  },
});
