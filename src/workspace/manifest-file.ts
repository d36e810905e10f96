// Writing a manifest that `init` or `wrap` made: whole (a temporary file
// renamed over it), and only once it loads — neither ever writes one that
// does not (R-CLI-2).
import { chmodSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { SynartesisError } from "../errors.ts";
import { ManifestError, parseManifest } from "../manifest/load.ts";

/** The manifest as written; `writer` names the command in the refusal; `mode`, when given, is the file's. */
export function writeManifest(manifestPath: string, text: string, writer: string, mode?: number): ReturnType<typeof parseManifest> {
  let written;
  try {
    // A ${VAR} unset here may well be set where the client starts the proxy: warned about, not refused.
    written = parseManifest(text, manifestPath, process.env, { unsetVariables: "warn" });
  } catch (error) {
    if (error instanceof ManifestError) {
      throw new SynartesisError("manifest", `nothing was written: the manifest ${writer} would write does not load`, {
        details: error.problems.map((p) => `${manifestPath}:${p.line}:${p.col}: ${p.message}`),
      });
    }
    throw error;
  }
  mkdirSync(dirname(manifestPath), { recursive: true });
  const partial = `${manifestPath}.${process.pid}.tmp`;
  writeFileSync(partial, text, mode === undefined ? {} : { mode });
  if (mode !== undefined) chmodSync(partial, mode);
  renameSync(partial, manifestPath);
  return written;
}
