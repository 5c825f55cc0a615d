// JSON read the way OPA reads its files, so that a malformed file fails with the text `opa` prints. OPA decodes
// with Go's encoding/json Decoder (util.UnmarshalJSON: one Decode with UseNumber, then one Token() call that
// refuses a second value; a bundle's .manifest: one Decode into the Manifest struct). Go's texts (encoding/json
// scanner.go, stream.go, decode.go) name the first byte the scanner refuses and what it was looking for:
//   invalid character '}' looking for beginning of object key string
//   invalid character 'x' in literal true (expecting 'r')
// and a value cut short is `unexpected EOF`, input holding no value `EOF`.
import { goQuoteRune } from '../builtins/host/format.ts';
import { DecimalText } from '../json.ts';

/** A Go encoding/json error, with Go's text. */
export class GoJsonError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GoJsonError';
  }
}

/** Go's scanner refuses nesting deeper than this (scanner.go maxNestingDepth). */
const MAX_DEPTH = 10000;

const isSpace = (c: number): boolean => c === 0x20 || c === 0x09 || c === 0x0d || c === 0x0a;
const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;
const isHex = (c: number): boolean => isDigit(c) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);

/** scanner.error: the byte as Go's quoteChar prints it (strconv.QuoteRune of the byte value). */
const invalid = (c: number, context: string): GoJsonError =>
  new GoJsonError(`invalid character ${goQuoteRune(c)} ${context}`);

/** io.ErrUnexpectedEOF: the input ended inside a value (the Decoder's readValue). */
const unexpectedEof = (): GoJsonError => new GoJsonError('unexpected EOF');

/** `mayBeInexact`: some number in the value might not be its double's text (numberMayBeInexact). */
type Scanned = { end: number; mayBeInexact: boolean } | { error: GoJsonError };

// What the scanner expects next.
const VALUE = 0; // a value (top level, after `:`, after `,` in an array)
const VALUE_OR_CLOSE = 1; // after `[`
const KEY_OR_CLOSE = 2; // after `{`
const KEY = 3; // after `,` in an object
const COLON = 4; // after a key
const AFTER = 5; // after a value inside an object or array

const OBJECT = 0;
const ARRAY = 1;

/** The index after the string whose opening quote is at `i - 1`, or Go's error inside it. */
function scanString(b: Uint8Array, i: number): number | GoJsonError {
  const n = b.length;
  for (;;) {
    if (i >= n) return unexpectedEof();
    const c = b[i++];
    if (c === 0x22) return i;
    if (c < 0x20) return invalid(c, 'in string literal');
    if (c !== 0x5c) continue;
    if (i >= n) return unexpectedEof();
    const e = b[i++];
    if (e === 0x75) {
      for (let k = 0; k < 4; k++, i++) {
        if (i >= n) return unexpectedEof();
        if (!isHex(b[i])) return invalid(b[i], 'in \\u hexadecimal character escape');
      }
    } else if (!'bfnrt\\/"'.includes(String.fromCharCode(e))) return invalid(e, 'in string escape code');
  }
}

/**
 * The index after the number starting at `i`, or Go's error. A number ends at the first byte that cannot continue
 * it (that byte is judged by what may follow a value); the end of input ends it only where it is complete.
 */
function scanNumber(b: Uint8Array, i: number): number | GoJsonError {
  const n = b.length;
  const digits = (): void => {
    while (i < n && isDigit(b[i])) i++;
  };
  if (b[i] === 0x2d) {
    i++;
    if (i >= n) return unexpectedEof();
    if (!isDigit(b[i])) return invalid(b[i], 'in numeric literal');
  }
  if (b[i++] !== 0x30) digits();
  if (i < n && b[i] === 0x2e) {
    i++;
    if (i >= n) return unexpectedEof();
    if (!isDigit(b[i])) return invalid(b[i], 'after decimal point in numeric literal');
    digits();
  }
  if (i < n && (b[i] === 0x65 || b[i] === 0x45)) {
    i++;
    if (i < n && (b[i] === 0x2b || b[i] === 0x2d)) i++;
    if (i >= n) return unexpectedEof();
    if (!isDigit(b[i])) return invalid(b[i], 'in exponent of numeric literal');
    digits();
  }
  return i;
}

/**
 * Whether the number text from `i` to `end` might not be the shortest text of its double (what JSON.parse then
 * JSON.stringify would give back): a fraction, an exponent, `-0`, or more digits than a double always holds.
 */
function numberMayBeInexact(b: Uint8Array, i: number, end: number): boolean {
  if (end - i > 15) return true;
  if (b[i] === 0x2d && b[i + 1] === 0x30) return true;
  for (let k = i; k < end; k++) if (b[k] === 0x2e || b[k] === 0x65 || b[k] === 0x45) return true;
  return false;
}

/** The index after `true`/`false`/`null` starting at `i`, or Go's error at the first wrong letter. */
function scanLiteral(b: Uint8Array, i: number, word: string): number | GoJsonError {
  for (let k = 1; k < word.length; k++) {
    if (i + k >= b.length) return unexpectedEof();
    if (b[i + k] !== word.charCodeAt(k)) return invalid(b[i + k], `in literal ${word} (expecting '${word[k]}')`);
  }
  return i + word.length;
}

/**
 * One JSON value from `start`, as the Decoder's readValue scans it: where it ends, or Go's error for the first
 * byte refused. Leading whitespace is skipped; input holding nothing else is `EOF`.
 */
function scanValue(b: Uint8Array, start: number): Scanned {
  const n = b.length;
  const stack: number[] = [];
  let state = VALUE;
  let i = start;
  let begun = false;
  let mayBeInexact = false;
  // A scalar or a closing bracket completed a value: the top-level value ends here, or the container goes on.
  const completed = (): boolean => {
    if (stack.length === 0) return true;
    state = AFTER;
    return false;
  };
  while (i < n) {
    const c = b[i];
    if (isSpace(c)) {
      i++;
      continue;
    }
    begun = true;
    switch (state) {
      case VALUE:
      case VALUE_OR_CLOSE: {
        if (c === 0x5d && state === VALUE_OR_CLOSE) {
          stack.pop();
          i++;
          if (completed()) return { end: i, mayBeInexact };
          continue;
        }
        if (c === 0x7b || c === 0x5b) {
          stack.push(c === 0x7b ? OBJECT : ARRAY);
          if (stack.length > MAX_DEPTH) return { error: invalid(c, 'exceeded max depth') };
          state = c === 0x7b ? KEY_OR_CLOSE : VALUE_OR_CLOSE;
          i++;
          continue;
        }
        let next: number | GoJsonError;
        if (c === 0x22) next = scanString(b, i + 1);
        else if (c === 0x2d || isDigit(c)) next = scanNumber(b, i);
        else if (c === 0x74) next = scanLiteral(b, i, 'true');
        else if (c === 0x66) next = scanLiteral(b, i, 'false');
        else if (c === 0x6e) next = scanLiteral(b, i, 'null');
        else return { error: invalid(c, 'looking for beginning of value') };
        if (next instanceof GoJsonError) return { error: next };
        if (!mayBeInexact && c !== 0x22 && c !== 0x74 && c !== 0x66 && c !== 0x6e)
          mayBeInexact = numberMayBeInexact(b, i, next);
        i = next;
        if (completed()) return { end: i, mayBeInexact };
        continue;
      }
      case KEY_OR_CLOSE:
      case KEY: {
        if (c === 0x7d && state === KEY_OR_CLOSE) {
          stack.pop();
          i++;
          if (completed()) return { end: i, mayBeInexact };
          continue;
        }
        if (c !== 0x22) return { error: invalid(c, 'looking for beginning of object key string') };
        const next = scanString(b, i + 1);
        if (next instanceof GoJsonError) return { error: next };
        i = next;
        state = COLON;
        continue;
      }
      case COLON:
        if (c !== 0x3a) return { error: invalid(c, 'after object key') };
        i++;
        state = VALUE;
        continue;
      default: {
        const inObject = stack[stack.length - 1] === OBJECT;
        if (c === 0x2c) state = inObject ? KEY : VALUE;
        else if (c === (inObject ? 0x7d : 0x5d)) {
          stack.pop();
          if (completed()) return { end: i + 1, mayBeInexact };
        } else return { error: invalid(c, inObject ? 'after object key:value pair' : 'after array element') };
        i++;
      }
    }
  }
  return { error: begun ? unexpectedEof() : new GoJsonError('EOF') };
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The text of bytes as Go's decoder reads string contents: an invalid UTF-8 sequence is U+FFFD for each byte
 * that does not start a valid one (utf8.DecodeRune), where TextDecoder would write one U+FFFD per sequence.
 */
function goText(b: Uint8Array): string {
  try {
    return utf8.decode(b);
  } catch {
    let out = '';
    for (let i = 0; i < b.length; ) {
      const [cp, size] = goDecodeRune(b, i);
      out += String.fromCodePoint(cp);
      i += size;
    }
    return out;
  }
}

/** Go's utf8.DecodeRune: the rune at `i` and its length, or (U+FFFD, 1) where no valid sequence starts. */
function goDecodeRune(b: Uint8Array, i: number): [number, number] {
  const c = b[i];
  if (c < 0x80) return [c, 1];
  const cont = (k: number, lo = 0x80, hi = 0xbf): boolean => i + k < b.length && b[i + k] >= lo && b[i + k] <= hi;
  if (c >= 0xc2 && c <= 0xdf && cont(1)) return [((c & 0x1f) << 6) | (b[i + 1] & 0x3f), 2];
  if (c >= 0xe0 && c <= 0xef) {
    const lo = c === 0xe0 ? 0xa0 : 0x80;
    const hi = c === 0xed ? 0x9f : 0xbf;
    if (cont(1, lo, hi) && cont(2)) return [((c & 0x0f) << 12) | ((b[i + 1] & 0x3f) << 6) | (b[i + 2] & 0x3f), 3];
  }
  if (c >= 0xf0 && c <= 0xf4) {
    const lo = c === 0xf0 ? 0x90 : 0x80;
    const hi = c === 0xf4 ? 0x8f : 0xbf;
    if (cont(1, lo, hi) && cont(2) && cont(3))
      return [((c & 0x07) << 18) | ((b[i + 1] & 0x3f) << 12) | ((b[i + 2] & 0x3f) << 6) | (b[i + 3] & 0x3f), 4];
  }
  return [0xfffd, 1];
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** Go decodes a `\u` escape of a lone surrogate as U+FFFD; JSON.parse keeps the lone surrogate. */
function wellFormed(v: unknown): unknown {
  if (typeof v === 'string') return v.replace(LONE_SURROGATE, '\ufffd');
  if (Array.isArray(v)) return v.map(wellFormed);
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k.replace(LONE_SURROGATE, '\ufffd')] = wellFormed(x);
    return out;
  }
  return v;
}

/** The value of a JSON text the scanner accepted. */
function valueOf(b: Uint8Array, start: number, end: number): unknown {
  const text = goText(b.subarray(start, end));
  const v: unknown = JSON.parse(text);
  return /\\u[dD][89a-fA-F]/.test(text) ? wellFormed(v) : v;
}

function skipSpace(b: Uint8Array, i: number): number {
  while (i < b.length && isSpace(b[i])) i++;
  return i;
}

/** A number as OPA keeps it (a json.Number, its literal): the double when that prints the same, else DecimalText. */
function numberOf(text: string): number | DecimalText {
  const n = Number(text);
  return String(n) === text ? n : new DecimalText(text);
}

/** A string token from `i` to `end` as valueOf reads it. */
function stringOf(b: Uint8Array, i: number, end: number): string {
  const text = goText(b.subarray(i, end));
  const s = JSON.parse(text) as string;
  return /\\u[dD][89a-fA-F]/.test(text) ? s.replace(LONE_SURROGATE, '\ufffd') : s;
}

/**
 * The value at `i` of bytes the scanner accepted, with numbers as numberOf keeps them, and the index after it.
 * Objects are built from their entries, so a `__proto__` key is a key and a repeated key keeps its last value,
 * as with JSON.parse.
 */
function decodeExact(b: Uint8Array, i: number): [unknown, number] {
  i = skipSpace(b, i);
  const c = b[i];
  if (c === 0x7b || c === 0x5b) {
    const close = c === 0x7b ? 0x7d : 0x5d;
    const entries: [string, unknown][] = [];
    const items: unknown[] = [];
    let j = skipSpace(b, i + 1);
    while (b[j] !== close) {
      if (c === 0x7b) {
        const keyEnd = scanString(b, j + 1) as number;
        const key = stringOf(b, j, keyEnd);
        const [v, next] = decodeExact(b, skipSpace(b, keyEnd) + 1);
        entries.push([key, v]);
        j = next;
      } else {
        const [v, next] = decodeExact(b, j);
        items.push(v);
        j = next;
      }
      j = skipSpace(b, j);
      if (b[j] === 0x2c) j = skipSpace(b, j + 1);
    }
    return [c === 0x7b ? Object.fromEntries(entries) : items, j + 1];
  }
  if (c === 0x22) {
    const end = scanString(b, i + 1) as number;
    return [stringOf(b, i, end), end];
  }
  if (c === 0x74) return [true, i + 4];
  if (c === 0x66) return [false, i + 5];
  if (c === 0x6e) return [null, i + 4];
  const end = scanNumber(b, i) as number;
  return [numberOf(String.fromCharCode(...b.subarray(i, end))), end];
}

/**
 * OPA's util.UnmarshalJSON: the first value of `bytes`, its numbers as numberOf keeps them (OPA decodes with
 * UseNumber, so `12345678901234567890` and `0.1000000000000000055511151231257827` keep their digits), refusing what Go's Decoder refuses, then the one Token()
 * OPA reads after it. A following `{`/`[`, string, number or boolean is refused with OPA's own text
 * (`error: invalid character '…' after top-level value`, the token printed with `%s`); a following `null` is a
 * nil token and passes, as does anything after it, because OPA reads one token only.
 */
export function parseGoJson(bytes: Uint8Array): unknown {
  const first = scanValue(bytes, 0);
  if ('error' in first) throw first.error;
  const start = skipSpace(bytes, 0);
  // JSON.parse when every number is its double's text; else the slower decoder that keeps the others' text.
  const value = first.mayBeInexact ? decodeExact(bytes, start)[0] : valueOf(bytes, start, first.end);
  const j = skipSpace(bytes, first.end);
  if (j >= bytes.length) return value;
  const c = bytes[j];
  const afterTop = (token: string): GoJsonError =>
    new GoJsonError(`error: invalid character '${token}' after top-level value`);
  if (c === 0x7b || c === 0x5b) throw afterTop(String.fromCharCode(c));
  // Token() with no value open: a closing bracket, `:` or `,` is a tokenError.
  if (c === 0x7d || c === 0x5d || c === 0x3a || c === 0x2c) throw invalid(c, 'looking for beginning of value');
  const second = scanValue(bytes, j);
  if ('error' in second) throw second.error;
  const token = valueOf(bytes, j, second.end);
  if (token === null) return value;
  // fmt's %s of a bool is `%!s(bool=true)`; of a json.Number its literal text; of a string the string.
  if (typeof token === 'boolean') throw afterTop(`%!s(bool=${token})`);
  throw afterTop(typeof token === 'number' ? goText(bytes.subarray(j, second.end)) : String(token));
}

/** Go's json.Valid: exactly one JSON value, with nothing but whitespace around it. */
export function isGoJsonValid(bytes: Uint8Array): boolean {
  const first = scanValue(bytes, 0);
  return 'end' in first && skipSpace(bytes, first.end) === bytes.length;
}

// ---- decoding into a Go type (the Decoder's Decode into a struct) ----

/** The Go types a decode target is made of, enough to reproduce encoding/json's type errors. */
export type GoType =
  | { kind: 'string' }
  | { kind: 'int' }
  | { kind: 'any' }
  | { kind: 'pointer'; elem: GoType }
  | { kind: 'slice'; elem: GoType }
  | { kind: 'map'; elem: GoType }
  | {
      kind: 'struct';
      name: string;
      pkg: string;
      fields: readonly { name: string; type: GoType }[];
      /** Keep the keys no field names (as they are), for a struct whose fields are not modelled here. */
      open?: true;
    };

/** reflect.Type.String(). */
function typeName(t: GoType): string {
  switch (t.kind) {
    case 'any':
      return 'interface {}';
    case 'pointer':
      return `*${typeName(t.elem)}`;
    case 'slice':
      return `[]${typeName(t.elem)}`;
    case 'map':
      return `map[string]${typeName(t.elem)}`;
    case 'struct':
      return `${t.pkg}.${t.name}`;
    default:
      return t.kind;
  }
}

/** The error context of decode.go: the innermost struct and the JSON field names down to the value. */
interface Context {
  struct?: string;
  fields: string[];
}

/** UnmarshalTypeError.Error(). */
function typeError(value: string, t: GoType, ctx: Context): GoJsonError {
  const where = ctx.struct !== undefined ? `Go struct field ${ctx.struct}.${ctx.fields.join('.')}` : 'Go value';
  return new GoJsonError(`json: cannot unmarshal ${value} into ${where} of type ${typeName(t)}`);
}

/** encoding/json's foldName for the ASCII field names used here: ASCII case, and the two runes that fold to k/s. */
const foldName = (s: string): string =>
  s
    .replace(/\u212a/g, 'k')
    .replace(/\u017f/g, 's')
    .replace(/[A-Z]/g, (ch) => ch.toLowerCase());

const NILLABLE: ReadonlySet<GoType['kind']> = new Set(['pointer', 'slice', 'map', 'any']);

/** Where the (valid) value starting at `i` ends. */
function valueEnd(b: Uint8Array, i: number): number {
  const scanned = scanValue(b, i);
  if ('error' in scanned) throw scanned.error;
  return scanned.end;
}

/**
 * Decodes the value at `i` of already validated bytes into `t`, recording the first type error as Go's decoder
 * does (it keeps decoding, and returns the earliest UnmarshalTypeError). Returns the value and the index after it.
 */
function decodeInto(
  b: Uint8Array,
  i: number,
  t: GoType,
  ctx: Context,
  errors: GoJsonError[],
  current: unknown,
): [unknown, number] {
  i = skipSpace(b, i);
  const c = b[i];
  const end = valueEnd(b, i);
  const fail = (value: string, type: GoType = t): [unknown, number] => {
    errors.push(typeError(value, type, ctx));
    return [current, end];
  };
  // null sets a pointer, slice, map or interface to nil and leaves anything else alone.
  if (c === 0x6e) return [NILLABLE.has(t.kind) ? undefined : current, end];
  if (t.kind === 'pointer') return decodeInto(b, i, t.elem, ctx, errors, current);
  if (t.kind === 'any') return [valueOf(b, i, end), end];
  const kindOf =
    c === 0x7b ? 'object' : c === 0x5b ? 'array' : c === 0x22 ? 'string' : c === 0x74 || c === 0x66 ? 'bool' : 'number';
  if (t.kind === 'string') return kindOf === 'string' ? [valueOf(b, i, end), end] : fail(kindOf);
  if (t.kind === 'int') {
    if (kindOf !== 'number') return fail(kindOf);
    const text = goText(b.subarray(i, end));
    // strconv.ParseInt(s, 10, 64) into a 64-bit int.
    const ok = /^-?\d+$/.test(text) && BigInt(text) >= -(2n ** 63n) && BigInt(text) < 2n ** 63n;
    return ok ? [Number(text), end] : fail(`number ${text}`);
  }
  if (t.kind === 'slice') {
    if (kindOf !== 'array') return fail(kindOf);
    const out: unknown[] = [];
    let j = skipSpace(b, i + 1);
    while (b[j] !== 0x5d) {
      const [v, next] = decodeInto(b, j, t.elem, ctx, errors, undefined);
      out.push(v);
      j = skipSpace(b, next);
      if (b[j] === 0x2c) j = skipSpace(b, j + 1);
    }
    return [out, end];
  }
  if (kindOf !== 'object') return fail(kindOf);
  // A map keeps the entries it already holds; a struct fills the fields the keys name.
  const out: Record<string, unknown> =
    current !== null && typeof current === 'object' && !Array.isArray(current) ? { ...current } : {};
  let j = skipSpace(b, i + 1);
  while (b[j] !== 0x7d) {
    const keyEnd = valueEnd(b, j);
    const key = valueOf(b, j, keyEnd) as string;
    j = skipSpace(b, skipSpace(b, keyEnd) + 1);
    if (t.kind === 'map') {
      const [v, next] = decodeInto(b, j, t.elem, ctx, errors, undefined);
      if (v !== undefined) out[key] = v;
      j = next;
    } else {
      const field = t.fields.find((f) => f.name === key) ?? t.fields.find((f) => foldName(f.name) === foldName(key));
      if (field) {
        const inner = { struct: t.name, fields: [...ctx.fields, field.name] };
        const [v, next] = decodeInto(b, j, field.type, inner, errors, out[field.name]);
        if (v === undefined) delete out[field.name];
        else out[field.name] = v;
        j = next;
      } else if (t.open) {
        const next = valueEnd(b, j);
        out[key] = valueOf(b, j, next);
        j = next;
      } else j = valueEnd(b, j);
    }
    j = skipSpace(b, j);
    if (b[j] === 0x2c) j = skipSpace(b, j + 1);
  }
  return [out, end];
}

/**
 * The Decoder's Decode of the first value of `bytes` into a value of Go type `t` (no check of what follows it):
 * Go's syntax errors, then the first type error (`json: cannot unmarshal string into Go struct field
 * Manifest.roots of type []string`). Struct fields are matched exactly, else ignoring case, as Go does; unknown
 * keys are skipped. Decoding `into` a value already decoded fills it further, as a second Decode into the same
 * Go value does.
 */
export function decodeGoJson(bytes: Uint8Array, t: GoType, into?: unknown): unknown {
  const first = scanValue(bytes, 0);
  if ('error' in first) throw first.error;
  const errors: GoJsonError[] = [];
  const [value] = decodeInto(bytes, 0, t, { fields: [] }, errors, into);
  if (errors.length) throw errors[0];
  return value;
}
