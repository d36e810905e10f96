import { defineCommand } from "citty";
import { SynartesisError } from "../errors.ts";

export default defineCommand({
  meta: { name: "deny", description: "not built yet" },
  args: {},
  run() {
    throw new SynartesisError("not_implemented", "synartesis deny is not built yet");
  },
});
