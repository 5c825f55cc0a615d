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

  // Texts, codes and locations from OPA's checkRuleConflicts (v1/ast/compile.go) and its tests
  // (compile_test.go TestCompilerCheckRuleConflicts, ...DotsInRuleHeads, ...DefaultFunction, TestCompilerCheckRulePkgConflicts).
  const conflicts = (...sources: string[]): string[] =>
    errorsOf(...sources.map((src) => src.replace(/^\t+/gm, ''))).map((e) => e.format());

  it('conflicting rule kinds, arities and complete/partial definitions are type errors at the first rule', () => {
    expect(conflicts('package t\np := 1\np contains 2')).toEqual([
      'p0.rego:2:1: rego_type_error: conflicting rules data.t.p found',
    ]);
    expect(conflicts('package t\nf(x) := 1\nf(x, y) := 2')).toEqual([
      'p0.rego:2:1: rego_type_error: conflicting rules data.t.f found',
    ]);
    expect(conflicts('package badrules.arity\nf(1) if { true }\nf if { true }')).toEqual([
      'p0.rego:2:1: rego_type_error: conflicting rules data.badrules.arity.f found',
    ]);
    expect(conflicts('package pkg\ndefault f(_) = 100\nf(x, y) = x if {\n\tx == y\n}')).toEqual([
      'p0.rego:2:1: rego_type_error: conflicting rules data.pkg.f found',
    ]);
    // The message names the last rule's ref, vars included.
    expect(conflicts('package badrules.complete_partial\np := 1\np[r] := 2 if { r := "foo" }')).toEqual([
      'p0.rego:2:1: rego_type_error: conflicting rules data.badrules.complete_partial.p[r] found',
    ]);
    expect(conflicts('package badrules\np contains x if { x = 1 }\np[x] = y if { x = y; x = "a" }')).toEqual([
      'p0.rego:2:1: rego_type_error: conflicting rules data.badrules.p[x] found',
    ]);
    expect(conflicts('package pkg\np.q.r if { true }', 'package pkg.p.q\nr(_) = 2')).toEqual([
      'p0.rego:2:1: rego_type_error: conflicting rules data.pkg.p.q.r found',
    ]);
    expect(conflicts('package pkg\np[r] := x if { r = input.key; x = input.bar }\np contains q if { true }')).toEqual([
      'p0.rego:2:1: rego_type_error: conflicting rules data.pkg.p found',
    ]);
  });

  it('multiple default rules: at the package of the first, listing every default', () => {
    expect(conflicts('package t\ndefault p := 1\ndefault p := 2')).toEqual([
      'p0.rego:1:1: rego_type_error: multiple default rules data.t.p found at p0.rego:2, p0.rego:3',
    ]);
    expect(conflicts('package badrules.defkw\n\ndefault foo = 1\ndefault foo = 2\nfoo = 3 if { true }')).toEqual([
      'p0.rego:1:1: rego_type_error: multiple default rules data.badrules.defkw.foo found at p0.rego:3, p0.rego:4',
    ]);
    expect(
      conflicts('package pkg\ndefault p.q.r = 3\np.q.r if { true }', 'package pkg.p.q\ndefault r = 4\nr = 2'),
    ).toEqual(['p0.rego:1:1: rego_type_error: multiple default rules data.pkg.p.q.r found at p0.rego:2, p1.rego:2']);
  });

  it('a ground rule with rules below it, and a package at a rule path', () => {
    expect(conflicts('package pkg\np.q.r if { true }\np.q.r.s if { true }\np.q.r.t if { true }')).toEqual([
      'p0.rego:2:1: rego_type_error: rule data.pkg.p.q.r conflicts with [data.pkg.p.q.r.s data.pkg.p.q.r.t]',
    ]);
    expect(conflicts('package pkg\np contains v if { v := ["a", "b"][_] }\np.q.r if { true }')).toEqual([
      'p0.rego:2:1: rego_type_error: rule data.pkg.p conflicts with [data.pkg.p.q.r]',
    ]);
    expect(conflicts('package pkg\np.q(x) := x\np.q.r if { true }')).toEqual([
      'p0.rego:2:1: rego_type_error: rule data.pkg.p.q conflicts with [data.pkg.p.q.r]',
    ]);
    expect(conflicts('package test\np := x if { x := "a" }', 'package test.p\nq := 1')).toEqual([
      'p0.rego:2:1: rego_type_error: rule data.test.p conflicts with [data.test.p.q]',
      'p0.rego:1:1: rego_type_error: package test.p conflicts with rule p defined at p0.rego:2',
    ]);
    expect(conflicts('package pkg\np.q.r if { true }', 'package pkg.p.q.r')).toEqual([
      'p0.rego:1:1: rego_type_error: package pkg.p.q.r conflicts with rule p.q.r defined at p0.rego:2',
    ]);
  });

  it('rules inside a general ref head, and packages inside its extent, are no conflict (as in OPA)', () => {
    const compiles = (...sources: string[]): void => {
      expect(() => compileModules(sources.map((src, i) => parseModule(`p${i}.rego`, src)))).not.toThrow();
    };
    compiles('package pkg\np.q[r] = x if { r = input.key; x = input.foo }\np.q.r.s = x if { x := 1 }');
    compiles(
      'package pkg\np[r] := x if { r = input.key; x = input.bar }\np.q[r] := x if { r = input.key; x = input.bar }',
    );
    compiles('package test\np[x] := y if { x := "a"; y := "b" }', 'package test.p\nq := 1');
    compiles('package pkg\np.q.w contains "baz"', 'package pkg\np.q.w contains "bar"');
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

  // OPA's Compiler.err (v1/ast/compile.go): CompileErrorLimitDefault = 10; once 10 errors are recorded it appends
  // errLimitReached, a rego_compile_error "error limit reached" without location, and the compile stops.
  it('reports 10 errors then "error limit reached", also at exactly 10', () => {
    const unsafe = (n: number): string =>
      `package t\n${Array.from({ length: n }, (_, i) => `r${i} if { v${i} > 1 }`).join('\n')}`;
    const errs = errorsOf(unsafe(15));
    expect(errs).toHaveLength(11);
    for (const e of errs.slice(0, 10))
      expect(e.format()).toMatch(/^p0\.rego:\d+:\d+: rego_unsafe_var_error: var v\d+ is unsafe$/);
    expect(errs[10].format()).toBe('rego_compile_error: error limit reached');
    expect(errs[10].location).toBeUndefined();
    expect(errorsOf(unsafe(10)).map((e) => e.message)).toEqual([
      ...Array.from({ length: 10 }, (_, i) => `var v${i} is unsafe`),
      'error limit reached',
    ]);
    expect(errorsOf(unsafe(9))).toHaveLength(9);
  });

  it('the limit covers type errors and conflict errors too (every stage reports through Compiler.err)', () => {
    const calls = `package t\n${Array.from({ length: 12 }, (_, i) => `r${i} if { nope${i}(1) }`).join('\n')}`;
    const errs = errorsOf(calls);
    expect(errs).toHaveLength(11);
    expect(errs.slice(0, 10).every((e) => e.code === 'rego_type_error')).toBe(true);
    expect(errs[10].format()).toBe('rego_compile_error: error limit reached');
    const defaults = `package t\n${Array.from({ length: 11 }, (_, i) => `default d${i} := 1\ndefault d${i} := 2`).join('\n')}`;
    const d = errorsOf(defaults);
    expect(d).toHaveLength(11);
    expect(d[10].message).toBe('error limit reached');
  });

  it('maxErrors 0 is no limit, as OPA SetErrorLimit(0)', () => {
    const body = Array.from({ length: 15 }, (_, i) => `r${i} if { v${i} > 1 }`).join('\n');
    try {
      compileModules([parseModule('p0.rego', `package t\n${body}`)], { maxErrors: 0 });
      throw new Error('expected compile errors');
    } catch (e) {
      expect(e).toBeInstanceOf(RegoErrors);
      expect((e as RegoErrors).errors).toHaveLength(15);
    }
  });

  it('a query: cut to 10 plus "error limit reached" only when there are more (queryCompiler.applyErrorLimit)', () => {
    const program = compileModules([parseModule('p0.rego', 'package t\np := 1')]);
    const queryErrors = (n: number): RegoError[] => {
      const q = Array.from({ length: n }, (_, i) => `not u${i}`).join('; ');
      try {
        compileQuery(program, parseQuery(q));
      } catch (e) {
        if (e instanceof RegoErrors) return e.errors;
        throw e;
      }
      throw new Error('expected query errors');
    };
    const eleven = queryErrors(11);
    expect(eleven).toHaveLength(11);
    expect(eleven[10].format()).toBe('rego_compile_error: error limit reached');
    const ten = queryErrors(10);
    expect(ten).toHaveLength(10);
    expect(ten.every((e) => e.code === 'rego_unsafe_var_error')).toBe(true);
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
