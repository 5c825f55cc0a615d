// What the planner asks of the rule trie (src/rego/semantic/rule-trie.ts) beyond walking it. Tries are
// immutable: `with data.x as v` planning derives a copy without the mocked subtree.
import type { TrieNode } from '../semantic/rule-trie.ts';

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
