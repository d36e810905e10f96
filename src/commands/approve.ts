import { defineCommand } from "citty";
import { SynartesisError } from "../errors.ts";

export default defineCommand({
  meta: { name: "approve", description: "not built yet" },
  args: {},
  run() {
    throw new SynartesisError("not_implemented", "synartesis approve is not built yet");
  },
});
