// JSON (`opa_json_dump`) and Rego-syntax (`opa_value_dump`) serialisation, NUL-terminated. One pass: the
// text is written at the heap pointer (nothing else allocates while dumping; memory grown ahead of each
// write by its worst case) and then allocated there at its exact size. Sets dump as arrays in JSON;
// non-string object keys dump as their JSON text inside a string (OPA C runtime convention).
import { opa_malloc, opa_heap_ptr_get, ensureMemory } from "./alloc";
import { T_NULL, T_BOOL, T_NUMBER, T_STRING, T_ARRAY, T_OBJECT, T_SET, tagOf, lenOf, strPtr, elemAt, entryKey, entryVal } from "./value";
import { numberText, txtPtr, txtLen, numKind, numI64, K_INT, K_BIG, K_DEC } from "./number";

let out: usize = 0;
let n: usize = 0;
// First address past the memory known to exist (grown ahead of writes).
let limit: usize = 0;
let rego = false;
// Set by generated code around calls of host builtins that take exact integers (builtins/host/names.ts
// exactIntegerBuiltins): opa-wasm reads their arguments with JSON.parse, which rounds integers beyond
// 2^53, so such integers are dumped as {"$guardian.exact_integer":"<digits>"} for the host to decode.
let exactIntegers = false;

export function rt_dump_exact_integers(on: i32): void { exactIntegers = on != 0; }

// Set by generated code around calls of host builtins that print sets in Rego syntax (names.ts
// regoSetBuiltins): JSON has no sets, so a set is dumped as {"$guardian.set":[...]} for the host to decode.
let markSets = false;

export function rt_dump_mark_sets(on: i32): void { markSets = on != 0; }

const MAX_SAFE: i64 = 9007199254740991;

/** Room for `k` more bytes at out + n. */
@inline function reserve(k: usize): void {
  if (out + n + k > limit) grow(k);
}

function grow(k: usize): void {
  ensureMemory(out + n + k);
  limit = (<usize>memory.size()) << 16;
}

const HEX: usize = memory.data<u8>([48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 97, 98, 99, 100, 101, 102]);

// `level` > 0 means the byte is part of a string nested `level` times (keys that are not strings).
function put(b: u8, level: i32): void {
  if (level == 0) {
    reserve(1);
    store<u8>(out + n, b);
    n++;
    return;
  }
  if (b == 0x22 || b == 0x5C) { put(0x5C, level - 1); put(b, level - 1); return; }
  if (b < 0x20) {
    if (b == 0x0A) { put(0x5C, level - 1); put(0x6E, level - 1); return; }
    if (b == 0x0D) { put(0x5C, level - 1); put(0x72, level - 1); return; }
    if (b == 0x09) { put(0x5C, level - 1); put(0x74, level - 1); return; }
    put(0x5C, level - 1); put(0x75, level - 1); put(0x30, level - 1); put(0x30, level - 1);
    put(load<u8>(HEX + (b >> 4)), level - 1); put(load<u8>(HEX + (b & 15)), level - 1);
    return;
  }
  put(b, level - 1);
}

function putAscii(s: string, level: i32): void {
  for (let i = 0; i < s.length; i++) put(<u8>s.charCodeAt(i), level);
}

// The caller reserves 6 bytes per byte.
@inline function putStringByte(b: u8): void {
  if (b >= 0x20 && b != 0x22 && b != 0x5C) { store<u8>(out + n, b); n++; }
  else put(b, 1);
}

function putString(v: usize, level: i32): void {
  put(0x22, level);
  const p = strPtr(v);
  const len = lenOf(v);
  if (level == 0) {
    // 16 bytes at a time when none needs escaping (texts handed to host builtins, decisions)
    const quote = i8x16.splat(0x22), backslash = i8x16.splat(0x5C), space = i8x16.splat(0x20);
    let i: u32 = 0;
    for (; i + 16 <= len; i += 16) {
      // `\u00XX` (6 bytes) is the longest escape of a byte.
      reserve(96);
      const b = v128.load(p + i);
      if (!v128.any_true(v128.or(v128.or(i8x16.eq(b, quote), i8x16.eq(b, backslash)), i8x16.lt_u(b, space)))) {
        v128.store(out + n, b);
        n += 16;
        continue;
      }
      for (let k: u32 = 0; k < 16; k++) putStringByte(load<u8>(p + i + k));
    }
    for (; i < len; i++) {
      reserve(6);
      putStringByte(load<u8>(p + i));
    }
  } else {
    for (let i: u32 = 0; i < len; i++) put(load<u8>(p + i), level + 1);
  }
  put(0x22, level);
}

function putValue(v: usize, level: i32): void {
  switch (tagOf(v)) {
    case T_NULL: putAscii("null", level); return;
    case T_BOOL: putAscii(load<u8>(v, 1) != 0 ? "true" : "false", level); return;
    case T_NUMBER: {
      const kind = numKind(v);
      // Decimals as written too (`1e400`, `1.50`): JSON.parse would make the first Infinity and lose how
      // both are written, which sprintf and json.marshal print as OPA does.
      const marked = exactIntegers && !rego && level == 0 &&
        (kind == K_BIG || kind == K_DEC || (kind == K_INT && (numI64(v) > MAX_SAFE || numI64(v) < -MAX_SAFE)));
      if (marked) putAscii("{\"$guardian.exact_integer\":\"", level);
      numberText(v);
      const p = txtPtr, l = txtLen;
      for (let i: u32 = 0; i < l; i++) put(load<u8>(p + i), level);
      if (marked) putAscii("\"}", level);
      return;
    }
    case T_STRING: putString(v, level); return;
    case T_ARRAY: {
      put(0x5B, level);
      const len = lenOf(v);
      for (let i: u32 = 0; i < len; i++) { if (i > 0) put(0x2C, level); putValue(elemAt(v, i), level); }
      put(0x5D, level);
      return;
    }
    case T_SET: {
      const len = lenOf(v);
      const marked = markSets && !rego && level == 0;
      if (rego) {
        if (len == 0) { putAscii("set()", level); return; }
        put(0x7B, level);
      } else {
        if (marked) putAscii("{\"$guardian.set\":", level);
        put(0x5B, level);
      }
      for (let i: u32 = 0; i < len; i++) { if (i > 0) put(0x2C, level); putValue(elemAt(v, i), level); }
      put(rego ? 0x7D : 0x5D, level);
      if (marked) put(0x7D, level);
      return;
    }
    case T_OBJECT: {
      put(0x7B, level);
      const len = lenOf(v);
      for (let i: u32 = 0; i < len; i++) {
        if (i > 0) put(0x2C, level);
        const k = entryKey(v, i);
        if (rego || tagOf(k) == T_STRING) putValue(k, level);
        else { put(0x22, level); putValue(k, level + 1); put(0x22, level); }
        put(0x3A, level);
        putValue(entryVal(v, i), level);
      }
      put(0x7D, level);
      return;
    }
  }
}

function dump(v: usize, asRego: bool): usize {
  rego = asRego;
  if (v == 0) {
    const p = opa_malloc(1);
    store<u8>(p, 0);
    return p;
  }
  out = opa_heap_ptr_get(); n = 0;
  limit = (<usize>memory.size()) << 16;
  putValue(v, 0);
  reserve(1);
  store<u8>(out + n, 0);
  const r = opa_malloc(n + 1);
  // The text was written where this allocation starts.
  if (r != out) unreachable();
  out = 0;
  return r;
}

export function opa_json_dump(v: usize): usize { return dump(v, false); }
export function opa_value_dump(v: usize): usize { return dump(v, true); }
