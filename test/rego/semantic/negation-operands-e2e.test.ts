// A negated expression's operands are evaluated before `not` applies, as OPA compiles them
// (ast/compile.go RewriteExprTerms, RewriteEquals, RewriteDynamicTerms; OPA issues 1877 and 7558):
// `not f(input.missing)` is undefined, not true, while `not input.missing` and `not input.missing == 1`
// (== is unification there) are true. Compiled by our pipeline, evaluated by opa-wasm.
import { describe, expect, it } from 'vitest';
import { compileBundle, evaluateEntrypoint, loadBundle } from '../../../src/rego/index.ts';

const POLICY = `package neg

encrypted(settings) if settings.enabled

# A project whose settings are absent is not reported: the operand is undefined before the negation.
unencrypted contains p.name if {
	some p in input.projects
	not encrypted(p.settings)
}

call_arg if not encrypted(input.missing)
nested_call if not count(input.missing) > 0
member if not "a" in input.missing
not_equal if not input.missing != 1
object_operand if not encrypted({"enabled": input.missing})
call_head_ref if not object.get(input, "missing", {}).x

bare_ref if not input.missing
no_input if not input
double_equals if not input.missing == 1
unify if not input.missing = 1
bracket_ref if not input.flags[input.missing]
defined_false if not encrypted({"enabled": false})
in_comprehension := [x | some x in [1, 2]; not encrypted(input.missing)]
`;

const ENTRYPOINTS = [
  'unencrypted',
  'call_arg',
  'nested_call',
  'member',
  'not_equal',
  'object_operand',
  'call_head_ref',
  'bare_ref',
  'no_input',
  'double_equals',
  'unify',
  'bracket_ref',
  'defined_false',
  'in_comprehension',
].map((e) => `neg/${e}`);

describe('negated expressions evaluate their operands first', async () => {
  const built = await compileBundle({ sources: [{ file: 'neg.rego', text: POLICY }], entrypoints: ENTRYPOINTS });
  const loaded = await loadBundle(built.bundle);
  const ev = (name: string, input: unknown): unknown => {
    const rs = evaluateEntrypoint(loaded, `neg/${name}`, input) as { result: unknown }[];
    return rs.length ? rs[0].result : undefined;
  };
  const input = {
    flags: { on: true },
    projects: [
      { name: 'absent' },
      { name: 'off', settings: { enabled: false } },
      { name: 'on', settings: { enabled: true } },
    ],
  };

  it('an undefined call operand makes the negated expression undefined', () => {
    expect(ev('unencrypted', input)).toEqual(['off']);
    for (const name of ['call_arg', 'nested_call', 'member', 'not_equal', 'object_operand'])
      expect({ name, value: ev(name, input) }).toEqual({ name, value: undefined });
    expect(ev('in_comprehension', input)).toEqual([]);
  });

  it('a nested call is evaluated first; a ref on its result stays under the negation', () => {
    expect(ev('call_head_ref', input)).toBe(true);
  });

  it('a bare ref, == and = operands stay under the negation (true when undefined)', () => {
    for (const name of ['bare_ref', 'double_equals', 'unify', 'defined_false'])
      expect({ name, value: ev(name, input) }).toEqual({ name, value: true });
  });

  it('`not input` is true without input and undefined with one', () => {
    expect(ev('no_input', undefined)).toBe(true);
    expect(ev('no_input', input)).toBeUndefined();
  });

  it('a ref in brackets is evaluated first', () => {
    expect(ev('bracket_ref', input)).toBeUndefined();
  });
});
