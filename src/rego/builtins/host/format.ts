// Printing values the way OPA does: Rego term syntax (`["a", 1]`, `{"k": true}`) and Go's
// strconv.Quote for strings. Used by sprintf (%v of composites) and print.
import { DecimalText, isObject, type JsonValue, RegoSet } from './values.ts';

// Go's unicode.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space.
const printable = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u;
const SIMPLE = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** Go's strconv.Quote. */
export function goQuote(s: string): string {
  // Fast path: printable ASCII without quotes or backslashes needs no escaping.
  if (SIMPLE.test(s)) return '"' + s + '"';
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    switch (ch) {
      case '"':
        out += '\\"';
        continue;
      case '\\':
        out += '\\\\';
        continue;
      case '\x07':
        out += '\\a';
        continue;
      case '\b':
        out += '\\b';
        continue;
      case '\f':
        out += '\\f';
        continue;
      case '\n':
        out += '\\n';
        continue;
      case '\r':
        out += '\\r';
        continue;
      case '\t':
        out += '\\t';
        continue;
      case '\v':
        out += '\\v';
        continue;
    }
    if (printable.test(ch)) out += ch;
    else if (cp < 0x80) out += '\\x' + cp.toString(16).padStart(2, '0');
    else if (cp < 0x10000) out += '\\u' + cp.toString(16).padStart(4, '0');
    else out += '\\U' + cp.toString(16).padStart(8, '0');
  }
  return out + '"';
}

/**
 * Go's strconv.QuoteRune, which fmt's %q of an integer prints: single quotes, `'` and `\` escaped, and a
 * value that is no valid code point (negative, a surrogate, past U+10FFFF) printed as U+FFFD.
 */
export function goQuoteRune(cp: number): string {
  const ch = goRune(cp);
  if (ch === "'") return "'\\''";
  if (ch === '"') return `'"'`;
  return "'" + goQuote(ch).slice(1, -1) + "'";
}

/** The character of rune value cp as Go's utf8.AppendRune writes it (U+FFFD when cp is no valid rune). */
export function goRune(cp: number): string {
  const valid = Number.isInteger(cp) && cp >= 0 && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
  return String.fromCodePoint(valid ? cp : 0xfffd);
}

/** A JSON number as Go/OPA prints a json.Number (integers in full, no exponent for them). */
export function numberText(n: number | bigint): string {
  if (typeof n === 'bigint') return n.toString();
  if (Number.isInteger(n) && Math.abs(n) < 1e21) return n.toFixed(0);
  return String(n);
}

/** A value in Rego term syntax, as OPA's `Term.String()` prints it (object keys in sorted order). */
export function regoText(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'number' || typeof v === 'bigint') return numberText(v);
  if (typeof v === 'string') return goQuote(v);
  if (v instanceof DecimalText) return v.text;
  if (Array.isArray(v)) return '[' + v.map(regoText).join(', ') + ']';
  if (v instanceof RegoSet) return v.elements.length ? '{' + v.elements.map(regoText).join(', ') + '}' : 'set()';
  if (isObject(v)) {
    const keys = Object.keys(v).sort();
    if (keys.length === 0) return '{}';
    return '{' + keys.map((k) => `${goQuote(k)}: ${regoText((v as Record<string, JsonValue>)[k])}`).join(', ') + '}';
  }
  return String(v);
}
