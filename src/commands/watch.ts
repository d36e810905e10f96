import { defineCommand } from "citty";
import { SynartesisError } from "../errors.ts";

export default defineCommand({
  meta: { name: "watch", description: "not built yet" },
  args: {},
  run() {
    throw new SynartesisError("not_implemented", "synartesis watch is not built yet");
  },
});
