// A comprehension head that must be evaluated (a ref, a call, a nested comprehension) is assigned in the
// body by a generated `var = <head>` (OPA's rewriteComprehensionTerms), so the refs in it bind vars the way
// body refs do: `{k: labels[k] | startswith(k, "app")}` is safe, k ranging over the keys of labels.
import { beforeAll, describe, expect, it } from 'vitest';
import { compileErrors, loadModule, type Evaluate } from './fixtures/wasm-module.ts';

const src = `package t

labels := {"app": "web", "app.tier": "front", "team": "x"}

object_head := {k: labels[k] | startswith(k, "app")}

set_head := {labels[k] | endswith(k, "tier")}

array_head := [labels[k] | k != "team"]

call_head := [upper(labels[k]) | k == "team"]

nested_head := {k: [c | c := labels[k]] | some k in ["app"]}

# A function argument's ref binds the key the same way (the pattern a label-matching library uses).
matching(ls, patterns) := {key: ls[key] | glob.match(patterns[_], ["-"], key)}

matched := matching(labels, ["app*"])

# A head that only reads bound vars keeps its value, undefined elements dropped.
squares := [(n * n) | some n in [1, 2, 3]]

missing := [input.absent[k] | some k in ["a"]]
`;

let evaluate: Evaluate;
beforeAll(async () => {
  evaluate = await loadModule(src, [
    't/object_head',
    't/set_head',
    't/array_head',
    't/call_head',
    't/nested_head',
    't/matched',
    't/squares',
    't/missing',
  ]);
});

describe('comprehension heads with refs', () => {
  it('bind the vars of their refs', () => {
    expect(evaluate('t/object_head')).toEqual({ app: 'web', 'app.tier': 'front' });
    expect(evaluate('t/set_head')).toEqual(['front']);
    expect(evaluate('t/array_head')).toEqual(['web', 'front']);
    expect(evaluate('t/call_head')).toEqual(['X']);
    expect(evaluate('t/nested_head')).toEqual({ app: ['web'] });
    expect(evaluate('t/matched')).toEqual({ app: 'web', 'app.tier': 'front' });
  });

  it('keep the meaning of heads over bound vars and of undefined heads', () => {
    expect(evaluate('t/squares')).toEqual([1, 4, 9]);
    expect(evaluate('t/missing', {})).toEqual([]);
  });

  it('a var no ref or body expression binds is still unsafe', () => {
    expect(compileErrors('package t\n\np := [x | true]\n')).toEqual([
      't.rego:3:7: rego_unsafe_var_error: var x is unsafe',
    ]);
    expect(compileErrors('package t\n\np := [f(x) | true]\nf(y) := y\n')).toEqual([
      't.rego:3:9: rego_unsafe_var_error: var x is unsafe',
    ]);
  });
});
