import { defineCommand } from "citty";
import { SynartesisError } from "../errors.ts";

export default defineCommand({
  meta: { name: "undo", description: "not built yet" },
  args: {},
  run() {
    throw new SynartesisError("not_implemented", "synartesis undo is not built yet");
  },
});
