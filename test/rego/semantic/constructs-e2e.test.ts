// Constructs the compile stage once got wrong (`every` bodies reading `data`/`input`, parenthesised
// comprehension heads written with operators, `with` on `some … in`): compiled by our pipeline, linked to Wasm and evaluated by
// the unmodified opa-wasm host. Expected values are what
// OPA's semantics give (worked out by hand in each case).
import { describe, expect, it } from 'vitest';
import { compileErrors, loadModule as load } from './fixtures/wasm-module.ts';
import { parseModule } from '../../../src/rego/ast/index.ts';

describe('every: data and input are always safe roots', () => {
  it('a call on a data ref compared with == inside every, when the enclosing body also reads data', async () => {
    const src = `package t
limit := 2
p if {
	n := data.t.limit
	n > 0
	every x in input.xs { count(data.cfg.list) == x }
}
q if {
	obj := data.obj
	every k, v in obj { f(data.foo[k]) == v }
}
r if {
	input.a
	every k, v in input.obj { count(input.foo[k]) == v }
}
f(x) := x * 10
`;
    expect(compileErrors(src)).toEqual([]);
    const ev = await load(src, ['t/p', 't/q', 't/r'], {
      cfg: { list: [1, 2] },
      obj: { a: 10, b: 20 },
      foo: { a: 1, b: 2 },
    });
    expect(ev('t/p', { xs: [2, 2] })).toBe(true);
    expect(ev('t/p', { xs: [2, 3] })).toBeUndefined();
    expect(ev('t/q')).toBe(true);
    expect(ev('t/r', { a: true, obj: { x: 2, y: 0 }, foo: { x: 'ab', y: '' } })).toBe(true);
    expect(ev('t/r', { a: true, obj: { x: 2, y: 1 }, foo: { x: 'ab', y: '' } })).toBeUndefined();
  }, 60_000);

  it('every with `with`, and nested every, reading data and input', async () => {
    const src = `package t
small if {
	input.go
	every x in input.xs { x < data.cfg.max }
}
mocked if small with data.cfg.max as 100
grid if {
	input.go
	every row in input.rows {
		data.cfg.max > 0
		every c in row { c < data.cfg.max; c >= input.min }
	}
}
`;
    expect(compileErrors(src)).toEqual([]);
    const ev = await load(src, ['t/small', 't/mocked', 't/grid'], { cfg: { max: 5 } });
    expect(ev('t/small', { go: true, xs: [1, 4] })).toBe(true);
    expect(ev('t/small', { go: true, xs: [1, 40] })).toBeUndefined();
    expect(ev('t/mocked', { go: true, xs: [1, 40] })).toBe(true);
    expect(ev('t/grid', { go: true, min: 1, rows: [[1, 2], [4]] })).toBe(true);
    expect(ev('t/grid', { go: true, min: 1, rows: [[1, 2], [0]] })).toBeUndefined();
    expect(ev('t/grid', { go: true, min: 1, rows: [[1, 9]] })).toBeUndefined();
  }, 60_000);

  it('outer vars used in every are still ordered and checked', async () => {
    const src = `package t
p if {
	every x in input.xs { x < m }
	m = data.m
}
`;
    const ev = await load(src, ['t/p'], { m: 3 });
    expect(ev('t/p', { xs: [1, 2] })).toBe(true);
    expect(ev('t/p', { xs: [1, 3] })).toBeUndefined();
    expect(
      compileErrors(`package t
p if {
	input.go
	every x in input.xs { x; count(data.l) == y }
}`),
    ).toEqual(['t.rego:4:44: rego_unsafe_var_error: var y is unsafe']);
    // An every value its body never refers to is OPA's RewriteLocalVars error, before any safety check.
    expect(
      compileErrors(`package t
p if {
	input.go
	every x in input.xs { count(data.l) == y }
}`),
    ).toEqual(['t.rego:4:24: rego_compile_error: declared var x unused']);
  });
});

describe('comprehension heads written with operators', () => {
  it('parenthesised, they evaluate like the same comprehension written with a temporary', async () => {
    const src = `package t
f(i) := i + 2
mod97 := [((a * b) % 97) | some i, a in input.arr; b := f(i)]
mod97_tmp := [t | some i, a in input.arr; b := f(i); t := (a * b) % 97]
incremented := [(x + 1) | some x in input.arr]
neg := [(0 - x) | some x in input.arr]
set_minus := {(x - 1) | some x in input.arr}
obj := {k: (v * 2) | some k, v in input.obj}
obj_key := {(k + 1): v | some k, v in input.arr}
cmp := [(x * 2 == 20) | some x in input.arr]
union := [s1 - s2 | s3] if {
	s1 := {1, 2}
	s2 := {2}
	s3 := {9}
}
`;
    const ev = await load(src, [
      't/mod97',
      't/mod97_tmp',
      't/incremented',
      't/neg',
      't/set_minus',
      't/obj',
      't/obj_key',
      't/cmp',
      't/union',
    ]);
    const input = { arr: [50, 10, 96], obj: { a: 1, b: 2 } };
    // (50*2)%97 = 3, (10*3)%97 = 30, (96*4)%97 = 384-291 = 93
    expect(ev('t/mod97', input)).toEqual([3, 30, 93]);
    expect(ev('t/mod97_tmp', input)).toEqual(ev('t/mod97', input));
    expect(ev('t/incremented', input)).toEqual([51, 11, 97]);
    expect(ev('t/neg', input)).toEqual([-50, -10, -96]);
    expect(ev('t/set_minus', input)).toEqual([9, 49, 95]);
    expect(ev('t/obj', input)).toEqual({ a: 2, b: 4 });
    expect(ev('t/obj_key', input)).toEqual({ '1': 50, '2': 10, '3': 96 });
    expect(ev('t/cmp', input)).toEqual([false, true, false]);
    // OPA's reading: a one-element array holding the set union, not a comprehension.
    expect(ev('t/union', input)).toEqual([[1, 9]]);
  }, 60_000);

  it('unparenthesised, the module is refused as OPA refuses it, at the head, saying how to write it', () => {
    expect(() => parseModule('t.rego', 'package t\nxs := [x * 2 | some x in input.arr]\n')).toThrow(
      /^t\.rego:2:8: rego_parse_error: comprehension head written with operators: .*wrap the head in parentheses/,
    );
  });
});

describe('with on some … in', () => {
  it('iterates the replaced document (OPA parses `with` after `some x in xs`)', async () => {
    const src = `package t
xs contains x if some x in input.xs with input.xs as [7, 8]
plain contains x if some x in input.xs
`;
    const ev = await load(src, ['t/xs', 't/plain']);
    expect(ev('t/xs', { xs: [1] })).toEqual([7, 8]);
    expect(ev('t/plain', { xs: [1] })).toEqual([1]);
  }, 60_000);
});
