// Numbers. Rego numbers are arbitrary-precision decimals; we keep four kinds:
//   K_INT   exact i64 (literals/JSON integers of up to 18 digits, arithmetic on them)
//   K_FLOAT f64 computed by arithmetic (never integral below 2^53: those are normalised to K_INT)
//   K_DEC   decimal literal/JSON text kept verbatim (dumped as written) + f64 approximation
//   K_BIG   integer literal/JSON text beyond 18 digits kept verbatim + f64 approximation; compared exactly
// Layout: [tag=3][kind] @4 u32 textLen @8 i64|f64 @16 u32 textPtr.
import { opa_malloc } from "./alloc";
import { T_NUMBER, tagOf } from "./value";
import { strtod } from "util/string";
import { dtoa_buffered } from "util/number";

export const K_INT: u8 = 0;
export const K_FLOAT: u8 = 1;
export const K_DEC: u8 = 2;
export const K_BIG: u8 = 3;

const TWO53: f64 = 9007199254740992.0;

@inline export function numKind(v: usize): u8 { return load<u8>(v, 1); }
@inline export function numI64(v: usize): i64 { return load<i64>(v, 8); }
@inline function numF64Raw(v: usize): f64 { return load<f64>(v, 8); }

export function rt_number_int(i: i64): usize {
  const v = opa_malloc(24);
  store<u32>(v, <u32>T_NUMBER);
  store<u32>(v, 0, 4);
  store<i64>(v, i, 8);
  store<u32>(v, 0, 16);
  return v;
}

/** Float result of arithmetic; 0 (undefined) for NaN/±Inf, which Rego numbers cannot hold. */
export function numFloat(f: f64): usize {
  if (!isFinite(f)) return 0;
  if (f == Math.trunc(f) && Math.abs(f) < TWO53) return rt_number_int(<i64>f);
  const v = opa_malloc(24);
  store<u32>(v, <u32>T_NUMBER | (<u32>K_FLOAT << 8));
  store<u32>(v, 0, 4);
  store<f64>(v, f, 8);
  store<u32>(v, 0, 16);
  return v;
}

// strtod wants an AssemblyScript string: build a fake one (header rtSize at -4, UTF-16 payload) in scratch.
const STRTOD_MAX: u32 = 512;
const STRTOD_BUF: usize = memory.data(<i32>(16 + STRTOD_MAX * 2), 16);

// Exact powers of ten representable in f64 (Clinger's fast path).
const POW10: usize = memory.data<f64>([1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22]);

/**
 * Decimal text → nearest f64. Up to 15 significant digits with a decimal exponent within ±22 is exact
 * (one correctly rounded multiply/divide of exact operands, Clinger 1990); the rest goes through
 * AssemblyScript's strtod, which may be off by an ulp.
 */
export function parseF64(ptr: usize, len: u32): f64 {
  let i: u32 = 0;
  let neg = false;
  if (i < len && load<u8>(ptr) == 0x2D) { neg = true; i++; }
  let mant: u64 = 0;
  let digits: i32 = 0;
  let exp: i32 = 0;
  let seenDot = false;
  let fast = true;
  let truncated = false; // more than 19 significant digits: correct against the first 19
  for (; i < len; i++) {
    const c = load<u8>(ptr + i);
    if (c == 0x2E) { seenDot = true; continue; }
    if (c == 0x65 || c == 0x45) break;
    if (c < 0x30 || c > 0x39) { fast = false; break; }
    if (mant == 0 && c == 0x30) { if (seenDot) exp--; continue; }
    if (digits < 19) { mant = mant * 10 + <u64>(c - 0x30); digits++; if (seenDot) exp--; }
    else { truncated = true; if (!seenDot) exp++; }
  }
  if (fast && i < len) {
    // exponent part
    i++;
    let eneg = false;
    if (i < len && (load<u8>(ptr + i) == 0x2D || load<u8>(ptr + i) == 0x2B)) { eneg = load<u8>(ptr + i) == 0x2D; i++; }
    let e: i32 = 0;
    for (; i < len; i++) {
      const c = load<u8>(ptr + i);
      if (c < 0x30 || c > 0x39) { fast = false; break; }
      if (e < 100000) e = e * 10 + <i32>(c - 0x30);
    }
    exp += eneg ? -e : e;
  }
  if (fast && !truncated && digits <= 15) {
    let f = <f64>mant;
    if (mant == 0) return neg ? -0.0 : 0.0;
    if (exp >= 0 && exp <= 22) { f *= load<f64>(POW10 + (<usize>exp << 3)); return neg ? -f : f; }
    if (exp < 0 && exp >= -22) { f /= load<f64>(POW10 + (<usize>(-exp) << 3)); return neg ? -f : f; }
    // mantissa has room: shift part of the exponent into it exactly
    if (exp > 22 && exp <= 22 + 15 - digits) {
      f *= load<f64>(POW10 + (<usize>(exp - 22) << 3));
      f *= 1e22;
      return neg ? -f : f;
    }
  }
  if (fast) return correctNearest(approxDecimal(mant, exp), mant, exp, neg);
  return strtodText(ptr, len);
}

/** mant·10^exp within a few ulps (scaled in two steps so tiny/huge exponents do not under/overflow early). */
function approxDecimal(mant: u64, exp: i32): f64 {
  const f = <f64>mant;
  if (exp < -300) return f * Math.pow(10, <f64>(exp + 300)) * 1e-300;
  if (exp > 300) return f * Math.pow(10, <f64>(exp - 300)) * 1e300;
  return f * Math.pow(10, <f64>exp);
}

/** Moves approximation f (of the exact value mant·10^exp) to the nearest f64, ties to even. */
function correctNearest(f: f64, mant: u64, exp: i32, neg: bool): f64 {
  if (!isFinite(f) || f == 0 || mant == 0) return neg ? -f : f;
  for (let step = 0; step < 64; step++) {
    const bits = reinterpret<u64>(f);
    const be = <i32>((bits >> 52) & 0x7FF);
    const frac = bits & 0xFFFFFFFFFFFFF;
    let m: u64, e: i32;
    if (be == 0) { m = frac; e = -1074; } else { m = frac | 0x10000000000000; e = be - 1075; }
    // upper midpoint (2m+1)·2^(e-1); lower midpoint (2m-1)·2^(e-1) or (4m-1)·2^(e-2) at a binade edge
    const up = cmpDecBin(mant, exp, (m << 1) + 1, e - 1);
    if (up > 0 || (up == 0 && (m & 1) == 1)) { f = reinterpret<f64>(bits + 1); continue; }
    const lo = frac == 0 && be > 1 ? cmpDecBin(mant, exp, (m << 2) - 1, e - 2) : cmpDecBin(mant, exp, (m << 1) - 1, e - 1);
    if (lo < 0 || (lo == 0 && (m & 1) == 1)) { f = reinterpret<f64>(bits - 1); continue; }
    break;
  }
  return neg ? -f : f;
}

function strtodText(ptr: usize, len: u32): f64 {
  let n = len;
  if (n > STRTOD_MAX) n = STRTOD_MAX; // absurdly long literal: approximate by its prefix
  const s = STRTOD_BUF + 16;
  for (let i: u32 = 0; i < n; i++) store<u16>(s + (<usize>i << 1), <u16>load<u8>(ptr + i));
  store<u32>(s - 4, n << 1);
  return strtod(changetype<string>(s));
}

/** Number from its literal text (JSON grammar, validated by the caller). */
export function numFromText(ptr: usize, len: u32): usize {
  let i: u32 = 0;
  let neg = false;
  if (len > 0 && load<u8>(ptr) == 0x2D) { neg = true; i = 1; }
  let integral = i < len;
  for (let j = i; j < len; j++) {
    const c = load<u8>(ptr + j);
    if (c < 0x30 || c > 0x39) { integral = false; break; }
  }
  if (integral && len - i <= 18) {
    let x: i64 = 0;
    for (let j = i; j < len; j++) x = x * 10 + <i64>(load<u8>(ptr + j) - 0x30);
    return rt_number_int(neg ? -x : x);
  }
  const v = opa_malloc(24);
  store<u32>(v, <u32>T_NUMBER | (<u32>(integral ? K_BIG : K_DEC) << 8));
  store<u32>(v, len, 4);
  store<f64>(v, parseF64(ptr, len), 8);
  store<u32>(v, <u32>ptr, 16);
  return v;
}

/** `MakeNumberRefStmt`: number from a string value holding the literal text. */
export function rt_number_ref(str: usize): usize {
  return numFromText(load<u32>(str, 8), load<u32>(str, 4));
}

export function numToF64(v: usize): f64 {
  const k = numKind(v);
  if (k == K_INT) return <f64>numI64(v);
  return numF64Raw(v);
}

export let numOk = false;

/** Exact integer value if representable as i64 (sets numOk). */
export function numToI64(v: usize): i64 {
  numOk = false;
  if (v == 0 || tagOf(v) != T_NUMBER) return 0;
  const k = numKind(v);
  if (k == K_INT) { numOk = true; return numI64(v); }
  const f = numF64Raw(v);
  if (k == K_DEC && f == Math.trunc(f) && Math.abs(f) < TWO53) { numOk = true; return <i64>f; }
  return 0;
}

export function numIsInteger(v: usize): bool {
  const k = numKind(v);
  if (k == K_INT || k == K_BIG) return true;
  const f = numF64Raw(v);
  return f == Math.trunc(f);
}

// ---- exact comparison of integers given as text ----
const ITOA_BUF: usize = memory.data(32, 8);
export let txtPtr: usize = 0;
export let txtLen: u32 = 0;

/** Writes the decimal text of i into buf (at least 21 bytes); returns its length. */
export function itoaInto(buf: usize, i: i64): u32 {
  let n: u32 = 0;
  let u: u64;
  if (i < 0) { store<u8>(buf, 0x2D); n = 1; u = <u64>(-(i + 1)) + 1; } else u = <u64>i;
  const tmp = ITOA_BUF;
  let k: u32 = 0;
  do { store<u8>(tmp + k, <u8>(0x30 + <u32>(u % 10))); u /= 10; k++; } while (u != 0);
  for (let j: u32 = 0; j < k; j++) store<u8>(buf + n + j, load<u8>(tmp + k - 1 - j));
  return n + k;
}

function cmpIntText(pa: usize, la: u32, pb: usize, lb: u32): i32 {
  const na = la > 0 && load<u8>(pa) == 0x2D;
  const nb = lb > 0 && load<u8>(pb) == 0x2D;
  if (na != nb) return na ? -1 : 1;
  if (na) { pa++; la--; pb++; lb--; }
  // skip leading zeros
  while (la > 1 && load<u8>(pa) == 0x30) { pa++; la--; }
  while (lb > 1 && load<u8>(pb) == 0x30) { pb++; lb--; }
  let c: i32 = 0;
  if (la != lb) c = la < lb ? -1 : 1;
  else {
    for (let i: u32 = 0; i < la; i++) {
      const x = load<u8>(pa + i), y = load<u8>(pb + i);
      if (x != y) { c = x < y ? -1 : 1; break; }
    }
  }
  return na ? -c : c;
}

const CMP_BUF_A: usize = memory.data(32, 8);
const CMP_BUF_B: usize = memory.data(32, 8);

export function compareNumbers(a: usize, b: usize): i32 {
  const ka = numKind(a), kb = numKind(b);
  if (ka == K_INT && kb == K_INT) {
    const x = numI64(a), y = numI64(b);
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if ((ka == K_INT || ka == K_BIG) && (kb == K_INT || kb == K_BIG)) {
    let pa: usize, la: u32, pb: usize, lb: u32;
    if (ka == K_INT) { pa = CMP_BUF_A; la = itoaInto(CMP_BUF_A, numI64(a)); } else { pa = load<u32>(a, 16); la = load<u32>(a, 4); }
    if (kb == K_INT) { pb = CMP_BUF_B; lb = itoaInto(CMP_BUF_B, numI64(b)); } else { pb = load<u32>(b, 16); lb = load<u32>(b, 4); }
    return cmpIntText(pa, la, pb, lb);
  }
  const x = numToF64(a), y = numToF64(b);
  return x < y ? -1 : (x > y ? 1 : 0);
}

// ---- formatting (Go encoding/json style; literals keep their text) ----
const DTOA_BUF: usize = memory.data(128, 8);
const FMT_BUF: usize = memory.data(64, 8);

// Minimal unsigned bignums (u32 limbs, little endian; @0 u32 limb count) for exact decimal/binary
// comparisons when choosing the closest shortest digits of a float.
const BIG_LIMBS: u32 = 96;
const BIG_A: usize = memory.data(<i32>(4 + BIG_LIMBS * 4), 8);
const BIG_B: usize = memory.data(<i32>(4 + BIG_LIMBS * 4), 8);

function bigSet(b: usize, x: u64): void {
  store<u32>(b + 4, <u32>x);
  store<u32>(b + 8, <u32>(x >> 32));
  store<u32>(b, 2);
}
function bigMulSmall(b: usize, m: u32): void {
  const n = load<u32>(b);
  let carry: u64 = 0;
  for (let i: u32 = 0; i < n; i++) {
    const t = <u64>load<u32>(b + 4 + (<usize>i << 2)) * <u64>m + carry;
    store<u32>(b + 4 + (<usize>i << 2), <u32>t);
    carry = t >> 32;
  }
  if (carry != 0 && n < BIG_LIMBS) { store<u32>(b + 4 + (<usize>n << 2), <u32>carry); store<u32>(b, n + 1); }
}
function bigMulPow5(b: usize, n: i32): void {
  while (n >= 13) { bigMulSmall(b, 1220703125); n -= 13; }
  let p: u32 = 1;
  while (n > 0) { p *= 5; n--; }
  if (p != 1) bigMulSmall(b, p);
}
function bigShl(b: usize, bits: i32): void {
  const words = <u32>(bits >> 5);
  const r = <u32>(bits & 31);
  let n = load<u32>(b);
  if (n + words + 1 > BIG_LIMBS) return; // cannot happen for f64 ranges
  if (r != 0) {
    store<u32>(b + 4 + (<usize>n << 2), 0);
    for (let i = <i32>n; i > 0; i--) {
      const hi = load<u32>(b + 4 + (<usize>i << 2));
      const lo = load<u32>(b + 4 + (<usize>(i - 1) << 2));
      store<u32>(b + 4 + (<usize>i << 2), (hi << r) | (lo >> (32 - r)));
    }
    store<u32>(b + 4, load<u32>(b + 4) << r);
    n++;
  }
  if (words != 0) {
    for (let i = <i32>n - 1; i >= 0; i--) store<u32>(b + 4 + ((<usize>i + words) << 2), load<u32>(b + 4 + (<usize>i << 2)));
    for (let i: u32 = 0; i < words; i++) store<u32>(b + 4 + (<usize>i << 2), 0);
    n += words;
  }
  store<u32>(b, n);
}
function bigCmp(a: usize, b: usize): i32 {
  let na = load<u32>(a), nb = load<u32>(b);
  while (na > 0 && load<u32>(a + 4 + ((<usize>na - 1) << 2)) == 0) na--;
  while (nb > 0 && load<u32>(b + 4 + ((<usize>nb - 1) << 2)) == 0) nb--;
  if (na != nb) return na < nb ? -1 : 1;
  for (let i = <i32>na - 1; i >= 0; i--) {
    const x = load<u32>(a + 4 + (<usize>i << 2)), y = load<u32>(b + 4 + (<usize>i << 2));
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}
/** Exact sign of A·10^k − B·2^e. */
function cmpDecBin(a: u64, k: i32, b: u64, e: i32): i32 {
  bigSet(BIG_A, a);
  bigSet(BIG_B, b);
  if (k >= 0) { bigMulPow5(BIG_A, k); bigShl(BIG_A, k); } else { bigMulPow5(BIG_B, -k); bigShl(BIG_B, -k); }
  if (e >= 0) bigShl(BIG_B, e); else bigShl(BIG_A, -e);
  return bigCmp(BIG_A, BIG_B);
}

// Float being formatted, as m·2^e, and its rounding interval in units of 2^(e-2).
let fm: u64 = 0;
let fe: i32 = 0;
let fLo: u64 = 0;
let fHi: u64 = 0;
let fInclusive = false;

/** Does d·10^k round to the float being formatted? */
function inInterval(d: u64, k: i32): bool {
  const lo = cmpDecBin(d, k, fLo, fe - 2);
  const hi = cmpDecBin(d, k, fHi, fe - 2);
  return fInclusive ? lo >= 0 && hi <= 0 : lo > 0 && hi < 0;
}

/** The multiple of 10^k nearest to the float, starting the search from d. */
function nearestAt(d: u64, k: i32): u64 {
  let guard = 0;
  while (d > 1 && guard++ < 40 && sideOfMidpoint(d - 1, k) < 0) d--;
  while (guard++ < 80 && sideOfMidpoint(d, k) > 0) d++;
  // exactly halfway between two candidates: the even one (as JS and Go do)
  if ((d & 1) == 1) {
    if (d > 1 && sideOfMidpoint(d - 1, k) == 0) d--;
    else if (sideOfMidpoint(d, k) == 0) d++;
  }
  return d;
}

/** -1 if v is closer to d·10^k than to (d+1)·10^k, 1 if closer to the latter, 0 on a tie. */
function sideOfMidpoint(d: u64, k: i32): i32 {
  return -cmpDecBin(2 * d + 1, k, fm << 3, fe - 2);
}

function digitCount(d: u64): i32 {
  let n = 1;
  while (d >= 10) { d /= 10; n++; }
  return n;
}

/**
 * Shortest digits that round-trip, closest to the exact value (what Go's strconv and JS print): start
 * from AssemblyScript's Grisu2 output (shortest, but its last digit is not always the closest one) and
 * correct the last digit with exact bignum comparisons.
 */
function formatFloat(v: f64): u32 {
  let neg = false;
  if (v < 0) { neg = true; v = -v; }
  const n = dtoa_buffered<f64>(DTOA_BUF, v);
  // Parse grisu's text into digits d and exponent k (value = d·10^k).
  let d: u64 = 0;
  let k: i32 = 0;
  let seenDot = false;
  let i: u32 = 0;
  for (; i < n; i++) {
    const c = <u32>load<u16>(DTOA_BUF + (<usize>i << 1));
    if (c == 0x2E) { seenDot = true; continue; }
    if (c == 0x65) break;
    if (c < 0x30 || c > 0x39) continue;
    // grisu emits at most 17 significant digits; anything past 18 digits is a padding zero ("…000.0")
    if (d >= 100000000000000000) { if (!seenDot) k++; continue; }
    d = d * 10 + <u64>(c - 0x30);
    if (seenDot) k--;
  }
  if (i < n) {
    i++;
    let eneg = false;
    const s = <u32>load<u16>(DTOA_BUF + (<usize>i << 1));
    if (s == 0x2D || s == 0x2B) { eneg = s == 0x2D; i++; }
    let x: i32 = 0;
    for (; i < n; i++) x = x * 10 + <i32>(<u32>load<u16>(DTOA_BUF + (<usize>i << 1)) - 0x30);
    k += eneg ? -x : x;
  }
  while (d != 0 && d % 10 == 0) { d /= 10; k++; }
  // Exact interval of v.
  const bits = reinterpret<u64>(v);
  const be = <i32>((bits >> 52) & 0x7FF);
  const frac = bits & 0xFFFFFFFFFFFFF;
  if (be == 0) { fm = frac; fe = -1074; } else { fm = frac | 0x10000000000000; fe = be - 1075; }
  fHi = (fm << 2) + 2;
  fLo = frac == 0 && be > 1 ? (fm << 2) - 1 : (fm << 2) - 2;
  fInclusive = (fm & 1) == 0;
  // Grisu2 may be a few units off in the last digit, and occasionally one digit too long: take the
  // multiple of 10^k nearest to v, then drop digits while the nearest shorter string still round-trips.
  d = nearestAt(d, k);
  while (d >= 10) {
    const shorter = nearestAt(d / 10, k + 1);
    if (!inInterval(shorter, k + 1)) break;
    d = shorter;
    k++;
  }
  while (d != 0 && d % 10 == 0) { d /= 10; k++; }
  return writeDecimal(neg, d, k);
}

/** Formats d·10^k like JavaScript / Go encoding/json: fixed for 1e-6 <= |v| < 1e21, else exponent. */
function writeDecimal(neg: bool, d: u64, k: i32): u32 {
  const digits = FMT_BUF + 40;
  const nd = itoaInto(digits, <i64>d);
  const x: i32 = <i32>nd + k; // decimal point position relative to the first digit
  let o: u32 = 0;
  if (neg) { store<u8>(FMT_BUF, 0x2D); o = 1; }
  if (x > -6 && x <= 21) {
    if (k >= 0) {
      for (let i: u32 = 0; i < nd; i++) store<u8>(FMT_BUF + o++, load<u8>(digits + i));
      for (let i = 0; i < k; i++) store<u8>(FMT_BUF + o++, 0x30);
    } else if (x > 0) {
      for (let i: u32 = 0; i < nd; i++) {
        if (<i32>i == x) store<u8>(FMT_BUF + o++, 0x2E);
        store<u8>(FMT_BUF + o++, load<u8>(digits + i));
      }
    } else {
      store<u8>(FMT_BUF + o++, 0x30);
      store<u8>(FMT_BUF + o++, 0x2E);
      for (let i = 0; i < -x; i++) store<u8>(FMT_BUF + o++, 0x30);
      for (let i: u32 = 0; i < nd; i++) store<u8>(FMT_BUF + o++, load<u8>(digits + i));
    }
    return o;
  }
  store<u8>(FMT_BUF + o++, load<u8>(digits));
  if (nd > 1) {
    store<u8>(FMT_BUF + o++, 0x2E);
    for (let i: u32 = 1; i < nd; i++) store<u8>(FMT_BUF + o++, load<u8>(digits + i));
  }
  store<u8>(FMT_BUF + o++, 0x65);
  const ex = x - 1;
  store<u8>(FMT_BUF + o++, ex < 0 ? 0x2D : 0x2B);
  o += itoaInto(FMT_BUF + o, <i64>(ex < 0 ? -ex : ex));
  return o;
}

/** Sets txtPtr/txtLen to the JSON text of number v. */
export function numberText(v: usize): void {
  const k = numKind(v);
  if (k == K_INT) { txtPtr = FMT_BUF; txtLen = itoaInto(FMT_BUF, numI64(v)); return; }
  if (k == K_DEC || k == K_BIG) { txtPtr = load<u32>(v, 16); txtLen = load<u32>(v, 4); return; }
  txtPtr = FMT_BUF;
  txtLen = formatFloat(numF64Raw(v));
}
