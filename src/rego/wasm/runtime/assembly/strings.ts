// String builtins implemented natively, with OPA's semantics (topdown/strings.go over Go's strings
// package): the library calls them on every decision, and a host call marshals every argument to JSON
// and back. Strings are UTF-8; positions and lengths in indexof/substring count code points, as Go's
// []rune conversion does. Results that equal an operand return that operand (as OPA does), and
// substrings point into the operand's bytes (strings are never mutated in place).
// HOST_FALLBACK (1, never a value pointer) asks the generated code to call the host implementation
// instead: inputs outside the native subset (non-ASCII case mapping, sprintf verbs other than %s/%d/%v on
// strings and integers, replace with an empty pattern, strings.replace_n with an empty or non-string
// pattern) keep the host's exact behaviour.
import { opa_malloc } from "./alloc";
import {
  T_NULL, T_BOOL, T_NUMBER, T_STRING, T_ARRAY, T_OBJECT, T_SET, tagOf, lenOf, strPtr, elemAt, entryKey, entryVal, rt_string,
  rt_array, rt_array_append,
} from "./value";
import { rt_number_int, numKind, numI64, numToI64, numOk, numIsInteger, itoaInto, K_INT, K_BIG } from "./number";
import { setError } from "./ops";
import { typeNameOf, strArgs, bytesEqual, indexOfBytes } from "./builtins";

export const HOST_FALLBACK: usize = 1;
const EMPTY_BYTES: usize = memory.data(8, 8);

const ERR_BUILTIN: i32 = 1;
const ERR_TYPE: i32 = 2;

@inline function isT(v: usize, t: u8): bool { return v != 0 && tagOf(v) == t; }

function strArg(name: string, v: usize, operand: string): bool {
  if (isT(v, T_STRING)) return true;
  setError(ERR_TYPE, name, operand, " must be string but got ", typeNameOf(v));
  return false;
}

/** OPA's IntOperand: a number holding an integer (sets numOk and returns it). */
function intArg(name: string, v: usize, operand: string): i64 {
  if (!isT(v, T_NUMBER)) { setError(ERR_TYPE, name, operand, " must be number but got ", typeNameOf(v)); numOkArg = false; return 0; }
  const i = numIsInteger(v) ? numToI64(v) : 0;
  numOkArg = numIsInteger(v) && numOk;
  if (!numOkArg) setError(ERR_TYPE, name, operand, " must be integer number but got floating-point number");
  return i;
}
let numOkArg = false;

@inline function isContinuation(b: u8): bool { return (b & 0xC0) == 0x80; }

/** Byte length of the UTF-8 sequence starting at p (1 for a stray byte), never past end. */
function seqLen(p: usize, end: usize): u32 {
  const b = load<u8>(p);
  let n: u32 = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
  if (b >= 0x80 && b < 0xC0) n = 1;
  let k: u32 = 1;
  while (k < n && p + k < end && isContinuation(load<u8>(p + k))) k++;
  return k;
}

/** Code point of the sequence at p of length n (0xFFFD for a stray byte, as Go decodes it). */
function decodeAt(p: usize, n: u32): u32 {
  const b = <u32>load<u8>(p);
  if (n == 1) return b < 0x80 ? b : 0xFFFD;
  if (n == 2) return ((b & 0x1F) << 6) | (<u32>load<u8>(p + 1) & 0x3F);
  if (n == 3) return ((b & 0x0F) << 12) | ((<u32>load<u8>(p + 1) & 0x3F) << 6) | (<u32>load<u8>(p + 2) & 0x3F);
  return ((b & 0x07) << 18) | ((<u32>load<u8>(p + 1) & 0x3F) << 12) | ((<u32>load<u8>(p + 2) & 0x3F) << 6) | (<u32>load<u8>(p + 3) & 0x3F);
}

/** Start of the sequence ending just before `at` (at > start). */
function prevSeqStart(start: usize, at: usize): usize {
  let p = at - 1;
  let k = 0;
  while (p > start && k < 3 && isContinuation(load<u8>(p))) { p--; k++; }
  return p;
}

/** Number of code points in bytes [p, p+n). */
function countRunes(p: usize, n: u32): u32 {
  let c: u32 = 0;
  for (let i: u32 = 0; i < n; i++) if (!isContinuation(load<u8>(p + i))) c++;
  return c;
}

@inline function slice(v: usize, from: u32, to: u32): usize {
  if (from == 0 && to == lenOf(v)) return v;
  return rt_string(strPtr(v) + from, to - from);
}

// ---- concat / split ----

export function bi_concat(delim: usize, coll: usize): usize {
  if (delim == 0 || coll == 0) return 0;
  if (!strArg("concat", delim, ": operand 1")) return 0;
  const t = tagOf(coll);
  if (t != T_ARRAY && t != T_SET) return setError(ERR_TYPE, "concat: operand 2 must be one of {set, array} but got ", typeNameOf(coll));
  const n = lenOf(coll);
  let total: u32 = 0;
  for (let i: u32 = 0; i < n; i++) {
    const e = elemAt(coll, i);
    if (!isT(e, T_STRING)) {
      const tn = typeNameOf(coll);
      return setError(ERR_TYPE, "concat: operand 2 must be ", tn, " of strings but got ", tn, " containing ", typeNameOf(e));
    }
    total += lenOf(e);
  }
  if (n == 0) return rt_string(EMPTY_BYTES, 0);
  if (n == 1) return elemAt(coll, 0);
  const dl = lenOf(delim), dp = strPtr(delim);
  total += dl * (n - 1);
  const out = opa_malloc(<usize>total);
  let o: usize = out;
  for (let i: u32 = 0; i < n; i++) {
    if (i > 0 && dl > 0) { memory.copy(o, dp, dl); o += dl; }
    const e = elemAt(coll, i);
    const l = lenOf(e);
    if (l > 0) { memory.copy(o, strPtr(e), l); o += l; }
  }
  return rt_string(out, total);
}

/** Go's strings.Split: an empty separator splits after each UTF-8 sequence ("" gives []). */
export function bi_split(s: usize, sep: usize): usize {
  if (s == 0 || sep == 0) return 0;
  if (!strArg("split", s, ": operand 1") || !strArg("split", sep, ": operand 2")) return 0;
  const p = strPtr(s), m = lenOf(s);
  const sp = strPtr(sep), n = lenOf(sep);
  if (n == 0) {
    const r = rt_array(countRunes(p, m));
    let i: u32 = 0;
    while (i < m) {
      const k = seqLen(p + i, p + m);
      rt_array_append(r, rt_string(p + i, k));
      i += k;
    }
    return r;
  }
  let at = indexOfBytes(p, m, sp, n, 0);
  if (at < 0) { const r = rt_array(1); rt_array_append(r, s); return r; }
  const r = rt_array(4);
  let from: u32 = 0;
  while (at >= 0) {
    rt_array_append(r, rt_string(p + from, <u32>at - from));
    from = <u32>at + n;
    at = indexOfBytes(p, m, sp, n, from);
  }
  rt_array_append(r, rt_string(p + from, m - from));
  return r;
}

// ---- replace / trims ----

/** Go's strings.NewReplacer(old, new).Replace: leftmost, non-overlapping occurrences. */
export function bi_replace(s: usize, old: usize, repl: usize): usize {
  if (s == 0 || old == 0 || repl == 0) return 0;
  if (!strArg("replace", s, ": operand 1") || !strArg("replace", old, ": operand 2") || !strArg("replace", repl, ": operand 3")) return 0;
  const p = strPtr(s), m = lenOf(s);
  const op = strPtr(old), n = lenOf(old);
  if (n == 0) return HOST_FALLBACK; // Go's generic replacer inserts between bytes: left to the host
  let at = indexOfBytes(p, m, op, n, 0);
  if (at < 0) return s;
  const rp = strPtr(repl), rl = lenOf(repl);
  // count first, so the result is one allocation
  let hits: u32 = 0;
  for (let i = at; i >= 0; i = indexOfBytes(p, m, op, n, <u32>i + n)) hits++;
  const total = m - hits * n + hits * rl;
  const out = opa_malloc(<usize>total);
  let o: usize = out;
  let from: u32 = 0;
  while (at >= 0) {
    const l = <u32>at - from;
    if (l > 0) { memory.copy(o, p + from, l); o += l; }
    if (rl > 0) { memory.copy(o, rp, rl); o += rl; }
    from = <u32>at + n;
    at = indexOfBytes(p, m, op, n, from);
  }
  if (m > from) memory.copy(o, p + from, m - from);
  return rt_string(out, total);
}

export function bi_trim_prefix(s: usize, prefix: usize): usize {
  if (!strArgs("trim_prefix", s, prefix)) return 0;
  const n = lenOf(prefix), m = lenOf(s);
  if (n == 0 || n > m || !bytesEqual(strPtr(s), strPtr(prefix), n)) return s;
  return rt_string(strPtr(s) + n, m - n);
}

export function bi_trim_suffix(s: usize, suffix: usize): usize {
  if (!strArgs("trim_suffix", s, suffix)) return 0;
  const n = lenOf(suffix), m = lenOf(s);
  if (n == 0 || n > m || !bytesEqual(strPtr(s) + (m - n), strPtr(suffix), n)) return s;
  return rt_string(strPtr(s), m - n);
}

/** Whether code point c is one of cutset's code points. */
function inCutset(cp: usize, cn: u32, c: u32): bool {
  let i: u32 = 0;
  while (i < cn) {
    const k = seqLen(cp + i, cp + cn);
    if (decodeAt(cp + i, k) == c) return true;
    i += k;
  }
  return false;
}

/** Go's strings.Trim: drops leading and trailing code points found in cutset. */
export function bi_trim(s: usize, cutset: usize): usize {
  if (!strArgs("trim", s, cutset)) return 0;
  const p = strPtr(s), m = lenOf(s);
  const cp = strPtr(cutset), cn = lenOf(cutset);
  if (m == 0 || cn == 0) return s;
  let a: u32 = 0;
  while (a < m) {
    const k = seqLen(p + a, p + m);
    if (!inCutset(cp, cn, decodeAt(p + a, k))) break;
    a += k;
  }
  let b: u32 = m;
  while (b > a) {
    const q = <u32>(prevSeqStart(p + a, p + b) - p);
    if (!inCutset(cp, cn, decodeAt(p + q, seqLen(p + q, p + b)))) break;
    b = q;
  }
  return slice(s, a, b);
}

/** Go's unicode.IsSpace. */
function isSpace(c: u32): bool {
  if (c <= 0xFF) return c == 0x20 || (c >= 0x09 && c <= 0x0D) || c == 0x85 || c == 0xA0;
  return c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

export function bi_trim_space(s: usize): usize {
  if (s == 0) return 0;
  if (!strArg("trim_space", s, ": operand 1")) return 0;
  const p = strPtr(s), m = lenOf(s);
  let a: u32 = 0;
  while (a < m) {
    const k = seqLen(p + a, p + m);
    if (!isSpace(decodeAt(p + a, k))) break;
    a += k;
  }
  let b: u32 = m;
  while (b > a) {
    const q = <u32>(prevSeqStart(p + a, p + b) - p);
    if (!isSpace(decodeAt(p + q, seqLen(p + q, p + b)))) break;
    b = q;
  }
  return slice(s, a, b);
}

// ---- case mapping (ASCII natively; Unicode simple case mapping is the host's) ----

function mapAsciiCase(name: string, s: usize, upper: bool): usize {
  if (s == 0) return 0;
  if (!strArg(name, s, ": operand 1")) return 0;
  const p = strPtr(s), m = lenOf(s);
  const lo: u8 = upper ? 0x61 : 0x41;
  let first: i32 = -1;
  for (let i: u32 = 0; i < m; i++) {
    const b = load<u8>(p + i);
    if (b >= 0x80) return HOST_FALLBACK;
    if (first < 0 && b >= lo && b < lo + 26) first = <i32>i;
  }
  if (first < 0) return s;
  const out = opa_malloc(<usize>m);
  memory.copy(out, p, m);
  for (let i = <u32>first; i < m; i++) {
    const b = load<u8>(out + i);
    if (b >= lo && b < lo + 26) store<u8>(out + i, b ^ 0x20);
  }
  return rt_string(out, m);
}

export function bi_lower(s: usize): usize { return mapAsciiCase("lower", s, false); }
export function bi_upper(s: usize): usize { return mapAsciiCase("upper", s, true); }

// ---- positions in code points ----

export function bi_indexof(s: usize, sub: usize): usize {
  if (!strArgs("indexof", s, sub)) return 0;
  if (lenOf(sub) == 0) return setError(ERR_BUILTIN, "indexof: empty search character");
  const p = strPtr(s);
  const at = indexOfBytes(p, lenOf(s), strPtr(sub), lenOf(sub), 0);
  return rt_number_int(at < 0 ? -1 : <i64>countRunes(p, <u32>at));
}

export function bi_substring(s: usize, start: usize, length: usize): usize {
  if (s == 0 || start == 0 || length == 0) return 0;
  if (!strArg("substring", s, ": operand 1")) return 0;
  const from = intArg("substring", start, ": operand 2");
  if (!numOkArg) return 0;
  const len = intArg("substring", length, ": operand 3");
  if (!numOkArg) return 0;
  if (from < 0) return setError(ERR_BUILTIN, "substring: negative offset");
  const p = strPtr(s), m = lenOf(s);
  // byte offset of code point `from`, then of `len` code points further
  let a: u32 = 0;
  for (let r: i64 = 0; r < from && a < m; r++) a += seqLen(p + a, p + m);
  if (a >= m) return rt_string(EMPTY_BYTES, 0);
  if (len < 0) return slice(s, a, m);
  let b = a;
  for (let r: i64 = 0; r < len && b < m; r++) b += seqLen(p + b, p + m);
  return slice(s, a, b);
}

// ---- sprintf: %s, %d, %v on strings, integers, booleans and null; everything else is the host's ----
// (big integers are printed exactly here, where the host path would receive them through JSON as doubles)

/** Bytes `%v`/`%s`/`%d` of v print natively, or -1 when the host must format it (Go's fmt rules). */
function formattedLen(v: usize, verb: u8): i32 {
  const t = tagOf(v);
  if (t == T_STRING) return verb == 0x64 ? -1 : <i32>lenOf(v); // %d of a string: %!d(string=…)
  if (t == T_NUMBER) {
    // integers written without fraction or exponent are Go ints (or *big.Int, kept as exact text): %d
    // and %v print them in decimal; %s of an int is %!s(int=…)
    if (verb == 0x73) return -1;
    if (numKind(v) == K_BIG) return <i32>lenOf(v);
    if (numKind(v) != K_INT) return -1;
    return <i32>itoaInto(ITOA_SCRATCH, numI64(v));
  }
  if (verb == 0x64) return -1; // %d of Rego text: %!d(string=…)
  if (t == T_BOOL) return load<u8>(v, 1) != 0 ? 4 : 5;
  if (t == T_NULL) return 4;
  return -1; // composites print as Rego text: the host's
}
const ITOA_SCRATCH: usize = memory.data(32, 8);

function writeFormatted(o: usize, v: usize): usize {
  const t = tagOf(v);
  if (t == T_STRING) { const l = lenOf(v); memory.copy(o, strPtr(v), l); return o + l; }
  if (t == T_NUMBER) {
    if (numKind(v) != K_BIG) return o + itoaInto(o, numI64(v));
    memory.copy(o, load<u32>(v, 16), lenOf(v)); // the literal's text
    return o + lenOf(v);
  }
  if (t == T_BOOL) {
    if (load<u8>(v, 1) != 0) { store<u32>(o, 0x65757274); return o + 4; } // "true"
    store<u32>(o, 0x736C6166); store<u8>(o + 4, 0x65); return o + 5; // "false"
  }
  store<u32>(o, 0x6C6C756E); return o + 4; // "null"
}

export function bi_sprintf(format: usize, values: usize): usize {
  if (format == 0 || values == 0) return 0;
  if (!strArg("sprintf", format, ": operand 1")) return 0;
  if (!isT(values, T_ARRAY)) return setError(ERR_TYPE, "sprintf: operand 2 must be array but got ", typeNameOf(values));
  const fp = strPtr(format), fl = lenOf(format);
  const argc = lenOf(values);
  // pass 1: check every directive is native and size the result
  let total: u32 = 0;
  let argi: u32 = 0;
  for (let i: u32 = 0; i < fl; i++) {
    const c = load<u8>(fp + i);
    if (c != 0x25) { total++; continue; }
    if (i + 1 >= fl) return HOST_FALLBACK;
    const verb = load<u8>(fp + ++i);
    if (verb == 0x25) { total++; continue; }
    if (verb != 0x73 && verb != 0x64 && verb != 0x76) return HOST_FALLBACK; // flags, width, other verbs
    if (argi >= argc) return HOST_FALLBACK; // %!v(MISSING)
    const l = formattedLen(elemAt(values, argi++), verb);
    if (l < 0) return HOST_FALLBACK;
    total += <u32>l;
  }
  if (argi < argc) return HOST_FALLBACK; // %!(EXTRA …)
  if (argc == 0 && total == fl) return format;
  // pass 2: write
  const out = opa_malloc(<usize>total);
  let o: usize = out;
  argi = 0;
  for (let i: u32 = 0; i < fl; i++) {
    const c = load<u8>(fp + i);
    if (c != 0x25) { store<u8>(o++, c); continue; }
    const verb = load<u8>(fp + ++i);
    if (verb == 0x25) { store<u8>(o++, 0x25); continue; }
    o = writeFormatted(o, elemAt(values, argi++));
  }
  return rt_string(out, total);
}

// ---- strings.replace_n ----

/**
 * Go's strings.NewReplacer over the pattern object's pairs in key order (OPA sorts them): at each position
 * the first pair whose key matches there is replaced, then scanning resumes after it; otherwise one byte is
 * copied. Empty keys and non-string members are the host's (Go's empty-key matching; OPA's error texts).
 */
export function bi_strings_replace_n(patterns: usize, s: usize): usize {
  if (patterns == 0 || s == 0) return 0;
  if (!isT(patterns, T_OBJECT)) return setError(ERR_TYPE, "strings.replace_n: operand 1 must be object but got ", typeNameOf(patterns));
  if (!strArg("strings.replace_n", s, ": operand 2")) return 0;
  const n = lenOf(patterns);
  memory.fill(FIRST_BYTES, 0, 32);
  let oneByteKeys = true, oneByteValues = true, emptyValues = true;
  for (let k: u32 = 0; k < n; k++) {
    const key = entryKey(patterns, k), val = entryVal(patterns, k);
    if (!isT(key, T_STRING) || !isT(val, T_STRING) || lenOf(key) == 0) return HOST_FALLBACK;
    const b = load<u8>(strPtr(key));
    store<u8>(FIRST_BYTES + (b >> 3), load<u8>(FIRST_BYTES + (b >> 3)) | <u8>(1 << (b & 7)));
    if (lenOf(key) != 1) oneByteKeys = false;
    if (lenOf(val) != 1) oneByteValues = false;
    if (lenOf(val) != 0) emptyValues = false;
  }
  if (oneByteKeys) {
    if (oneByteValues && byteRanges(patterns, n, false)) return replaceByteRanges(s);
    if (emptyValues && byteRanges(patterns, n, true)) return deleteByteRanges(s);
    return replaceBytes(patterns, n, s, oneByteValues);
  }
  const p = strPtr(s), m = lenOf(s);
  // One pass finds the matches (positions where no key starts are skipped 16 at a time when the keys start
  // with at most FIRST_LANES distinct bytes), then the result is written from the recorded hits.
  const lanes = firstByteLanes(patterns, n);
  let added: u32 = 0, removed: u32 = 0;
  let hits: u32 = 0;
  for (let i = nextKeyStart(p, m, 0, lanes); i < m; ) {
    const k = matchAt(patterns, n, p, m, i);
    if (k < 0) { i = nextKeyStart(p, m, i + 1, lanes); continue; }
    if (hits < MAX_HITS) { store<u32>(HITS + (<usize>hits << 3), i); store<u32>(HITS + (<usize>hits << 3), <u32>k, 4); }
    hits++;
    const kl = lenOf(entryKey(patterns, <u32>k));
    added += lenOf(entryVal(patterns, <u32>k));
    removed += kl;
    i = nextKeyStart(p, m, i + kl, lanes);
  }
  if (hits == 0) return s;
  const total = m - removed + added;
  const out = opa_malloc(<usize>total);
  let o: usize = out;
  if (hits <= MAX_HITS) {
    let from: u32 = 0;
    for (let h: u32 = 0; h < hits; h++) {
      const at = load<u32>(HITS + (<usize>h << 3)), k = load<u32>(HITS + (<usize>h << 3), 4);
      memory.copy(o, p + from, at - from);
      o += at - from;
      const val = entryVal(patterns, k);
      memory.copy(o, strPtr(val), lenOf(val));
      o += lenOf(val);
      from = at + lenOf(entryKey(patterns, k));
    }
    memory.copy(o, p + from, m - from);
    return rt_string(out, total);
  }
  for (let i: u32 = 0; i < m; ) {
    const k = matchAt(patterns, n, p, m, i);
    if (k < 0) { store<u8>(o++, load<u8>(p + i)); i++; continue; }
    const val = entryVal(patterns, <u32>k);
    memory.copy(o, strPtr(val), lenOf(val));
    o += lenOf(val);
    i += lenOf(entryKey(patterns, <u32>k));
  }
  return rt_string(out, total);
}

// matches recorded by the first pass (position, key index); a text with more is rewritten by a second scan
const MAX_HITS: u32 = 256;
const HITS: usize = memory.data(MAX_HITS * 8, 8);
// the keys' distinct first bytes, when there are at most FIRST_LANES of them (unused lanes repeat the first)
const FIRST_LANES: u32 = 4;
const FIRST_LANE_BYTES: usize = memory.data(FIRST_LANES, 8);

/** How many distinct first bytes the keys have, filed in FIRST_LANE_BYTES; 0 when over FIRST_LANES. */
function firstByteLanes(patterns: usize, n: u32): u32 {
  let count: u32 = 0;
  for (let k: u32 = 0; k < n; k++) {
    const b = load<u8>(strPtr(entryKey(patterns, k)));
    let seen = false;
    for (let j: u32 = 0; j < count; j++) if (load<u8>(FIRST_LANE_BYTES + j) == b) seen = true;
    if (seen) continue;
    if (count == FIRST_LANES) return 0;
    store<u8>(FIRST_LANE_BYTES + count++, b);
  }
  for (let j = count; j < FIRST_LANES; j++) store<u8>(FIRST_LANE_BYTES + j, load<u8>(FIRST_LANE_BYTES));
  return count;
}

/** The first position ≥ i where some key's first byte is (m if none). */
function nextKeyStart(p: usize, m: u32, i: u32, lanes: u32): u32 {
  if (lanes != 0) {
    const b0 = i8x16.splat(load<u8>(FIRST_LANE_BYTES)), b1 = i8x16.splat(load<u8>(FIRST_LANE_BYTES, 1));
    const b2 = i8x16.splat(load<u8>(FIRST_LANE_BYTES, 2)), b3 = i8x16.splat(load<u8>(FIRST_LANE_BYTES, 3));
    for (; i + 16 <= m; i += 16) {
      const v = v128.load(p + i);
      const bits = i8x16.bitmask(v128.or(v128.or(i8x16.eq(v, b0), i8x16.eq(v, b1)), v128.or(i8x16.eq(v, b2), i8x16.eq(v, b3))));
      if (bits != 0) return i + ctz(bits);
    }
  }
  while (i < m && !isKeyByte(load<u8>(p + i))) i++;
  return i;
}

/**
 * replace_n when every key is one byte (the PII shape pass: digits and capitals): distinct one-byte keys
 * never overlap, so the result is each byte mapped through a table, as the general pass would give.
 * One-byte values map byte to byte (same length, one pass after the first hit).
 */
function replaceBytes(patterns: usize, n: u32, s: usize, oneByteValues: bool): usize {
  const p = strPtr(s), m = lenOf(s);
  let first: u32 = 0;
  while (first < m && !isKeyByte(load<u8>(p + first))) first++;
  if (first == m) return s;
  if (oneByteValues) {
    for (let b: u32 = 0; b < 256; b++) store<u8>(BYTE_MAP + b, <u8>b);
    for (let k: u32 = 0; k < n; k++) {
      store<u8>(BYTE_MAP + load<u8>(strPtr(entryKey(patterns, k))), load<u8>(strPtr(entryVal(patterns, k))));
    }
    const out = opa_malloc(<usize>m);
    memory.copy(out, p, first);
    for (let i = first; i < m; i++) store<u8>(out + i, load<u8>(BYTE_MAP + load<u8>(p + i)));
    return rt_string(out, m);
  }
  for (let k: u32 = 0; k < n; k++) {
    store<u32>(VALUE_OF_BYTE + (<usize>load<u8>(strPtr(entryKey(patterns, k))) << 2), <u32>entryVal(patterns, k));
  }
  let total: u32 = first;
  for (let i = first; i < m; i++) {
    const b = load<u8>(p + i);
    total += isKeyByte(b) ? lenOf(load<u32>(VALUE_OF_BYTE + (<usize>b << 2))) : 1;
  }
  const out = opa_malloc(<usize>total);
  memory.copy(out, p, first);
  let o: usize = out + first;
  for (let i = first; i < m; i++) {
    const b = load<u8>(p + i);
    if (!isKeyByte(b)) { store<u8>(o++, b); continue; }
    const val = <usize>load<u32>(VALUE_OF_BYTE + (<usize>b << 2));
    const l = lenOf(val);
    memory.copy(o, strPtr(val), l);
    o += l;
  }
  return rt_string(out, total);
}
/**
 * Whether the one-byte keys form at most RANGES runs of consecutive bytes with one value each (digits →
 * `0`, capitals → `A`): then the map is a few SIMD range tests per 16 bytes. Unused slots repeat the first.
 */
function byteRanges(patterns: usize, n: u32, deleting: bool): bool {
  let count: u32 = 0;
  for (let k: u32 = 0; k < n; k++) {
    const b = load<u8>(strPtr(entryKey(patterns, k))), v: u8 = deleting ? 0 : load<u8>(strPtr(entryVal(patterns, k)));
    const r = RANGE_LO + (count - 1) * 3;
    if (count > 0 && <u32>b == <u32>load<u8>(r) + <u32>load<u8>(r, 1) + 1 && v == load<u8>(r, 2)) {
      store<u8>(r, load<u8>(r, 1) + 1, 1);
      continue;
    }
    if (count == RANGES) return false;
    const q = RANGE_LO + count * 3;
    store<u8>(q, b); store<u8>(q, 0, 1); store<u8>(q, v, 2);
    count++;
  }
  for (let c = count; c < RANGES; c++) memory.copy(RANGE_LO + c * 3, RANGE_LO, 3);
  return count > 0;
}
const RANGES: u32 = 4;
// per run: first byte, last byte - first byte, value
const RANGE_LO: usize = memory.data(RANGES * 3, 8);

@inline function rangeLo(r: u32): u8 { return load<u8>(RANGE_LO + r * 3); }
@inline function rangeSpan(r: u32): u8 { return load<u8>(RANGE_LO + r * 3, 1); }
@inline function rangeValue(r: u32): u8 { return load<u8>(RANGE_LO + r * 3, 2); }

function inRanges(b: u8): bool {
  for (let r: u32 = 0; r < RANGES; r++) if (<u8>(b - rangeLo(r)) <= rangeSpan(r)) return true;
  return false;
}

/** Byte b mapped through the runs (a byte in none maps to itself). */
function mapByRanges(b: u8): u8 {
  for (let r: u32 = 0; r < RANGES; r++) if (<u8>(b - rangeLo(r)) <= rangeSpan(r)) return rangeValue(r);
  return b;
}

function replaceByteRanges(s: usize): usize {
  const p = strPtr(s), m = lenOf(s);
  const lo0 = i8x16.splat(rangeLo(0)), lo1 = i8x16.splat(rangeLo(1)), lo2 = i8x16.splat(rangeLo(2)), lo3 = i8x16.splat(rangeLo(3));
  const sp0 = i8x16.splat(rangeSpan(0)), sp1 = i8x16.splat(rangeSpan(1)), sp2 = i8x16.splat(rangeSpan(2)), sp3 = i8x16.splat(rangeSpan(3));
  const va0 = i8x16.splat(rangeValue(0)), va1 = i8x16.splat(rangeValue(1)), va2 = i8x16.splat(rangeValue(2)), va3 = i8x16.splat(rangeValue(3));
  // first byte that maps: without one the operand is the result
  let first: u32 = 0;
  let found = false;
  for (; first + 16 <= m; first += 16) {
    const v = v128.load(p + first);
    const hit = v128.or(
      v128.or(i8x16.le_u(i8x16.sub(v, lo0), sp0), i8x16.le_u(i8x16.sub(v, lo1), sp1)),
      v128.or(i8x16.le_u(i8x16.sub(v, lo2), sp2), i8x16.le_u(i8x16.sub(v, lo3), sp3)),
    );
    const bits = i8x16.bitmask(hit);
    if (bits != 0) { first += ctz(bits); found = true; break; }
  }
  if (!found) {
    while (first < m && !inRanges(load<u8>(p + first))) first++;
    if (first == m) return s;
  }
  const out = opa_malloc(<usize>m);
  memory.copy(out, p, first);
  let i = first;
  for (; i + 16 <= m; i += 16) {
    const v = v128.load(p + i);
    let o = v128.bitselect(va0, v, i8x16.le_u(i8x16.sub(v, lo0), sp0));
    o = v128.bitselect(va1, o, i8x16.le_u(i8x16.sub(v, lo1), sp1));
    o = v128.bitselect(va2, o, i8x16.le_u(i8x16.sub(v, lo2), sp2));
    o = v128.bitselect(va3, o, i8x16.le_u(i8x16.sub(v, lo3), sp3));
    v128.store(out + i, o);
  }
  for (; i < m; i++) store<u8>(out + i, mapByRanges(load<u8>(p + i)));
  return rt_string(out, m);
}

/** replace_n whose keys (≤ RANGES runs of bytes) all map to "": the compact shape drops spaces and hyphens. */
function deleteByteRanges(s: usize): usize {
  const p = strPtr(s), m = lenOf(s);
  const lo0 = i8x16.splat(rangeLo(0)), lo1 = i8x16.splat(rangeLo(1)), lo2 = i8x16.splat(rangeLo(2)), lo3 = i8x16.splat(rangeLo(3));
  const sp0 = i8x16.splat(rangeSpan(0)), sp1 = i8x16.splat(rangeSpan(1)), sp2 = i8x16.splat(rangeSpan(2)), sp3 = i8x16.splat(rangeSpan(3));
  let out: usize = 0, o: usize = 0; // allocated at the first deleted byte (the result is never longer)
  let i: u32 = 0;
  for (; i + 16 <= m; i += 16) {
    const v = v128.load(p + i);
    const drop = i8x16.bitmask(v128.or(
      v128.or(i8x16.le_u(i8x16.sub(v, lo0), sp0), i8x16.le_u(i8x16.sub(v, lo1), sp1)),
      v128.or(i8x16.le_u(i8x16.sub(v, lo2), sp2), i8x16.le_u(i8x16.sub(v, lo3), sp3)),
    ));
    if (drop == 0) {
      if (out != 0) { v128.store(o, v); o += 16; }
      continue;
    }
    if (out == 0) { out = opa_malloc(<usize>m); memory.copy(out, p, i); o = out + i; keptIndexTable(); }
    // each half's kept bytes are gathered to its front by a shuffle and written 8 bytes at a time (o stays at
    // or before out + i, so the writes end within the block's own bytes of the m-byte result)
    const lo = drop & 0xff, hi = (drop >>> 8) & 0xff;
    const idx = i64x2.replace_lane(
      i64x2.splat(load<u64>(KEPT_INDEX + (<usize>lo << 3))),
      1,
      load<u64>(KEPT_INDEX + (<usize>hi << 3)) + 0x0808080808080808,
    );
    const packed = i8x16.swizzle(v, idx);
    store<u64>(o, i64x2.extract_lane(packed, 0));
    o += 8 - popcnt(lo);
    store<u64>(o, i64x2.extract_lane(packed, 1));
    o += 8 - popcnt(hi);
  }
  for (; i < m; i++) {
    const b = load<u8>(p + i);
    if (inRanges(b)) {
      if (out == 0) { out = opa_malloc(<usize>m); memory.copy(out, p, i); o = out + i; }
      continue;
    }
    if (out != 0) store<u8>(o++, b);
  }
  return out == 0 ? s : rt_string(out, <u32>(o - out));
}

// for each 8-bit drop mask, the indices of the kept bytes in order (then padding): 256 × 8 bytes, filled once
const KEPT_INDEX: usize = memory.data(256 * 8, 8);
let keptIndexReady = false;
function keptIndexTable(): void {
  if (keptIndexReady) return;
  for (let mask: u32 = 0; mask < 256; mask++) {
    let k: u32 = 0;
    for (let j: u32 = 0; j < 8; j++) if (((mask >>> j) & 1) == 0) store<u8>(KEPT_INDEX + (mask << 3) + k++, <u8>j);
    for (; k < 8; k++) store<u8>(KEPT_INDEX + (mask << 3) + k, 0);
  }
  keptIndexReady = true;
}

@inline function isKeyByte(b: u8): bool { return (load<u8>(FIRST_BYTES + (b >> 3)) & (1 << (b & 7))) != 0; }
// byte → replacement byte, and byte → replacement value pointer (entries valid where isKeyByte)
const BYTE_MAP: usize = memory.data(256, 8);
const VALUE_OF_BYTE: usize = memory.data(256 * 4, 8);
// bitmap of the keys' first bytes: most positions of a long text start no key
const FIRST_BYTES: usize = memory.data(32, 8);

/** Index of the first pattern whose key matches at byte i, or -1. */
function matchAt(patterns: usize, n: u32, p: usize, m: u32, i: u32): i32 {
  const b = load<u8>(p + i);
  if ((load<u8>(FIRST_BYTES + (b >> 3)) & (1 << (b & 7))) == 0) return -1;
  for (let k: u32 = 0; k < n; k++) {
    const key = entryKey(patterns, k);
    const l = lenOf(key);
    if (l <= m - i && bytesEqual(p + i, strPtr(key), l)) return <i32>k;
  }
  return -1;
}
