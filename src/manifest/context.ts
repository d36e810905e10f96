// What each section parser (servers.ts, rules.ts) is handed by parseManifest.
import type { EnvExpander } from "./env.ts";
import type { Path, Report } from "./problems.ts";

export interface SectionContext {
  /** The manifest's absolute path, and its folder (relative paths resolve against it). */
  file: string;
  dir: string;
  report: Report;
  /** The 1-based line and column a path points at. */
  position(path: Path, blameKey?: boolean): { line: number; col: number };
  /** The comment written just above the node at a path (for a list item: above its first key too), if any. */
  comment(path: Path): string | undefined;
  /** False for a server or rule whose shape is already reported wrong: its cross-field rules are skipped. */
  shapeOk(...path: Path): boolean;
  env: EnvExpander;
}
