// json.patch, natively so that sets and non-string keys in the document survive (a host builtin sees JSON).
// OPA (topdown/json.go, builtinJSONPatch) applies the operations in order to an edit tree over the document
// (internal/edittree) and renders it once at the end; any operation that cannot be applied makes the whole
// call undefined, even with strict builtin errors. The tree is modelled here state for state, because what an
// operation reaches depends on that state, not only on the document rendered so far:
//   - an array remembers its original elements and which of them were removed; a step into an element that
//     was not inserted by the patch reads the original element at that index (EditTree.Unfold), so after an
//     earlier insert or remove before it, the element reached is the original one at that position;
//   - a set is rendered and its edits dropped (collapsed) before a composite element is looked up, inserted
//     or removed; scalar elements are edited in place.
// OPA's evaluator itself fails (a nil dereference) when a path leads through a scalar set element the patch
// removed, and when the patch removes the whole document: those are builtin errors here.
import { opa_malloc, allocZ } from "./alloc";
import {
  T_NUMBER, T_STRING, T_ARRAY, T_OBJECT, T_SET, tagOf, lenOf, strPtr, elemAt, entryKey, entryVal, rt_array,
  rt_array_append, rt_object, rt_object_insert, rt_set, rt_set_add, setFind, objectGet, asciiString,
} from "./value";
import { numKind, numI64, K_INT } from "./number";
import { compareValues } from "./compare";
import { setError } from "./ops";
import { typeNameOf, pathSegments } from "./builtins";

const ERR_BUILTIN: i32 = 1;
const ERR_TYPE: i32 = 2;

// Edit-tree nodes, 24 bytes: [kind] @4 u32 value @8 u32 count @12 u32 cap @16 u32 slots @20 u32 eliminated.
//   object, set: `value` is the original value (a set's last collapsed one); `slots` holds `count` edits as
//     (key, node) pairs, node 0 for a removed key.
//   array: `value` is the original array; `slots` holds the `count` current elements, each 0 for "the next
//     original element not eliminated" or the node of an element the patch put there; `eliminated` has one
//     byte per original element.
//   leaf: a scalar `value`. removed: the document after a "remove" of the whole document.
const N_LEAF: u8 = 0;
const N_OBJECT: u8 = 1;
const N_SET: u8 = 2;
const N_ARRAY: u8 = 3;
const N_REMOVED: u8 = 4;

@inline function kindOf(n: usize): u8 { return load<u8>(n); }
@inline function valueOf(n: usize): usize { return load<u32>(n, 4); }
@inline function countOf(n: usize): u32 { return load<u32>(n, 8); }
@inline function slotsOf(n: usize): usize { return load<u32>(n, 16); }
@inline function isComposite(v: usize): bool { const t = tagOf(v); return t == T_ARRAY || t == T_OBJECT || t == T_SET; }

function newNode(v: usize): usize {
  const n = allocZ(24);
  store<u32>(n, <u32>v, 4);
  const t = tagOf(v);
  if (t == T_OBJECT) store<u8>(n, N_OBJECT);
  else if (t == T_SET) store<u8>(n, N_SET);
  else if (t == T_ARRAY) {
    store<u8>(n, N_ARRAY);
    const len = lenOf(v);
    store<u32>(n, len, 8);
    store<u32>(n, len, 12);
    if (len > 0) {
      store<u32>(n, <u32>allocZ(<usize>len << 2), 16);
      store<u32>(n, <u32>allocZ(<usize>len), 20);
    }
  }
  return n;
}

function removedNode(): usize {
  const n = allocZ(24);
  store<u8>(n, N_REMOVED);
  return n;
}

/** Room for one more slot of `size` bytes. */
function reserve(n: usize, size: usize): void {
  const count = countOf(n), cap = load<u32>(n, 12);
  if (count < cap) return;
  const ncap: u32 = cap < 4 ? 4 : cap * 2;
  const p = opa_malloc(<usize>ncap * size);
  if (count > 0) memory.copy(p, slotsOf(n), <usize>count * size);
  store<u32>(n, ncap, 12);
  store<u32>(n, <u32>p, 16);
}

// ---- object and set edits ----
function editIndex(n: usize, key: usize): i32 {
  const s = slotsOf(n);
  const count = countOf(n);
  for (let i: u32 = 0; i < count; i++) if (compareValues(load<u32>(s + (<usize>i << 3)), key) == 0) return <i32>i;
  return -1;
}

@inline function editChild(n: usize, i: i32): usize { return load<u32>(slotsOf(n) + (<usize>i << 3), 4); }

/** Records key → child (0: removed), replacing an earlier edit of the key. */
function putEdit(n: usize, key: usize, child: usize): void {
  let i = editIndex(n, key);
  if (i < 0) {
    reserve(n, 8);
    i = <i32>countOf(n);
    store<u32>(n, countOf(n) + 1, 8);
  }
  const at = slotsOf(n) + (<usize>i << 3);
  store<u32>(at, <u32>key);
  store<u32>(at, <u32>child, 4);
}

/** A set's edits rendered into its value, then dropped. */
function collapse(n: usize): void {
  store<u32>(n, <u32>render(n), 4);
  store<u32>(n, 0, 8);
}

// ---- array slots ----
@inline function slotAt(n: usize, i: u32): usize { return load<u32>(slotsOf(n) + (<usize>i << 2)); }

function insertSlot(n: usize, i: u32, child: usize): void {
  reserve(n, 4);
  const s = slotsOf(n), count = countOf(n);
  if (i < count) memory.copy(s + ((<usize>i + 1) << 2), s + (<usize>i << 2), <usize>(count - i) << 2);
  store<u32>(s + (<usize>i << 2), <u32>child);
  store<u32>(n, count + 1, 8);
}

/** Removes the current element i (false past the end); an original one is marked eliminated. */
function removeSlot(n: usize, i: i64): bool {
  const count = countOf(n);
  if (i < 0 || i >= <i64>count) return false;
  const at = <u32>i;
  const s = slotsOf(n);
  if (slotAt(n, at) == 0) {
    // the k-th original slot stands for the k-th original element still there
    let k: u32 = 0;
    for (let j: u32 = 0; j < at; j++) if (slotAt(n, j) == 0) k++;
    const elim = load<u32>(n, 20);
    let e: u32 = 0;
    while (true) {
      if (load<u8>(elim + e) == 0) { if (k == 0) break; k--; }
      e++;
    }
    store<u8>(elim + e, 1);
  }
  if (at + 1 < count) memory.copy(s + (<usize>at << 2), s + ((<usize>at + 1) << 2), <usize>(count - at - 1) << 2);
  store<u32>(n, count - 1, 8);
  return true;
}

/**
 * OPA's edittree toIndex: an integer number, "-" (the current length), or a string strconv.ParseInt accepts
 * (optional sign, decimal digits) that has no leading zero. -1 for anything else, and for negative
 * indexes and ones of more than 18 digits, which no array operation accepts either.
 */
function toIndex(len: u32, key: usize): i64 {
  const t = tagOf(key);
  if (t == T_NUMBER) return numKind(key) == K_INT && numI64(key) >= 0 ? numI64(key) : -1;
  if (t != T_STRING) return -1;
  const p = strPtr(key), l = lenOf(key);
  if (l == 1 && load<u8>(p) == 0x2D) return <i64>len;
  let i: u32 = 0;
  let neg = false;
  if (l > 0 && (load<u8>(p) == 0x2B || load<u8>(p) == 0x2D)) { neg = load<u8>(p) == 0x2D; i = 1; }
  if (i == l || l - i > 18) return -1;
  let x: i64 = 0;
  for (; i < l; i++) {
    const c = load<u8>(p + i);
    if (c < 0x30 || c > 0x39) return -1;
    x = x * 10 + <i64>(c - 0x30);
  }
  if (l > 1 && load<u8>(p) == 0x30) return -1;
  return neg && x != 0 ? -1 : x;
}

// ---- the tree operations (EditTree Unfold, Insert, Delete, Render) ----
let root: usize = 0;
/** Set when a path reached a scalar set element the patch removed (OPA dereferences nil there). */
let brokenTree = false;

function render(n: usize): usize {
  const k = kindOf(n);
  if (k == N_LEAF) return valueOf(n);
  if (k == N_REMOVED) return 0;
  const v = valueOf(n);
  const count = countOf(n);
  if (k == N_ARRAY) {
    const r = rt_array(count);
    const elim = load<u32>(n, 20);
    let e: u32 = 0;
    for (let i: u32 = 0; i < count; i++) {
      const child = slotAt(n, i);
      if (child != 0) { rt_array_append(r, render(child)); continue; }
      while (load<u8>(elim + e) != 0) e++;
      rt_array_append(r, elemAt(v, e));
      e++;
    }
    return r;
  }
  if (count == 0) return v;
  const s = slotsOf(n);
  if (k == N_OBJECT) {
    const r = rt_object();
    for (let i: u32 = 0; i < lenOf(v); i++) {
      const key = entryKey(v, i);
      if (editIndex(n, key) < 0) rt_object_insert(r, key, entryVal(v, i));
    }
    for (let i: u32 = 0; i < count; i++) {
      const child = load<u32>(s + (<usize>i << 3), 4);
      if (child != 0) rt_object_insert(r, load<u32>(s + (<usize>i << 3)), render(child));
    }
    return r;
  }
  const r = rt_set();
  for (let i: u32 = 0; i < lenOf(v); i++) if (editIndex(n, elemAt(v, i)) < 0) rt_set_add(r, elemAt(v, i));
  for (let i: u32 = 0; i < count; i++) {
    const child = load<u32>(s + (<usize>i << 3), 4);
    if (child != 0) rt_set_add(r, render(child));
  }
  return r;
}

/** The child of n at key, made editable; 0 if there is none. */
function step(n: usize, key: usize): usize {
  const k = kindOf(n);
  if (k == N_OBJECT) {
    const i = editIndex(n, key);
    if (i >= 0) return editChild(n, i);
    const v = objectGet(valueOf(n), key);
    if (v == 0) return 0;
    const child = newNode(v);
    putEdit(n, key, child);
    return child;
  }
  if (k == N_SET) {
    if (isComposite(key)) collapse(n);
    else {
      const i = editIndex(n, key);
      if (i >= 0) {
        const child = editChild(n, i);
        if (child == 0) brokenTree = true;
        return child;
      }
    }
    if (setFind(valueOf(n), key) < 0) return 0;
    const child = newNode(key);
    putEdit(n, key, child);
    return child;
  }
  if (k == N_ARRAY) {
    const idx = toIndex(countOf(n), key);
    if (idx < 0) return 0;
    if (idx < <i64>countOf(n) && slotAt(n, <u32>idx) != 0) return slotAt(n, <u32>idx);
    const orig = valueOf(n);
    if (idx >= <i64>lenOf(orig)) return 0;
    // OPA replaces the element by the original one at that index, to edit it in place
    const child = newNode(elemAt(orig, <u32>idx));
    if (!removeSlot(n, idx)) return 0;
    insertSlot(n, <u32>idx, child);
    return child;
  }
  return 0; // a scalar, or the removed document
}

/** The node at the first `len` segments of path; 0 if a step fails. No segments: the root, even removed. */
function unfold(path: usize, len: u32): usize {
  let n = root;
  for (let i: u32 = 0; i < len && n != 0; i++) n = step(n, elemAt(path, i));
  return n;
}

function insertChild(n: usize, key: usize, value: usize): bool {
  const k = kindOf(n);
  if (k == N_OBJECT) {
    putEdit(n, key, newNode(value));
    return true;
  }
  if (k == N_SET) {
    // a set element is named by itself
    if (compareValues(key, value) != 0) return false;
    if (isComposite(key)) collapse(n);
    putEdit(n, key, newNode(value));
    return true;
  }
  if (k == N_ARRAY) {
    const idx = toIndex(countOf(n), key);
    if (idx < 0 || idx > <i64>countOf(n)) return false;
    insertSlot(n, <u32>idx, newNode(value));
    return true;
  }
  return false;
}

function removeChild(n: usize, key: usize): bool {
  const k = kindOf(n);
  if (k == N_OBJECT || k == N_SET) {
    if (k == N_SET && isComposite(key)) collapse(n);
    else {
      const i = editIndex(n, key);
      if (i >= 0) {
        if (editChild(n, i) == 0) return false;
        putEdit(n, key, 0);
        return true;
      }
    }
    const v = valueOf(n);
    if (k == N_OBJECT ? objectGet(v, key) == 0 : setFind(v, key) < 0) return false;
    putEdit(n, key, 0);
    return true;
  }
  if (k == N_ARRAY) return removeSlot(n, toIndex(countOf(n), key));
  return false;
}

function insertAtPath(path: usize, value: usize): bool {
  if (value == 0) return false;
  const len = lenOf(path);
  if (len == 0) {
    root = newNode(value);
    return true;
  }
  const dest = unfold(path, len - 1);
  return dest != 0 && insertChild(dest, elemAt(path, len - 1), value);
}

function removeAtPath(path: usize): bool {
  const len = lenOf(path);
  if (len == 0) {
    if (kindOf(root) == N_REMOVED) return false;
    root = removedNode();
    return true;
  }
  const dest = unfold(path, len - 1);
  return dest != 0 && removeChild(dest, elemAt(path, len - 1));
}

/** The rendered value at path; 0 if the path does not resolve (or leads to the removed document). */
function renderAtPath(path: usize): usize {
  const n = unfold(path, lenOf(path));
  return n == 0 ? 0 : render(n);
}

// ---- operations (OPA's getPatch and applyPatches) ----
function isAscii(v: usize, s: string): bool {
  const n = s.length;
  if (tagOf(v) != T_STRING || lenOf(v) != <u32>n) return false;
  const p = strPtr(v);
  for (let i = 0; i < n; i++) if (load<u8>(p + i) != <u8>s.charCodeAt(i)) return false;
  return true;
}

function applyOperation(o: usize): bool {
  if (tagOf(o) != T_OBJECT) return false;
  const op = objectGet(o, asciiString("op"));
  if (op == 0 || tagOf(op) != T_STRING) return false;
  const add = isAscii(op, "add"), remove = isAscii(op, "remove"), replace = isAscii(op, "replace");
  const move = isAscii(op, "move"), copy = isAscii(op, "copy"), test = isAscii(op, "test");
  if (!(add || remove || replace || move || copy || test)) return false;
  const pathTerm = objectGet(o, asciiString("path"));
  if (pathTerm == 0) return false;
  let fromTerm: usize = 0;
  if (move || copy) {
    fromTerm = objectGet(o, asciiString("from"));
    if (fromTerm == 0) return false;
  }
  let value: usize = 0;
  if (add || replace || test) {
    value = objectGet(o, asciiString("value"));
    if (value == 0) return false;
  }
  const path = pathSegments(pathTerm);
  if (path == 0) return false;
  if (add) return insertAtPath(path, value);
  if (remove) return removeAtPath(path);
  if (replace) return removeAtPath(path) && insertAtPath(path, value);
  if (test) {
    const found = renderAtPath(path);
    return found != 0 && compareValues(found, value) == 0;
  }
  const from = pathSegments(fromTerm);
  if (from == 0) return false;
  const chunk = renderAtPath(from);
  if (chunk == 0) return false;
  if (move && !removeAtPath(from)) return false;
  return insertAtPath(path, chunk);
}

export function bi_json_patch(doc: usize, ops: usize): usize {
  if (doc == 0 || ops == 0) return 0;
  if (tagOf(ops) != T_ARRAY) return setError(ERR_TYPE, "json.patch: operand 2 must be array but got ", typeNameOf(ops));
  root = newNode(doc);
  brokenTree = false;
  for (let i: u32 = 0; i < lenOf(ops); i++) {
    if (applyOperation(elemAt(ops, i))) continue;
    if (brokenTree) return setError(ERR_BUILTIN, "json.patch: a path leads through a set element the patch removed");
    return 0;
  }
  const out = render(root);
  if (out == 0) return setError(ERR_BUILTIN, "json.patch: the patch removes the whole document");
  return out;
}
