// Exact integer arithmetic on decimal text, for integers beyond i64 (K_BIG literals/JSON numbers and
// i64 overflow): Rego numbers are arbitrary precision, and OPA keeps such results exact.
import { opa_malloc } from "./alloc";
import { T_NUMBER } from "./value";
import { K_INT, K_BIG, numKind, numI64, itoaInto, numFromText } from "./number";

// Operand views (sign + magnitude digits without leading zeros).
let aNeg = false; let aPtr: usize = 0; let aLen: u32 = 0;
let bNeg = false; let bPtr: usize = 0; let bLen: u32 = 0;
const A_BUF: usize = memory.data(32, 8);
const B_BUF: usize = memory.data(32, 8);
const MAX_DIGITS: u32 = 100000;

function view(v: usize, buf: usize, first: bool): bool {
  let p: usize, l: u32;
  if (numKind(v) == K_INT) { p = buf; l = itoaInto(buf, numI64(v)); }
  else if (numKind(v) == K_BIG) { p = load<u32>(v, 16); l = load<u32>(v, 4); }
  else return false;
  let neg = false;
  if (l > 0 && load<u8>(p) == 0x2D) { neg = true; p++; l--; }
  while (l > 1 && load<u8>(p) == 0x30) { p++; l--; }
  if (l > MAX_DIGITS) return false;
  if (first) { aNeg = neg; aPtr = p; aLen = l; } else { bNeg = neg; bPtr = p; bLen = l; }
  return true;
}

/** Both operands are integers (i64 or big literal): set up the views. */
export function bigOperands(a: usize, b: usize): bool {
  return view(a, A_BUF, true) && view(b, B_BUF, false);
}

function magCmp(p: usize, l: u32, q: usize, m: u32): i32 {
  if (l != m) return l < m ? -1 : 1;
  const c = memory.compare(p, q, l);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

// Result digits are written right to left into a buffer of `cap` bytes + sign slot at the front.
function finish(buf: usize, start: usize, end: usize, neg: bool): usize {
  while (start + 1 < end && load<u8>(start) == 0x30) start++;
  if (end - start == 1 && load<u8>(start) == 0x30) neg = false;
  if (neg) { start--; store<u8>(start, 0x2D); }
  return numFromText(start, <u32>(end - start));
}

function magAddSigned(neg: bool, p: usize, l: u32, q: usize, m: u32): usize {
  const cap = (l > m ? l : m) + 2;
  const buf = opa_malloc(cap);
  let o = buf + cap;
  let carry: u32 = 0;
  let i = <i32>l - 1, j = <i32>m - 1;
  while (i >= 0 || j >= 0 || carry != 0) {
    let s = carry;
    if (i >= 0) s += <u32>load<u8>(p + <usize>i) - 0x30;
    if (j >= 0) s += <u32>load<u8>(q + <usize>j) - 0x30;
    o--; store<u8>(o, <u8>(0x30 + s % 10));
    carry = s / 10;
    i--; j--;
  }
  return finish(buf, o, buf + cap, neg);
}

/** |p| − |q| with |p| ≥ |q|. */
function magSubSigned(neg: bool, p: usize, l: u32, q: usize, m: u32): usize {
  const cap = l + 1;
  const buf = opa_malloc(cap);
  let o = buf + cap;
  let borrow: i32 = 0;
  let j = <i32>m - 1;
  for (let i = <i32>l - 1; i >= 0; i--, j--) {
    let d = <i32>load<u8>(p + <usize>i) - 0x30 - borrow;
    if (j >= 0) d -= <i32>load<u8>(q + <usize>j) - 0x30;
    if (d < 0) { d += 10; borrow = 1; } else borrow = 0;
    o--; store<u8>(o, <u8>(0x30 + d));
  }
  return finish(buf, o, buf + cap, neg);
}

function signedAdd(an: bool, p: usize, l: u32, bn: bool, q: usize, m: u32): usize {
  if (an == bn) return magAddSigned(an, p, l, q, m);
  const c = magCmp(p, l, q, m);
  if (c == 0) return zero();
  return c > 0 ? magSubSigned(an, p, l, q, m) : magSubSigned(bn, q, m, p, l);
}

function zero(): usize {
  const v = opa_malloc(24);
  store<u32>(v, <u32>T_NUMBER);
  store<u32>(v, 0, 4);
  store<i64>(v, 0, 8);
  store<u32>(v, 0, 16);
  return v;
}

export function bigAdd(): usize { return signedAdd(aNeg, aPtr, aLen, bNeg, bPtr, bLen); }
export function bigSub(): usize { return signedAdd(aNeg, aPtr, aLen, !bNeg, bPtr, bLen); }

export function bigMul(): usize {
  const l = aLen, m = bLen;
  if (l + m > MAX_DIGITS) return 0;
  const n = l + m;
  // base-10 schoolbook with u32 column accumulators, then carry propagation
  const acc = opa_malloc(<usize>n << 2);
  memory.fill(acc, 0, <usize>n << 2);
  for (let i = <i32>l - 1; i >= 0; i--) {
    const x = <u32>load<u8>(aPtr + <usize>i) - 0x30;
    if (x == 0) continue;
    for (let j = <i32>m - 1; j >= 0; j--) {
      const slot = acc + (<usize>(i + j + 1) << 2);
      store<u32>(slot, load<u32>(slot) + x * (<u32>load<u8>(bPtr + <usize>j) - 0x30));
    }
    // keep columns small so they cannot overflow on long operands
    if (((<i32>l - i) & 63) == 0) normalise(acc, n);
  }
  normalise(acc, n);
  const buf = opa_malloc(n + 1);
  for (let k: u32 = 0; k < n; k++) store<u8>(buf + 1 + k, <u8>(0x30 + load<u32>(acc + (<usize>k << 2))));
  return finish(buf, buf + 1, buf + 1 + n, aNeg != bNeg);
}

function normalise(acc: usize, n: u32): void {
  let carry: u32 = 0;
  for (let k = <i32>n - 1; k >= 0; k--) {
    const slot = acc + (<usize>k << 2);
    const s = load<u32>(slot) + carry;
    store<u32>(slot, s % 10);
    carry = s / 10;
  }
}

// ---- long division (decimal schoolbook) ----
let qBuf: usize = 0;
let qLen: u32 = 0;
let rBuf: usize = 0;
let rLen: u32 = 0;

/** |a| / |b| into qBuf/qLen (with leading zeros) and rBuf/rLen (normalised); b must be non-zero. */
function magDivide(): void {
  qBuf = opa_malloc(<usize>aLen + 1);
  rBuf = opa_malloc(<usize>bLen + 2);
  rLen = 0;
  for (let i: u32 = 0; i < aLen; i++) {
    // r = r*10 + next digit
    if (rLen == 1 && load<u8>(rBuf) == 0x30) rLen = 0;
    store<u8>(rBuf + rLen, load<u8>(aPtr + i));
    rLen++;
    let q: u8 = 0;
    while (magCmp(rBuf, rLen, bPtr, bLen) >= 0) {
      // r -= b, right aligned, then drop leading zeros
      let borrow: i32 = 0;
      let j = <i32>bLen - 1;
      for (let k = <i32>rLen - 1; k >= 0; k--, j--) {
        let d = <i32>load<u8>(rBuf + <usize>k) - 0x30 - borrow;
        if (j >= 0) d -= <i32>load<u8>(bPtr + <usize>j) - 0x30;
        if (d < 0) { d += 10; borrow = 1; } else borrow = 0;
        store<u8>(rBuf + <usize>k, <u8>(0x30 + d));
      }
      let z: u32 = 0;
      while (z + 1 < rLen && load<u8>(rBuf + z) == 0x30) z++;
      if (z > 0) { memory.copy(rBuf, rBuf + z, rLen - z); rLen -= z; }
      q++;
    }
    store<u8>(qBuf + 1 + i, 0x30 + q);
  }
  if (rLen == 0) { store<u8>(rBuf, 0x30); rLen = 1; }
  qLen = aLen;
}

/** Exact quotient when b divides a (0 otherwise, or when b is zero). */
export function bigDivExact(): usize {
  if (bLen == 1 && load<u8>(bPtr) == 0x30) return 0;
  magDivide();
  if (!(rLen == 1 && load<u8>(rBuf) == 0x30)) return 0;
  return finish(qBuf, qBuf + 1, qBuf + 1 + qLen, aNeg != bNeg);
}

/** Truncated remainder (sign of the dividend, as Go's big.Int Rem); 0 when b is zero. */
export function bigRem(): usize {
  if (bLen == 1 && load<u8>(bPtr) == 0x30) return 0;
  magDivide();
  const buf = opa_malloc(<usize>rLen + 1);
  memory.copy(buf + 1, rBuf, rLen);
  return finish(buf, buf + 1, buf + 1 + rLen, aNeg);
}
