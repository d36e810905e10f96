import { defineCommand } from "citty";
import { SynartesisError } from "../errors.ts";

export default defineCommand({
  meta: { name: "check", description: "not built yet" },
  args: {},
  run() {
    throw new SynartesisError("not_implemented", "synartesis check is not built yet");
  },
});
