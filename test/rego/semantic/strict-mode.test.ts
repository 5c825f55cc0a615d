// OPA's compiler strict mode (`opa check --strict`: OPA docs "Strict Mode", v1/ast/compile.go WithStrict) and
// the checks Rego v1 modules get without it, in Rego v1 and v0 (--v0-compatible) modules. Messages and codes
// are OPA's (v1/ast/compile.go, check.go); rows and columns are worked out by hand from the sources: an
// import's location is its `import` keyword, an unused local's its assignment, an unused argument's the head.
import { describe, expect, it } from 'vitest';
import { parseModule } from '../../../src/rego/ast/index.ts';
import { RegoErrors } from '../../../src/rego/errors.ts';
import { compileModules } from '../../../src/rego/semantic/index.ts';

interface Source {
  file?: string;
  text: string;
  v0?: boolean;
}

function errorsOf(sources: Source | Source[], strict: boolean): string[] {
  const list = Array.isArray(sources) ? sources : [sources];
  const modules = list.map((s, i) => parseModule(s.file ?? `p${i}.rego`, s.text, { regoVersion: s.v0 ? 0 : 1 }));
  try {
    compileModules(modules, { strict });
  } catch (e) {
    if (e instanceof RegoErrors) return e.errors.map((x) => x.format());
    throw e;
  }
  return [];
}

const strict = (s: Source | Source[]): string[] => errorsOf(s, true);
const lax = (s: Source | Source[]): string[] => errorsOf(s, false);
const unusedArg = (name: string): string => `unused argument ${name}. (hint: use _ (wildcard variable) instead)`;

describe('unused imports (strict only)', () => {
  const text = `package p
import data.users
import data.roles as r
import input.request
import rego.v1
import future.keywords.in

allow if input.request.method == "GET"
`;

  it('reports each data/input import no rule refers to, as OPA prints it; never future/rego imports', () => {
    // `input.request.method` is a ref into input, not a use of the import named request.
    expect(strict({ text })).toEqual([
      'p0.rego:2:1: rego_compile_error: import data.users unused',
      'p0.rego:3:1: rego_compile_error: import data.roles as r unused',
      'p0.rego:4:1: rego_compile_error: import input.request unused',
    ]);
    expect(lax({ text })).toEqual([]);
  });

  it('in a Rego v0 module too', () => {
    expect(strict({ text: 'package p\nimport data.users\nallow { input.x }\n', v0: true })).toEqual([
      'p0.rego:2:1: rego_compile_error: import data.users unused',
    ]);
  });

  it('an import is used by a call, a some/every domain, a with value or a rule head', () => {
    const policy = `package p
import data.lists.allowed
import data.lists.blocked as deny_list
import data.helpers
import input.user
import data.limits

check(name) := helpers.normalize(name)

r if {
  some x in allowed
  x == user
}

s := v if {
  v := 1 with input as deny_list
}

t := limits
`;
    const helpers = 'package helpers\nnormalize(s) := lower(s)\n';
    expect(strict([{ text: policy }, { text: helpers }])).toEqual([]);
  });

  it('a function argument or a local of the same name hides the import', () => {
    const text = `package p
import data.a
import data.b

f(a) := a

r if {
  b := 1
  b == 1
}
`;
    expect(strict({ text })).toEqual([
      'p0.rego:2:1: rego_compile_error: import data.a unused',
      'p0.rego:3:1: rego_compile_error: import data.b unused',
    ]);
    expect(lax({ text })).toEqual([]);
  });

  it('modules come by file name', () => {
    const b = { file: 'b.rego', text: 'package b\nimport data.x\nq := 1\n' };
    const a = { file: 'a.rego', text: 'package a\nimport data.y\np := 1\n' };
    expect(strict([b, a])).toEqual([
      'a.rego:2:1: rego_compile_error: import data.y unused',
      'b.rego:2:1: rego_compile_error: import data.x unused',
    ]);
  });
});

describe('input and data as rule or variable names (Rego v1 always; v0 strict)', () => {
  const v1 = `package p
input := 1

r if {
  data := {"a": 1}
  data.a == 1
}
`;
  const v0 = `package p
input := 1

r {
  data := {"a": 1}
  data.a == 1
}
`;
  const expected = [
    'p0.rego:2:1: rego_compile_error: rules must not shadow input (use a different rule name)',
    'p0.rego:5:3: rego_compile_error: variables must not shadow data (use a different variable name)',
  ];

  it('are errors of a Rego v1 module, with or without strict mode', () => {
    expect(lax({ text: v1 })).toEqual(expected);
    expect(strict({ text: v1 })).toEqual(expected);
  });

  it('are allowed in a Rego v0 module unless strict, or unless it imports rego.v1', () => {
    expect(lax({ text: v0, v0: true })).toEqual([]);
    expect(strict({ text: v0, v0: true })).toEqual(expected);
    const compat = 'package p\nimport rego.v1\n\nr if {\n  input := 2\n  input == 2\n}\n';
    expect(lax({ text: compat, v0: true })).toEqual([
      'p0.rego:5:3: rego_compile_error: variables must not shadow input (use a different variable name)',
    ]);
  });

  it('come after the unused imports, whose stage stops the compile first', () => {
    const text = 'package p\nimport data.users\ninput := 1\n';
    expect(strict({ text })).toEqual(['p0.rego:2:1: rego_compile_error: import data.users unused']);
    expect(lax({ text })).toEqual([
      'p0.rego:3:1: rego_compile_error: rules must not shadow input (use a different rule name)',
    ]);
  });
});

describe('duplicate imports (Rego v1 always; v0 strict)', () => {
  it('an import whose name an earlier one has, naming the earlier import', () => {
    const text = `package p
import data.foo
import data.bar.foo
import data.baz as foo
import data.qux

r if foo == qux
`;
    const expected = [
      'p0.rego:3:1: rego_compile_error: import must not shadow import data.foo',
      'p0.rego:4:1: rego_compile_error: import must not shadow import data.foo',
    ];
    expect(lax({ text })).toEqual(expected);
    expect(strict({ text })).toEqual(expected);
    const aliasFirst = 'package p\nimport data.bar as foo\nimport data.foo\n\nr if foo\n';
    expect(lax({ text: aliasFirst })).toEqual([
      'p0.rego:3:1: rego_compile_error: import must not shadow import data.bar as foo',
    ]);
  });

  it('in a Rego v0 module only in strict mode, unless it imports rego.v1', () => {
    const text = 'package p\nimport data.a\nimport data.b.a\n\nr { a }\n';
    expect(lax({ text, v0: true })).toEqual([]);
    expect(strict({ text, v0: true })).toEqual([
      'p0.rego:3:1: rego_compile_error: import must not shadow import data.a',
    ]);
    const compat = 'package p\nimport rego.v1\nimport data.a\nimport data.b.a\n\nr if a\n';
    expect(lax({ text: compat, v0: true })).toEqual([
      'p0.rego:4:1: rego_compile_error: import must not shadow import data.a',
    ]);
  });
});

describe('unused assigned vars (strict only)', () => {
  it('in rule bodies, comprehensions and every bodies, at the assignment', () => {
    const text = `package p
r if {
  x := 1
  y := 2
  z := x + 3
}
s := v if {
  v := [w | w := 1; u := 2]
}
t if {
  every i in [1] { j := i }
}
`;
    // s: the comprehension's error silences the check of the body around it (v is the head's anyway).
    expect(strict({ text })).toEqual([
      'p0.rego:4:3: rego_compile_error: assigned var y unused',
      'p0.rego:5:3: rego_compile_error: assigned var z unused',
      'p0.rego:8:21: rego_compile_error: assigned var u unused',
      'p0.rego:11:20: rego_compile_error: assigned var j unused',
    ]);
    expect(lax({ text })).toEqual([]);
  });

  it('a var read by the head, a later expression, a nested comprehension or a with value is used', () => {
    const text = `package p
q := x if {
  x := 1
}
s contains e if {
  e := 2
}
t if {
  a := 1
  b := [c | c := a]
  count(b) > 0
  d := {"k": 1}
  input.k == 1 with input as d
  _ := 5
}
`;
    expect(strict({ text })).toEqual([]);
  });

  it('a body silenced by an unused var of a comprehension inside it reports only that one', () => {
    const text = 'package p\nr if {\n  x := 2\n  y := {z | z := 2 * x; a := 2}\n}\n';
    expect(strict({ text })).toEqual(['p0.rego:4:25: rego_compile_error: assigned var a unused']);
  });

  it('come in the order of the generated names, which sort as strings', () => {
    const names = Array.from({ length: 11 }, (_, i) => `v${i}`);
    const text = [
      'package p',
      'r if {',
      ...names.map((n, i) => `  ${n} := ${i}`),
      `  ${names.slice(0, 9).join(' + ')} > 0`,
      '}',
      '',
    ].join('\n');
    // v9 and v10 are __local9__ and __local10__: "__local10__" sorts first.
    expect(strict({ text })).toEqual([
      'p0.rego:13:3: rego_compile_error: assigned var v10 unused',
      'p0.rego:12:3: rego_compile_error: assigned var v9 unused',
    ]);
  });

  it('in a Rego v0 module too', () => {
    expect(strict({ text: 'package p\nr {\n  x := 1\n}\n', v0: true })).toEqual([
      'p0.rego:3:3: rego_compile_error: assigned var x unused',
    ]);
    expect(lax({ text: 'package p\nr {\n  x := 1\n}\n', v0: true })).toEqual([]);
  });
});

describe('unused function arguments (strict only)', () => {
  it('at the rule head; a wildcard, a use in any else branch or in the value counts', () => {
    const text = `package p
f(x, y) := x
g(a, _) if {
  input.n == a
}
h(k) if {
  input.n == 1
} else := k
default d(m) := 0
`;
    expect(strict({ text })).toEqual([
      `p0.rego:2:1: rego_compile_error: ${unusedArg('y')}`,
      `p0.rego:9:9: rego_compile_error: ${unusedArg('m')}`,
    ]);
    expect(lax({ text })).toEqual([]);
  });

  it('an argument only the value shadows with its own local is unused', () => {
    const text = 'package p\na := {"foo": 1}\n\nf(x) := {x: v | x := "foo"; v := a[x]} if {\n  input.t == 1\n}\n';
    expect(strict({ text })).toEqual([`p0.rego:4:1: rego_compile_error: ${unusedArg('x')}`]);
    const used = 'package p\na := {"foo": 1}\n\nf(x) := {x: v | v := a[x]} if {\n  input.t == 1\n}\n';
    expect(strict({ text: used })).toEqual([]);
  });

  it('in a Rego v0 module too', () => {
    expect(strict({ text: 'package p\nf(x, y) = x\n', v0: true })).toEqual([
      `p0.rego:2:1: rego_compile_error: ${unusedArg('y')}`,
    ]);
  });
});

describe('deprecated builtins (Rego v1 always; v0 strict)', () => {
  it('a Rego v1 module calling one gets the type error, with or without strict mode', () => {
    const expected = ['p0.rego:2:6: rego_type_error: deprecated built-in function calls in expression: any'];
    expect(lax({ text: 'package p\nr := any([true])\n' })).toEqual(expected);
    expect(strict({ text: 'package p\nr := any([true])\n' })).toEqual(expected);
  });

  it('a Rego v0 module only in strict mode', () => {
    const text = 'package p\nr = re_match("a+", "aa")\n';
    expect(lax({ text, v0: true })).toEqual([]);
    expect(strict({ text, v0: true })).toEqual([
      'p0.rego:2:5: rego_type_error: deprecated built-in function calls in expression: re_match',
    ]);
  });

  it('a rule named like the builtin is no deprecated call', () => {
    expect(strict({ text: 'package p\nany(xs) if {\n  some x in xs\n  x\n}\n\nr := any([true])\n' })).toEqual([]);
  });
});

describe('declared vars unused (every mode)', () => {
  it('a `some x` or an every key nothing refers to, as OPA reports without strict mode', () => {
    const text = `package p
r if {
  some x
  input.a == 1
}
s if {
  every k, v in input.xs { v > 1 }
}
`;
    const expected = [
      'p0.rego:3:3: rego_compile_error: declared var x unused',
      'p0.rego:7:28: rego_compile_error: declared var k unused',
    ];
    expect(lax({ text })).toEqual(expected);
    expect(strict({ text })).toEqual(expected);
  });
});

describe('arguments named input or data (every mode)', () => {
  it("are OPA's ResolveRefs error, at the rule, also inside a pattern", () => {
    expect(lax({ text: 'package p\nf(input) := 1\n' })).toEqual([
      'p0.rego:2:1: rego_compile_error: args must not shadow input (use a different variable name)',
    ]);
    expect(lax({ text: 'package p\nf([data, x]) = x\n', v0: true })).toEqual([
      'p0.rego:2:1: rego_compile_error: args must not shadow data (use a different variable name)',
    ]);
  });
});

describe('modules strict mode accepts', () => {
  it('vars `some x in xs` binds are never unused, as OPA rewrites them to an equality that mentions them', () => {
    expect(strict({ text: 'package p\nr if {\n  some k, v in input.xs\n  v\n}\n' })).toEqual([]);
  });

  it('a Rego v1 module with import rego.v1 and future.keywords (no-ops there), everything used', () => {
    const text = `package p
import rego.v1
import future.keywords.in
import data.allowed_users

allow if {
  some user in allowed_users
  user == input.user
}

label(name) := concat("-", [name, "x"])
`;
    expect(strict({ text })).toEqual([]);
  });

  it('a Rego v0 module with future keyword imports', () => {
    const text = 'package p\nimport future.keywords.in\n\nallow {\n  some u in input.users\n  u == "alice"\n}\n';
    expect(strict({ text, v0: true })).toEqual([]);
  });
});
