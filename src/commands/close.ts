import { defineCommand } from "citty";
import { SynartesisError } from "../errors.ts";

export default defineCommand({
  meta: { name: "close", description: "not built yet" },
  args: {},
  run() {
    throw new SynartesisError("not_implemented", "synartesis close is not built yet");
  },
});
