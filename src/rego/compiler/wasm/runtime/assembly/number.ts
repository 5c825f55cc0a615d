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
  for (; i < len; i++) {
    const c = load<u8>(ptr + i);
    if (c == 0x2E) { seenDot = true; continue; }
    if (c == 0x65 || c == 0x45) break;
    if (c < 0x30 || c > 0x39) { fast = false; break; }
    if (mant == 0 && c == 0x30) { if (seenDot) exp--; continue; }
    if (digits < 19) { mant = mant * 10 + <u64>(c - 0x30); digits++; if (seenDot) exp--; }
    else { fast = false; if (!seenDot) exp++; }
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
  if (fast && digits <= 15) {
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
  return strtodText(ptr, len);
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

/** Sets txtPtr/txtLen to the JSON text of number v. */
export function numberText(v: usize): void {
  const k = numKind(v);
  if (k == K_INT) { txtPtr = FMT_BUF; txtLen = itoaInto(FMT_BUF, numI64(v)); return; }
  if (k == K_DEC || k == K_BIG) { txtPtr = load<u32>(v, 16); txtLen = load<u32>(v, 4); return; }
  const n = dtoa_buffered<f64>(DTOA_BUF, numF64Raw(v));
  let m: u32 = 0;
  for (let i: u32 = 0; i < n; i++) {
    const c = load<u16>(DTOA_BUF + (<usize>i << 1));
    // grisu prints integral values as "123.0": drop the ".0" (Go prints 123 / 1e+21)
    if (c == 0x2E && i + 2 == n && load<u16>(DTOA_BUF + ((<usize>i + 1) << 1)) == 0x30) break;
    store<u8>(FMT_BUF + m, <u8>c);
    m++;
  }
  txtPtr = FMT_BUF;
  txtLen = m;
}
