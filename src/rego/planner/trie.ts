// The rule trie the planner walks for `data` refs (opa-ir.md §4 "Refs"): each node is a path below
// `data`; a node with a rule set is a virtual document, everything else comes from base data.
// Tries are immutable: `with data.x as v` planning derives a copy without the mocked subtree.
import type { RuleSet } from '../compile/types.ts';

export interface TrieNode {
  readonly children: ReadonlyMap<string, TrieNode>;
  readonly ruleSet?: RuleSet;
}

interface MutableNode {
  children: Map<string, MutableNode>;
  ruleSet?: RuleSet;
}

/** Packages are nodes too (an empty package is `{}` in its parent's extent, as in OPA). */
export function buildTrie(ruleSets: readonly RuleSet[], packages: readonly (readonly string[])[] = []): TrieNode {
  const root: MutableNode = { children: new Map() };
  for (const pkg of packages) {
    let n = root;
    for (const seg of pkg) {
      let c = n.children.get(seg);
      if (!c) n.children.set(seg, (c = { children: new Map() }));
      n = c;
    }
  }
  for (const rs of ruleSets) {
    let n = root;
    for (const seg of rs.path) {
      let c = n.children.get(seg);
      if (!c) n.children.set(seg, (c = { children: new Map() }));
      n = c;
    }
    n.ruleSet = rs;
  }
  return root;
}

/** True when any rule set lives at, below or above `path` (so mocking it changes virtual documents). */
export function overlapsVirtual(root: TrieNode, path: readonly string[]): boolean {
  let n: TrieNode | undefined = root;
  for (const seg of path) {
    if (n.ruleSet) return true;
    n = n.children.get(seg);
    if (!n) return false;
  }
  return true;
}

/** A copy of the trie where the subtree at `path` is removed (the mocked value is read from base data). */
export function withoutPath(root: TrieNode, path: readonly string[]): TrieNode {
  if (path.length === 0) return { children: new Map() };
  const [seg, ...rest] = path;
  if (root.ruleSet) return { children: new Map() };
  const child = root.children.get(seg);
  if (!child) return root;
  const children = new Map(root.children);
  if (rest.length === 0 || child.ruleSet) children.delete(seg);
  else {
    const pruned = withoutPath(child, rest);
    if (pruned.children.size === 0 && !pruned.ruleSet) children.delete(seg);
    else children.set(seg, pruned);
  }
  return { children, ruleSet: root.ruleSet };
}
