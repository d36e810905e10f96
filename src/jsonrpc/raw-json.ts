// Byte-exact handling of JSON-RPC lines: find where a top-level member's value
// sits in the raw text, so ids can be swapped and results journalled without
// re-serialising what an upstream sent (numbers, escapes and key order kept).

const QUOTE = 34; // "
const BACKSLASH = 92;
const OPEN_BRACE = 123;
const CLOSE_BRACE = 125;
const OPEN_BRACKET = 91;
const CLOSE_BRACKET = 93;
const COMMA = 44;
const COLON = 58;

export function skipString(text: string, start: number): number {
  // start is at the opening quote; returns the index after the closing quote.
  let i = start + 1;
  for (;;) {
    const quote = text.indexOf('"', i);
    if (quote === -1) return text.length;
    let backslashes = 0;
    for (let j = quote - 1; j >= start + 1 && text.charCodeAt(j) === BACKSLASH; j--) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
    i = quote + 1;
  }
}

export function skipValue(text: string, start: number): number {
  let i = start;
  const first = text.charCodeAt(i);
  if (first === QUOTE) return skipString(text, i);
  if (first !== OPEN_BRACE && first !== OPEN_BRACKET) {
    while (i < text.length) {
      const c = text.charCodeAt(i);
      if (c === COMMA || c === CLOSE_BRACE || c === CLOSE_BRACKET || c <= 32) break;
      i++;
    }
    return i;
  }
  let depth = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      i = skipString(text, i);
      continue;
    }
    if (c === OPEN_BRACE || c === OPEN_BRACKET) depth++;
    else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
      if (depth === 0) return i + 1;
    }
    i++;
  }
  return i;
}

export function skipSpace(text: string, i: number): number {
  while (i < text.length && text.charCodeAt(i) <= 32) i++;
  return i;
}

/** Every top-level member of a JSON object text whose key is one of `keys`, in text order: [key, start, end) of its value. */
function membersOf(text: string, keys: readonly string[]): Array<[string, number, number]> {
  const found: Array<[string, number, number]> = [];
  let i = skipSpace(text, 0);
  if (text.charCodeAt(i) !== OPEN_BRACE) return found;
  i++;
  while (i < text.length) {
    i = skipSpace(text, i);
    const c = text.charCodeAt(i);
    if (c === CLOSE_BRACE) break;
    if (c === COMMA) {
      i++;
      continue;
    }
    if (c !== QUOTE) break;
    const keyEnd = skipString(text, i);
    const key = JSON.parse(text.slice(i, keyEnd)) as string;
    i = skipSpace(text, keyEnd);
    if (text.charCodeAt(i) !== COLON) break;
    i = skipSpace(text, i + 1);
    const valueEnd = skipValue(text, i);
    if (keys.includes(key)) found.push([key, i, valueEnd]);
    i = valueEnd;
  }
  return found;
}

/**
 * Spans [start, end) of the values of the given top-level keys of a JSON
 * object text. A key written twice is read as JSON.parse reads it: the last one counts.
 */
export function memberSpans(text: string, keys: readonly string[]): Map<string, [number, number]> {
  const found = new Map<string, [number, number]>();
  for (const [key, start, end] of membersOf(text, keys)) found.set(key, [start, end]);
  return found;
}

/** The raw text of one top-level member's value, or undefined. */
export function rawMember(text: string, key: string): string | undefined {
  const span = memberSpans(text, [key]).get(key);
  return span ? text.slice(span[0], span[1]) : undefined;
}

/** The same message with its top-level "id" replaced; everything else byte-identical. */
export function withId(text: string, id: string | number | null): string {
  return withIdText(text, JSON.stringify(id));
}

/**
 * withId with the new id given as JSON text (a client's id, echoed as the exact
 * bytes it sent). An "id" written twice is replaced in both places, so that no
 * reader, whichever of the two it takes, sees the old one.
 */
export function withIdText(text: string, idText: string): string {
  let out = text;
  for (const [, start, end] of membersOf(text, ["id"]).reverse()) out = out.slice(0, start) + idText + out.slice(end);
  return out;
}

/** The raw text of each element of a JSON array text (a batch), byte-identical. */
export function rawElements(text: string): string[] {
  const elements: string[] = [];
  let i = skipSpace(text, 0);
  if (text.charCodeAt(i) !== OPEN_BRACKET) return elements;
  i = skipSpace(text, i + 1);
  while (i < text.length && text.charCodeAt(i) !== CLOSE_BRACKET) {
    const end = skipValue(text, i);
    elements.push(text.slice(i, end));
    i = skipSpace(text, end);
    if (text.charCodeAt(i) === COMMA) i = skipSpace(text, i + 1);
  }
  return elements;
}
