// Checks on a client's raw JSON text that parsing would hide: nesting too deep
// to handle safely, duplicate keys, and numbers a double cannot carry exactly.
// The person who approves a call, the journal and the server must all see the
// same arguments (issue 13 items 7 and 12). Pure.
import { skipSpace, skipString, skipValue, stringAt } from "./raw-json.ts";

/** Deeper input is refused with a clear message instead of overflowing a stack later. */
export const MAX_NESTING = 1000;

const QUOTE = 34;
const BACKSLASH = 92;

/** How deeply objects and arrays nest in a JSON text (strings skipped; linear, no recursion). */
export function nestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === BACKSLASH) i++;
        else if (d === QUOTE) break;
      }
    } else if (c === 123 || c === 91) {
      if (++depth > deepest) deepest = depth;
    } else if (c === 125 || c === 93) depth--;
  }
  return deepest;
}

/** A decimal literal as sign, significant digits and exponent ("1.50e1" and "15" agree). */
function decimalValue(literal: string): string | undefined {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(literal);
  if (!match) return undefined;
  const [, sign, whole, fraction = "", exponent = "0"] = match;
  let digits = (whole! + fraction).replace(/^0+/, "");
  if (digits === "") return "0";
  let power = Number(exponent) - fraction.length;
  const trailing = digits.length - digits.replace(/0+$/, "").length;
  digits = digits.slice(0, digits.length - trailing);
  power += trailing;
  return `${sign}${digits}e${power}`;
}

/** Why a JSON number literal would change on its way through a double, or undefined when it would not. */
export function inexactNumber(literal: string): string | undefined {
  const value = Number(literal);
  if (!Number.isFinite(value)) return "it is too large for a JSON number (it would become null)";
  if (Object.is(value, -0)) return "it is a negative zero (it would become 0)";
  if (decimalValue(literal) !== decimalValue(String(value))) return `it cannot be carried exactly (it would become ${String(value)})`;
  return undefined;
}

/**
 * A top-level key a JSON object text gives twice, if any. A message with two
 * "id"s (or two "params") is read one way here and may be read the other way
 * by a server: its answer could be taken for another call's.
 */
export function duplicateMember(text: string): string | undefined {
  let i = skipSpace(text, 0);
  if (text.charCodeAt(i) !== 123) return undefined;
  const keys = new Set<string>();
  for (i = skipSpace(text, i + 1); i < text.length && text.charCodeAt(i) === QUOTE; ) {
    const keyEnd = skipString(text, i);
    const key = stringAt(text, i, keyEnd);
    if (keys.has(key)) return key;
    keys.add(key);
    i = skipSpace(text, keyEnd);
    i = skipSpace(text, skipValue(text, skipSpace(text, i + 1)));
    if (text.charCodeAt(i) === 44) i = skipSpace(text, i + 1);
  }
  return undefined;
}

/** An integer written plainly with at most 15 digits: a double carries it exactly and writes it back the same. */
const PLAIN_INTEGER = /^-?(?:0|[1-9]\d{0,14})$/;

/** A JSON id's identity: the same number written as 1 or 1.0 is one id, 2^53 and 2^53+1 are two. */
export function idKey(idText: string): string {
  if (idText.charCodeAt(0) === QUOTE) return `s:${stringAt(idText, 0, idText.length)}`;
  // Most ids (a counter's) are plain integers, and an id's key is taken several times a call.
  if (PLAIN_INTEGER.test(idText)) return `n:${idText}`;
  return `n:${inexactNumber(idText) === undefined ? String(Number(idText)) : idText}`;
}

function pathOf(parent: string, key: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `${parent}.${key}` : `${parent}[${JSON.stringify(key)}]`;
}

/**
 * The first problem in a valid JSON text: a key written twice in one object,
 * or (where `checkNumbers(path)` says so) a number that is not carried exactly.
 * `path` names the value in messages (e.g. "params").
 */
export function firstAmbiguity(text: string, path: string, checkNumbers: (path: string) => boolean): string | undefined {
  const walk = (start: number, at: string): { end: number; problem?: string } => {
    const c = text.charCodeAt(start);
    if (c === 123) {
      const keys = new Set<string>();
      let i = skipSpace(text, start + 1);
      while (text.charCodeAt(i) !== 125) {
        const keyEnd = skipString(text, i);
        const key = stringAt(text, i, keyEnd);
        const here = pathOf(at, key);
        if (keys.has(key)) return { end: keyEnd, problem: `${here} is given twice (a duplicate key)` };
        keys.add(key);
        i = skipSpace(text, skipSpace(text, keyEnd) + 1); // past the colon
        const value = walk(i, here);
        if (value.problem) return value;
        i = skipSpace(text, value.end);
        if (text.charCodeAt(i) === 44) i = skipSpace(text, i + 1);
      }
      return { end: i + 1 };
    }
    if (c === 91) {
      let i = skipSpace(text, start + 1);
      for (let index = 0; text.charCodeAt(i) !== 93; index++) {
        const value = walk(i, `${at}[${index}]`);
        if (value.problem) return value;
        i = skipSpace(text, value.end);
        if (text.charCodeAt(i) === 44) i = skipSpace(text, i + 1);
      }
      return { end: i + 1 };
    }
    const end = skipValue(text, start);
    if ((c === 45 || (c >= 48 && c <= 57)) && checkNumbers(at)) {
      const literal = text.slice(start, end);
      const why = inexactNumber(literal);
      if (why) return { end, problem: `${at} is ${literal}: ${why}` };
    }
    return { end };
  };
  return walk(skipSpace(text, 0), path).problem;
}
