// Deprecated builtins (any, all, re_match, set_diff, net.cidr_overlap, cast_*) are callable from Rego
// v0 modules only, as in OPA; a v1 module calling one gets OPA's type error. Compiled by our compiler,
// evaluated by opa-wasm calling the host implementations; expected values follow OPA's topdown.
import { describe, expect, it } from 'vitest';
import { compileBundle, evaluateEntrypoint, loadBundle, RegoErrors } from '../../../src/rego/index.ts';

const V0 = `package legacy

all_true = all([true, true])
all_mixed = all({true, false})
all_empty = all([])
any_true = any([false, true])
any_empty = any(set())
matches = re_match("^a+$", "aaa")
diff = set_diff({1, 2, 3}, {2})
overlap = net.cidr_overlap("10.0.0.0/8", "10.1.2.3")
as_array = cast_array({"b", "a"})
as_set = cast_set(["x", "x", "y"])
as_string = cast_string("s")
as_boolean = cast_boolean(true)
as_null = cast_null(null)
as_object = cast_object({"k": 1})
bad_cast = cast_string(input.n)
`;

const NAMES = [
  'all_true',
  'all_mixed',
  'all_empty',
  'any_true',
  'any_empty',
  'matches',
  'diff',
  'overlap',
  'as_array',
  'as_set',
  'as_string',
  'as_boolean',
  'as_null',
  'as_object',
  'bad_cast',
];

describe('deprecated builtins', () => {
  it('evaluate in a v0 module', { timeout: 120_000 }, async () => {
    const built = await compileBundle({
      sources: [{ file: 'legacy.rego', text: V0, regoVersion: 0 }],
      entrypoints: NAMES.map((n) => `legacy/${n}`),
    });
    const loaded = await loadBundle(built.bundle);
    const ev = (n: string, input: unknown = {}) => {
      const rs = evaluateEntrypoint(loaded, `legacy/${n}`, input) as { result: unknown }[];
      return rs.length ? rs[0].result : undefined;
    };
    expect(ev('all_true')).toBe(true);
    expect(ev('all_mixed')).toBe(false);
    expect(ev('all_empty')).toBe(true);
    expect(ev('any_true')).toBe(true);
    expect(ev('any_empty')).toBe(false);
    expect(ev('matches')).toBe(true);
    expect(ev('diff')).toEqual([1, 3]);
    expect(ev('overlap')).toBe(true);
    expect(ev('as_array')).toEqual(['a', 'b']);
    expect(ev('as_set')).toEqual(['x', 'y']);
    expect(ev('as_string')).toBe('s');
    expect(ev('as_boolean')).toBe(true);
    expect(ev('as_null')).toBeNull();
    expect(ev('as_object')).toEqual({ k: 1 });
    // A wrong operand type is an eval_type_error: undefined outside strict mode.
    expect(ev('bad_cast', { n: 1 })).toBeUndefined();
    expect(ev('bad_cast', { n: 'ok' })).toBe('ok');
  });

  it('are a type error in a v1 module (also one importing rego.v1 under v0)', async () => {
    for (const [text, regoVersion] of [
      ['package p\np := any([true])\n', 1],
      ['package p\nimport rego.v1\np := any([true])\n', 0],
    ] as const) {
      let message = '';
      try {
        await compileBundle({ sources: [{ file: 'p.rego', text, regoVersion }], entrypoints: ['p/p'] });
      } catch (e) {
        if (!(e instanceof RegoErrors)) throw e;
        message = e.errors[0].format().split('\n')[0];
      }
      expect(message).toMatch(
        /^p\.rego:\d+:6: rego_type_error: deprecated built-in function calls in expression: any$/,
      );
    }
  });
});
