// OPA's total order: null < boolean < number < string < array < object < set; arrays element-wise then
// by length; objects by sorted keys then values; sets as sorted sequences; strings byte-wise (UTF-8 byte
// order equals code point order, as in Go).
import { T_NULL, T_BOOL, T_NUMBER, T_STRING, T_ARRAY, T_OBJECT, T_SET, tagOf, lenOf, strPtr, elemAt, entryKey, entryVal } from "./value";
import { compareNumbers } from "./number";

/** Byte-wise order of two UTF-8 strings; equal prefixes skipped 8 bytes at a time (unaligned loads are fine in Wasm). */
export function compareBytes(pa: usize, la: u32, pb: usize, lb: u32): i32 {
  const n = la < lb ? la : lb;
  let i: u32 = 0;
  while (i + 8 <= n && load<u64>(pa + i) == load<u64>(pb + i)) i += 8;
  while (i < n) {
    const x = load<u8>(pa + i), y = load<u8>(pb + i);
    if (x != y) return x < y ? -1 : 1;
    i++;
  }
  return la == lb ? 0 : (la < lb ? -1 : 1);
}

export function compareValues(a: usize, b: usize): i32 {
  if (a == b) return 0;
  if (a == 0) return -1;
  if (b == 0) return 1;
  const ta = tagOf(a), tb = tagOf(b);
  if (ta != tb) return ta < tb ? -1 : 1;
  switch (ta) {
    case T_NULL: return 0;
    case T_BOOL: {
      const x = load<u8>(a, 1), y = load<u8>(b, 1);
      return x == y ? 0 : (x < y ? -1 : 1);
    }
    case T_NUMBER: return compareNumbers(a, b);
    case T_STRING: return compareBytes(strPtr(a), lenOf(a), strPtr(b), lenOf(b));
    case T_ARRAY:
    case T_SET: {
      const la = lenOf(a), lb = lenOf(b);
      const n = la < lb ? la : lb;
      for (let i: u32 = 0; i < n; i++) {
        const c = compareValues(elemAt(a, i), elemAt(b, i));
        if (c != 0) return c;
      }
      return la == lb ? 0 : (la < lb ? -1 : 1);
    }
    case T_OBJECT: {
      const la = lenOf(a), lb = lenOf(b);
      const n = la < lb ? la : lb;
      for (let i: u32 = 0; i < n; i++) {
        let c = compareValues(entryKey(a, i), entryKey(b, i));
        if (c != 0) return c;
        c = compareValues(entryVal(a, i), entryVal(b, i));
        if (c != 0) return c;
      }
      return la == lb ? 0 : (la < lb ? -1 : 1);
    }
  }
  return 0;
}

export function rt_compare(a: usize, b: usize): i32 { return compareValues(a, b); }

/** 1 iff both are defined and equal. */
export function rt_equal(a: usize, b: usize): i32 {
  return a != 0 && b != 0 && compareValues(a, b) == 0 ? 1 : 0;
}
