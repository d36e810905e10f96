// The `auth:` key of a url server (R-AUTH-1): `auth: oauth`, or a map that
// adds scopes and a client identity. Pure: every problem is reported with the
// path of the node it concerns, so load.ts can turn it into file:line:col.
import type { OAuthSettings } from "./types.ts";

type Path = Array<string | number>;
type Report = (path: Path, message: string, blameKey?: boolean) => void;

const SHAPE =
  "an OAuth sign-in is written `auth: oauth`, or as a map `{type: oauth, scopes: [...], client_id: ..., client_secret: ..., client_metadata_url: ...}`";

const isMap = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object" && !Array.isArray(value);

/**
 * Check `auth` (already known to be present) and return the settings, or
 * undefined after reporting why not. Unknown keys are reported by load.ts.
 * `expand` turns `${VAR}` into its value (reporting unset ones).
 */
export function parseAuth(
  raw: unknown,
  path: Path,
  report: Report,
  expand: (value: string, path: Path) => string,
  manifestPath: string,
): OAuthSettings | undefined {
  if (raw === "oauth") return { scopes: [], manifestPath };
  if (!isMap(raw)) {
    report(path, `"auth" must be "oauth" (found ${JSON.stringify(raw ?? null)}): ${SHAPE}`);
    return undefined;
  }
  let ok = true;
  const problem = (key: string, message: string) => {
    ok = false;
    report([...path, key], message);
  };
  if (raw.type === undefined) {
    ok = false;
    report(path, `"auth" needs "type: oauth" (the only kind of sign-in there is)`);
  } else if (raw.type !== "oauth") {
    problem("type", `"type" must be "oauth" (found ${JSON.stringify(raw.type)})`);
  }
  const scopes = raw.scopes;
  if (scopes !== undefined && !(Array.isArray(scopes) && scopes.every((s) => typeof s === "string" && s !== "" && !/\s/.test(s)))) {
    problem("scopes", `"scopes" must be a list of scope names without spaces, e.g. [read, write]`);
  }
  const text = (key: "client_id" | "client_secret" | "client_metadata_url"): string | undefined => {
    const value = raw[key];
    if (value === undefined) return undefined;
    if (typeof value !== "string" || value === "") {
      problem(key, `"${key}" must be a non-empty string`);
      return undefined;
    }
    return key === "client_metadata_url" ? value : expand(value, [...path, key]);
  };
  const clientId = text("client_id");
  const clientSecret = text("client_secret");
  const clientMetadataUrl = text("client_metadata_url");
  if (clientSecret !== undefined && raw.client_id === undefined) {
    problem("client_secret", `"client_secret" belongs to a "client_id"; add the client id it was issued with`);
  }
  if (clientMetadataUrl !== undefined && !isDocumentUrl(clientMetadataUrl)) {
    problem("client_metadata_url", `"client_metadata_url" must be an https:// URL with a path (the address of your client-ID metadata document)`);
  }
  if (!ok) return undefined;
  return {
    scopes: (scopes as string[] | undefined) ?? [],
    ...(clientId === undefined ? {} : { clientId }),
    ...(clientSecret === undefined ? {} : { clientSecret }),
    ...(clientMetadataUrl === undefined ? {} : { clientMetadataUrl }),
    manifestPath,
  };
}

function isDocumentUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === "https:" && url.pathname !== "/";
  } catch {
    return false;
  }
}
