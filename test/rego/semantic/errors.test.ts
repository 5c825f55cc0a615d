// Compile-stage diagnostics: one test per error class, checking OPA's code, message and location.
import { describe, expect, it } from 'vitest';
import { parseModule } from '../../../src/rego/ast/index.ts';
import { compileModules, compileQuery } from '../../../src/rego/semantic/index.ts';
import { parseQuery } from '../../../src/rego/ast/index.ts';
import { RegoErrors, type RegoError } from '../../../src/rego/errors.ts';

function errorsOf(...sources: string[]): RegoError[] {
  const modules = sources.map((s, i) => parseModule(`p${i}.rego`, s));
  try {
    compileModules(modules);
  } catch (e) {
    if (e instanceof RegoErrors) return e.errors;
    throw e;
  }
  throw new Error('expected compile errors');
}

function one(...sources: string[]): RegoError {
  const errs = errorsOf(...sources);
  expect(errs.length).toBeGreaterThanOrEqual(1);
  return errs[0];
}

describe('compile errors', () => {
  it('unsafe var at the var location', () => {
    const e = one(`package t
p if {
  x > 1
}`);
    expect(e.format()).toBe('p0.rego:3:3: rego_unsafe_var_error: var x is unsafe');
  });

  it('unsafe var inside negation and in rule heads', () => {
    const e1 = one(`package t
p if { not input.xs[i] }`);
    expect(e1.code).toBe('rego_unsafe_var_error');
    expect(e1.message).toBe('var i is unsafe');
    const e2 = one(`package t
p := y if { input.x }`);
    expect(e2.format()).toBe('p0.rego:2:6: rego_unsafe_var_error: var y is unsafe');
  });

  it('recursion with the cycle path', () => {
    const e = one(`package t
p if q
q if r
r if p`);
    expect(e.code).toBe('rego_recursion_error');
    expect(e.message).toMatch(/^rule data\.t\.(p|q|r) is recursive: /);
    expect(e.message).toContain('data.t.p -> data.t.q -> data.t.r -> data.t.p');
    expect(e.location?.file).toBe('p0.rego');
  });

  it('a dynamic data ref depends only on the rules its constant tail can reach, as OPA matches refs', () => {
    // A helper that reads `data.checks[name].deny` from tests in those packages is no cycle: the var
    // element tries every package, but only `deny` below each. Reading `data.checks[name]` whole is one.
    const helper = `package util
violations(name) := v if { v := data.checks[name].deny }`;
    const checks = `package checks.a
deny contains "x" if input.bad
test_deny if { count(data.util.violations("a")) == 1 with input.bad as true }`;
    expect(() => compileModules([parseModule('u.rego', helper), parseModule('a.rego', checks)])).not.toThrow();
    const whole = `package util
violations(name) := v if { v := data.checks[name] }`;
    const e = one(whole, checks);
    expect(e.code).toBe('rego_recursion_error');
    expect(e.message).toContain('data.util.violations -> data.checks.a.test_deny -> data.util.violations');
  });

  it('builtin arity mismatch shows have and want', () => {
    const e = one(`package t
p := x if { x := count([1], [2], 3, 4) }`);
    expect(e.code).toBe('rego_type_error');
    expect(e.message).toBe('count: arity mismatch');
    expect(e.format()).toContain('\n\thave: (array[any], array[any], number, number)\n\twant: (any<');
    expect(e.location).toMatchObject({ file: 'p0.rego', row: 2 });
  });

  it('obvious literal type errors in builtin calls', () => {
    const e = one(`package t
p := x if { x := count(5) }`);
    expect(e.code).toBe('rego_type_error');
    expect(e.message).toBe('count: invalid argument(s)');
  });

  it('undefined function', () => {
    const e = one(`package t
p if { nosuch(1) }`);
    expect(e.format()).toBe('p0.rego:2:8: rego_type_error: undefined function nosuch');
  });

  it('refused non-deterministic builtins name the builtin and the reason', () => {
    const e = one(`package t
p := r if { r := http.send({"method": "get", "url": "http://x"}) }`);
    expect(e.code).toBe('rego_compile_error');
    expect(e.message).toMatch(/^http\.send is not allowed in Guardian policies: .+/);
    const e2 = one(`package t
p := r if { r := opa.runtime() }`);
    expect(e2.message).toMatch(/^opa\.runtime is not allowed/);
  });

  it('conflicting rule kinds, multiple defaults, function arity', () => {
    expect(
      one(`package t
p := 1
p contains 2`).message,
    ).toBe('conflicting rules data.t.p found');
    const d = one(`package t
default p := 1
default p := 2`);
    expect(d.message).toBe('multiple default rules data.t.p found');
    expect(d.location?.row).toBe(3);
    expect(
      one(`package t
f(x) := 1
f(x, y) := 2`).message,
    ).toMatch(/^conflicting rules data\.t\.f found/);
  });

  it('rule vs package path conflicts', () => {
    const e = one(
      `package a
b := 1`,
      `package a.b
c := 2`,
    );
    expect(e.code).toBe('rego_compile_error');
    expect(e.message).toMatch(/conflicts with rule data\.a\.b/);
  });

  it('re-assignment and assignment after reference', () => {
    expect(
      one(`package t
p if { x := 1; x := 2 }`).format(),
    ).toBe('p0.rego:2:16: rego_compile_error: var x assigned above');
    expect(
      one(`package t
p if { x == 1; x := 2 }`).message,
    ).toBe('var x referenced above');
  });

  it('with target must be input, data or a function', () => {
    const e = one(`package t
q := 1
p if { q with nosuch as 1 }`);
    expect(e.code).toBe('rego_compile_error');
    expect(e.message).toMatch(/with keyword target/);
  });

  it('queries are checked like rule bodies', () => {
    const prog = compileModules([parseModule('p0.rego', 'package t\nf(x) := x')]);
    const err = (q: string): string => {
      try {
        compileQuery(prog, parseQuery(q, 'query.rego'));
      } catch (e) {
        if (e instanceof RegoErrors) return e.errors.map((x) => x.format()).join('\n');
      }
      return 'no error';
    };
    expect(err('x > 1')).toBe('query.rego:1:1: rego_unsafe_var_error: var x is unsafe');
    expect(err('data.t.g(1, y)')).toMatch(/rego_type_error: undefined function data\.t\.g/);
    expect(err('data.t.f(1, 2, 3)')).toMatch(/rego_type_error: data\.t\.f: arity mismatch/);
    const ok = compileQuery(prog, parseQuery('y := data.t.f(1); some i; z = [y][i]'));
    expect(ok.vars.map((v) => v.name).sort()).toEqual(['i', 'y', 'z']);
  });

  it('with cannot replace part of a virtual document', () => {
    const e = one(`package t
p := {"a": 1}
q := x if { x := p with data.t.p.a as 2 }`);
    expect(e.format()).toMatch(
      /^p0\.rego:3:\d+: rego_compile_error: with keyword cannot partially replace virtual document\(s\)$/,
    );
  });

  it('function mocks and data/input targets are accepted by with', () => {
    expect(() =>
      compileModules([
        parseModule(
          'p0.rego',
          `package t
f(x) := x
g(x) := 2 * x
p := y if { y := f(1) with f as g with count as g with input.a as 1 with data.t.q as 2 }
q := 1`,
        ),
      ]),
    ).not.toThrow();
  });

  it('collects at most 10 errors, each with a location', () => {
    const body = Array.from({ length: 15 }, (_, i) => `r${i} if { v${i} > 1 }`).join('\n');
    const errs = errorsOf(`package t\n${body}`);
    expect(errs).toHaveLength(10);
    for (const e of errs) expect(e.format()).toMatch(/^p0\.rego:\d+:\d+: rego_unsafe_var_error: var v\d+ is unsafe$/);
  });

  it('deep nesting is an error or compiles, never a stack overflow', () => {
    const deep = `package t\np := ${'['.repeat(900)}1${']'.repeat(900)}`;
    let outcome = 'compiled';
    try {
      compileModules([parseModule('d.rego', deep)]);
    } catch (e) {
      expect(e).toBeInstanceOf(RegoErrors);
      outcome = 'error';
    }
    expect(['compiled', 'error']).toContain(outcome);
    const long = `package t\np := ${Array(3000).fill('1').join(' + ')}`;
    try {
      compileModules([parseModule('l.rego', long)]);
    } catch (e) {
      expect(e).toBeInstanceOf(RegoErrors);
    }
  });
});

// OPA ast/conflicts.go CheckPathConflicts with storage.NonEmpty over the data (`opa eval -d`, `opa test`): each
// rule-tree node holding rules, reached by string keys, is checked; the first rule there carries the error.
describe('rules where the data is (CompileOptions.data)', () => {
  const conflicts = (data: Record<string, unknown>, ...sources: string[]): string[] => {
    const modules = sources.map((s, i) => parseModule(`p${i}.rego`, s));
    try {
      compileModules(modules, { data });
    } catch (e) {
      if (e instanceof RegoErrors) return e.errors.map((x) => x.format());
      throw e;
    }
    return [];
  };

  it('a rule at a path the data holds, or below a value that is no object', () => {
    const src = 'package p\n\nallow if input.x\n\nf(x) := x\n\nq.r := 1\n';
    expect(conflicts({ p: { allow: false } }, src)).toEqual([
      'p0.rego:3:1: rego_compile_error: conflicting rule for data path p/allow found',
    ]);
    expect(conflicts({ p: 7 }, src)).toEqual([
      'p0.rego:3:1: rego_compile_error: conflicting rule for data path p/allow found',
      'p0.rego:5:1: rego_compile_error: conflicting rule for data path p/f found',
      'p0.rego:7:1: rego_compile_error: conflicting rule for data path p/q/r found',
    ]);
    // An object above the rule, or data beside it, is no conflict; nor is data where only a package is.
    expect(conflicts({ p: { other: 1, q: {} } }, src)).toEqual([]);
    expect(conflicts({ p: { q: { s: 1 } } }, 'package p.q\n\nr := 1\n')).toEqual([]);
  });

  it('checks a node once: a conflicting rule hides the rules below it; a ground non-string key ends the path', () => {
    // `q[x]` sits at p/q, `q.r` at p/q/r: the conflict at p/q is the only one reported.
    const src = 'package p\n\nq[x] := 1 if some x in input\n\nq.r := 2\n';
    expect(conflicts({ p: { q: 0 } }, src)).toEqual([
      'p0.rego:3:1: rego_compile_error: conflicting rule for data path p/q found',
    ]);
    expect(conflicts({ p: { q: { r: 0 } } }, src)).toEqual([
      'p0.rego:3:1: rego_compile_error: conflicting rule for data path p/q found',
    ]);
    expect(conflicts({ p: { s: 0 } }, src)).toEqual([]);
    // `q[1]` sits at a node keyed by the number 1, which data cannot name: no conflict, even under data.p.q.
    expect(conflicts({ p: { q: 0 } }, 'package p\n\nq[1] := 2\n')).toEqual([]);
  });
});
