// The file `synartesis export` writes and `verify --file` reads (R-VERIFY-2):
// one run, its calls and chain, the rules its calls match, and the seal that
// binds those rules (which are not in the chain) to its last hash. Pure.
import { canonicalJson, sha256 } from "../canonical.ts";
import type { ChainEntry } from "./chain.ts";
import type { Action, Run } from "./types.ts";

export interface RunExport {
  format: "synartesis-run";
  version: 1;
  exportedAt: string;
  run: Run;
  actions: Action[];
  entries: ChainEntry[];
  /** The rule each `server.tool` of the run matches in the run's manifest now (none: the manifest is gone, or no rule matched). */
  rules: Record<string, unknown>;
  /** SHA-256 over the chain's last hash and the rules. */
  seal: string;
}

export const exportSeal = (entries: ChainEntry[], rules: unknown) => sha256(`${entries.at(-1)?.hash ?? ""}\n${canonicalJson(rules)}`);
