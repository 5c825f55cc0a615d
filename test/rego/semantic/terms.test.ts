// The one var walk of the compile stage (terms.ts forEachVar) and its two readings, and the query
// variables compileQuery reports from it.
import { describe, expect, it } from 'vitest';
import { parseModule, parseQuery } from '../../../src/rego/ast/index.ts';
import { compileModules, compileQuery } from '../../../src/rego/semantic/index.ts';
import { forEachVarInBody } from '../../../src/rego/semantic/terms.ts';

function names(query: string, options?: Parameters<typeof forEachVarInBody>[2]): string[] {
  const out: string[] = [];
  forEachVarInBody(parseQuery(query), (v) => out.push(v.value), options);
  return out;
}

describe('forEachVar', () => {
  const q = 'some d; every k, v in xs { count(v) > k; ys[j] == [w | w := f(j)] }; z := d with input.a as b';
  it('visits every var in source order by default, call operators and declarations included (with targets are not values)', () => {
    expect(names(q)).toEqual(['d', 'k', 'v', 'xs', 'count', 'v', 'k', 'ys', 'j', 'w', 'w', 'f', 'j', 'z', 'd', 'b']);
  });
  it('skips call operators and declarations when asked (the safety reading)', () => {
    expect(names(q, { callOperators: false, declarations: false })).toEqual([
      'xs',
      'v',
      'k',
      'ys',
      'j',
      'w',
      'w',
      'j',
      'z',
      'd',
      'b',
    ]);
  });
});

describe('compileQuery variables', () => {
  it('a call operator is not a query variable', () => {
    const program = compileModules([parseModule('t.rego', 'package t\nf(x) := x\n')]);
    expect(
      compileQuery(program, parseQuery('x := count(input.y); y := array.concat([1], [x])')).vars.map((v) => v.name),
    ).toEqual(['x', 'y']);
  });
});
