// Value operations the generated code calls (one per IR statement kind that touches values).
import { opa_malloc, allocZ, abortAt } from "./alloc";
import {
  T_NUMBER, T_STRING, T_ARRAY, T_OBJECT, T_SET, tagOf, lenOf, elemAt, entryKey, entryVal, objectGet, objectFind,
  rt_object, rt_object_insert, rt_set, rt_set_add, shallowCopyObject, utf8Count, setFind, objectRemove,
} from "./value";
import { rt_number_int, numToI64, numOk } from "./number";
import { compareValues } from "./compare";

/** DotStmt: source[key] for objects, arrays (integral index), sets (membership); 0 if absent. */
export function rt_get(src: usize, key: usize): usize {
  if (src == 0 || key == 0) return 0;
  const t = tagOf(src);
  if (t == T_OBJECT) return objectGet(src, key);
  if (t == T_ARRAY) {
    if (tagOf(key) != T_NUMBER) return 0;
    const i = numToI64(key);
    if (!numOk || i < 0 || i >= <i64>lenOf(src)) return 0;
    return elemAt(src, <u32>i);
  }
  if (t == T_SET) {
    const i = setFind(src, key);
    return i >= 0 ? elemAt(src, <u32>i) : 0;
  }
  return 0;
}

/** LenStmt: element count of a collection, code points of a string; undefined for other values. */
export function rt_length(src: usize): usize {
  if (src == 0) return 0;
  const t = tagOf(src);
  if (t == T_ARRAY || t == T_OBJECT || t == T_SET) return rt_number_int(<i64>lenOf(src));
  if (t == T_STRING) return rt_number_int(<i64>utf8Count(src));
  return 0;
}

/** ScanStmt: key of the i-th element (0 when done or not a collection). Iteration is in sorted order. */
export function rt_scan_key(src: usize, i: u32): usize {
  if (src == 0) return 0;
  const t = tagOf(src);
  if (t != T_ARRAY && t != T_OBJECT && t != T_SET) return 0;
  if (i >= lenOf(src)) return 0;
  if (t == T_ARRAY) return rt_number_int(<i64>i);
  if (t == T_OBJECT) return entryKey(src, i);
  return elemAt(src, i);
}

export function rt_scan_value(src: usize, i: u32): usize {
  const t = tagOf(src);
  if (t == T_OBJECT) return entryVal(src, i);
  return elemAt(src, i);
}

export function rt_type(v: usize): i32 { return v == 0 ? 0 : <i32>tagOf(v); }

/** ObjectInsertOnceStmt: 1 on conflict (key present with a different value), else inserts. */
export function rt_object_insert_once(obj: usize, key: usize, val: usize): i32 {
  if (obj == 0 || key == 0 || val == 0 || tagOf(obj) != T_OBJECT) return 0;
  const i = objectFind(obj, key);
  if (i >= 0) return compareValues(entryVal(obj, <u32>i), val) != 0 ? 1 : 0;
  rt_object_insert(obj, key, val);
  return 0;
}

/** ObjectMergeStmt: recursive merge of base document a with virtual document b (a wins on scalar clashes). */
export function rt_object_merge(a: usize, b: usize): usize {
  if (a == 0) return b;
  if (b == 0) return a;
  if (tagOf(a) != T_OBJECT || tagOf(b) != T_OBJECT) return a;
  const r = shallowCopyObject(a);
  const len = lenOf(b);
  for (let i: u32 = 0; i < len; i++) {
    const k = entryKey(b, i);
    const vb = entryVal(b, i);
    const va = objectGet(r, k);
    if (va == 0) rt_object_insert(r, k, vb);
    else rt_object_insert(r, k, rt_object_merge(va, vb));
  }
  return r;
}

function upsertFrom(base: usize, path: usize, i: u32, val: usize): usize {
  if (i >= lenOf(path)) return val;
  const key = elemAt(path, i);
  let obj: usize;
  let child: usize = 0;
  if (base != 0 && tagOf(base) == T_OBJECT) {
    obj = shallowCopyObject(base);
    child = objectGet(base, key);
  } else obj = rt_object();
  rt_object_insert(obj, key, upsertFrom(child, path, i + 1, val));
  return obj;
}

/** WithStmt: copy of `base` with `val` upserted at `path` (array of keys), shallow copies along the path. */
export function rt_with_upsert(base: usize, path: usize, val: usize): usize {
  return upsertFrom(base, path, 0, val);
}

// ---- ABI 1.0 data-update helpers (docs/wasm-abi.md, exports) ----
const OPA_ERR_OK: i32 = 0;
const OPA_ERR_INVALID_TYPE: i32 = 2;
const OPA_ERR_INVALID_PATH: i32 = 3;

export function opa_value_add_path(base: usize, path: usize, val: usize): i32 {
  if (base == 0 || tagOf(base) != T_OBJECT) return OPA_ERR_INVALID_TYPE;
  if (path == 0 || tagOf(path) != T_ARRAY || lenOf(path) == 0) return OPA_ERR_INVALID_PATH;
  let cur = base;
  const n = lenOf(path);
  for (let i: u32 = 0; i + 1 < n; i++) {
    const k = elemAt(path, i);
    let next = objectGet(cur, k);
    if (next == 0) { next = rt_object(); rt_object_insert(cur, k, next); }
    else if (tagOf(next) != T_OBJECT) return OPA_ERR_INVALID_PATH;
    cur = next;
  }
  rt_object_insert(cur, elemAt(path, n - 1), val);
  return OPA_ERR_OK;
}

export function opa_value_remove_path(base: usize, path: usize): i32 {
  if (base == 0 || tagOf(base) != T_OBJECT) return OPA_ERR_INVALID_TYPE;
  if (path == 0 || tagOf(path) != T_ARRAY || lenOf(path) == 0) return OPA_ERR_INVALID_PATH;
  let cur = base;
  const n = lenOf(path);
  for (let i: u32 = 0; i + 1 < n; i++) {
    cur = objectGet(cur, elemAt(path, i));
    if (cur == 0) return OPA_ERR_OK;
    if (tagOf(cur) != T_OBJECT) return OPA_ERR_INVALID_PATH;
  }
  objectRemove(cur, elemAt(path, n - 1));
  return OPA_ERR_OK;
}

// Values live on the bump heap, which the host resets; individual frees are no-ops.
export function opa_value_free(v: usize): void {}

// ---- evaluation context (OPA layout: input @0, data @4, result @8, entrypoint @12) ----
export function opa_eval_ctx_new(): usize { return allocZ(16); }
export function opa_eval_ctx_set_input(ctx: usize, v: usize): void { store<u32>(ctx, <u32>v, 0); }
export function opa_eval_ctx_set_data(ctx: usize, v: usize): void { store<u32>(ctx, <u32>v, 4); }
export function opa_eval_ctx_set_entrypoint(ctx: usize, ep: i32): void { store<i32>(ctx, ep, 12); }
export function opa_eval_ctx_get_result(ctx: usize): usize { return load<u32>(ctx, 8); }

// ---- memoisation of 2-parameter functions per evaluation; WithStmt pushes a fresh frame ----
// Frame: @0 u32 previous frame, then one u32 slot per function (0 = not computed, 1 = undefined).
let memoFrame: usize = 0;
let memoCount: u32 = 0;

export function rt_memo_init(count: u32): void {
  memoCount = count;
  memoFrame = 0;
  rt_memo_push();
}
export function rt_memo_push(): void {
  const f = allocZ((<usize>memoCount + 1) << 2);
  store<u32>(f, <u32>memoFrame);
  memoFrame = f;
}
export function rt_memo_pop(): void {
  if (memoFrame != 0) memoFrame = load<u32>(memoFrame);
}
export function rt_memo_get(i: u32): usize {
  if (memoFrame == 0 || i >= memoCount) return 0;
  return load<u32>(memoFrame + ((<usize>i + 1) << 2));
}
export function rt_memo_put(i: u32, v: usize): void {
  if (memoFrame == 0 || i >= memoCount) return;
  store<u32>(memoFrame + ((<usize>i + 1) << 2), <u32>(v == 0 ? 1 : v));
}

// ---- CallDynamicStmt: mapping {gen: {pkg: {rule: tableIndex}}} ----
/** Table index for the path (array of strings) in mapping object, or -1. */
export function rt_mapping_lookup(mapping: usize, path: usize): i32 {
  let cur = mapping;
  const n = lenOf(path);
  for (let i: u32 = 0; i < n; i++) {
    if (cur == 0 || tagOf(cur) != T_OBJECT) return -1;
    const k = elemAt(path, i);
    if (k == 0 || tagOf(k) != T_STRING) return -1;
    cur = objectGet(cur, k);
  }
  if (cur == 0 || tagOf(cur) != T_NUMBER) return -1;
  const idx = numToI64(cur);
  return numOk ? <i32>idx : -1;
}

// ---- runtime errors: "<loc>: <code>: <message>" ----
export let errCode: i32 = 0; // 0 none, 1 eval_builtin_error, 2 eval_type_error
// Message parts are static AS string literals: concatenating would allocate on AS's own heap.
let errA: string = "";
let errB: string = "";
let errC: string = "";
let errD: string = "";
let errE: string = "";
let errF: string = "";

export function setError(code: i32, a: string, b: string = "", c: string = "", d: string = "", e: string = "", f: string = ""): usize {
  errCode = code;
  errA = a; errB = b; errC = c; errD = d; errE = e; errF = f;
  return 0;
}

export function rt_err_clear(): void { errCode = 0; }

function putAscii(p: usize, s: string): usize {
  for (let i = 0; i < s.length; i++) store<u8>(p + i, <u8>s.charCodeAt(i));
  return <usize>s.length;
}

/** Strict builtin errors: abort with `<prefix>: <code>: <message>` if the last native builtin failed. */
export function rt_err_check(prefix: usize): void {
  if (errCode == 0) return;
  const code = errCode == 2 ? "eval_type_error" : "eval_builtin_error";
  errCode = 0;
  let plen: usize = 0;
  while (load<u8>(prefix + plen) != 0) plen++;
  const total = plen + 4 + <usize>(code.length + errA.length + errB.length + errC.length + errD.length + errE.length + errF.length) + 1;
  const p = opa_malloc(total);
  memory.copy(p, prefix, plen);
  let o = plen;
  store<u8>(p + o, 0x3A); store<u8>(p + o + 1, 0x20); o += 2;
  o += putAscii(p + o, code);
  store<u8>(p + o, 0x3A); store<u8>(p + o + 1, 0x20); o += 2;
  o += putAscii(p + o, errA);
  o += putAscii(p + o, errB);
  o += putAscii(p + o, errC);
  o += putAscii(p + o, errD);
  o += putAscii(p + o, errE);
  o += putAscii(p + o, errF);
  store<u8>(p + o, 0);
  abortAt(p);
}

/**
 * Host builtins declared to return a set get it back as a JSON array (opa-wasm JSON-roundtrips values):
 * turn it back into a set so Rego semantics (equality, membership) hold.
 */
export function rt_to_set(v: usize): usize {
  if (v == 0 || tagOf(v) != T_ARRAY) return v;
  const s = rt_set();
  const n = lenOf(v);
  for (let i: u32 = 0; i < n; i++) rt_set_add(s, elemAt(v, i));
  return s;
}
