import { defineCommand } from "citty";
import { SynartesisError } from "../errors.ts";

export default defineCommand({
  meta: { name: "init", description: "not built yet" },
  args: {},
  run() {
    throw new SynartesisError("not_implemented", "synartesis init is not built yet");
  },
});
