// Canonical JSON (keys sorted at every level): the identity of arguments for
// approvals, and the equality used by drift checks. Pure.

export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const keys = Object.keys(value).sort();
  return `{${keys
    .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
    .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`)
    .join(",")}}`;
}

export function sameJson(a: unknown, b: unknown): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

/** A short stable key for "the same arguments": sha256 of their canonical JSON (server and tool are matched beside it). */
export function callKey(args: unknown): string {
  return new Bun.CryptoHasher("sha256").update(canonicalJson(args ?? {})).digest("hex");
}
