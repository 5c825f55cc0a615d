// Bodiless function heads, as OPA reads them (ast/parser_ext.go ParseRuleFromCallExpr and
// ParseRuleFromCallEqExpr): `f("")` on its own line is `f("") := true`, `f(1) = 2` is `f(1) := 2`.
// Compiled by our pipeline, linked to Wasm and evaluated by the unmodified opa-wasm host.
import { describe, expect, it } from 'vitest';
import { compileErrors, loadModule as load } from './fixtures/wasm-module.ts';
import { parseModule } from '../../../src/rego/ast/index.ts';

function firstError(src: string): string {
  const [first] = compileErrors(src);
  if (first === undefined) throw new Error('expected an error');
  return first;
}

describe('bodiless function heads', () => {
  it('f("") alone is f("") := true; other arguments leave f undefined', async () => {
    const src = `package t
is_empty("")
is_empty([])
pair(1, "a")
f(1) = 2
f(x) = x if x > 10
empty_in if is_empty(input.s)
g := [is_empty(""), pair(1, "a"), f(1), f(20)]
`;
    const ev = await load(src, ['t/empty_in', 't/g']);
    expect(ev('t/empty_in', { s: '' })).toBe(true);
    expect(ev('t/empty_in', { s: [] })).toBe(true);
    expect(ev('t/empty_in', { s: 'x' })).toBeUndefined();
    expect(ev('t/g')).toEqual([true, true, 2, 20]);
  });

  it('parses to a function whose value is true and whose body is true', () => {
    const m = parseModule('t.rego', 'package t\nf("")\n');
    const [r] = m.rules;
    expect(r.head.args?.map((a) => a.type)).toEqual(['string']);
    expect(r.head.value).toMatchObject({ type: 'boolean', value: true });
    expect(r.body).toHaveLength(1);
    expect(r.body[0].terms).toMatchObject({ type: 'term', term: { type: 'boolean', value: true } });
  });

  it('refuses what OPA refuses', () => {
    expect(firstError('package t\nf()\n')).toBe(
      't.rego:2:1: rego_parse_error: rule argument list must take at least one argument',
    );
    expect(firstError('package t\np[x]\n')).toBe(
      't.rego:2:1: rego_parse_error: `contains` keyword is required for partial set rules',
    );
    // `f(x) = y` without a body leaves y unbound, as in OPA.
    expect(firstError('package t\nf(x) = y\n')).toMatch(/rego_unsafe_var_error: var y is unsafe/);
  });
});

describe('braces after `if`, read as one literal first (OPA parseRules)', () => {
  it('`p if {}` is a body of one empty object: true; a set literal is a braced body', async () => {
    const run = await load(
      `package t
p if {}
q := 1 if { }
r if { input.x }
s contains 1 if {} == {}`,
      ['t/p', 't/q', 't/r', 't/s'],
    );
    expect(run('t/p')).toBe(true);
    expect(run('t/q')).toBe(1);
    expect(run('t/r', {})).toBeUndefined();
    expect(run('t/r', { x: 1 })).toBe(true);
    expect(run('t/s')).toEqual([1]);
  });
});
