// Arrays, sets (as arrays), objects, JSON document surgery (json.filter/remove; json.patch in ./json-patch.ts),
// type tests, graphs and walk.
import { applyJsonPatch } from './json-patch.ts';
import type { HostImpls } from './registry.ts';
import {
  BuiltinTypeError,
  arr,
  int,
  isObject,
  obj,
  operandError,
  toSet,
  typeName,
  valuesEqual,
  type JsonObject,
  type JsonValue,
} from './values.ts';

/** Keys named by an array, a set (array) or an object (its keys). */
function keyList(v: unknown, pos: number): JsonValue[] {
  if (Array.isArray(v)) return v as JsonValue[];
  if (isObject(v)) return Object.keys(v);
  throw operandError(pos, 'one of {object, set, array}', v);
}

const keyString = (k: JsonValue): string | undefined =>
  typeof k === 'string' ? k : typeof k === 'number' ? String(k) : undefined;

function unionObjects(a: JsonObject, b: JsonObject): JsonObject {
  const out: JsonObject = { ...a };
  for (const [k, v] of Object.entries(b)) {
    out[k] = isObject(out[k]) && isObject(v) ? unionObjects(out[k] as JsonObject, v) : v;
  }
  return out;
}

// ---- JSON paths (json.filter, json.remove) --------------------------------------------------------

type Segment = string;

function parsePaths(v: unknown): Segment[][] {
  if (!Array.isArray(v)) throw new BuiltinTypeError(`operand 2 must be one of {set, array} but got ${typeName(v)}`);
  return v.map((p) => {
    // OPA: "" is the empty path; otherwise leading slashes are dropped, then split, then ~1 / ~0 unescaped.
    if (typeof p === 'string')
      return p === ''
        ? []
        : p
            .replace(/^\/+/, '')
            .split('/')
            .map((seg) => seg.replace(/~1/g, '/').replace(/~0/g, '~'));
    if (Array.isArray(p)) return p.map((seg) => (typeof seg === 'string' ? seg : JSON.stringify(seg)));
    throw new BuiltinTypeError(
      `operand 2 must be one of {set, array} containing string paths or array of path segments but got ${typeName(p)}`,
    );
  });
}

const isIndex = (seg: string): boolean => /^(0|[1-9]\d*)$/.test(seg);

/** How a path segment names an element of a set: strings by themselves, other values by their JSON. */
const setKey = (e: JsonValue): string => (typeof e === 'string' ? e : JSON.stringify(e));

/**
 * Sets reach host builtins as (sorted) arrays. A path segment under an array that is not an index
 * can only mean a set element (OPA addresses set members by value), so such arrays are treated as
 * sets.
 */
const namesSetMembers = (segments: Iterable<string>): boolean => {
  for (const seg of segments) if (!isIndex(seg)) return true;
  return false;
};

interface PathTrie {
  leaf: boolean;
  children: Map<string, PathTrie>;
}

function buildTrie(paths: Segment[][]): PathTrie {
  const root: PathTrie = { leaf: false, children: new Map() };
  for (const path of paths) {
    // OPA skips empty paths (they select and remove nothing).
    if (path.length === 0) continue;
    let node = root;
    for (const seg of path) {
      let next = node.children.get(seg);
      if (!next) {
        next = { leaf: false, children: new Map() };
        node.children.set(seg, next);
      }
      node = next;
    }
    node.leaf = true;
  }
  return root;
}

function filterByTrie(v: JsonValue, node: PathTrie): JsonValue | undefined {
  if (node.leaf) return v;
  if (isObject(v)) {
    const out: JsonObject = {};
    for (const [seg, child] of node.children) {
      if (Object.hasOwn(v, seg)) {
        const f = filterByTrie(v[seg], child);
        if (f !== undefined) out[seg] = f;
      }
    }
    return out;
  }
  if (Array.isArray(v)) {
    if (namesSetMembers(node.children.keys())) {
      const kept: JsonValue[] = [];
      for (const e of v) {
        const child = node.children.get(setKey(e));
        if (!child) continue;
        const f = filterByTrie(e, child);
        if (f !== undefined) kept.push(f);
      }
      return toSet(kept);
    }
    const out: JsonValue[] = [];
    // Kept elements stay in their original order.
    const picks = [...node.children.entries()]
      .map(([seg, child]) => [Number(seg), child] as const)
      .filter(([i]) => Number.isInteger(i) && i >= 0 && i < v.length)
      .sort((x, y) => x[0] - y[0]);
    for (const [i, child] of picks) {
      const f = filterByTrie(v[i], child);
      if (f !== undefined) out.push(f);
    }
    return out;
  }
  // A scalar under a deeper filter path is kept as it is (OPA's Object.Filter).
  return v;
}

function removeByTrie(v: JsonValue, node: PathTrie): JsonValue | undefined {
  if (node.leaf) return undefined;
  if (isObject(v)) {
    const out: JsonObject = {};
    for (const [k, val] of Object.entries(v)) {
      const child = node.children.get(k);
      if (!child) out[k] = val;
      else {
        const r = removeByTrie(val, child);
        if (r !== undefined) out[k] = r;
      }
    }
    return out;
  }
  if (Array.isArray(v)) {
    const asSet = namesSetMembers(node.children.keys());
    const out: JsonValue[] = [];
    v.forEach((val, i) => {
      const child = node.children.get(asSet ? setKey(val) : String(i));
      if (!child) out.push(val);
      else {
        const r = removeByTrie(val, child);
        if (r !== undefined) out.push(r);
      }
    });
    if (asSet) return toSet(out);
    return out;
  }
  return v;
}

// ---- object.subset ------------------------------------------------------------------------------

function isSubset(sup: JsonValue, sub: JsonValue): boolean {
  if (isObject(sup) && isObject(sub)) {
    return Object.entries(sub).every(([k, v]) => {
      if (!Object.hasOwn(sup, k)) return false;
      const s = sup[k];
      if (isObject(s) && isObject(v)) return isSubset(s, v);
      return valuesEqual(s, v);
    });
  }
  if (Array.isArray(sup) && Array.isArray(sub)) {
    // OPA: `sub` must occur in `super` as a contiguous run. (Sets arrive as arrays, so set-subset
    // is only right when the run is contiguous in OPA's sorted set order.)
    if (sub.length === 0) return true;
    for (let start = 0; start + sub.length <= sup.length; start++) {
      if (sub.every((v, k) => valuesEqual(sup[start + k], v))) return true;
    }
    return false;
  }
  return false;
}

// ---- graphs -----------------------------------------------------------------------------------------

/** A node's edge list: undefined when the node is not in the graph; non-collections have no edges (OPA). */
function neighbours(graph: JsonObject, node: JsonValue): JsonValue[] | undefined {
  const key = keyString(node);
  if (key === undefined || !Object.hasOwn(graph, key)) return undefined;
  const edges = graph[key];
  return Array.isArray(edges) ? edges : [];
}

function reachable(graph: JsonObject, initial: JsonValue[]): JsonValue[] {
  const reached: JsonValue[] = [];
  const seen = new Set<string>();
  const queue = [...initial];
  while (queue.length) {
    const node = queue.shift()!;
    const edges = neighbours(graph, node);
    if (edges === undefined) continue;
    for (const e of edges) if (!seen.has(JSON.stringify(e))) queue.push(e);
    const id = JSON.stringify(node);
    if (!seen.has(id)) {
      seen.add(id);
      reached.push(node);
    }
  }
  return toSet(reached);
}

/** OPA's pathBuilder: extend `path` with `root`; a path ends at a leaf, a cycle, or a node outside the graph. */
function buildPaths(
  graph: JsonObject,
  root: JsonValue,
  path: JsonValue[],
  out: JsonValue[][],
  reached: Set<string>,
): void {
  const edges = neighbours(graph, root);
  if (edges === undefined) {
    out.push(path);
    return;
  }
  const here = [...path, root];
  if (edges.length === 0) {
    out.push(here);
    return;
  }
  const seen = new Set(reached).add(JSON.stringify(root));
  for (const e of edges) {
    if (seen.has(JSON.stringify(e))) out.push(here);
    else buildPaths(graph, e, here, out, seen);
  }
}

function reachablePaths(graph: JsonObject, initial: JsonValue[]): JsonValue[] {
  const paths: JsonValue[][] = [];
  for (const node of initial) {
    const edges = neighbours(graph, node);
    if (edges === undefined) continue;
    if (edges.length === 0) paths.push([node]);
    for (const e of edges) buildPaths(graph, e, [node], paths, new Set([JSON.stringify(node)]));
  }
  return toSet(paths);
}

function walkValue(v: JsonValue, path: JsonValue[], out: JsonValue[]): void {
  out.push([path, v]);
  if (Array.isArray(v)) v.forEach((e, i) => walkValue(e, [...path, i], out));
  else if (isObject(v)) for (const k of Object.keys(v).sort()) walkValue(v[k], [...path, k], out);
}

export const collectionBuiltins: HostImpls = {
  'array.concat': ([a, b]) => [...arr(a, 1), ...arr(b, 2)],
  'array.slice'([a, start, stop]) {
    const xs = arr(a, 1);
    const from = Math.max(0, int(start, 2));
    const to = Math.min(xs.length, int(stop, 3));
    return from >= to ? [] : xs.slice(from, to);
  },
  'array.reverse': ([a]) => [...arr(a, 1)].reverse(),
  'array.flatten': ([a]) => arr(a, 1).flatMap((e) => (Array.isArray(e) ? e : [e])),
  union([sets]) {
    const outer = arr(sets, 1);
    const all: JsonValue[] = [];
    for (const s of outer) {
      if (!Array.isArray(s))
        throw new BuiltinTypeError(`operand 1 must be set of sets but got set containing ${typeName(s)}`);
      all.push(...s);
    }
    return toSet(all);
  },
  intersection([sets]) {
    const outer = arr(sets, 1);
    for (const s of outer)
      if (!Array.isArray(s))
        throw new BuiltinTypeError(`operand 1 must be set of sets but got set containing ${typeName(s)}`);
    if (outer.length === 0) return [];
    const [first, ...rest] = outer as JsonValue[][];
    return toSet(first.filter((x) => rest.every((s) => s.some((y) => valuesEqual(x, y)))));
  },

  'object.get'([o, key, dflt]) {
    const object = obj(o, 1);
    // An array key is a path into nested objects/arrays.
    const path = Array.isArray(key) ? (key as JsonValue[]) : [key as JsonValue];
    let cur: JsonValue = object;
    for (const seg of path) {
      if (isObject(cur)) {
        const k = keyString(seg);
        if (k === undefined || !Object.hasOwn(cur, k)) return dflt;
        cur = cur[k];
      } else if (
        Array.isArray(cur) &&
        typeof seg === 'number' &&
        Number.isInteger(seg) &&
        seg >= 0 &&
        seg < cur.length
      ) {
        cur = cur[seg];
      } else return dflt;
    }
    return cur;
  },
  'object.keys': ([o]) => toSet(Object.keys(obj(o, 1))),
  'object.remove'([o, keys]) {
    const object = obj(o, 1);
    const drop = new Set(keyList(keys, 2).map(keyString));
    return Object.fromEntries(Object.entries(object).filter(([k]) => !drop.has(k)));
  },
  'object.filter'([o, keys]) {
    const object = obj(o, 1);
    const keep = new Set(keyList(keys, 2).map(keyString));
    return Object.fromEntries(Object.entries(object).filter(([k]) => keep.has(k)));
  },
  'object.union': ([a, b]) => unionObjects(obj(a, 1), obj(b, 2)),
  'object.union_n'([list]) {
    const objects = arr(list, 1);
    let out: JsonObject = {};
    for (const o of objects) {
      if (!isObject(o))
        throw new BuiltinTypeError(`operand 1 must be array of objects but got array containing ${typeName(o)}`);
      out = unionObjects(out, o);
    }
    return out;
  },
  'object.subset'([sup, sub]) {
    if (!Array.isArray(sup) && !isObject(sup)) throw operandError(1, 'one of {object, set, array}', sup);
    if (!Array.isArray(sub) && !isObject(sub)) throw operandError(2, 'one of {object, set, array}', sub);
    if (isObject(sup) !== isObject(sub)) {
      throw new BuiltinTypeError('both arguments object.subset must be of the same type or array and set');
    }
    return isSubset(sup as JsonValue, sub as JsonValue);
  },
  'json.filter'([o, paths]) {
    const object = obj(o, 1);
    return filterByTrie(object, buildTrie(parsePaths(paths))) ?? {};
  },
  'json.remove'([o, paths]) {
    const object = obj(o, 1);
    return removeByTrie(object, buildTrie(parsePaths(paths))) ?? {};
  },
  'json.patch': ([doc, patches]) => applyJsonPatch(doc as JsonValue, arr(patches, 2)),

  // Type tests (sets arrive as arrays: is_set is always false on the host side).
  is_number: ([x]) => typeof x === 'number',
  is_string: ([x]) => typeof x === 'string',
  is_boolean: ([x]) => typeof x === 'boolean',
  is_array: ([x]) => Array.isArray(x),
  is_set: () => false,
  is_object: ([x]) => isObject(x),
  is_null: ([x]) => x === null,
  type_name: ([x]) => typeName(x),

  'graph.reachable'([g, initial]) {
    const graph = obj(g, 1);
    if (!Array.isArray(initial)) throw operandError(2, '{array, set}', initial);
    return reachable(graph, initial as JsonValue[]);
  },
  'graph.reachable_paths'([g, initial]) {
    const graph = obj(g, 1);
    if (!Array.isArray(initial)) throw operandError(2, '{array, set}', initial);
    return reachablePaths(graph, initial as JsonValue[]);
  },
  walk([x]) {
    const out: JsonValue[] = [];
    walkValue(x as JsonValue, [], out);
    return out;
  },
};
