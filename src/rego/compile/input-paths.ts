// Which parts of `input` a set of modules can read: the static prefix of every `input…` reference. A
// reference `input.session.turn.index` needs `input.session.turn.index`; `input.params[k]` needs all of
// `input.params` (the key is only known at evaluation); a bare `input` (passed to a function, iterated,
// imported whole) needs everything. Import aliases need no resolution: the import itself is an `input…`
// reference and so contributes its prefix. The engine host uses the result to send a policy only the input
// members it can observe (docs/performance.md), which cannot change a decision.
import type { Module } from '../ast/types.ts';

/** A JSON path below `input`; `[]` is the whole input. */
export type InputPath = string[];

function isInputVar(node: unknown): boolean {
  const n = node as { type?: unknown; value?: unknown } | null;
  return n !== null && typeof n === 'object' && n.type === 'var' && n.value === 'input';
}

/**
 * The minimal set of input paths the modules reference: sorted, and with no path that another one
 * covers (`["params"]` absorbs `["params", "payload"]`). `[[]]` means the whole input.
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
      const path: string[] = [];
      for (const el of n.value.slice(1) as { type?: unknown; value?: unknown }[]) {
        if (el.type !== 'string' || typeof el.value !== 'string') break;
        path.push(el.value);
      }
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

function comparePaths(a: InputPath, b: InputPath): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  }
  return a.length - b.length;
}

function covers(prefix: InputPath, path: InputPath): boolean {
  return prefix.length <= path.length && prefix.every((seg, i) => path[i] === seg);
}

/** Sorted, deduplicated, prefix-free: after sorting, a covering prefix comes right before what it covers. */
function minimalPaths(paths: InputPath[]): InputPath[] {
  const out: InputPath[] = [];
  for (const p of [...paths].sort(comparePaths)) {
    const last = out[out.length - 1];
    if (last && covers(last, p)) continue;
    out.push(p);
  }
  return out;
}
