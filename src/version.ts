// The version users see: package.json's, plus the commit the binary was built
// from (injected by scripts/build.ts with --define; absent when run from source).
import pkg from "../package.json" with { type: "json" };

declare const SYNARTESIS_COMMIT: string;

export const VERSION: string = pkg.version;

export const COMMIT: string | undefined = typeof SYNARTESIS_COMMIT === "string" && SYNARTESIS_COMMIT !== "" ? SYNARTESIS_COMMIT : undefined;

export function versionLine(): string {
  return `synartesis ${VERSION} (${COMMIT ? `commit ${COMMIT}` : "built from source"})`;
}
