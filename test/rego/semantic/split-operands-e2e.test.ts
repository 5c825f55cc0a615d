// An expression whose nested call needs a var that a ref elsewhere in the same expression binds: OPA splits every
// expression into its calls and refs before the safety check (RewriteExprTerms, RewriteDynamicTerms), so the ref's
// part binds the var and the call's part follows. The shapes are kubescape/regolibrary's (a comprehension head
// `{"path": append_path(c, i), "value": sprintf("%s=%s", wanted[i])}` over `not contains(cmd, wanted[i][0])`).
import { describe, expect, it } from 'vitest';
import {
  compilePolicyWasm,
  evaluateEntrypoint,
  hostBuiltins,
  instantiatePolicy,
  RegoErrors,
} from '../../../src/rego/index.ts';

describe('a ref in one part of an expression binds the var a call in another part needs', () => {
  it('comprehension heads and rule bodies evaluate as OPA orders their parts', { timeout: 120_000 }, async () => {
    const { wasm } = await compilePolicyWasm({
      sources: [
        {
          file: 'flags.rego',
          text: `package flags

wanted := [["--cert", "a.crt"], ["--key", "a.key"]]

at(args, k) := count(args) + k

missing := [{"path": at(input.args, i), "value": sprintf("%s=%s", wanted[i])} |
	not contains(concat(" ", input.args), wanted[i][0])
]

pairs contains x if {
	x := {"n": at(input.args, i), "flag": sprintf("%s", [wanted[i][0]])}
}

# the ref among a nested call's operands binds the var its sibling operand uses
sizes := [n | n := count([i, wanted[i]]) + i]
`,
        },
        {
          file: 'v0.rego',
          text: 'package v0\n\nwanted = ["a", "b"]\n\ng(k) = k * 10\n\nout = [{"p": g(i), "v": wanted[i]} | true]\n',
          regoVersion: 0,
        },
      ],
      entrypoints: ['flags/missing', 'flags/pairs', 'flags/sizes', 'v0/out'],
    });
    const policy = await instantiatePolicy(wasm, hostBuiltins());
    const input = { args: ['--cert=x.crt', '--verbose'] };
    expect(evaluateEntrypoint(policy, 'flags/missing', input)).toEqual([
      { result: [{ path: 3, value: '--key=a.key' }] },
    ]);
    expect(evaluateEntrypoint(policy, 'flags/pairs', input)).toEqual([
      {
        result: [
          { flag: '--cert', n: 2 },
          { flag: '--key', n: 3 },
        ],
      },
    ]);
    expect(evaluateEntrypoint(policy, 'flags/sizes', input)).toEqual([{ result: [2, 3] }]);
    expect(evaluateEntrypoint(policy, 'v0/out', undefined)).toEqual([
      {
        result: [
          { p: 0, v: 'a' },
          { p: 10, v: 'b' },
        ],
      },
    ]);
  });

  it('a var nothing binds stays unsafe, named where it is used', { timeout: 120_000 }, async () => {
    const compile = compilePolicyWasm({
      sources: [{ file: 'u.rego', text: 'package u\n\ng(k) := k + 1\n\nout := [{"p": g(i)} | true]\n' }],
      entrypoints: ['u/out'],
    });
    await expect(compile).rejects.toBeInstanceOf(RegoErrors);
    await expect(compile).rejects.toThrow(/u\.rego:5:\d+: rego_unsafe_var_error: var i is unsafe/);
  });
});
