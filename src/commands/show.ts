import { defineCommand } from "citty";
import { SynartesisError } from "../errors.ts";

export default defineCommand({
  meta: { name: "show", description: "not built yet" },
  args: {},
  run() {
    throw new SynartesisError("not_implemented", "synartesis show is not built yet");
  },
});
