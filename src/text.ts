// Text shown to people, decided once for every layer: what an agent or a
// server wrote made safe to print, and a time as people read it.

const NAMED_ESCAPES: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/**
 * Text from outside (tool names, client names, arguments, results, reasons)
 * made safe to print on a terminal: control characters, C1 codes and bidi
 * overrides are shown as escapes (`\x1b`, `\n`, `\u202e`), so an agent can
 * neither drive the terminal nor start a line of its own.
 */
export function printable(text: string): string {
  return text.replace(/[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g, (c) => {
    const code = c.charCodeAt(0);
    return NAMED_ESCAPES[c] ?? (code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`);
  });
}

/** Local "YYYY-MM-DD HH:MM:SS" for a timestamp. */
export function formatTime(iso: string | undefined): string {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}
