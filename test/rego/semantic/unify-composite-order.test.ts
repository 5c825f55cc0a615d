// A var assigned an array/object/set literal whose vars a later expression binds is reordered after it, as OPA
// orders unification (`x := {"k": v}` waits for `v`), in v1 and v0 modules alike.
import { describe, expect, it } from 'vitest';
import { compilePolicyWasm, evaluateEntrypoint, hostBuiltins, instantiatePolicy } from '../../../src/rego/index.ts';

describe("unification with a literal waits for the literal's vars", () => {
  it('v1 := and v0 = forms evaluate as OPA orders them', { timeout: 120_000 }, async () => {
    const { wasm } = await compilePolicyWasm({
      sources: [
        {
          file: 'v1.rego',
          text: 'package u\n\nr := x if {\n\tx := {"why": why, "n": [n]}\n\twhy = concat(",", ["a", "b"])\n\tn = count(input.xs)\n}\n',
        },
        { file: 'v0.rego', text: 'package w\n\nr = x {\n\tx = [y]\n\ty = input.v\n}\n', regoVersion: 0 },
      ],
      entrypoints: ['u/r', 'w/r'],
    });
    const policy = await instantiatePolicy(wasm, hostBuiltins());
    expect(evaluateEntrypoint(policy, 'u/r', { xs: [1, 2] })).toEqual([{ result: { why: 'a,b', n: [2] } }]);
    expect(evaluateEntrypoint(policy, 'w/r', { v: 7 })).toEqual([{ result: [7] }]);
  });
});
