// json.patch for modules built by `opa build -t wasm`; our own modules run it natively
// (src/rego/wasm/runtime/assembly/jsonpatch.ts), and this follows that code step for step. OPA (topdown/json.go,
// builtinJSONPatch) applies the operations to an edit tree over the document (internal/edittree) and renders it
// at the end; an operation that cannot be applied makes the whole call undefined, even with strict errors. The
// tree's state matters: a step into an array element the patch did not insert reads the original element at
// that index, and a set is rendered (collapsed) before a composite element of it is used.
// Host operands are JSON, where a set is a sorted array and every key a string. So an array no operation has
// edited yet, asked for a segment that is no index, stands for a set (OPA addresses set elements by value),
// and a non-string segment names an object key by its JSON text.
import {
  BuiltinError,
  compareValues,
  isObject,
  toSet,
  valuesEqual,
  type JsonObject,
  type JsonValue,
} from './values.ts';

interface PatchNode {
  kind: 'leaf' | 'removed' | 'object' | 'set' | 'array';
  /** A leaf's value; an object's or array's original value; a set's elements when last collapsed. */
  value: JsonValue;
  /** Objects (keys as text) and sets: the edited keys, with null for a removed one. */
  edits: Array<[JsonValue, PatchNode | null]>;
  /** Arrays: the current elements, null for "the next original element not eliminated". */
  slots: Array<PatchNode | null>;
  /** Arrays: which original elements were removed. */
  eliminated: boolean[];
}

/** The patch went through a set element it removed, or removed the whole document: OPA's evaluator fails. */
class BrokenTree extends Error {}

const isComposite = (v: JsonValue): boolean => Array.isArray(v) || isObject(v);

function newNode(value: JsonValue): PatchNode {
  const kind = isObject(value) ? 'object' : Array.isArray(value) ? 'array' : 'leaf';
  const len = Array.isArray(value) ? value.length : 0;
  return { kind, value, edits: [], slots: Array(len).fill(null), eliminated: Array(len).fill(false) };
}

/** OPA's edittree toIndex (as the native toIndex); -1 when no array operation accepts the key. */
function toIndex(length: number, key: JsonValue): number {
  if (typeof key === 'number') return Number.isInteger(key) && key >= 0 ? key : -1;
  if (typeof key !== 'string') return -1;
  if (key === '-') return length;
  const m = /^([+-]?)(\d{1,18})$/.exec(key);
  if (!m || (key.length > 1 && key.startsWith('0'))) return -1;
  const i = Number(m[2]);
  return m[1] === '-' && i !== 0 ? -1 : i;
}

/** An object key as the host sees it, a set element as itself. */
const editKey = (n: PatchNode, key: JsonValue): JsonValue =>
  n.kind === 'object' && typeof key !== 'string' ? JSON.stringify(key) : key;

/** Turns an unedited array asked for a non-index segment into the set it stands for. */
function viewAsSet(n: PatchNode, key: JsonValue): void {
  if (n.kind !== 'array' || toIndex(n.slots.length, key) >= 0) return;
  if (n.eliminated.some((e) => e) || n.slots.some((s) => s !== null)) return;
  n.kind = 'set';
  n.value = toSet(n.value as JsonValue[]);
  n.slots = [];
  n.eliminated = [];
}

function editIndex(n: PatchNode, key: JsonValue): number {
  return n.edits.findIndex(([k]) => valuesEqual(k, key));
}

function putEdit(n: PatchNode, key: JsonValue, child: PatchNode | null): void {
  const i = editIndex(n, key);
  if (i >= 0) n.edits[i] = [key, child];
  else n.edits.push([key, child]);
}

function render(n: PatchNode): JsonValue | undefined {
  switch (n.kind) {
    case 'leaf':
      return n.value;
    case 'removed':
      return undefined;
    case 'array': {
      const original = n.value as JsonValue[];
      const out: JsonValue[] = [];
      let e = 0;
      for (const slot of n.slots) {
        if (slot) {
          out.push(render(slot) as JsonValue);
          continue;
        }
        while (n.eliminated[e]) e++;
        out.push(original[e++]);
      }
      return out;
    }
    case 'object': {
      if (n.edits.length === 0) return n.value;
      const out: JsonObject = {};
      for (const [k, v] of Object.entries(n.value as JsonObject)) if (editIndex(n, k) < 0) out[k] = v;
      for (const [k, child] of n.edits) if (child) out[k as string] = render(child) as JsonValue;
      return out;
    }
    case 'set': {
      if (n.edits.length === 0) return n.value;
      const out = (n.value as JsonValue[]).filter((v) => editIndex(n, v) < 0);
      for (const [, child] of n.edits) if (child) out.push(render(child) as JsonValue);
      return toSet(out);
    }
  }
}

/** A set's edits rendered into its value, then dropped. */
function collapse(n: PatchNode): void {
  n.value = render(n) as JsonValue;
  n.edits = [];
}

const has = (n: PatchNode, key: JsonValue): boolean =>
  n.kind === 'object'
    ? Object.hasOwn(n.value as JsonObject, key as string)
    : (n.value as JsonValue[]).some((v) => valuesEqual(v, key));

/** Removes the current element i (false past the end); an original one is marked eliminated. */
function removeSlot(n: PatchNode, i: number): boolean {
  if (i < 0 || i >= n.slots.length) return false;
  if (n.slots[i] === null) {
    // the k-th original slot stands for the k-th original element still there
    let k = n.slots.slice(0, i).filter((s) => s === null).length;
    let e = 0;
    while (n.eliminated[e] || k-- > 0) e++;
    n.eliminated[e] = true;
  }
  n.slots.splice(i, 1);
  return true;
}

/** The child of n at key, made editable; undefined if there is none. */
function step(n: PatchNode, segment: JsonValue): PatchNode | undefined {
  viewAsSet(n, segment);
  const key = editKey(n, segment);
  if (n.kind === 'object' || n.kind === 'set') {
    if (n.kind === 'set' && isComposite(key)) collapse(n);
    else {
      const i = editIndex(n, key);
      if (i >= 0) {
        const child = n.edits[i][1];
        if (!child && n.kind === 'set') throw new BrokenTree();
        return child ?? undefined;
      }
    }
    if (!has(n, key)) return undefined;
    const child = newNode(n.kind === 'object' ? (n.value as JsonObject)[key as string] : key);
    putEdit(n, key, child);
    return child;
  }
  if (n.kind === 'array') {
    const idx = toIndex(n.slots.length, key);
    if (idx < 0) return undefined;
    const slot = n.slots[idx];
    if (slot) return slot;
    // OPA replaces the element by the original one at that index, to edit it in place
    const original = n.value as JsonValue[];
    if (idx >= original.length) return undefined;
    const child = newNode(original[idx]);
    if (!removeSlot(n, idx)) return undefined;
    n.slots.splice(idx, 0, child);
    return child;
  }
  return undefined; // a scalar, or the removed document
}

function insertChild(n: PatchNode, segment: JsonValue, value: JsonValue): boolean {
  viewAsSet(n, segment);
  const key = editKey(n, segment);
  if (n.kind === 'object') {
    putEdit(n, key, newNode(value));
    return true;
  }
  if (n.kind === 'set') {
    // a set element is named by itself
    if (!valuesEqual(key, value)) return false;
    if (isComposite(key)) collapse(n);
    putEdit(n, key, newNode(value));
    return true;
  }
  if (n.kind === 'array') {
    const idx = toIndex(n.slots.length, key);
    if (idx < 0 || idx > n.slots.length) return false;
    n.slots.splice(idx, 0, newNode(value));
    return true;
  }
  return false;
}

function removeChild(n: PatchNode, segment: JsonValue): boolean {
  viewAsSet(n, segment);
  const key = editKey(n, segment);
  if (n.kind === 'object' || n.kind === 'set') {
    if (n.kind === 'set' && isComposite(key)) collapse(n);
    else {
      const i = editIndex(n, key);
      if (i >= 0) {
        if (!n.edits[i][1]) return false;
        putEdit(n, key, null);
        return true;
      }
    }
    if (!has(n, key)) return false;
    putEdit(n, key, null);
    return true;
  }
  if (n.kind === 'array') return removeSlot(n, toIndex(n.slots.length, key));
  return false;
}

class PatchTree {
  constructor(public root: PatchNode) {}

  /** The node at path's first `len` segments; no segments: the root, even removed. */
  unfold(path: JsonValue[], len: number): PatchNode | undefined {
    let n: PatchNode | undefined = this.root;
    for (let i = 0; i < len && n; i++) n = step(n, path[i]);
    return n;
  }

  insert(path: JsonValue[], value: JsonValue | undefined): boolean {
    if (value === undefined) return false;
    if (path.length === 0) {
      this.root = newNode(value);
      return true;
    }
    const dest = this.unfold(path, path.length - 1);
    return dest !== undefined && insertChild(dest, path[path.length - 1], value);
  }

  remove(path: JsonValue[]): boolean {
    if (path.length === 0) {
      if (this.root.kind === 'removed') return false;
      this.root = { ...newNode(null), kind: 'removed' };
      return true;
    }
    const dest = this.unfold(path, path.length - 1);
    return dest !== undefined && removeChild(dest, path[path.length - 1]);
  }

  renderAt(path: JsonValue[]): JsonValue | undefined {
    const n = this.unfold(path, path.length);
    return n ? render(n) : undefined;
  }
}

/** OPA's parsePath; undefined for a path that is neither a string nor an array. */
function segments(path: JsonValue): JsonValue[] | undefined {
  if (Array.isArray(path)) return path;
  if (typeof path !== 'string') return undefined;
  if (path === '') return [];
  return path
    .replace(/^\/+/, '')
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

const OPS = new Set(['add', 'remove', 'replace', 'move', 'copy', 'test']);

/** OPA's getPatch and one step of applyPatches; false when the operation cannot be applied. */
function applyOperation(tree: PatchTree, o: JsonValue): boolean {
  if (!isObject(o)) return false;
  const op = o.op;
  if (typeof op !== 'string' || !OPS.has(op) || !Object.hasOwn(o, 'path')) return false;
  if ((op === 'move' || op === 'copy') && !Object.hasOwn(o, 'from')) return false;
  if ((op === 'add' || op === 'replace' || op === 'test') && !Object.hasOwn(o, 'value')) return false;
  const path = segments(o.path);
  if (!path) return false;
  switch (op) {
    case 'add':
      return tree.insert(path, o.value);
    case 'remove':
      return tree.remove(path);
    case 'replace':
      return tree.remove(path) && tree.insert(path, o.value);
    case 'test': {
      const found = tree.renderAt(path);
      return found !== undefined && compareValues(found, o.value) === 0;
    }
    default: {
      const from = segments(o.from);
      if (!from) return false;
      const chunk = tree.renderAt(from);
      if (chunk === undefined || (op === 'move' && !tree.remove(from))) return false;
      return tree.insert(path, chunk);
    }
  }
}

/** The patched document; undefined when an operation cannot be applied. */
export function applyJsonPatch(doc: JsonValue, operations: JsonValue[]): JsonValue | undefined {
  const tree = new PatchTree(newNode(doc));
  try {
    for (const o of operations) if (!applyOperation(tree, o)) return undefined;
  } catch (e) {
    if (e instanceof BrokenTree) throw new BuiltinError('a path leads through a set element the patch removed');
    throw e;
  }
  const out = render(tree.root);
  if (out === undefined) throw new BuiltinError('the patch removes the whole document');
  return out;
}
