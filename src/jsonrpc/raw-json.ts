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

/**
 * The value of the JSON string literal text[start, end) (skipString's span),
 * as JSON.parse reads it: a literal with no escape and no control character
 * (a member's key, mostly) is the text between its quotes, without a parse.
 */
export function stringAt(text: string, start: number, end: number): string {
  let plain = end - start >= 2 && text.charCodeAt(end - 1) === QUOTE;
  for (let i = start + 1; plain && i < end - 1; i++) {
    const c = text.charCodeAt(i);
    if (c === BACKSLASH || c < 32) plain = false;
  }
  return plain ? text.slice(start + 1, end - 1) : (JSON.parse(text.slice(start, end)) as string);
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

/** Where one top-level member of a JSON object text sits: its key, where the key starts, and its value's span [valueStart, valueEnd). */
interface MemberSpan {
  key: string;
  keyStart: number;
  valueStart: number;
  valueEnd: number;
}

/** Walk the top-level members of a JSON object text, in order, until `visit` returns false. */
function walkMembers(text: string, visit: (member: MemberSpan) => boolean): void {
  let i = skipSpace(text, 0);
  if (text.charCodeAt(i) !== OPEN_BRACE) return;
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
    const keyStart = i;
    const keyEnd = skipString(text, i);
    const key = stringAt(text, i, keyEnd);
    i = skipSpace(text, keyEnd);
    if (text.charCodeAt(i) !== COLON) break;
    i = skipSpace(text, i + 1);
    const valueEnd = skipValue(text, i);
    if (!visit({ key, keyStart, valueStart: i, valueEnd })) return;
    i = valueEnd;
  }
}

/**
 * Spans [start, end) of the values of the given top-level keys of a JSON
 * object text. A key written twice is read as JSON.parse reads it: the last one counts.
 */
export function memberSpans(text: string, keys: readonly string[]): Map<string, [number, number]> {
  const found = new Map<string, [number, number]>();
  walkMembers(text, (member) => {
    if (keys.includes(member.key)) found.set(member.key, [member.valueStart, member.valueEnd]);
    return true;
  });
  return found;
}

/**
 * An object text with top-level members changed: a key mapped to JSON text
 * gets that value (a new key goes first), a key mapped to undefined is
 * removed. Every other member, and the text around it, stays byte for byte.
 */
export function withMembers(text: string, changes: Record<string, string | undefined>): string {
  const spans: MemberSpan[] = [];
  walkMembers(text, (member) => (spans.push(member), true));
  let out = text;
  // From the end, so the spans found still point at the right places.
  for (const member of spans.reverse()) {
    if (!Object.hasOwn(changes, member.key)) continue;
    const value = changes[member.key];
    if (value !== undefined) {
      out = out.slice(0, member.valueStart) + value + out.slice(member.valueEnd);
      continue;
    }
    // The member goes with the comma after it, or (the last one) the comma before it.
    const after = skipSpace(out, member.valueEnd);
    if (out.charCodeAt(after) === COMMA) {
      out = out.slice(0, member.keyStart) + out.slice(skipSpace(out, after + 1));
    } else {
      const before = out.slice(0, member.keyStart).replace(/,\s*$/, "");
      out = before + out.slice(member.valueEnd);
    }
  }
  const present = new Set(spans.map((member) => member.key));
  const added = Object.entries(changes).filter(([key, value]) => value !== undefined && !present.has(key));
  if (added.length === 0) return out;
  const open = out.indexOf("{") + 1;
  const rest = out.slice(skipSpace(out, open));
  const members = added.map(([key, value]) => `${JSON.stringify(key)}:${value}`).join(",");
  return out.slice(0, open) + members + (rest.startsWith("}") ? "" : ",") + out.slice(open);
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
  return answerParts(text).withIdText(idText);
}

/** What is passed on of an answer: the raw text of its result, and the answer under another id (withIdText); one walk of the line for both. */
export function answerParts(text: string): { result: string | undefined; withIdText(idText: string): string } {
  const ids: MemberSpan[] = [];
  let result: MemberSpan | undefined;
  walkMembers(text, (member) => {
    if (member.key === "id") ids.push(member);
    else if (member.key === "result") result = member;
    return true;
  });
  return {
    result: result && text.slice(result.valueStart, result.valueEnd),
    withIdText(idText) {
      let out = text;
      for (const { valueStart, valueEnd } of [...ids].reverse()) out = out.slice(0, valueStart) + idText + out.slice(valueEnd);
      return out;
    },
  };
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
