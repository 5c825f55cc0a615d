// Builtins implemented natively (pipeline.md list): everything touching sets or exact numbers.
// Return 0 for undefined; on a builtin/type error they record it via setError (strict mode aborts).
import { opa_malloc } from "./alloc";
import {
  T_NULL, T_BOOL, T_NUMBER, T_STRING, T_ARRAY, T_OBJECT, T_SET, tagOf, lenOf, elemAt, entryKey, entryVal,
  boolValue, rt_array, rt_array_append, rt_set, rt_set_add, setFind, objectGet, asciiString, utf8Count, strPtr,
  rt_object, rt_object_insert, shallowCopyObject, rt_string, NULL_VALUE,
} from "./value";
import { rt_number_int, numFloat, numKind, numI64, numToF64, numToI64, numOk, numIsInteger, numFromText, K_INT, K_BIG } from "./number";
import { compareValues } from "./compare";
import { rt_get } from "./ops";
import { setError } from "./ops";
import { bigOperands, bigAdd, bigSub, bigMul, bigDivExact, bigRem } from "./bigint";
import { HOST_FALLBACK } from "./strings";

const ERR_BUILTIN: i32 = 1;
const ERR_TYPE: i32 = 2;

@inline function isNum(v: usize): bool { return v != 0 && tagOf(v) == T_NUMBER; }
@inline function isT(v: usize, t: u8): bool { return v != 0 && tagOf(v) == t; }

// ---- comparison ----
export function bi_equal(a: usize, b: usize): usize { return a == 0 || b == 0 ? 0 : boolValue(compareValues(a, b) == 0); }
export function bi_neq(a: usize, b: usize): usize { return a == 0 || b == 0 ? 0 : boolValue(compareValues(a, b) != 0); }
export function bi_lt(a: usize, b: usize): usize { return a == 0 || b == 0 ? 0 : boolValue(compareValues(a, b) < 0); }
export function bi_lte(a: usize, b: usize): usize { return a == 0 || b == 0 ? 0 : boolValue(compareValues(a, b) <= 0); }
export function bi_gt(a: usize, b: usize): usize { return a == 0 || b == 0 ? 0 : boolValue(compareValues(a, b) > 0); }
export function bi_gte(a: usize, b: usize): usize { return a == 0 || b == 0 ? 0 : boolValue(compareValues(a, b) >= 0); }

// ---- arithmetic ----
function numArgs(name: string, a: usize, b: usize): bool {
  if (a == 0 || b == 0) return false;
  if (!isNum(a)) { setError(ERR_TYPE, name, ": operand 1 must be number but got ", typeNameOf(a)); return false; }
  if (!isNum(b)) { setError(ERR_TYPE, name, ": operand 2 must be number but got ", typeNameOf(b)); return false; }
  return true;
}

export function bi_plus(a: usize, b: usize): usize {
  if (!numArgs("plus", a, b)) return 0;
  if (numKind(a) == K_INT && numKind(b) == K_INT) {
    const x = numI64(a), y = numI64(b);
    const r = x + y;
    if (((x ^ r) & (y ^ r)) >= 0) return rt_number_int(r);
  }
  if (bigOperands(a, b)) return bigAdd();
  return numFloat(numToF64(a) + numToF64(b));
}

export function bi_minus(a: usize, b: usize): usize {
  if (a == 0 || b == 0) return 0;
  if (isT(a, T_SET) && isT(b, T_SET)) {
    const r = rt_set();
    const n = lenOf(a);
    for (let i: u32 = 0; i < n; i++) { const e = elemAt(a, i); if (setFind(b, e) < 0) rt_set_add(r, e); }
    return r;
  }
  if (!numArgs("minus", a, b)) return 0;
  if (numKind(a) == K_INT && numKind(b) == K_INT) {
    const x = numI64(a), y = numI64(b);
    const r = x - y;
    if (((x ^ y) & (x ^ r)) >= 0) return rt_number_int(r);
  }
  if (bigOperands(a, b)) return bigSub();
  return numFloat(numToF64(a) - numToF64(b));
}

export function bi_mul(a: usize, b: usize): usize {
  if (!numArgs("mul", a, b)) return 0;
  if (numKind(a) == K_INT && numKind(b) == K_INT) {
    const x = numI64(a), y = numI64(b);
    const ax = x < 0 ? -x : x, ay = y < 0 ? -y : y;
    // exact when both fit in 31 bits, or the product's magnitude stays below 2^62
    if (ax >= 0 && ay >= 0 && (ax < 0x7FFFFFFF && ay < 0x7FFFFFFF || (ay == 0 || ax <= 0x3FFFFFFFFFFFFFFF / ay)))
      return rt_number_int(x * y);
  }
  if (bigOperands(a, b)) { const r = bigMul(); if (r != 0) return r; }
  return numFloat(numToF64(a) * numToF64(b));
}

export function bi_div(a: usize, b: usize): usize {
  if (!numArgs("div", a, b)) return 0;
  if (numToF64(b) == 0) return setError(ERR_BUILTIN, "div: divide by zero");
  if (numKind(a) == K_INT && numKind(b) == K_INT) {
    const x = numI64(a), y = numI64(b);
    if (y != -1 && x % y == 0) return rt_number_int(x / y);
  }
  if ((numKind(a) != K_INT || numKind(b) != K_INT) && bigOperands(a, b)) {
    const q = bigDivExact();
    if (q != 0) return q;
  }
  return numFloat(numToF64(a) / numToF64(b));
}

export function bi_rem(a: usize, b: usize): usize {
  if (!numArgs("rem", a, b)) return 0;
  if (!numIsInteger(a) || !numIsInteger(b)) return setError(ERR_BUILTIN, "rem: modulo on floating-point number");
  const x = numToI64(a); const okA = numOk;
  const y = numToI64(b); const okB = numOk;
  if (okB && y == 0) return setError(ERR_BUILTIN, "rem: modulo by zero");
  if (okA && okB) return y == -1 ? rt_number_int(0) : rt_number_int(x % y);
  if (bigOperands(a, b)) { const r = bigRem(); if (r != 0) return r; }
  const fy = numToF64(b);
  if (fy == 0) return setError(ERR_BUILTIN, "rem: modulo by zero");
  return numFloat(numToF64(a) % fy);
}

export function bi_abs(a: usize): usize {
  if (a == 0) return 0;
  if (!isNum(a)) return setError(ERR_TYPE, "abs: operand 1 must be number but got ", typeNameOf(a));
  if (numKind(a) == K_INT) { const x = numI64(a); if (x != i64.MIN_VALUE) return rt_number_int(x < 0 ? -x : x); }
  if (numKind(a) == K_BIG) {
    // big integer literal: drop the sign from its text, keeping it exact
    const p = load<u32>(a, 16), l = load<u32>(a, 4);
    return l > 0 && load<u8>(p) == 0x2D ? numFromText(p + 1, l - 1) : a;
  }
  // A decimal's magnitude as OPA's FloatToNumber prints it (abs(4.50) is 4.5, abs(4.0) is 4).
  return numFloat(Math.abs(numToF64(a)));
}

/**
 * to_number (OPA's topdown/casts.go): a number is returned as it is, and a decimal string becomes the number
 * written that way, so `to_number(101.00)` and `to_number("101.00")` keep their text for sprintf's `%.2f`
 * and json.marshal, as OPA's ast.Number does. Strings outside `-?int(.digits)?` (exponents, which Go's
 * ParseFloat may reject as out of range, signs, hex, inf/nan) are the host's.
 */
export function bi_to_number(a: usize): usize {
  if (a == 0) return 0;
  const t = tagOf(a);
  if (t == T_NUMBER) return a;
  if (t == T_NULL) return rt_number_int(0);
  if (t == T_BOOL) return rt_number_int(load<u8>(a, 1) != 0 ? 1 : 0);
  if (t != T_STRING) return HOST_FALLBACK;
  const p = strPtr(a), l = lenOf(a);
  let i: u32 = 0;
  if (i < l && load<u8>(p) == 0x2D) i++;
  const intStart = i;
  while (i < l && load<u8>(p + i) >= 0x30 && load<u8>(p + i) <= 0x39) i++;
  const intLen = i - intStart;
  if (intLen == 0 || (intLen > 1 && load<u8>(p + intStart) == 0x30)) return HOST_FALLBACK;
  if (i < l && load<u8>(p + i) == 0x2E) {
    i++;
    const fracStart = i;
    while (i < l && load<u8>(p + i) >= 0x30 && load<u8>(p + i) <= 0x39) i++;
    if (i == fracStart) return HOST_FALLBACK;
  }
  if (i != l) return HOST_FALLBACK;
  return numFromText(p, l);
}

function rounding(name: string, a: usize, mode: i32): usize {
  if (a == 0) return 0;
  if (!isNum(a)) return setError(ERR_TYPE, name, ": operand 1 must be number but got ", typeNameOf(a));
  // An integer stays as it is written; an integral decimal (1.0, 2e0) becomes the integer, as OPA's
  // FloatToNumber prints a whole result without a fraction.
  if (numKind(a) == K_INT || numKind(a) == K_BIG) return a;
  const f = numToF64(a);
  if (f == Math.trunc(f)) return numFloat(f);
  let r: f64;
  if (mode == 0) r = f < 0 ? -Math.floor(-f + 0.5) : Math.floor(f + 0.5); // Go math.Round: half away from zero
  else if (mode == 1) r = Math.ceil(f);
  else r = Math.floor(f);
  return numFloat(r);
}
export function bi_round(a: usize): usize { return rounding("round", a, 0); }
export function bi_ceil(a: usize): usize { return rounding("ceil", a, 1); }
export function bi_floor(a: usize): usize { return rounding("floor", a, 2); }

// ---- sets ----
function setArgs(name: string, a: usize, b: usize): bool {
  if (a == 0 || b == 0) return false;
  if (!isT(a, T_SET)) { setError(ERR_TYPE, name, ": operand 1 must be set but got ", typeNameOf(a)); return false; }
  if (!isT(b, T_SET)) { setError(ERR_TYPE, name, ": operand 2 must be set but got ", typeNameOf(b)); return false; }
  return true;
}

export function bi_and(a: usize, b: usize): usize {
  if (!setArgs("and", a, b)) return 0;
  const r = rt_set();
  const n = lenOf(a);
  for (let i: u32 = 0; i < n; i++) { const e = elemAt(a, i); if (setFind(b, e) >= 0) rt_set_add(r, e); }
  return r;
}

export function bi_or(a: usize, b: usize): usize {
  if (!setArgs("or", a, b)) return 0;
  const r = rt_set();
  for (let i: u32 = 0; i < lenOf(a); i++) rt_set_add(r, elemAt(a, i));
  for (let i: u32 = 0; i < lenOf(b); i++) rt_set_add(r, elemAt(b, i));
  return r;
}

export function bi_union(s: usize): usize {
  if (s == 0) return 0;
  if (!isT(s, T_SET)) return setError(ERR_TYPE, "union: operand 1 must be set of sets but got ", typeNameOf(s));
  const r = rt_set();
  for (let i: u32 = 0; i < lenOf(s); i++) {
    const e = elemAt(s, i);
    if (!isT(e, T_SET)) return setError(ERR_TYPE, "union: operand 1 must be set of sets");
    for (let j: u32 = 0; j < lenOf(e); j++) rt_set_add(r, elemAt(e, j));
  }
  return r;
}

export function bi_intersection(s: usize): usize {
  if (s == 0) return 0;
  if (!isT(s, T_SET)) return setError(ERR_TYPE, "intersection: operand 1 must be set of sets but got ", typeNameOf(s));
  const n = lenOf(s);
  if (n == 0) return rt_set();
  for (let i: u32 = 0; i < n; i++) if (!isT(elemAt(s, i), T_SET)) return setError(ERR_TYPE, "intersection: operand 1 must be set of sets");
  const first = elemAt(s, 0);
  const r = rt_set();
  for (let j: u32 = 0; j < lenOf(first); j++) {
    const e = elemAt(first, j);
    let all = true;
    for (let i: u32 = 1; i < n; i++) if (setFind(elemAt(s, i), e) < 0) { all = false; break; }
    if (all) rt_set_add(r, e);
  }
  return r;
}

// ---- membership ----
export function bi_internal_member_2(x: usize, c: usize): usize {
  if (x == 0 || c == 0) return 0;
  const t = tagOf(c);
  if (t == T_SET) return boolValue(setFind(c, x) >= 0);
  if (t == T_ARRAY) {
    for (let i: u32 = 0; i < lenOf(c); i++) if (compareValues(elemAt(c, i), x) == 0) return boolValue(true);
    return boolValue(false);
  }
  if (t == T_OBJECT) {
    for (let i: u32 = 0; i < lenOf(c); i++) if (compareValues(entryVal(c, i), x) == 0) return boolValue(true);
    return boolValue(false);
  }
  return boolValue(false);
}

export function bi_internal_member_3(k: usize, v: usize, c: usize): usize {
  if (k == 0 || v == 0 || c == 0) return 0;
  const t = tagOf(c);
  if (t == T_ARRAY || t == T_OBJECT) {
    const got = rt_get(c, k);
    return boolValue(got != 0 && compareValues(got, v) == 0);
  }
  if (t == T_SET) {
    // sets have no keys distinct from their members
    const got = rt_get(c, k);
    return boolValue(got != 0 && compareValues(got, v) == 0);
  }
  return boolValue(false);
}

// ---- aggregates ----
export function bi_count(c: usize): usize {
  if (c == 0) return 0;
  const t = tagOf(c);
  if (t == T_ARRAY || t == T_OBJECT || t == T_SET) return rt_number_int(<i64>lenOf(c));
  if (t == T_STRING) return rt_number_int(<i64>utf8Count(c));
  return setError(ERR_TYPE, "count: operand 1 must be one of {array, object, set, string} but got ", typeNameOf(c));
}

function numColl(name: string, c: usize): bool {
  if (c == 0) return false;
  const t = tagOf(c);
  if (t != T_ARRAY && t != T_SET) { setError(ERR_TYPE, name, ": operand 1 must be one of {array, set} but got ", typeNameOf(c)); return false; }
  for (let i: u32 = 0; i < lenOf(c); i++) if (!isNum(elemAt(c, i))) {
    setError(ERR_TYPE, name, ": operand 1 must be one of {array, set} of numbers");
    return false;
  }
  return true;
}

export function bi_sum(c: usize): usize {
  if (!numColl("sum", c)) return 0;
  let acc = rt_number_int(0);
  for (let i: u32 = 0; i < lenOf(c); i++) { acc = bi_plus(acc, elemAt(c, i)); if (acc == 0) return 0; }
  return acc;
}

export function bi_product(c: usize): usize {
  if (!numColl("product", c)) return 0;
  let acc = rt_number_int(1);
  for (let i: u32 = 0; i < lenOf(c); i++) { acc = bi_mul(acc, elemAt(c, i)); if (acc == 0) return 0; }
  return acc;
}

function extreme(name: string, c: usize, wantMax: bool): usize {
  if (c == 0) return 0;
  const t = tagOf(c);
  if (t != T_ARRAY && t != T_SET) return setError(ERR_TYPE, name, ": operand 1 must be one of {array, set} but got ", typeNameOf(c));
  const n = lenOf(c);
  if (n == 0) return 0;
  let best = elemAt(c, 0);
  for (let i: u32 = 1; i < n; i++) {
    const e = elemAt(c, i);
    const cmp = compareValues(e, best);
    if (wantMax ? cmp > 0 : cmp < 0) best = e;
  }
  return best;
}
export function bi_max(c: usize): usize { return extreme("max", c, true); }
export function bi_min(c: usize): usize { return extreme("min", c, false); }

export function bi_sort(c: usize): usize {
  if (c == 0) return 0;
  const t = tagOf(c);
  if (t != T_ARRAY && t != T_SET) return setError(ERR_TYPE, "sort: operand 1 must be one of {array, set} but got ", typeNameOf(c));
  const n = lenOf(c);
  const r = rt_array(n);
  for (let i: u32 = 0; i < n; i++) rt_array_append(r, elemAt(c, i));
  if (t == T_SET) return r; // already sorted
  // insertion sort for short arrays, merge sort otherwise (stable, O(n log n))
  mergeSort(load<u32>(r, 12), n);
  return r;
}

function mergeSort(base: usize, n: u32): void {
  if (n < 2) return;
  const tmp = opa_malloc(<usize>n << 2);
  for (let width: u32 = 1; width < n; width <<= 1) {
    for (let lo: u32 = 0; lo < n; lo += width << 1) {
      const mid = lo + width < n ? lo + width : n;
      const hi = lo + (width << 1) < n ? lo + (width << 1) : n;
      let i = lo, j = mid, k = lo;
      while (i < mid && j < hi) {
        const a = load<u32>(base + (<usize>i << 2)), b = load<u32>(base + (<usize>j << 2));
        if (compareValues(b, a) < 0) { store<u32>(tmp + (<usize>k << 2), b); j++; }
        else { store<u32>(tmp + (<usize>k << 2), a); i++; }
        k++;
      }
      while (i < mid) { store<u32>(tmp + (<usize>k << 2), load<u32>(base + (<usize>i << 2))); i++; k++; }
      while (j < hi) { store<u32>(tmp + (<usize>k << 2), load<u32>(base + (<usize>j << 2))); j++; k++; }
    }
    memory.copy(base, tmp, <usize>n << 2);
  }
}

// ---- types ----
export function typeNameOf(v: usize): string {
  switch (tagOf(v)) {
    case T_NULL: return "null";
    case T_BOOL: return "boolean";
    case T_NUMBER: return "number";
    case T_STRING: return "string";
    case T_ARRAY: return "array";
    case T_OBJECT: return "object";
    case T_SET: return "set";
  }
  return "unknown";
}
export function bi_is_number(v: usize): usize { return v == 0 ? 0 : boolValue(tagOf(v) == T_NUMBER); }
export function bi_is_string(v: usize): usize { return v == 0 ? 0 : boolValue(tagOf(v) == T_STRING); }
export function bi_is_boolean(v: usize): usize { return v == 0 ? 0 : boolValue(tagOf(v) == T_BOOL); }
export function bi_is_array(v: usize): usize { return v == 0 ? 0 : boolValue(tagOf(v) == T_ARRAY); }
export function bi_is_set(v: usize): usize { return v == 0 ? 0 : boolValue(tagOf(v) == T_SET); }
export function bi_is_object(v: usize): usize { return v == 0 ? 0 : boolValue(tagOf(v) == T_OBJECT); }
export function bi_is_null(v: usize): usize { return v == 0 ? 0 : boolValue(tagOf(v) == T_NULL); }
export function bi_type_name(v: usize): usize { return v == 0 ? 0 : asciiString(typeNameOf(v)); }

// ---- objects ----
export function bi_object_get(obj: usize, key: usize, dflt: usize): usize {
  if (obj == 0 || key == 0 || dflt == 0) return 0;
  if (!isT(obj, T_OBJECT)) return setError(ERR_TYPE, "object.get: operand 1 must be object but got ", typeNameOf(obj));
  if (isT(key, T_ARRAY)) {
    // a path: walk nested objects/arrays/sets
    let cur = obj;
    for (let i: u32 = 0; i < lenOf(key); i++) {
      cur = rt_get(cur, elemAt(key, i));
      if (cur == 0) return dflt;
    }
    return cur;
  }
  const v = objectGet(obj, key);
  return v != 0 ? v : dflt;
}

export function bi_object_keys(obj: usize): usize {
  if (obj == 0) return 0;
  if (!isT(obj, T_OBJECT)) return setError(ERR_TYPE, "object.keys: operand 1 must be object but got ", typeNameOf(obj));
  const r = rt_set();
  for (let i: u32 = 0; i < lenOf(obj); i++) rt_set_add(r, entryKey(obj, i));
  return r;
}

/** object.union's merge (OPA mergeWithOverwrite): objects on both sides merge, anything else takes b's value. */
function mergeOverwrite(a: usize, b: usize): usize {
  const r = shallowCopyObject(a);
  for (let i: u32 = 0; i < lenOf(b); i++) {
    const k = entryKey(b, i), vb = entryVal(b, i);
    const va = objectGet(r, k);
    rt_object_insert(r, k, va != 0 && isT(va, T_OBJECT) && isT(vb, T_OBJECT) ? mergeOverwrite(va, vb) : vb);
  }
  return r;
}

// object.union/union_n/filter/remove/subset, json.filter/remove/patch (./jsonpatch.ts) and walk are native so that the sets and non-string keys inside their
// operands come back as they went in: a host builtin sees JSON, which has neither.
export function bi_object_union(a: usize, b: usize): usize {
  if (a == 0 || b == 0) return 0;
  if (!isT(a, T_OBJECT)) return setError(ERR_TYPE, "object.union: operand 1 must be object but got ", typeNameOf(a));
  if (!isT(b, T_OBJECT)) return setError(ERR_TYPE, "object.union: operand 2 must be object but got ", typeNameOf(b));
  return mergeOverwrite(a, b);
}

export function bi_object_union_n(list: usize): usize {
  if (list == 0) return 0;
  if (!isT(list, T_ARRAY)) return setError(ERR_TYPE, "object.union_n: operand 1 must be array but got ", typeNameOf(list));
  let r = rt_object();
  for (let i: u32 = 0; i < lenOf(list); i++) {
    const o = elemAt(list, i);
    if (!isT(o, T_OBJECT))
      return setError(ERR_TYPE, "object.union_n: operand 1 must be array of objects but got array containing ", typeNameOf(o));
    r = mergeOverwrite(r, o);
  }
  return r;
}

/** The keys operand of object.filter/remove as a set: an array's or set's elements, an object's keys. */
function keysOperand(name: string, keys: usize): usize {
  const t = tagOf(keys);
  if (t != T_ARRAY && t != T_SET && t != T_OBJECT)
    return setError(ERR_TYPE, name, ": operand 2 must be one of {object, set, array} but got ", typeNameOf(keys));
  const r = rt_set();
  for (let i: u32 = 0; i < lenOf(keys); i++) rt_set_add(r, t == T_OBJECT ? entryKey(keys, i) : elemAt(keys, i));
  return r;
}

function keepKeys(name: string, obj: usize, keys: usize, keep: bool): usize {
  if (obj == 0 || keys == 0) return 0;
  if (!isT(obj, T_OBJECT)) return setError(ERR_TYPE, name, ": operand 1 must be object but got ", typeNameOf(obj));
  const ks = keysOperand(name, keys);
  if (ks == 0) return 0;
  const r = rt_object();
  for (let i: u32 = 0; i < lenOf(obj); i++) {
    const k = entryKey(obj, i);
    if ((setFind(ks, k) >= 0) == keep) rt_object_insert(r, k, entryVal(obj, i));
  }
  return r;
}

export function bi_object_filter(obj: usize, keys: usize): usize { return keepKeys("object.filter", obj, keys, true); }
export function bi_object_remove(obj: usize, keys: usize): usize { return keepKeys("object.remove", obj, keys, false); }

// ---- object.subset (OPA's topdown/subset.go, case by case) ----
function setSubset(sup: usize, sub: usize): bool {
  for (let i: u32 = 0; i < lenOf(sub); i++) if (setFind(sup, elemAt(sub, i)) < 0) return false;
  return true;
}

function arraySubset(sup: usize, sub: usize): bool {
  const n = lenOf(sup), m = lenOf(sub);
  if (m > n) return false;
  if (compareValues(sup, sub) == 0) return true;
  let superCursor: u32 = 0, subCursor: u32 = 0;
  while (true) {
    if (subCursor == m) return true;
    if (superCursor + subCursor == n) return false;
    if (compareValues(elemAt(sup, superCursor + subCursor), elemAt(sub, subCursor)) == 0) subCursor++;
    else { superCursor++; subCursor = 0; }
  }
  return false;
}

/** OPA's arraySetSubset: true once every element of the set was seen in the array (never for an empty array). */
function arraySetSubset(sup: usize, sub: usize): bool {
  let unmatched = lenOf(sub);
  for (let i: u32 = 0; i < lenOf(sup); i++) {
    if (setFind(sub, elemAt(sup, i)) >= 0) unmatched--;
    if (unmatched == 0) return true;
  }
  return false;
}

function objectSubset(sup: usize, sub: usize): bool {
  for (let i: u32 = 0; i < lenOf(sub); i++) {
    const vs = objectGet(sup, entryKey(sub, i));
    if (vs == 0) return false;
    const vb = entryVal(sub, i);
    if (compareValues(vs, vb) == 0) continue;
    const ts = tagOf(vs), tb = tagOf(vb);
    if (ts == T_OBJECT && tb == T_OBJECT) { if (!objectSubset(vs, vb)) return false; }
    else if (ts == T_SET && tb == T_SET) { if (!setSubset(vs, vb)) return false; }
    else if (ts == T_ARRAY && tb == T_ARRAY) { if (!arraySubset(vs, vb)) return false; }
    else return false;
  }
  return true;
}

export function bi_object_subset(sup: usize, sub: usize): usize {
  if (sup == 0 || sub == 0) return 0;
  const ts = tagOf(sup), tb = tagOf(sub);
  if (ts == T_OBJECT && tb == T_OBJECT) return boolValue(objectSubset(sup, sub));
  if (ts == T_SET && tb == T_SET) return boolValue(setSubset(sup, sub));
  if (ts == T_ARRAY && tb == T_ARRAY) return boolValue(arraySubset(sup, sub));
  if (ts == T_ARRAY && tb == T_SET) return boolValue(arraySetSubset(sup, sub));
  return setError(ERR_TYPE, "object.subset: both arguments object.subset must be of the same type or array and set");
}

// ---- json.filter / json.remove (OPA's topdown/json.go and ast Object.Filter) ----
/** The decimal text of i as a string value: how a path names an array index ("a/0"). */
function indexKey(i: u32): usize {
  let n: u32 = 1;
  for (let x = i; x >= 10; x /= 10) n++;
  const p = opa_malloc(<usize>n);
  let x = i;
  for (let k = n; k > 0; k--) { store<u8>(p + k - 1, <u8>(0x30 + x % 10)); x /= 10; }
  return rt_string(p, n);
}

/** A JSON-pointer segment with ~1 → / and then ~0 → ~, as OPA's parsePath. */
function pointerSegment(p: usize, n: u32): usize {
  const out = opa_malloc(<usize>(n > 0 ? n : 1));
  let o: u32 = 0;
  for (let i: u32 = 0; i < n; i++) {
    const c = load<u8>(p + i);
    if (c == 0x7E && i + 1 < n && load<u8>(p + i + 1) == 0x31) { store<u8>(out + o, 0x2F); o++; i++; continue; }
    store<u8>(out + o, c); o++;
  }
  // ~0 after ~1, on the result (so "~01" is "~1", as strings.ReplaceAll twice gives)
  const out2 = opa_malloc(<usize>(o > 0 ? o : 1));
  let m: u32 = 0;
  for (let i: u32 = 0; i < o; i++) {
    const c = load<u8>(out + i);
    if (c == 0x7E && i + 1 < o && load<u8>(out + i + 1) == 0x30) { store<u8>(out2 + m, 0x7E); m++; i++; continue; }
    store<u8>(out2 + m, c); m++;
  }
  return rt_string(out2, m);
}

/**
 * OPA's parsePath (topdown/json.go): an array is its own segments; a string is "" (no segments) or split at
 * "/" after its leading slashes, each segment unescaped; 0 for any other value.
 */
export function pathSegments(path: usize): usize {
  const t = tagOf(path);
  if (t == T_ARRAY) return path;
  if (t != T_STRING) return 0;
  const segs = rt_array(0);
  const p = strPtr(path), n = lenOf(path);
  if (n == 0) return segs;
  let i: u32 = 0;
  while (i < n && load<u8>(p + i) == 0x2F) i++;
  let start = i;
  for (; i <= n; i++) {
    if (i == n || load<u8>(p + i) == 0x2F) { rt_array_append(segs, pointerSegment(p + start, i - start)); start = i + 1; }
  }
  return segs;
}

/** A path operand element as its segments (an array value), or 0 after recording the type error. */
function parsePath(name: string, path: usize): usize {
  const segs = pathSegments(path);
  if (segs == 0)
    return setError(ERR_TYPE, name, ": operand 2 must be one of {set, array} containing string paths or array of path segments but got ", typeNameOf(path));
  return segs;
}

/** OPA's pathsToObject: a tree of objects whose leaves (null) are the selected paths; 0 on a type error. */
function pathsToObject(name: string, paths: usize): usize {
  const t = tagOf(paths);
  if (t != T_ARRAY && t != T_SET)
    return setError(ERR_TYPE, name, ": operand 2 must be one of {set, array} but got ", typeNameOf(paths));
  const root = rt_object();
  for (let j: u32 = 0; j < lenOf(paths); j++) {
    const path = parsePath(name, elemAt(paths, j));
    if (path == 0) return 0;
    const len = lenOf(path);
    if (len == 0) continue;
    let node = root;
    let done = false;
    for (let i: u32 = 0; i + 1 < len && !done; i++) {
      const k = elemAt(path, i);
      const child = objectGet(node, k);
      if (child == 0) {
        const obj = rt_object();
        rt_object_insert(node, k, obj);
        node = obj;
      } else if (tagOf(child) == T_NULL) done = true;
      else node = child;
    }
    if (!done) rt_object_insert(node, elemAt(path, len - 1), NULL_VALUE);
  }
  return root;
}

function filterValue(v: usize, filter: usize): usize {
  if (tagOf(filter) == T_NULL) return v;
  const t = tagOf(v);
  if (t == T_ARRAY) {
    const r = rt_array(0);
    for (let i: u32 = 0; i < lenOf(v); i++) {
      const sub = objectGet(filter, indexKey(i));
      if (sub != 0) rt_array_append(r, filterValue(elemAt(v, i), sub));
    }
    return r;
  }
  if (t == T_SET) {
    const r = rt_set();
    for (let i: u32 = 0; i < lenOf(v); i++) {
      const sub = objectGet(filter, elemAt(v, i));
      if (sub != 0) rt_set_add(r, filterValue(elemAt(v, i), sub));
    }
    return r;
  }
  if (t == T_OBJECT) {
    const r = rt_object();
    for (let i: u32 = 0; i < lenOf(v); i++) {
      const sub = objectGet(filter, entryKey(v, i));
      if (sub != 0) rt_object_insert(r, entryKey(v, i), filterValue(entryVal(v, i), sub));
    }
    return r;
  }
  return v;
}

/** OPA's jsonRemove: 0 when the value is removed (a null leaf of the path tree). */
function removeValue(v: usize, b: usize): usize {
  if (b == 0) return v;
  if (tagOf(b) == T_NULL) return 0;
  if (tagOf(b) != T_OBJECT) return v;
  const t = tagOf(v);
  if (t == T_OBJECT) {
    const r = rt_object();
    for (let i: u32 = 0; i < lenOf(v); i++) {
      const d = removeValue(entryVal(v, i), objectGet(b, entryKey(v, i)));
      if (d != 0) rt_object_insert(r, entryKey(v, i), d);
    }
    return r;
  }
  if (t == T_SET) {
    const r = rt_set();
    for (let i: u32 = 0; i < lenOf(v); i++) {
      const d = removeValue(elemAt(v, i), objectGet(b, elemAt(v, i)));
      if (d != 0) rt_set_add(r, d);
    }
    return r;
  }
  if (t == T_ARRAY) {
    // Removed indexes close up, as in JSON patch.
    const r = rt_array(0);
    for (let i: u32 = 0; i < lenOf(v); i++) {
      const d = removeValue(elemAt(v, i), objectGet(b, indexKey(i)));
      if (d != 0) rt_array_append(r, d);
    }
    return r;
  }
  return v;
}

export function bi_json_filter(obj: usize, paths: usize): usize {
  if (obj == 0 || paths == 0) return 0;
  if (!isT(obj, T_OBJECT)) return setError(ERR_TYPE, "json.filter: operand 1 must be object but got ", typeNameOf(obj));
  const filter = pathsToObject("json.filter", paths);
  return filter == 0 ? 0 : filterValue(obj, filter);
}

export function bi_json_remove(obj: usize, paths: usize): usize {
  if (obj == 0 || paths == 0) return 0;
  if (!isT(obj, T_OBJECT)) return setError(ERR_TYPE, "json.remove: operand 1 must be object but got ", typeNameOf(obj));
  const tree = pathsToObject("json.remove", paths);
  return tree == 0 ? 0 : removeValue(obj, tree);
}

function walkInto(out: usize, path: usize, v: usize): void {
  const pair = rt_array(2);
  rt_array_append(pair, path);
  rt_array_append(pair, v);
  rt_array_append(out, pair);
  const t = tagOf(v);
  if (t != T_ARRAY && t != T_OBJECT && t != T_SET) return;
  const n = lenOf(path);
  for (let i: u32 = 0; i < lenOf(v); i++) {
    // OPA's walk: an array element is reached by its index, an object value by its key, a set element by itself.
    const step = t == T_ARRAY ? rt_number_int(<i64>i) : t == T_OBJECT ? entryKey(v, i) : elemAt(v, i);
    const child = rt_array(n + 1);
    for (let j: u32 = 0; j < n; j++) rt_array_append(child, elemAt(path, j));
    rt_array_append(child, step);
    walkInto(out, child, t == T_OBJECT ? entryVal(v, i) : elemAt(v, i));
  }
}

/** walk(x): every [path, value] of x, x itself first, in document order; the planner iterates them. */
export function bi_walk(x: usize): usize {
  if (x == 0) return 0;
  const out = rt_array(0);
  walkInto(out, rt_array(0), x);
  return out;
}

// ---- arrays ----
export function bi_array_concat(a: usize, b: usize): usize {
  if (a == 0 || b == 0) return 0;
  if (!isT(a, T_ARRAY)) return setError(ERR_TYPE, "array.concat: operand 1 must be array but got ", typeNameOf(a));
  if (!isT(b, T_ARRAY)) return setError(ERR_TYPE, "array.concat: operand 2 must be array but got ", typeNameOf(b));
  const r = rt_array(lenOf(a) + lenOf(b));
  for (let i: u32 = 0; i < lenOf(a); i++) rt_array_append(r, elemAt(a, i));
  for (let i: u32 = 0; i < lenOf(b); i++) rt_array_append(r, elemAt(b, i));
  return r;
}

export function bi_array_slice(a: usize, start: usize, stop: usize): usize {
  if (a == 0 || start == 0 || stop == 0) return 0;
  if (!isT(a, T_ARRAY)) return setError(ERR_TYPE, "array.slice: operand 1 must be array but got ", typeNameOf(a));
  if (!isNum(start) || !isNum(stop)) return setError(ERR_TYPE, "array.slice: operands 2 and 3 must be numbers");
  let s = numToI64(start); if (!numOk) return setError(ERR_TYPE, "array.slice: operand 2 must be integer number");
  let e = numToI64(stop); if (!numOk) return setError(ERR_TYPE, "array.slice: operand 3 must be integer number");
  const n = <i64>lenOf(a);
  if (s < 0) s = 0;
  if (e > n) e = n;
  if (s > e) s = e; // OPA clamps start to stop
  const r = rt_array(<u32>(e - s));
  for (let i = s; i < e; i++) rt_array_append(r, elemAt(a, <u32>i));
  return r;
}

export function bi_array_reverse(a: usize): usize {
  if (a == 0) return 0;
  if (!isT(a, T_ARRAY)) return setError(ERR_TYPE, "array.reverse: operand 1 must be array but got ", typeNameOf(a));
  const n = lenOf(a);
  const r = rt_array(n);
  for (let i: u32 = 0; i < n; i++) rt_array_append(r, elemAt(a, n - 1 - i));
  return r;
}

// ---- strings ----
// Byte comparison over the UTF-8 bytes: a UTF-8 encoding of a code-point sequence is a prefix/suffix/
// substring of another exactly when the code-point sequences are, so no decoding is needed.
export function strArgs(name: string, a: usize, b: usize): bool {
  if (a == 0 || b == 0) return false;
  if (!isT(a, T_STRING)) { setError(ERR_TYPE, name, ": operand 1 must be string but got ", typeNameOf(a)); return false; }
  if (!isT(b, T_STRING)) { setError(ERR_TYPE, name, ": operand 2 must be string but got ", typeNameOf(b)); return false; }
  return true;
}

@inline export function bytesEqual(p: usize, q: usize, n: u32): bool { return n == 0 || memory.compare(p, q, <usize>n) == 0; }

export function bi_startswith(s: usize, prefix: usize): usize {
  if (!strArgs("startswith", s, prefix)) return 0;
  const n = lenOf(prefix);
  return boolValue(n <= lenOf(s) && bytesEqual(strPtr(s), strPtr(prefix), n));
}

export function bi_endswith(s: usize, suffix: usize): usize {
  if (!strArgs("endswith", s, suffix)) return 0;
  const n = lenOf(suffix), m = lenOf(s);
  return boolValue(n <= m && bytesEqual(strPtr(s) + <usize>(m - n), strPtr(suffix), n));
}

export function bi_contains(s: usize, sub: usize): usize {
  if (!strArgs("contains", s, sub)) return 0;
  return boolValue(indexOfBytes(strPtr(s), lenOf(s), strPtr(sub), lenOf(sub), 0) >= 0);
}

/** Byte offset of the first occurrence of needle (np, n) in haystack (hp, m) at or after `from`, or -1. */
export function indexOfBytes(hp: usize, m: u32, np: usize, n: u32, from: u32): i32 {
  if (n == 0) return from <= m ? <i32>from : -1;
  if (from > m || n > m - from) return -1;
  const first = load<u8>(np);
  const last = m - n; // last candidate start
  // Candidate starts are found 16 bytes at a time (SIMD compare of the text with a needle byte): policies
  // test literals against whole tool outputs (PII pre-filters), where a byte loop dominated.
  let i: u32 = from;
  if (n == 1) {
    const pattern = i8x16.splat(first);
    for (; i + 16 <= m; i += 16) {
      const hits = i8x16.bitmask(i8x16.eq(v128.load(hp + i), pattern));
      if (hits != 0) return <i32>(i + ctz(hits));
    }
    for (; i <= last; i++) if (load<u8>(hp + i) == first) return <i32>i;
    return -1;
  }
  // For 2+ bytes two needle bytes are tested together, the two least frequent in text and in PII shapes
  // (most shape literals start `00`, so the first bytes would flag nearly every position of a digit run).
  let j1: u32 = 0, j2: u32 = 1, r1 = byteRarity(first), r2 = byteRarity(load<u8>(np + 1));
  if (r2 > r1) { j1 = 1; j2 = 0; const t = r1; r1 = r2; r2 = t; }
  let uniform = load<u8>(np + 1) == first;
  const scan = n < 32 ? n : 32;
  for (let j: u32 = 2; j < scan; j++) {
    const b = load<u8>(np + j);
    if (b != first) uniform = false;
    const r = byteRarity(b);
    if (r > r1) { j2 = j1; r2 = r1; j1 = j; r1 = r; } else if (r >= r2) { j2 = j; r2 = r; }
  }
  if (uniform && scan == n) return indexOfRun(hp, first, n, i, last);
  const b1 = load<u8>(np + j1), b2 = load<u8>(np + j2);
  const pattern1 = i8x16.splat(b1), pattern2 = i8x16.splat(b2);
  // Candidates are frequent in shapes (a space and a `0` at some distance), so they are checked with
  // 8-byte words: the needle's first 8 bytes (masked below 8) and, up to 16, its last 8.
  let head: u64 = 0, tail: u64 = 0, mask: u64 = -1;
  if (n >= 8) {
    head = load<u64>(np);
    tail = load<u64>(np + n - 8);
  } else {
    for (let j: u32 = 0; j < n; j++) head |= <u64>load<u8>(np + j) << (j << 3);
    mask = (<u64>1 << (n << 3)) - 1;
  }
  const textEnd = hp + m;
  // reads bytes [i + j, i + j + 64) for j < n: within the text while i + 64 <= last + 1. Four blocks per step:
  // most blocks of a long text hold no candidate, and the loop's own cost is then half the scan.
  for (; i + 64 <= last + 1; i += 64) {
    const a = hp + i + j1, b = hp + i + j2;
    let hits = <u64>i8x16.bitmask(v128.and(i8x16.eq(v128.load(a), pattern1), i8x16.eq(v128.load(b), pattern2)))
      | (<u64>i8x16.bitmask(v128.and(i8x16.eq(v128.load(a, 16), pattern1), i8x16.eq(v128.load(b, 16), pattern2))) << 16)
      | (<u64>i8x16.bitmask(v128.and(i8x16.eq(v128.load(a, 32), pattern1), i8x16.eq(v128.load(b, 32), pattern2))) << 32)
      | (<u64>i8x16.bitmask(v128.and(i8x16.eq(v128.load(a, 48), pattern1), i8x16.eq(v128.load(b, 48), pattern2))) << 48);
    while (hits != 0) {
      const at = hp + i + <usize>ctz(hits);
      hits &= hits - 1;
      if (n >= 8) {
        if (load<u64>(at) != head) continue;
        if (n <= 16 ? load<u64>(at + n - 8) == tail : bytesEqual(at + 8, np + 8, n - 8)) return <i32>(at - hp);
      } else if (at + 8 <= textEnd ? (load<u64>(at) & mask) == head : bytesEqual(at, np, n)) return <i32>(at - hp);
    }
  }
  // reads bytes [i + j, i + j + 16) for j < n: within the text while i + 16 <= last + 1
  for (; i + 16 <= last + 1; i += 16) {
    let hits = i8x16.bitmask(v128.and(i8x16.eq(v128.load(hp + i + j1), pattern1), i8x16.eq(v128.load(hp + i + j2), pattern2)));
    while (hits != 0) {
      const at = hp + i + ctz(hits);
      hits &= hits - 1;
      if (n >= 8) {
        if (load<u64>(at) != head) continue;
        if (n <= 16 ? load<u64>(at + n - 8) == tail : bytesEqual(at + 8, np + 8, n - 8)) return <i32>(at - hp);
      } else if (at + 8 <= textEnd ? (load<u64>(at) & mask) == head : bytesEqual(at, np, n)) return <i32>(at - hp);
    }
  }
  for (; i <= last; i++) {
    if (load<u8>(hp + i + j1) == b1 && bytesEqual(hp + i, np, n)) return <i32>i;
  }
  return -1;
}

/** How rarely byte b occurs in policy text and PII shapes (higher is rarer): a guess, only speed depends on it. */
function byteRarity(b: u8): u32 {
  if (b == 0x30) return 0; // `0`: every digit of a shape
  if (b == 0x41) return 1; // `A`: every capital of a shape
  if (b == 0x20) return 2;
  if (b >= 0x61 && b <= 0x7A) return 3;
  if (b >= 0x31 && b <= 0x39) return 4;
  if (b >= 0x42 && b <= 0x5A) return 5;
  if (b == 0x2E || b == 0x2C || b == 0x2D || b == 0x3A || b == 0x2F || b == 0x5F || b == 0x3D || b == 0x0A) return 6;
  return 7;
}

/**
 * First start in [i, last] of n copies of byte c (a compact shape's `0000000000000`): a window whose last
 * byte is not c is skipped whole, otherwise the run is followed back; bytes known to be c are not re-read.
 */
function indexOfRun(hp: usize, c: u8, n: u32, i: u32, last: u32): i32 {
  let known: u32 = 0; // bytes [i, i + known) are c
  while (i <= last) {
    const end = i + n - 1;
    if (load<u8>(hp + end) != c) { i = end + 1; known = 0; continue; }
    let k = end;
    while (k > i + known && load<u8>(hp + k - 1) == c) k--;
    if (k == i + known) return <i32>i;
    known = end + 1 - k; // bytes [k, end] are c and byte k - 1 is not: the next start is k
    i = k;
  }
  return -1;
}
