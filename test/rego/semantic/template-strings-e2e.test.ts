// Template strings (`$"...{expr}..."`, raw `` $`...` ``) compiled by our pipeline, linked to Wasm and evaluated by
// the unmodified opa-wasm host with our host builtins. Expected values follow OPA's semantics: the compiler
// lowers each string to internal.template_string with every expression in a set comprehension
// (v1/ast/compile.go rewriteTemplateString), and the builtin writes strings raw, other values as Rego terms,
// an undefined expression as `<undefined>`, and fails on an expression with more than one value
// (v1/topdown/template_string.go over print.go).
import { describe, expect, it } from 'vitest';
import { compileErrors, loadModule as load } from './fixtures/wasm-module.ts';
import { RegoErrors } from '../../../src/rego/errors.ts';
import { capabilitiesDocument, readCapabilities } from '../../../src/rego/builtins/capabilities.ts';
import { compileBundle, evaluateQuery, planSources } from '../../../src/rego/index.ts';

describe('template strings evaluate as OPA renders them', () => {
  it('text and expressions; raw multi-line form; escapes', async () => {
    const src = `package t
plain := $"hello {input.name}!"
raw := $\`first line
second {input.name} \\{not an expression}\`
escapes := $"\\{x} \\"q\\" tab\\tend \\u00e9 back\\\\slash"
empty := $""
only_text := $"no expressions"
adjacent := $"{input.name}{input.name}"
`;
    const ev = await load(src, ['t']);
    expect(ev('t', { name: 'bob' })).toEqual({
      plain: 'hello bob!',
      raw: 'first line\nsecond bob {not an expression}',
      escapes: '{x} "q" tab\tend é back\\slash',
      empty: '',
      only_text: 'no expressions',
      adjacent: 'bobbob',
    });
  });

  it("what OPA's scanner reads inside and around expressions: strings with braces, comments, \\} kept raw", async () => {
    const src = `package t
braces := $"{"}"}{\`{\`} {concat("", ["{", "}"])}"
sets := $"{{1}} {{"k": input.name}}"
commented := $"a {input.name # the name
} b {# before
input.name}"
raw_brace := $\`\\{x\\} \\y\`
nested := $\`outer {$\`inner
{input.name}\`} end\`
`;
    const ev = await load(src, ['t']);
    expect(ev('t', { name: 'bob' })).toEqual({
      braces: '}{ {}',
      sets: '{1} {"k": "bob"}',
      commented: 'a bob b bob',
      raw_brace: '{x\\} \\y',
      nested: 'outer inner\nbob end',
    });
  });

  it('numbers, booleans, null, strings raw; arrays, objects and sets as Rego terms', async () => {
    const src = `package t
scalars := $"{input.n} {input.f} {1.50} {true} {null} {input.b} {"lit"}"
big := $"{12345678901234567890} {x}" if x := 98765432109876543210
composite := $"{input.arr} {input.obj} {{3, 1, "a"}} {set()} {[]} {{}}"
nested := $"{input.deep}"
`;
    const ev = await load(src, ['t']);
    expect(
      ev('t', { n: 7, f: 2.5, b: false, arr: [1, 'a', null], obj: { z: 1, a: 'x' }, deep: { k: [{ s: 'v' }] } }),
    ).toEqual({
      scalars: '7 2.5 1.50 true null false lit',
      big: '12345678901234567890 98765432109876543210',
      composite: '[1, "a", null] {"a": "x", "z": 1} {1, 3, "a"} set() [] {}',
      nested: '{"k": [{"s": "v"}]}',
    });
  });

  it('an undefined expression is <undefined>; the string itself stays defined', async () => {
    const src = `package t
missing := $"a={input.nope} b={input.x.y.z} c={f(1)}"
f(x) := x if x > 5
`;
    const ev = await load(src, ['t']);
    expect(ev('t', {})).toEqual({ missing: 'a=<undefined> b=<undefined> c=<undefined>' });
  });

  it('an expression with more than one value ends the evaluation with OPA error text', async () => {
    const src = `package t
many := $"{input.xs[_]}"
one := $"{input.xs[0]}"
`;
    const ev = await load(src, ['t/one', 't/many']);
    expect(ev('t/one', { xs: [1, 2] })).toBe('1');
    expect(ev('t/many', { xs: [1] })).toBe('1');
    expect(() => ev('t/many', { xs: [1, 2] })).toThrow(
      'eval_conflict_error: template-strings must not produce multiple outputs',
    );
  });

  it('in rule heads, function bodies and results, comprehensions, else, partial sets and with', async () => {
    const src = `package t
greet(name) := $"hi {name}"
called := greet("ann")
fn_body(x) := s if s := $"<{x * 2}>"
doubled := fn_body(4)
listed := [$"#{i}:{v}" | some i, v in input.xs]
keyed := {$"k{i}": $"v{v}" | some i, v in input.xs}
msgs contains $"deny {x}" if some x in input.xs
chosen := $"big {input.n}" if input.n > 10
else := $"small {input.n}"
replaced := s if s := $"{input.name}" with input.name as "zed"
hole_with := $"{input.name with input.name as "amy"} {input.name}"
in_body if $"{input.name}" == "bob"
nested := $"outer {$"inner {input.name}"}"
calls := $"{count(input.xs)} {upper(input.name)} {input.name == "bob"}"
`;
    const ev = await load(src, ['t']);
    expect(ev('t', { xs: ['a', 'b'], n: 3, name: 'bob' })).toEqual({
      called: 'hi ann',
      doubled: '<8>',
      listed: ['#0:a', '#1:b'],
      keyed: { k0: 'va', k1: 'vb' },
      msgs: ['deny a', 'deny b'],
      chosen: 'small 3',
      replaced: 'zed',
      hole_with: 'amy bob',
      in_body: true,
      nested: 'outer inner bob',
      calls: '2 BOB true',
    });
  });

  it('input read only inside template strings is kept by the input projection (metadata.input_paths)', async () => {
    const b = await compileBundle({
      sources: [{ file: 't.rego', text: 'package t\np := $"hi {input.user.name} {$"{input.n}"}"\n' }],
      entrypoints: ['t/p'],
      recordInputPaths: true,
    });
    expect(b.manifest.metadata?.input_paths).toEqual([['n'], ['user', 'name']]);
  });

  it('a template string as an ad-hoc query term', async () => {
    const rs = await evaluateQuery({
      sources: [{ file: 't.rego', text: 'package t\nv := 3\n' }],
      query: 'x := $"v={data.t.v}"',
    });
    expect(rs).toEqual([{ x: 'v=3' }]);
  });
});

describe('compile errors and capabilities', () => {
  it('a call to a relation builtin in an expression (OPA: may cause multiple outputs)', () => {
    expect(compileErrors('package t\np := $"{walk(input)}"\n')).toEqual([
      "t.rego:2:9: rego_compile_error: illegal call to relation built-in 'walk' that may cause multiple outputs",
    ]);
  });

  it('a variable nothing binds is undeclared (OPA: compile error at the expression)', () => {
    expect(compileErrors('package t\np := $"{y}"\n')).toEqual(['t.rego:2:9: rego_compile_error: var y is undeclared']);
    expect(compileErrors('package t\np := $"a {y + z} b"\n')).toEqual([
      't.rego:2:11: rego_compile_error: var y is undeclared',
      't.rego:2:11: rego_compile_error: var z is undeclared',
    ]);
    expect(compileErrors('package t\nf(a) := $"{a} {b}"\n')).toEqual([
      't.rego:2:16: rego_compile_error: var b is undeclared',
    ]);
  });

  it('variables the body binds, later or in enclosing comprehensions, are fine', () => {
    expect(compileErrors('package t\np contains $"{x}" if some x in input.xs\n')).toEqual([]);
    expect(compileErrors('package t\np := [$"{i}:{v}" | some i, v in input.xs]\n')).toEqual([]);
    expect(compileErrors('package t\np if {\n\t$"{x}" == "1"\n\tx = 1\n}\n')).toEqual([]);
  });

  it('our capabilities document lists the feature and the builtin, as OPA 1.x does', () => {
    const doc = capabilitiesDocument();
    expect(doc.features).toContain('template_strings');
    expect(doc.builtins.find((b) => b.name === 'internal.template_string')).toEqual({
      name: 'internal.template_string',
      decl: { type: 'function', args: [{ type: 'array', dynamic: { type: 'any' } }], result: { type: 'string' } },
    });
  });

  const src = [{ file: 't.rego', text: 'package t\np := $"x{input.a}"\n' }];
  const plan = (doc: unknown) => planSources(src, ['t/p'], undefined, readCapabilities(doc));
  const message = (f: () => unknown): string => {
    try {
      f();
    } catch (e) {
      if (e instanceof RegoErrors) return e.errors.map((x) => x.format().split('\n')[0]).join('\n');
      throw e;
    }
    return 'no error';
  };

  it('a capabilities file without template_strings refuses them in the parser, with OPA text', () => {
    const doc = capabilitiesDocument();
    // OPA's parseTemplateString refuses it, then parseHead adds its error about the value it did not get.
    const refused = [
      't.rego:2:6: rego_parse_error: template strings are not supported by current capabilities',
      't.rego:2:6: rego_parse_error: unexpected template-string-part token: expected rule value term (e.g., p := <VALUE> { ... })',
    ].join('\n');
    expect(message(() => plan({ ...doc, features: ['rego_v1'] }))).toBe(refused);
    expect(message(() => plan({ builtins: doc.builtins }))).toBe(refused);
  });

  it('a capabilities file with the feature but without the builtin refuses them in the compiler', () => {
    const doc = capabilitiesDocument();
    const builtins = doc.builtins.filter((b) => b.name !== 'internal.template_string');
    expect(message(() => plan({ ...doc, builtins }))).toBe(
      't.rego:2:6: rego_compile_error: template-strings are not supported',
    );
  });

  it('our own capabilities document compiles them', () => {
    expect(message(() => plan(capabilitiesDocument()))).toBe('no error');
  });
});
