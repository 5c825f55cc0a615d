// Which parts of `input` a set of modules can read: the path of every `input…` reference. A reference
// `input.session.turn.index` needs `input.session.turn.index`; a dynamic key is a wildcard (`null`):
// `input.records[id].origin` needs the `origin` of every member of `input.records`, and `input.params[k]`
// (nothing after the key) needs all of `input.params`; a bare `input` (passed to a function, iterated,
// imported whole) needs everything. Import aliases need no resolution: the import itself is an `input…`
// reference and so contributes its prefix. The engine host uses the result to send a policy only the input
// members it can observe, which cannot change a decision (docs/policy-authoring.md, "Only what the bundle reads
// is sent").
import type { Module } from '../ast/types.ts';

/** A JSON path below `input`; `[]` is the whole input, `null` any key or index (a dynamic key). */
export type InputPath = (string | null)[];

function isInputVar(node: unknown): boolean {
  const n = node as { type?: unknown; value?: unknown } | null;
  return n !== null && typeof n === 'object' && n.type === 'var' && n.value === 'input';
}

/**
 * The minimal set of input paths the modules reference: sorted, and with no path that another one
 * covers (`["params"]` absorbs `["params", "payload"]`, `["records", null]` absorbs `["records", "a1"]`). `[[]]`
 * means the whole input. No path ends in a wildcard (every member of a value, whole, is the value).
 */
export function referencedInputPaths(modules: readonly Module[]): InputPath[] {
  const found: InputPath[] = [];
  // A structural walk over every AST node (terms, bodies, with targets, imports): no node kind can hide
  // an input reference from it. Iterative, so deeply nested policies cannot overflow the stack.
  const stack: unknown[] = [...modules];
  while (stack.length > 0) {
    const node = stack.pop();
    if (node === null || typeof node !== 'object') continue;
    if (Array.isArray(node)) {
      for (const child of node) stack.push(child);
      continue;
    }
    const n = node as { type?: unknown; value?: unknown };
    if (n.type === 'ref' && Array.isArray(n.value) && isInputVar(n.value[0])) {
      const path: InputPath = [];
      for (const el of n.value.slice(1) as { type?: unknown; value?: unknown }[]) {
        path.push(el.type === 'string' && typeof el.value === 'string' ? el.value : null);
      }
      while (path.length > 0 && path[path.length - 1] === null) path.pop();
      found.push(path);
      // Dynamic keys may themselves contain input references.
      for (const el of n.value.slice(1)) stack.push(el);
      continue;
    }
    if (isInputVar(n)) {
      found.push([]);
      continue;
    }
    for (const child of Object.values(node)) stack.push(child);
  }
  return minimalPaths(found);
}

interface PathNode {
  end: boolean;
  children: Map<string | null, PathNode>;
}

/** Wildcards first, then keys by code unit (the order paths are listed in). */
function compareSegments(a: string | null, b: string | null): number {
  if (a === b) return 0;
  if (a === null) return -1;
  if (b === null) return 1;
  return a < b ? -1 : 1;
}

/**
 * Sorted, deduplicated, free of covered paths: a path is dropped when another is a prefix of it, a wildcard
 * in the other standing for any key (`["records", null]` covers `["records", "a1", "origin"]`, not the
 * reverse). Built as a trie and walked once, carrying the nodes whose paths could cover the current one.
 */
function minimalPaths(paths: InputPath[]): InputPath[] {
  const root: PathNode = { end: false, children: new Map() };
  for (const path of paths) {
    let node = root;
    for (const seg of path) {
      let next = node.children.get(seg);
      if (!next) node.children.set(seg, (next = { end: false, children: new Map() }));
      node = next;
    }
    node.end = true;
  }
  const out: InputPath[] = [];
  // Iterative depth-first walk (long references cannot overflow the stack); children pushed in reverse so
  // paths come out sorted.
  const stack: { node: PathNode; path: InputPath; coverers: PathNode[] }[] = [{ node: root, path: [], coverers: [] }];
  for (let item = stack.pop(); item; item = stack.pop()) {
    const { node, path, coverers } = item;
    if (coverers.some((c) => c.end)) continue;
    if (node.end) {
      out.push(path);
      continue;
    }
    for (const seg of [...node.children.keys()].sort(compareSegments).reverse()) {
      const next = new Set<PathNode>();
      for (const c of coverers) {
        const wild = c.children.get(null);
        if (wild) next.add(wild);
        const same = seg === null ? undefined : c.children.get(seg);
        if (same) next.add(same);
      }
      // The node's own wildcard branch covers each of its literal branches.
      const wild = seg === null ? undefined : node.children.get(null);
      if (wild) next.add(wild);
      stack.push({ node: node.children.get(seg)!, path: [...path, seg], coverers: [...next] });
    }
  }
  return out;
}
