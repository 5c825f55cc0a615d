import { describe, expect, it } from 'vitest';
import { parseModule, parseQuery, MAX_NESTING_DEPTH } from '../../../src/rego/ast/index.ts';
import type { Body, CallTerm, Expr, Module, RefTerm, Rule, Term } from '../../../src/rego/ast/index.ts';
import { RegoErrors } from '../../../src/rego/errors.ts';

/** Drop locations so structural comparisons stay readable. */
function strip<T>(x: T): T {
  return JSON.parse(JSON.stringify(x, (k, v) => (k === 'location' ? undefined : v))) as T;
}

const v = (value: string): Term => ({ type: 'var', value });
const s = (value: string): Term => ({ type: 'string', value });
const n = (value: string): Term => ({ type: 'number', value });
const ref = (...value: Term[]): RefTerm => ({ type: 'ref', value });
const op = (...names: string[]): RefTerm => ref(v(names[0]), ...names.slice(1).map(s));
const call = (name: string | string[], ...args: Term[]): CallTerm => ({
  type: 'call',
  operator: op(...(Array.isArray(name) ? name : [name])),
  args,
});

function mod(src: string): Module {
  return parseModule('p.rego', `package p\n${src}`);
}
function rules(src: string): Rule[] {
  return strip(mod(src).rules);
}
function q(text: string): Body {
  return strip(parseQuery(text));
}
function term(text: string): Term {
  const [e] = q(`x := ${text}`);
  if (e.terms.type !== 'call') throw new Error('not an assignment');
  return e.terms.args[1];
}
function parseError(src: string): string {
  return parseErrors(src)[0];
}
/** The first line of every error of parsing `src`. */
function parseErrors(src: string): string[] {
  try {
    parseModule('p.rego', src);
  } catch (e) {
    expect(e).toBeInstanceOf(RegoErrors);
    const errors = (e as RegoErrors).errors;
    for (const err of errors) expect(err.code).toBe('rego_parse_error');
    return errors.map((err) => err.format().split('\n')[0]);
  }
  throw new Error('expected a parse error');
}

describe('package and imports', () => {
  it('package path is rooted at data', () => {
    const m = strip(parseModule('a.rego', 'package a.b["c-d"].e'));
    expect(m.package.path).toEqual([v('data'), s('a'), s('b'), s('c-d'), s('e')]);
    expect(m.file).toBe('a.rego');
    expect(m.regoVersion).toBe(1);
  });
  it('imports: rego.v1, future.keywords, data/input with aliases', () => {
    const m = strip(
      parseModule(
        'a.rego',
        'package a\nimport rego.v1\nimport future.keywords\nimport future.keywords.in\nimport data.x.y as z\nimport input.req as r\nimport data.lib',
      ),
    );
    expect(m.imports).toEqual([
      { path: ref(v('rego'), s('v1')) },
      { path: ref(v('future'), s('keywords')) },
      { path: ref(v('future'), s('keywords'), s('in')) },
      { path: ref(v('data'), s('x'), s('y')), alias: 'z' },
      { path: ref(v('input'), s('req')), alias: 'r' },
      { path: ref(v('data'), s('lib')) },
    ]);
  });
  it('rejects import roots other than data/input/future/rego', () => {
    expect(parseError('package a\nimport foo.bar')).toBe(
      'p.rego:2:8: rego_parse_error: unexpected import path, must begin with one of: {data, future, input, rego}, got: foo (hint: if this is unexpected, try updating OPA)',
    );
  });
  it('requires a package first', () => {
    expect(parseError('p := 1')).toBe('p.rego:1:1: rego_parse_error: package expected');
  });
});

describe('rules', () => {
  it('complete rule with if-body in braces', () => {
    const [r] = rules('allow if {\n  input.x == 1\n  input.y\n}');
    expect(r.default).toBe(false);
    expect(r.head).toEqual({
      reference: [v('allow')],
      assign: false,
      kind: 'single',
      value: { type: 'boolean', value: true },
    });
    expect(r.body.map((e) => e.index)).toEqual([0, 1]);
    expect(r.body[0].terms).toEqual({ type: 'call', operator: op('equal'), args: [ref(v('input'), s('x')), n('1')] });
    expect(r.body[1].terms).toEqual({ type: 'term', term: ref(v('input'), s('y')) });
  });
  it('rule with a single-expression body: p if x > 1', () => {
    const [r] = rules('p if input.x > 1');
    expect(r.body).toHaveLength(1);
    expect(r.body[0].terms).toEqual({ type: 'call', operator: op('gt'), args: [ref(v('input'), s('x')), n('1')] });
  });
  it('p if {x | …} and p if {"k": v} are one-literal bodies; p if { x } is a braced body (OPA reads a literal first)', () => {
    const [comp, obj, braced] = rules('q if {x | x := input[_]}\nr if {"k": 1}\ns if { input.x }');
    expect(comp.body).toHaveLength(1);
    expect(comp.body[0].terms).toMatchObject({ type: 'term', term: { type: 'setcomprehension', term: v('x') } });
    expect(obj.body[0].terms).toMatchObject({ type: 'term', term: { type: 'object' } });
    // A set literal is never false: `{ input.x }` is the body, not a set.
    expect(braced.body[0].terms).toEqual({ type: 'term', term: ref(v('input'), s('x')) });
    const [multi] = rules('t if {\n  x := 1\n  x > 0\n}');
    expect(multi.body).toHaveLength(2);
  });
  it('after if, braces are one literal when they read as one (OPA parseRules)', () => {
    // A comprehension or a comparison is the whole body; a set literal (never false) falls back to a body.
    const [c] = rules('p if {x | input.a[x]}');
    expect(c.body).toHaveLength(1);
    expect(c.body[0].terms.type).toBe('term');
    expect(c.body[0].terms.type === 'term' && c.body[0].terms.term.type).toBe('setcomprehension');
    const [cmp] = rules('p if {input.a} == input.b');
    expect(cmp.body[0].terms).toMatchObject({ type: 'call', operator: op('equal') });
    const [set] = rules('p if {input.a}');
    expect(set.body[0].terms).toEqual({ type: 'term', term: ref(v('input'), s('a')) });
    const [two] = rules('p if {input.a; input.b}');
    expect(two.body).toHaveLength(2);
  });
  it('a head value may start on the line after := or = (OPA parseHead scans past newlines)', () => {
    const [f, d, p, u] = rules(
      'f(x) :=\n  concat("", [\n    x,\n    "!"\n  ])\ndefault d :=\n  false\np :=\n  {"a": 1} if input.a\nu =\n  2',
    );
    expect(f.head.args).toEqual([v('x')]);
    expect(f.head.value).toMatchObject({ type: 'call', operator: op('concat') });
    expect(d.default).toBe(true);
    expect(d.head.value).toEqual({ type: 'boolean', value: false });
    expect(p.head.value).toMatchObject({ type: 'object' });
    expect(p.body[0].terms).toEqual({ type: 'term', term: ref(v('input'), s('a')) });
    expect(u.head).toMatchObject({ assign: false, value: n('2') });
    // With nothing after the operator the rule still has no value: the term's error, then the head's (OPA).
    expect(parseErrors('package p\nf(x) :=\n')).toEqual([
      'p.rego:3:0: rego_parse_error: unexpected eof token',
      'p.rego:3:0: rego_parse_error: unexpected eof token: expected function value term (e.g., f(...) := <VALUE> { ... })',
    ]);
    expect(parseErrors('package p\np := if { true }')).toEqual([
      'p.rego:2:6: rego_parse_error: unexpected if keyword',
      'p.rego:2:6: rego_parse_error: unexpected if keyword: expected rule value term (e.g., p := <VALUE> { ... })',
    ]);
  });
  it('rule without body gets body [true]', () => {
    const [r] = rules('p := 1');
    expect(r.head.value).toEqual(n('1'));
    expect(r.head.assign).toBe(true);
    expect(r.body).toEqual([
      {
        index: 0,
        negated: false,
        terms: { type: 'term', term: { type: 'boolean', value: true } },
        with: [],
        generated: true,
      },
    ]);
  });
  it('= is a non-assign head', () => {
    const [r] = rules('p = 1 if true');
    expect(r.head.assign).toBe(false);
  });
  it('default rules', () => {
    const [r] = rules('default allow := false');
    expect(r.default).toBe(true);
    expect(r.head.value).toEqual({ type: 'boolean', value: false });
    expect(r.body).toHaveLength(1);
    expect(parseError('package p\ndefault p := input.x')).toBe(
      'p.rego:2:1: rego_parse_error: illegal default rule (value cannot contain ref)',
    );
    // OPA's parseHead gives `default p` the value true; `default p[x]` has none.
    expect(rules('default p')[0].head.value).toEqual({ type: 'boolean', value: true });
    expect(parseError('package p\ndefault p[x]')).toBe(
      'p.rego:2:1: rego_parse_error: illegal default rule (must have a value)',
    );
  });
  it('partial set rule with contains', () => {
    const [r, r2] = rules('deny contains msg if { msg := "no" }\ndeny contains "x"');
    expect(r.head).toEqual({ reference: [v('deny')], assign: false, kind: 'multi', key: v('msg') });
    expect(r2.head.key).toEqual(s('x'));
    expect(r2.body[0].generated).toBe(true);
  });
  it('partial object rule p[k] := v', () => {
    const [r] = rules('p[k] := x if { some k, x in input.o }');
    expect(r.head).toEqual({ reference: [v('p'), v('k')], assign: true, kind: 'single', value: v('x') });
  });
  it('ref heads: a.b[x] := y and a.b.c := 1', () => {
    const [r1, r2] = rules('a.b[x] := y if { x := "k"; y := 1 }\na.b.c := 1');
    expect(r1.head.reference).toEqual([v('a'), s('b'), v('x')]);
    expect(r2.head.reference).toEqual([v('a'), s('b'), s('c')]);
    expect(r2.head.value).toEqual(n('1'));
  });
  it('p[x] if … is a single-value rule with value true', () => {
    const [r] = rules('p[x] if { x := 1 }');
    expect(r.head).toEqual({
      reference: [v('p'), v('x')],
      assign: false,
      kind: 'single',
      value: { type: 'boolean', value: true },
    });
  });
  it('functions, including several definitions and if-forms', () => {
    const rs = rules('f(x) := y if { y := x + 1 }\nf(x) := 0 if x < 0\ng(_, y) if y > 1');
    expect(rs).toHaveLength(3);
    expect(rs[0].head.args).toEqual([v('x')]);
    expect(rs[1].head.value).toEqual(n('0'));
    expect(rs[2].head.args).toEqual([{ type: 'var', value: '$0', wildcard: true }, v('y')]);
    expect(rs[2].head.value).toEqual({ type: 'boolean', value: true });
  });
  it('else chains with and without values', () => {
    const [r] = rules('x := 1 if { input.a } else := 2 if { input.b } else := 3');
    expect(r.else?.head.value).toEqual(n('2'));
    expect(r.else?.body[0].terms).toEqual({ type: 'term', term: ref(v('input'), s('b')) });
    expect(r.else?.else?.head.value).toEqual(n('3'));
    expect(r.else?.else?.body[0].generated).toBe(true);
    const [f] = rules('f(x) if { x > 1 } else = false');
    expect(f.else?.head.args).toEqual([v('x')]);
    expect(f.else?.head.value).toEqual({ type: 'boolean', value: false });
    const [g] = rules('g if { false } else if { true }');
    expect(g.else?.head.value).toEqual({ type: 'boolean', value: true });
  });
  it('extra bodies define the rule again', () => {
    const rs = rules('p if { input.a } { input.b }');
    expect(rs).toHaveLength(2);
    expect(rs[1].body[0].terms).toEqual({ type: 'term', term: ref(v('input'), s('b')) });
    // After a one-literal `if` body too, and on the next line (OPA's parseRules takes any `{` after a body).
    const [a, b] = rules('named if input.a == 1 { input.b }');
    expect(a.body[0].terms).toEqual(call('equal', ref(v('input'), s('a')), n('1')));
    expect(b.head).toEqual(a.head);
    expect(rules('p if { input.a }\n{ input.b }\n{ input.c }').map((r) => r.body[0].terms)).toEqual(
      ['a', 'b', 'c'].map((k) => ({ type: 'term', term: ref(v('input'), s(k)) })),
    );
  });
  it('chained bodies in v0: each copies the head', () => {
    const v0 = (src: string) => strip(parseModule('p.rego', `package p\n${src}`, { regoVersion: 0 }).rules);
    const [p1, p2] = v0('p { input.a } { input.b }');
    expect(p2.head).toEqual(p1.head);
    expect(p1.head.value).toEqual({ type: 'boolean', value: true });
    expect(p2.body[0].terms).toEqual({ type: 'term', term: ref(v('input'), s('b')) });
    const sets = v0('p[x] { x := 1 } { x := 2 }');
    expect(sets.map((r) => [r.head.kind, r.head.key])).toEqual([
      ['multi', v('x')],
      ['multi', v('x')],
    ]);
    expect(sets[1].body[0].terms).toEqual(call('assign', v('x'), n('2')));
    const fs = v0('f(x) = y { y := x } { y := 2 }');
    expect(fs).toHaveLength(2);
    expect(fs[1].head.args).toEqual([v('x')]);
    expect(fs[1].head.value).toEqual(v('y'));
    expect(fs[1].body[0].terms).toEqual(call('assign', v('y'), n('2')));
    // `_` arguments get a fresh wildcard in the copy, numbered after its body's (OPA's genwildcard).
    const ws = v0('g(_) = 1 { x := [1][_] } { true }');
    expect(ws.map((r) => r.head.args)).toEqual([
      [{ type: 'var', value: '$0', wildcard: true }],
      [{ type: 'var', value: '$2', wildcard: true }],
    ]);
    expect(v0('q = 1 { input.a }\n{ input.b }')).toHaveLength(2);
  });
  it('a chained rule is located at its body, head and all', () => {
    const m = parseModule('p.rego', 'package p\nf(x) = {"k": x} { x > 1 } {\n  x < 0\n}', { regoVersion: 0 });
    const [first, second] = m.rules;
    expect(first.location).toMatchObject({ row: 2, col: 1, text: 'f(x) = {"k": x} { x > 1 }' });
    const body = { file: 'p.rego', row: 2, col: 27, offset: 36, text: '{\n  x < 0\n}' };
    expect(second.location).toEqual(body);
    const locations: unknown[] = [];
    JSON.stringify(second.head, (k, val) => {
      if (k === 'location') locations.push(val);
      return val;
    });
    expect(locations.length).toBeGreaterThan(4);
    for (const l of locations) expect(l).toEqual(body);
    expect(second.body[0].location).toMatchObject({ row: 3, col: 3 });
  });
  it('a METADATA block before chained bodies annotates the first rule, unless it is document-scoped', () => {
    const m = parseModule('p.rego', 'package p\n# METADATA\n# title: P\np if { input.a } { input.b }');
    expect(strip(m.rules[0].annotations)).toEqual([{ scope: 'rule', title: 'P' }]);
    expect(m.rules[1].annotations).toBeUndefined();
    const d = parseModule('p.rego', 'package p\n# METADATA\n# scope: document\np if { input.a } { input.b }');
    expect(strip(d.rules.map((r) => r.annotations))).toEqual([[{ scope: 'document' }], [{ scope: 'document' }]]);
  });
  it('chained bodies are refused after else, and in v1 without if', () => {
    expect(parseError('package p\np := 1 if { input.a } else := 2 if { input.b } { input.c }')).toBe(
      'p.rego:2:48: rego_parse_error: expected else keyword',
    );
    expect(() =>
      parseModule('p.rego', 'package p\np = 1 { input.a } else = 2 { input.b }\n{ input.c }', { regoVersion: 0 }),
    ).toThrow('p.rego:3:1: rego_parse_error: expected else keyword');
    // The rules parse, and parseModule refuses each body written without `if`, at the rule (CheckRegoV1).
    expect(parseErrors('package p\np { input.a } { input.b }')).toEqual([
      'p.rego:2:1: rego_parse_error: `if` keyword is required before rule body',
      'p.rego:2:15: rego_parse_error: `if` keyword is required before rule body',
    ]);
    expect(parseError('package p\ndefault p := 1 { input.b }')).toBe(
      'p.rego:2:16: rego_parse_error: set cannot be used for rule name',
    );
  });
  it('rejects v0 syntax as OPA does: each keyword missing, at the rule', () => {
    expect(parseErrors('package p\np { true }')).toEqual([
      'p.rego:2:1: rego_parse_error: `if` keyword is required before rule body',
    ]);
    expect(parseErrors('package p\np[x] { x := 1 }')).toEqual([
      'p.rego:2:1: rego_parse_error: `if` keyword is required before rule body',
      'p.rego:2:1: rego_parse_error: `contains` keyword is required for partial set rules',
    ]);
    expect(parseErrors('package p\np contains x { x := 1 }')).toEqual([
      'p.rego:2:1: rego_parse_error: `if` keyword is required before rule body',
    ]);
  });
  it('var cannot be used for rule name', () => {
    expect(parseError('package p\npecakge p')).toBe('p.rego:2:1: rego_parse_error: var cannot be used for rule name');
    expect(parseError('package p\n{}')).toBe('p.rego:2:1: rego_parse_error: object cannot be used for rule name');
    expect(parseError('package p\ndefault p := 1\n{ input.b }')).toBe(
      'p.rego:3:1: rego_parse_error: set cannot be used for rule name',
    );
    expect(parseError('package p\n[1, 2]')).toBe('p.rego:2:1: rego_parse_error: array cannot be used for rule name');
    expect(parseError('package p\n{x | x := 1}')).toBe(
      'p.rego:2:1: rego_parse_error: setcomprehension cannot be used for rule name',
    );
    // A bare name is a query statement whose term is a var (OPA's ParseRuleFromExpr).
    expect(parseError('package p\np')).toBe('p.rego:2:1: rego_parse_error: var cannot be used for rule name');
    expect(parseError('package p\np.q.r')).toBe(
      'p.rego:2:1: rego_parse_error: rule must have value assignment and/or body declaration',
    );
  });
  it('else is refused on multi-value rules', () => {
    expect(parseError('package p\np contains 1 if { true } else := 2')).toBe(
      'p.rego:2:26: rego_parse_error: else keyword cannot be used on multi-value rules',
    );
  });
});

describe('expressions', () => {
  it('newline and ; separate expressions', () => {
    expect(q('x := 1; y := 2\nz := 3').map((e) => e.index)).toEqual([0, 1, 2]);
  });
  it('two expressions on one line: a query reads two statements, a rule body refuses them (OPA parseQuery)', () => {
    // OPA's ParseBody parses statements with requireSemi and appends their bodies; inside `{ }` parseQuery needs
    // `;` or a newline after each expression.
    expect(q('x := 1 y := 2').map((e) => e.index)).toEqual([0, 1]);
    expect(q('x := 1 y := 2')[1].terms).toEqual({ type: 'call', operator: op('assign'), args: [v('y'), n('2')] });
    expect(parseError('package p\np if { x := 1 y := 2 }')).toBe(
      'p.rego:2:15: rego_parse_error: unexpected identifier token: expected \\n or ; or }',
    );
    expect(() => parseQuery('x := 1 )')).toThrow(/^query:1:8: rego_parse_error: unexpected \) token\n/);
  });
  it('assign and unify are calls', () => {
    expect(q('x := 1')[0].terms).toEqual({ type: 'call', operator: op('assign'), args: [v('x'), n('1')] });
    expect(q('[a, b] = [1, 2]')[0].terms).toEqual({
      type: 'call',
      operator: op('eq'),
      args: [
        { type: 'array', value: [v('a'), v('b')] },
        { type: 'array', value: [n('1'), n('2')] },
      ],
    });
  });
  it('some declarations', () => {
    expect(q('some x, y')[0].terms).toEqual({ type: 'somedecl', vars: [v('x'), v('y')] });
  });
  it('some x in xs / some k, v in xs', () => {
    expect(q('some x in input.xs')[0].terms).toEqual({
      type: 'somein',
      value: v('x'),
      domain: ref(v('input'), s('xs')),
    });
    expect(q('some k, v in input.xs')[0].terms).toEqual({
      type: 'somein',
      key: v('k'),
      value: v('v'),
      domain: ref(v('input'), s('xs')),
    });
  });
  it('every with and without key', () => {
    const [e1] = q('every x in [1, 2] { x > 0 }');
    expect(e1.terms.type).toBe('every');
    if (e1.terms.type !== 'every') return;
    expect(e1.terms.key).toBeUndefined();
    expect(e1.terms.value).toEqual(v('x'));
    expect(e1.terms.body[0].terms).toEqual({ type: 'call', operator: op('gt'), args: [v('x'), n('0')] });
    const [e2] = q('every k, v in {"a": 1} { k != v }');
    if (e2.terms.type !== 'every') throw new Error('expected every');
    expect(e2.terms.key).toEqual(v('k'));
  });
  it('not', () => {
    const [e] = q('not input.deny');
    expect(e.negated).toBe(true);
    expect(e.terms).toEqual({ type: 'term', term: ref(v('input'), s('deny')) });
  });
  it('with (multiple)', () => {
    const [e] = q('data.p.allow with input as {"u": 1} with data.roles as [] with count as mock_count');
    expect(e.with.map((w) => w.target)).toEqual([ref(v('input')), ref(v('data'), s('roles')), ref(v('count'))]);
    expect(e.with[2].value).toEqual(v('mock_count'));
  });
  it('with on some … in and on every (OPA), not on a bare some declaration', () => {
    const [e] = q('some x in input.xs with input as {"xs": [1]}');
    expect(e.terms).toEqual({ type: 'somein', value: v('x'), domain: ref(v('input'), s('xs')) });
    expect(e.with.map((w) => w.target)).toEqual([ref(v('input'))]);
    expect(q('every x in input.xs { x > 0 } with input.xs as [1]')[0].with).toHaveLength(1);
    expect(() => parseQuery('some x with input as 1')).toThrow(/unexpected with keyword/);
  });
  it('x in xs and k, v in xs as expressions', () => {
    expect(q('1 in [1]')[0].terms).toEqual({
      type: 'call',
      operator: op('internal', 'member_2'),
      args: [n('1'), { type: 'array', value: [n('1')] }],
    });
    expect(q('"a", 1 in {"a": 1}')[0].terms).toMatchObject({ type: 'call', operator: op('internal', 'member_3') });
  });
  it('top-level call expression is a call expr', () => {
    expect(q('count(x, n)')[0].terms).toEqual({ type: 'call', operator: op('count'), args: [v('x'), v('n')] });
  });
});

describe('operator precedence (OPA)', () => {
  it('* binds tighter than +, left-associative', () => {
    expect(term('1 + 2 * 3 - 4')).toEqual(call('minus', call('plus', n('1'), call('mul', n('2'), n('3'))), n('4')));
  });
  it('% and / are factors', () => {
    expect(term('a / b % c')).toEqual(call('rem', call('div', v('a'), v('b')), v('c')));
  });
  it('& binds tighter than |', () => {
    expect(term('a | b & c')).toEqual(call('or', v('a'), call('and', v('b'), v('c'))));
  });
  it('comparison is below | and arithmetic', () => {
    expect(term('a + 1 == b | c')).toEqual(call('equal', call('plus', v('a'), n('1')), call('or', v('b'), v('c'))));
  });
  it('in is lowest', () => {
    expect(term('a == b in c')).toEqual(call(['internal', 'member_2'], call('equal', v('a'), v('b')), v('c')));
  });
  it('all comparison operators', () => {
    for (const [sym, name] of [
      ['==', 'equal'],
      ['!=', 'neq'],
      ['<', 'lt'],
      ['<=', 'lte'],
      ['>', 'gt'],
      ['>=', 'gte'],
    ]) {
      expect(term(`a ${sym} b`)).toEqual(call(name, v('a'), v('b')));
    }
  });
  it('parentheses group', () => {
    expect(term('(1 + 2) * 3')).toEqual(call('mul', call('plus', n('1'), n('2')), n('3')));
  });
  it('a minus sign starts a number only (OPA parseNumber); whitespace may follow it', () => {
    expect(term('-1.5')).toEqual(n('-1.5'));
    expect(term('1 - -2')).toEqual(call('minus', n('1'), n('-2')));
    expect(term('- 1')).toMatchObject({ type: 'number', value: '-1' });
    expect(term('x - 1')).toEqual(call('minus', v('x'), n('1')));
    expect(() => parseQuery('y := -x')).toThrow(
      /^query:1:7: rego_parse_error: unexpected identifier token: expected number\n/,
    );
    expect(() => parseQuery('y := -input.x')).toThrow(/unexpected identifier token: expected number/);
    expect(() => parseQuery('y := -(x)')).toThrow(
      /^query:1:7: rego_parse_error: unexpected \( token: expected number\n/,
    );
    // In a rule head the missing value is a second error at the same token (parseHead's illegal()).
    expect(parseErrors('package p\ny := -(1)')).toEqual([
      'p.rego:2:7: rego_parse_error: unexpected ( token: expected number',
      'p.rego:2:7: rego_parse_error: unexpected ( token: expected rule value term (e.g., y := <VALUE> { ... })',
    ]);
  });
  it('long operator chains parse; absurdly deep ASTs are refused (later stages recurse)', () => {
    const ok = Array.from({ length: 500 }, (_, i) => String(i)).join(' + ');
    expect(term(ok).type).toBe('call');
    const text = Array.from({ length: 20000 }, (_, i) => String(i)).join(' + ');
    expect(() => parseQuery(`x := ${text}`)).toThrow(/rego_parse_error: max parsing recursion depth exceeded/);
  });
});

describe('terms', () => {
  it('scalars', () => {
    expect(term('null')).toEqual({ type: 'null' });
    expect(term('true')).toEqual({ type: 'boolean', value: true });
    expect(term('false')).toEqual({ type: 'boolean', value: false });
  });
  it('numbers keep their literal text (arbitrary precision)', () => {
    expect(term('12345678901234567890123')).toEqual(n('12345678901234567890123'));
    expect(term('1e400')).toEqual(n('1e400'));
    expect(term('0.5E-3')).toEqual(n('0.5E-3'));
    expect(() => parseQuery('x := 01')).toThrow(/leading zero/);
  });
  it('a number may start with a dot, after a sign and whitespace too, and keeps the text OPA builds for it', () => {
    // OPA's parseNumber joins the sign, the dot and the number token without the whitespace between them.
    expect(term('.5')).toEqual(n('.5'));
    expect(term('-.5')).toEqual(n('-.5'));
    expect(term('- .5')).toEqual(n('-.5'));
    expect(term('. 5')).toEqual(n('.5'));
    expect(term('- . 25e3')).toEqual(n('-.25e3'));
    // No leading-zero check after a dot; the sign alone keeps it.
    expect(term('.007')).toEqual(n('.007'));
    expect(term('-.0')).toEqual(n('-.0'));
    expect(() => parseQuery('x := -007')).toThrow(/unexpected number token: expected number without leading zero/);
    expect(term('[.5, -.5]')).toEqual({ type: 'array', value: [n('.5'), n('-.5')] });
    expect(term('1 - .5')).toEqual(call('minus', n('1'), n('.5')));
  });
  it('a dot not followed by a number, or before a number with a fraction, is not a number', () => {
    expect(parseError('x := .a')).toMatch(/1:7: rego_parse_error: unexpected identifier token: expected number$/);
    expect(parseError('x := -.a')).toMatch(/1:8: rego_parse_error: unexpected identifier token: expected number$/);
    expect(parseError('x := ..5')).toMatch(/1:7: rego_parse_error: unexpected \. token: expected number$/);
    expect(parseError('x := .5.25')).toMatch(/1:7: rego_parse_error: unexpected number token: invalid float$/);
    expect(parseError('x := .5e')).toMatch(/rego_parse_error: expected exponent$/);
  });
  it('strings with escapes, including surrogate pairs', () => {
    expect(term('"a\\n\\t\\"\\\\\\/\\u00e9\\ud83d\\ude00"')).toEqual(s('a\n\t"\\/é😀'));
    // A bad escape is the scanner's error; one JSON does not decode is the parser's (OPA parseString).
    expect(() => parseQuery('x := "\\q"')).toThrow(/illegal escape sequence/);
    expect(() => parseQuery('x := "\\u00zz"')).toThrow(/illegal string literal/);
    expect(() => parseQuery('x := "abc')).toThrow(/non-terminated string/);
  });
  it('a ref continues a parenthesised call or collection, not a scalar or ref (OPA parseRef)', () => {
    expect(term('(input.a | input.b)[_]')).toEqual(
      ref(call('or', ref(v('input'), s('a')), ref(v('input'), s('b'))), { type: 'var', value: '$0', wildcard: true }),
    );
    expect(term('([1, 2])[0]')).toEqual(ref({ type: 'array', value: [n('1'), n('2')] }, n('0')));
    expect(term('(x).y')).toEqual(ref(v('x'), s('y')));
    expect(() => parseQuery('x := (input.a)[0]')).toThrow(/illegal ref \(head cannot be ref\)/);
    expect(() => parseQuery('x := (1)[0]')).toThrow(/illegal ref \(head cannot be number\)/);
    // In a rule body the `[0]` after whitespace is a second expression on the line; a query reads it as a statement.
    expect(() => parseModule('p.rego', 'package p\np if { x := (input.a) [0] }')).toThrow(
      /unexpected \[ token: expected \\n or ; or \}/,
    );
    expect(parseQuery('x := (input.a) [0]')).toHaveLength(2);
  });
  it('raw strings', () => {
    expect(term('`a\\nb\nc`')).toEqual({ type: 'string', value: 'a\\nb\nc', raw: true });
  });
  it('vars and wildcards', () => {
    expect(term('foo')).toEqual(v('foo'));
    const [e] = q('[_, _] = [1, 2]');
    if (e.terms.type !== 'call') throw new Error('call expected');
    expect(e.terms.args[0]).toEqual({
      type: 'array',
      value: [
        { type: 'var', value: '$0', wildcard: true },
        { type: 'var', value: '$1', wildcard: true },
      ],
    });
  });
  it('bare input/data are refs', () => {
    expect(term('input')).toEqual(ref(v('input')));
    expect(term('data')).toEqual(ref(v('data')));
  });
  it('refs with dots and brackets', () => {
    expect(term('input.a["b"][x]')).toEqual(ref(v('input'), s('a'), s('b'), v('x')));
    expect(term('data.x[_]')).toEqual(ref(v('data'), s('x'), { type: 'var', value: '$0', wildcard: true }));
    expect(term('input.in.if')).toEqual(ref(v('input'), s('in'), s('if')));
    expect(term('arr[i + 1]')).toEqual(ref(v('arr'), call('plus', v('i'), n('1'))));
  });
  it('a ref continuation must be adjacent (whitespace ends it)', () => {
    expect(q('x := y\n[a] = z')).toHaveLength(2);
  });
  it('arrays, objects with any key, sets', () => {
    expect(term('[1, "a", [2]]')).toEqual({
      type: 'array',
      value: [n('1'), s('a'), { type: 'array', value: [n('2')] }],
    });
    expect(term('{"a": 1, 2: [3], [4]: x,}')).toEqual({
      type: 'object',
      value: [
        [s('a'), n('1')],
        [n('2'), { type: 'array', value: [n('3')] }],
        [{ type: 'array', value: [n('4')] }, v('x')],
      ],
    });
    expect(term('{1, 2}')).toEqual({ type: 'set', value: [n('1'), n('2')] });
    expect(term('set()')).toEqual({ type: 'set', value: [] });
    expect(term('{}')).toEqual({ type: 'object', value: [] });
    expect(term('{1 + 2, 3}')).toEqual({ type: 'set', value: [call('plus', n('1'), n('2')), n('3')] });
  });
  it('comprehensions', () => {
    expect(term('[x | some x in xs]')).toEqual({
      type: 'arraycomprehension',
      term: v('x'),
      body: [{ index: 0, negated: false, terms: { type: 'somein', value: v('x'), domain: v('xs') }, with: [] }],
    });
    expect(term('{x | x := 1}')).toMatchObject({ type: 'setcomprehension', term: v('x') });
    expect(term('{k: v | some k, v in o}')).toMatchObject({ type: 'objectcomprehension', key: v('k'), value: v('v') });
    expect(term('[x | x := 1; x > 0]')).toMatchObject({
      type: 'arraycomprehension',
      body: [{ index: 0 }, { index: 1 }],
    });
  });
  it('a set holding an or-call when no comprehension body parses', () => {
    expect(term('{a | b, c}')).toEqual({ type: 'set', value: [call('or', v('a'), v('b')), v('c')] });
  });
  it('comprehension heads written with operators are refused as OPA refuses them (issue #4215), saying how to write them', () => {
    for (const src of [
      '[(a * b) % 97 | some a in xs]',
      '[x + 1 | x := xs[_]]',
      '[x * 2 == y & z | some x in xs]',
      '{x - 1 | some x in xs}',
      '{k: v * 2 | some k, v in o}',
      '{k + 1: v * 2 | some k, v in o}',
    ]) {
      expect(() => term(src), src).toThrow(
        /query:1:\d+: rego_parse_error: comprehension head written with operators.*wrap the head in parentheses/,
      );
    }
  });
  it('parenthesised heads and single-term heads are comprehensions, as in OPA', () => {
    const someIn = (val: string, dom: string) => ({
      index: 0,
      negated: false,
      terms: { type: 'somein', value: v(val), domain: v(dom) },
      with: [],
    });
    expect(term('[((a * b) % 97) | some a in xs]')).toEqual({
      type: 'arraycomprehension',
      term: call('rem', call('mul', v('a'), v('b')), n('97')),
      body: [someIn('a', 'xs')],
    });
    expect(term('{(x - 1) | some x in xs}')).toMatchObject({
      type: 'setcomprehension',
      term: call('minus', v('x'), n('1')),
      body: [someIn('x', 'xs')],
    });
    expect(term('{k: (v * 2) | some k, v in o}')).toMatchObject({
      type: 'objectcomprehension',
      key: v('k'),
      value: call('mul', v('v'), n('2')),
    });
    expect(term('[(0 - x) | some x in xs]')).toMatchObject({
      type: 'arraycomprehension',
      term: call('minus', n('0'), v('x')),
    });
    expect(term('{(a + b): c | some a, b in o; c := 1}')).toMatchObject({
      type: 'objectcomprehension',
      key: call('plus', v('a'), v('b')),
    });
  });
  it('where OPA reads a literal holding an or-call, so do we', () => {
    // `|` is set union: `[s1 - s2 | s3]` is a one-element array in OPA, not a comprehension.
    expect(term('[s1 - s2 | s3]')).toEqual({
      type: 'array',
      value: [call('or', call('minus', v('s1'), v('s2')), v('s3'))],
    });
    expect(term('{s1 - s2 | s3}')).toEqual({
      type: 'set',
      value: [call('or', call('minus', v('s1'), v('s2')), v('s3'))],
    });
    expect(term('{"k": s1 - s2 | s3}')).toEqual({
      type: 'object',
      value: [[s('k'), call('or', call('minus', v('s1'), v('s2')), v('s3'))]],
    });
  });
  it('an operator head with a broken body reports the body error', () => {
    expect(() => parseQuery('x := [a + 1 | some a in xs; a >]')).toThrow(/unexpected \] token/);
    expect(() => parseQuery('x := [a + | some a in xs]')).toThrow(/unexpected or token/);
  });
  it('calls: builtins, dotted builtins, data functions, output-arg form', () => {
    expect(term('count(x)')).toEqual(call('count', v('x')));
    expect(term('array.concat(a, b)')).toEqual(call(['array', 'concat'], v('a'), v('b')));
    expect(term('data.pkg.f(x)')).toEqual({ type: 'call', operator: ref(v('data'), s('pkg'), s('f')), args: [v('x')] });
    expect(q('f(x, y)')[0].terms).toEqual({ type: 'call', operator: op('f'), args: [v('x'), v('y')] });
  });
  it('refs on call results', () => {
    expect(term('f(x).y[0]')).toEqual(ref(call('f', v('x')), s('y'), n('0')));
  });
});

describe('comments and annotations', () => {
  it('keeps comments with locations', () => {
    const m = parseModule('c.rego', '# top\npackage p # trailing\n\np := 1 # value');
    expect(m.comments.map((c) => [c.text, c.location.row, c.location.col])).toEqual([
      [' top', 1, 1],
      [' trailing', 2, 11],
      [' value', 4, 8],
    ]);
  });
  it('METADATA before package is package-scoped; before a rule rule-scoped', () => {
    const m = parseModule(
      'a.rego',
      [
        '# METADATA',
        '# title: The package',
        '# description: Guards things',
        'package p',
        '',
        '# METADATA',
        '# title: Allow',
        '# entrypoint: true',
        '# authors:',
        '# - Jane Doe <jane@example.com>',
        '# related_resources:',
        '# - https://example.com',
        '# custom:',
        '#   rule_id: R-1',
        '#   reason_code: deny.tool',
        'allow if input.ok',
        '',
        '# METADATA',
        '# scope: document',
        'deny contains 1 if input.bad',
      ].join('\n'),
    );
    expect(strip(m.annotations)).toEqual([{ scope: 'package', title: 'The package', description: 'Guards things' }]);
    expect(strip(m.rules[0].annotations)).toEqual([
      {
        scope: 'rule',
        title: 'Allow',
        entrypoint: true,
        authors: [{ name: 'Jane Doe', email: 'jane@example.com' }],
        related_resources: [{ ref: 'https://example.com' }],
        custom: { rule_id: 'R-1', reason_code: 'deny.tool' },
      },
    ]);
    expect(m.rules[0].annotations?.[0].location?.row).toBe(6);
    expect(strip(m.rules[1].annotations)).toEqual([{ scope: 'document' }]);
  });
  it('bad METADATA is a parse error', () => {
    expect(parseError('# METADATA\n# scope: nowhere\npackage p')).toBe(
      "p.rego:1:1: rego_parse_error: invalid annotation scope 'nowhere'",
    );
    expect(parseError('package p\n# METADATA\n# title: [unclosed\np := 1')).toMatch(
      /^p\.rego:\d+:1: rego_parse_error: yaml/,
    );
  });
});

describe('locations', () => {
  it('every node has file,row,col and each expr its index', () => {
    const m = parseModule('loc.rego', 'package p\n\nallow if {\n  x := input.a\n  x > 1\n}');
    const r = m.rules[0];
    expect(r.location).toMatchObject({ file: 'loc.rego', row: 3, col: 1 });
    const e: Expr = r.body[1];
    expect(e.index).toBe(1);
    expect(e.location).toMatchObject({ file: 'loc.rego', row: 5, col: 3, text: 'x > 1' });
    if (e.terms.type !== 'call') throw new Error('call expected');
    expect(e.terms.args[0].location).toMatchObject({ row: 5, col: 3 });
    expect(e.terms.args[1].location).toMatchObject({ row: 5, col: 7 });
  });
});

describe('every node is located', () => {
  it('terms, exprs, heads, rules, withs, imports and the package all carry file/row/col', () => {
    const m = parseModule(
      'all.rego',
      [
        'package a.b',
        'import data.lib as l',
        'default d := {"k": [1, {2}]}',
        'f(x) := y if { y := x + count([z | some z in input.zs]) }',
        'p contains v if { some k, v in input.o; not k == "x" with input as {} }',
        'q[k] := {a: b | some a, b in input.m} if { k := "key"; every e in input.es { e > 0 } }',
        'r := 1 if false else := 2',
        's if { some u, w; u := 1; w := 0 - u }',
      ].join('\n'),
    );
    const missing: string[] = [];
    const visit = (node: unknown, path: string): void => {
      if (Array.isArray(node)) return node.forEach((x, i) => visit(x, `${path}[${i}]`));
      if (!node || typeof node !== 'object') return;
      const o = node as Record<string, unknown>;
      // ExprTerms (an expression's `terms`) are not nodes of their own: the Expr carries the location.
      const needs =
        'type' in o
          ? !path.endsWith('.terms')
          : 'index' in o || 'head' in o || 'reference' in o || ('target' in o && 'value' in o);
      if (needs) {
        const loc = o.location as { file?: string; row?: number; col?: number } | undefined;
        if (loc?.file !== 'all.rego' || !(loc.row! >= 1) || !(loc.col! >= 1)) missing.push(path);
      }
      for (const [k, v] of Object.entries(o)) if (k !== 'location') visit(v, `${path}.${k}`);
    };
    visit(m.rules, 'rules');
    visit(m.imports, 'imports');
    visit(m.package, 'package');
    expect(missing).toEqual([]);
  });
});

describe('errors', () => {
  it('unexpected } token', () => {
    expect(parseError('package p\np if { x := 1 }}')).toBe('p.rego:2:16: rego_parse_error: unexpected } token');
  });
  it('non-terminated set', () => {
    expect(parseError('package p\np if { x := {1 := 2} }')).toBe(
      'p.rego:2:16: rego_parse_error: unexpected assign token: non-terminated set',
    );
  });
  it('empty body', () => {
    // OPA's parseRules reads `{}` after `if` as a literal first: an empty object, a body that is true.
    const rule = parseModule('p.rego', 'package p\np if {}').rules[0];
    expect(rule.body).toHaveLength(1);
    expect(rule.body[0].terms).toMatchObject({ type: 'term', term: { type: 'object', value: [] } });
    expect(() => parseModule('p.rego', 'package p\np if { true }\nq if { }\nr := 1 if {\n}')).not.toThrow();
    expect(() => parseModule('p.rego', 'package p\np contains 1 if {} == {}')).not.toThrow();
    expect(() => parseModule('p.rego', 'package p\np {}', { regoVersion: 0 })).toThrow(
      'p.rego:2:4: rego_parse_error: found empty body',
    );
  });
  it('keywords cannot be vars', () => {
    expect(() => parseQuery('x := if')).toThrow(/unexpected if keyword/);
  });
  it('illegal characters', () => {
    expect(parseError('package p\np := 1 ^ 2')).toBe('p.rego:2:8: rego_parse_error: illegal token');
  });
  it('10k nested brackets is an error, not a crash', () => {
    const deep = '['.repeat(10000) + ']'.repeat(10000);
    // OPA's text (ErrMaxParsingRecursionDepthExceeded), at the token where the limit is hit.
    expect(() => parseQuery(`x := ${deep}`)).toThrow(
      /^query:1:\d+: rego_parse_error: max parsing recursion depth exceeded\n/,
    );
    const deepBraces = '{'.repeat(10000);
    expect(() => parseQuery(`x := ${deepBraces}`)).toThrow(RegoErrors);
    const deepParens = '('.repeat(10000) + '1' + ')'.repeat(10000);
    expect(() => parseQuery(`x := ${deepParens}`)).toThrow(/max parsing recursion depth exceeded/);
  });
  it('nesting just under the limit parses', () => {
    // Each array level is two counted parser calls (parseArray, parseTerm), as in OPA's enter() accounting.
    const d = MAX_NESTING_DEPTH / 2 - 10;
    expect(() => parseQuery(`x := ${'['.repeat(d)}${']'.repeat(d)}`)).not.toThrow();
    const over = MAX_NESTING_DEPTH / 2 + 10;
    expect(() => parseQuery(`x := ${'['.repeat(over)}${']'.repeat(over)}`)).toThrow(
      /max parsing recursion depth exceeded/,
    );
  });
  it('nested set/object braces do not backtrack exponentially', () => {
    const d = 60;
    const t0 = Date.now();
    expect(() => parseQuery(`x := ${'{'.repeat(d)}1${'}'.repeat(d)}`)).not.toThrow();
    expect(() => parseQuery(`x := ${'{1: '.repeat(d)}1${'}'.repeat(d)}`)).not.toThrow();
    // Generous bound: a regression to exponential backtracking would take minutes, not seconds.
    expect(Date.now() - t0).toBeLessThan(5000);
  });
  it('RegoErrors carries file:row:col', () => {
    try {
      parseModule('x.rego', 'package p\n\np := [1,');
      throw new Error('no error');
    } catch (e) {
      const err = (e as RegoErrors).errors[0];
      expect(err.location).toMatchObject({ file: 'x.rego', row: 3 });
    }
  });
});
