// Value model. Every value is a pointer to a struct whose first byte is its type tag (OPA's tag numbers,
// docs/wasm-abi.md, values). 0 = undefined. Layouts (byte offsets):
//   null    [tag]
//   boolean [tag][u8 value]
//   number  [tag][u8 kind] @4 u32 textLen @8 i64|f64 payload @16 u32 textPtr   (see number.ts)
//   string  [tag] @4 u32 byteLen @8 u32 bytesPtr (UTF-8, not NUL-terminated)
//   array   [tag] @4 u32 len @8 u32 cap @12 u32 elemsPtr (u32 value pointers)
//   object  [tag] @4 u32 len @8 u32 cap @12 u32 entriesPtr (u32 key, u32 value pairs, sorted by key)
//   set     [tag] @4 u32 len @8 u32 cap @12 u32 elemsPtr (sorted, unique)
// Objects and sets are kept sorted by OPA's total order, so iteration and dumps come out in the same
// order as OPA's Go evaluator.
import { opa_malloc, allocZ } from "./alloc";
import { compareValues, compareBytes } from "./compare";

export const T_NULL: u8 = 1;
export const T_BOOL: u8 = 2;
export const T_NUMBER: u8 = 3;
export const T_STRING: u8 = 4;
export const T_ARRAY: u8 = 5;
export const T_OBJECT: u8 = 6;
export const T_SET: u8 = 7;

export const NULL_VALUE: usize = memory.data<u8>([1, 0, 0, 0, 0, 0, 0, 0], 8);
export const FALSE_VALUE: usize = memory.data<u8>([2, 0, 0, 0, 0, 0, 0, 0], 8);
export const TRUE_VALUE: usize = memory.data<u8>([2, 1, 0, 0, 0, 0, 0, 0], 8);

@inline export function tagOf(v: usize): u8 { return load<u8>(v); }
@inline export function lenOf(v: usize): u32 { return load<u32>(v, 4); }
@inline export function strPtr(v: usize): usize { return load<u32>(v, 8); }
@inline export function elems(v: usize): usize { return load<u32>(v, 12); }
@inline export function elemAt(v: usize, i: u32): usize { return load<u32>(load<u32>(v, 12) + (<usize>i << 2)); }
@inline export function entryKey(v: usize, i: u32): usize { return load<u32>(load<u32>(v, 12) + (<usize>i << 3)); }
@inline export function entryVal(v: usize, i: u32): usize { return load<u32>(load<u32>(v, 12) + (<usize>i << 3), 4); }

export function rt_null(): usize { return NULL_VALUE; }
export function boolValue(b: bool): usize { return b ? TRUE_VALUE : FALSE_VALUE; }
export function boolOf(v: usize): bool { return load<u8>(v, 1) != 0; }

export function rt_string(ptr: usize, len: u32): usize {
  const v = opa_malloc(16);
  store<u32>(v, <u32>T_STRING);
  store<u32>(v, len, 4);
  store<u32>(v, <u32>ptr, 8);
  return v;
}

/** New string value from an ASCII AS string literal (for type names and the like). */
export function asciiString(s: string): usize {
  const n = s.length;
  const p = opa_malloc(<usize>n);
  for (let i = 0; i < n; i++) store<u8>(p + i, <u8>s.charCodeAt(i));
  return rt_string(p, n);
}

// ---- arrays ----
export function rt_array(cap: u32): usize {
  const v = opa_malloc(16);
  store<u32>(v, <u32>T_ARRAY);
  store<u32>(v, 0, 4);
  store<u32>(v, cap, 8);
  store<u32>(v, cap > 0 ? <u32>opa_malloc(<usize>cap << 2) : 0, 12);
  return v;
}

function growSlots(v: usize, slotSize: usize): void {
  const cap = load<u32>(v, 8);
  const len = load<u32>(v, 4);
  const ncap: u32 = cap < 4 ? 4 : cap * 2;
  const np = opa_malloc(<usize>ncap * slotSize);
  if (len > 0) memory.copy(np, load<u32>(v, 12), <usize>len * slotSize);
  store<u32>(v, ncap, 8);
  store<u32>(v, <u32>np, 12);
}

export function rt_array_append(arr: usize, val: usize): void {
  if (arr == 0 || val == 0 || tagOf(arr) != T_ARRAY) return;
  const len = load<u32>(arr, 4);
  if (len >= load<u32>(arr, 8)) growSlots(arr, 4);
  store<u32>(load<u32>(arr, 12) + (<usize>len << 2), <u32>val);
  store<u32>(arr, len + 1, 4);
}

// ---- objects ----
export function rt_object(): usize {
  const v = allocZ(16);
  store<u8>(v, T_OBJECT);
  return v;
}

/** Binary search: index of key, or -(insertion point) - 1. */
export function objectFind(obj: usize, key: usize): i32 {
  let lo: i32 = 0;
  let hi: i32 = <i32>load<u32>(obj, 4) - 1;
  const ents = load<u32>(obj, 12);
  if (tagOf(key) == T_STRING) {
    // Nearly every lookup is a string key: compare bytes directly instead of through compareValues.
    const kp = strPtr(key), kl = lenOf(key);
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const e = load<u32>(ents + (<usize>mid << 3));
      const te = tagOf(e);
      const c = te == T_STRING ? compareBytes(strPtr(e), lenOf(e), kp, kl) : (te < T_STRING ? -1 : 1);
      if (c < 0) lo = mid + 1;
      else if (c > 0) hi = mid - 1;
      else return mid;
    }
    return -(lo + 1);
  }
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const c = compareValues(load<u32>(ents + (<usize>mid << 3)), key);
    if (c < 0) lo = mid + 1;
    else if (c > 0) hi = mid - 1;
    else return mid;
  }
  return -(lo + 1);
}

export function objectGet(obj: usize, key: usize): usize {
  const i = objectFind(obj, key);
  return i >= 0 ? entryVal(obj, <u32>i) : 0;
}

export function rt_object_insert(obj: usize, key: usize, val: usize): void {
  if (obj == 0 || key == 0 || val == 0 || tagOf(obj) != T_OBJECT) return;
  const len = load<u32>(obj, 4);
  // Appending in ascending order (parsing sorted input, copying) is the common case: skip the search.
  let i: i32;
  if (len == 0 || compareValues(entryKey(obj, len - 1), key) < 0) i = -(<i32>len + 1);
  else i = objectFind(obj, key);
  if (i >= 0) {
    store<u32>(load<u32>(obj, 12) + (<usize>i << 3), <u32>val, 4);
    return;
  }
  const at = <u32>(-i - 1);
  if (len >= load<u32>(obj, 8)) growSlots(obj, 8);
  const ents = load<u32>(obj, 12);
  if (at < len) memory.copy(ents + ((<usize>at + 1) << 3), ents + (<usize>at << 3), <usize>(len - at) << 3);
  store<u32>(ents + (<usize>at << 3), <u32>key);
  store<u32>(ents + (<usize>at << 3), <u32>val, 4);
  store<u32>(obj, len + 1, 4);
}

export function objectRemove(obj: usize, key: usize): bool {
  const i = objectFind(obj, key);
  if (i < 0) return false;
  const len = load<u32>(obj, 4);
  const ents = load<u32>(obj, 12);
  const at = <u32>i;
  if (at + 1 < len) memory.copy(ents + (<usize>at << 3), ents + ((<usize>at + 1) << 3), <usize>(len - at - 1) << 3);
  store<u32>(obj, len - 1, 4);
  return true;
}

export function shallowCopyObject(obj: usize): usize {
  const len = load<u32>(obj, 4);
  const v = opa_malloc(16);
  store<u32>(v, <u32>T_OBJECT);
  store<u32>(v, len, 4);
  store<u32>(v, len, 8);
  const ents = len > 0 ? opa_malloc(<usize>len << 3) : 0;
  if (len > 0) memory.copy(ents, load<u32>(obj, 12), <usize>len << 3);
  store<u32>(v, <u32>ents, 12);
  return v;
}

// ---- sets ----
export function rt_set(): usize {
  const v = allocZ(16);
  store<u8>(v, T_SET);
  return v;
}

export function setFind(set: usize, val: usize): i32 {
  let lo: i32 = 0;
  let hi: i32 = <i32>load<u32>(set, 4) - 1;
  const el = load<u32>(set, 12);
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const c = compareValues(load<u32>(el + (<usize>mid << 2)), val);
    if (c < 0) lo = mid + 1;
    else if (c > 0) hi = mid - 1;
    else return mid;
  }
  return -(lo + 1);
}

export function rt_set_add(set: usize, val: usize): void {
  if (set == 0 || val == 0 || tagOf(set) != T_SET) return;
  const len = load<u32>(set, 4);
  let i: i32;
  if (len == 0 || compareValues(elemAt(set, len - 1), val) < 0) i = -(<i32>len + 1);
  else i = setFind(set, val);
  if (i >= 0) return;
  const at = <u32>(-i - 1);
  if (len >= load<u32>(set, 8)) growSlots(set, 4);
  const el = load<u32>(set, 12);
  if (at < len) memory.copy(el + ((<usize>at + 1) << 2), el + (<usize>at << 2), <usize>(len - at) << 2);
  store<u32>(el + (<usize>at << 2), <u32>val);
  store<u32>(set, len + 1, 4);
}

/** Number of Unicode code points in a UTF-8 string value. */
export function utf8Count(v: usize): u32 {
  const p = strPtr(v);
  const n = lenOf(v);
  let c: u32 = 0;
  for (let i: u32 = 0; i < n; i++) if ((load<u8>(p + i) & 0xC0) != 0x80) c++;
  return c;
}

/**
 * Object from n (key, value) pairs in arbitrary order (u32 pairs at `pairs`, consumed): stable merge
 * sort by key, later duplicates win (JSON last-key-wins). O(n log n) where one insert at a time would
 * be O(n²) memmoves for large unsorted documents.
 */
export function objectFromPairs(pairs: usize, n: u32): usize {
  // Canonical (JCS) inputs arrive with keys strictly ascending: then the pairs are already the object.
  let ascending: u32 = 1;
  while (ascending < n && compareValues(load<u32>(pairs + ((<usize>ascending - 1) << 3)), load<u32>(pairs + (<usize>ascending << 3))) < 0) ascending++;
  let m: u32 = n;
  // otherwise sort (n ≥ 2 here), then drop duplicates
  if (ascending < n) {
    const tmp = opa_malloc(<usize>n << 3);
    let src = pairs, dst = tmp;
    for (let width: u32 = 1; width < n; width <<= 1) {
      for (let lo: u32 = 0; lo < n; lo += width << 1) {
        const mid = lo + width < n ? lo + width : n;
        const hi = lo + (width << 1) < n ? lo + (width << 1) : n;
        let i = lo, j = mid, k = lo;
        while (i < mid && j < hi) {
          // take from the left run unless the right key is strictly smaller (stability)
          if (compareValues(load<u32>(src + (<usize>j << 3)), load<u32>(src + (<usize>i << 3))) < 0) {
            store<u64>(dst + (<usize>k << 3), load<u64>(src + (<usize>j << 3))); j++;
          } else {
            store<u64>(dst + (<usize>k << 3), load<u64>(src + (<usize>i << 3))); i++;
          }
          k++;
        }
        while (i < mid) { store<u64>(dst + (<usize>k << 3), load<u64>(src + (<usize>i << 3))); i++; k++; }
        while (j < hi) { store<u64>(dst + (<usize>k << 3), load<u64>(src + (<usize>j << 3))); j++; k++; }
      }
      const t = src; src = dst; dst = t;
    }
    pairs = src;
    // dedupe: keep the last of each run of equal keys
    m = 0;
    for (let i: u32 = 0; i < n; i++) {
      const k = load<u32>(pairs + (<usize>i << 3));
      if (i + 1 < n && compareValues(k, load<u32>(pairs + ((<usize>i + 1) << 3))) == 0) continue;
      store<u64>(pairs + (<usize>m << 3), load<u64>(pairs + (<usize>i << 3)));
      m++;
    }
  }
  const v = opa_malloc(16);
  store<u32>(v, <u32>T_OBJECT);
  store<u32>(v, m, 4);
  store<u32>(v, n, 8);
  store<u32>(v, n > 0 ? <u32>pairs : 0, 12);
  return v;
}
