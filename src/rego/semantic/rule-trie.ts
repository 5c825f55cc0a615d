// The rule trie: each node is a path below `data`; a node with a rule set is a virtual document, everything else
// comes from base data. Built once here for the compiler's recursion check and the planner's `data` refs
// (opa-ir.md §4 "Refs"); immutable once built.
import type { RuleSet } from './types.ts';

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
  const nodeAt = (path: readonly string[]): MutableNode => {
    let n = root;
    for (const seg of path) {
      let c = n.children.get(seg);
      if (!c) n.children.set(seg, (c = { children: new Map() }));
      n = c;
    }
    return n;
  };
  for (const pkg of packages) nodeAt(pkg);
  for (const rs of ruleSets) nodeAt(rs.path).ruleSet = rs;
  return root;
}
