import { defineCommand } from "citty";
import { SynartesisError } from "../errors.ts";

export default defineCommand({
  meta: { name: "list", description: "not built yet" },
  args: {},
  run() {
    throw new SynartesisError("not_implemented", "synartesis list is not built yet");
  },
});
