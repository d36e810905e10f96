// Canonical JSON (keys sorted at every level): the identity of arguments for
// approvals, and the equality used by drift checks. Pure.

// Written as loops: it is on the path of every call (the key of its arguments, the journal's chain).
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) {
    let out = "[";
    for (let i = 0; i < value.length; i++) out += (i ? "," : "") + canonicalJson(value[i]);
    return `${out}]`;
  }
  let out = "{";
  for (const key of Object.keys(value).sort()) {
    const item = (value as Record<string, unknown>)[key];
    if (item === undefined) continue;
    out += `${out.length > 1 ? "," : ""}${JSON.stringify(key)}:${canonicalJson(item)}`;
  }
  return `${out}}`;
}

export function sameJson(a: unknown, b: unknown): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

/** The SHA-256 of a text, in hex (Bun.SHA256's one-shot hash: CryptoHasher's digest in a third of the time for short texts). */
export const sha256 = (text: string): string => Bun.SHA256.hash(text, "hex") as string;

/** A short stable key for "the same arguments": sha256 of their canonical JSON (server and tool are matched beside it). */
export function callKey(args: unknown): string {
  return sha256(canonicalJson(args ?? {}));
}
