// Plans from our planner, linked by our Wasm backend and run by the unmodified opa-wasm host.
import { describe, expect, it } from 'vitest';
import { loadPolicy } from '@open-policy-agent/opa-wasm';
import { parseModule } from '../../../src/rego/ast/index.ts';
import { compileModules } from '../../../src/rego/semantic/index.ts';
import { planEntrypoints } from '../../../src/rego/planner/index.ts';
import { linkPolicyWasm } from '../../../src/rego/wasm/index.ts';
import { createHostBuiltins } from '../../../src/rego/builtins/host/index.ts';

async function load(
  src: string | string[],
  entrypoints: string[],
  data: Record<string, unknown> = {},
  lines: string[] = [],
) {
  const mods = (Array.isArray(src) ? src : [src]).map((s, i) => parseModule(`m${i}.rego`, s));
  const wasm = await linkPolicyWasm(planEntrypoints(compileModules(mods), entrypoints));
  const policy = await loadPolicy(
    wasm,
    undefined,
    createHostBuiltins({ print: (line: string) => lines.push(line) }) as never,
  );
  policy.setData(data as never);
  return (entry: string, input?: unknown): unknown => {
    const rs = policy.evaluate(input as never, entry) as { result: unknown }[];
    return rs.length ? rs[0].result : undefined;
  };
}

describe('planner → Wasm → opa-wasm', () => {
  it('function and builtin mocks, including non-ground values carried through data', async () => {
    const ev = await load(
      `package t
f(_) := 2
g(_) := 1
mock_count("one") := 1
mock_count(x) := count(x) if x != "one"
q if count("foo") == 10
a := y if { y := f(true) with f as g }
b := y if { y := f([1]) with f as count }
c := s if { s := {count(n) | some n in {"one", "two", "tree"}} with count as mock_count }
d if {
  some v in numbers.range(1, 10)
  q with count as v
}
`,
      ['t/a', 't/b', 't/c', 't/d'],
    );
    expect(ev('t/a')).toBe(1);
    expect(ev('t/b')).toBe(1);
    expect((ev('t/c') as number[]).sort()).toEqual([1, 3, 4]);
    expect(ev('t/d')).toBe(true);
  }, 60_000);

  it('data extents merge base and virtual documents; with data overrides virtual ones', async () => {
    const ev = await load(
      [
        `package a.b
q := 1`,
        `package t
keys := sort([k | data.a[k]])
whole := data.a
mocked := v if { v := data.a with data.a.b as {"z": 9} }
`,
      ],
      ['t/keys', 't/whole', 't/mocked'],
      { a: { b: { base: true }, c: 2 } },
    );
    expect(ev('t/keys')).toEqual(['b', 'c']);
    expect(ev('t/whole')).toEqual({ b: { base: true, q: 1 }, c: 2 });
    expect(ev('t/mocked')).toEqual({ b: { z: 9 }, c: 2 });
  }, 60_000);

  it('every, some-in, general ref heads, else chains and defaults', async () => {
    const ev = await load(
      `package t
by.team[u.team][u.name] := u.age if { some u in input.users }
all_adults if { every u in input.users { u.age >= 18 } }
default level := "none"
level := "high" if { count(input.users) > 2 } else := "low" if { count(input.users) > 0 }
`,
      ['t/by', 't/all_adults', 't/level'],
    );
    const input = {
      users: [
        { name: 'a', team: 'x', age: 30 },
        { name: 'b', team: 'y', age: 17 },
      ],
    };
    expect(ev('t/by', input)).toEqual({ team: { x: { a: 30 }, y: { b: 17 } } });
    expect(ev('t/all_adults', input)).toBeUndefined();
    expect(ev('t/all_adults', { users: [{ age: 20 }] })).toBe(true);
    expect(ev('t/level', input)).toBe('low');
    expect(ev('t/level', { users: [] })).toBe('none');
  }, 60_000);

  it('print goes to the host print sink and never fails the rule', async () => {
    const lines: string[] = [];
    const ev = await load(
      `package t
p if {
  print("user", input.user, input.missing)
}`,
      ['t/p'],
      {},
      lines,
    );
    expect(ev('t/p', { user: 'alice' })).toBe(true);
    expect(lines).toEqual(['user alice <undefined>']);
  }, 60_000);

  it("conflicting complete rule values abort with OPA's var assignment conflict", async () => {
    const ev = await load(
      `package t
p := input.a if true
p := input.b if true
`,
      ['t/p'],
    );
    expect(ev('t/p', { a: 1, b: 1 })).toBe(1);
    expect(() => ev('t/p', { a: 1, b: 2 })).toThrow(/^m0\.rego:3:1: var assignment conflict$/);
  }, 60_000);
});

describe('early exit', () => {
  it('a definition with a ground value stops its loops at the first solution; other values, definitions and functions still run in full', async () => {
    const lines: string[] = [];
    const ev = await load(
      `package t
found if {
  some x in input.xs
  print("found", x)
  x > 1
}
deep := "yes" if {
  some x in input.xs
  some y in input.xs
  print("deep", x, y)
  x + y > 4
}
f(n) if {
  some x in input.xs
  print("f", x)
  x > n
}
fx := true if f(2)
value := x if {
  some x in input.xs
  print("value", x)
  x > 3
}
two if {
  some x in input.xs
  print("two-a", x)
  x == 1
}
two if {
  some x in input.xs
  print("two-b", x)
  x == 4
}
`,
      ['t/found', 't/deep', 't/fx', 't/value', 't/two'],
      {},
      lines,
    );
    const run = (entry: string) => {
      lines.length = 0;
      const result = ev(entry, { xs: [1, 2, 3, 4] });
      return { result, lines: [...lines] };
    };
    expect(run('t/found')).toEqual({ result: true, lines: ['found 1', 'found 2'] });
    // Out of both loops at once.
    expect(run('t/deep')).toEqual({ result: 'yes', lines: ['deep 1 1', 'deep 1 2', 'deep 1 3', 'deep 1 4'] });
    expect(run('t/fx')).toEqual({ result: true, lines: ['f 1', 'f 2', 'f 3'] });
    // A value bound in the body is not ground: every solution is checked (for conflicts).
    expect(run('t/value')).toEqual({ result: 4, lines: ['value 1', 'value 2', 'value 3', 'value 4'] });
    // Each definition exits its own loop; the second still runs.
    expect(run('t/two')).toEqual({ result: true, lines: ['two-a 1', 'two-b 1', 'two-b 2', 'two-b 3', 'two-b 4'] });
  });

  it('walk iterates wherever its call stands, as OPA lifts the call to walk(x, t)', async () => {
    const ev = await load(
      `package t
doc := {"a": [1, {"b": 2}]}
out_arg contains p if { walk(doc, [p, v]); is_number(v) }
unify contains p if { [p, v] = walk(doc); is_number(v) }
assign contains p if { [p, v] := walk(doc); is_number(v) }
bound contains p if { pair := walk(doc); pair = [p, 2] }
nested := count([1 | is_array(walk(doc)[0])])
`,
      ['t/out_arg', 't/unify', 't/assign', 't/bound', 't/nested'],
    );
    const leaves = [
      ['a', 0],
      ['a', 1, 'b'],
    ];
    expect(ev('t/out_arg')).toEqual(leaves);
    expect(ev('t/unify')).toEqual(leaves);
    expect(ev('t/assign')).toEqual(leaves);
    expect(ev('t/bound')).toEqual([['a', 1, 'b']]);
    // Five nodes: the root, "a", its two elements and "b".
    expect(ev('t/nested')).toBe(5);
  });
});

describe('with generations', () => {
  it('with expressions that replace the same things share a generation and still see their own values', async () => {
    const ev = await load(
      `package t
q := 1
s := q + 1
f(_) := 0
g(x) := f(x) + 1
inner(x) := y if { w := input.w; y := g(x) with f as w }
outer(x) := [a, b] if { a := g(x) with f as input.w; b := g(x) }
rules := [a, b] if { a := s with data.t.q as 5; b := s with data.t.q as 7 }
values := [a, b] if { u := input.u; w := input.w; a := g(1) with f as u; b := g(1) with f as w }
constants := [a, b, c] if { a := g(1) with f as 7; b := g(1) with f as 8; c := g(1) with f as 7 }
nested := [a, b] if { u := input.u; a := g(1) with f as u; b := inner(1) with f as u }
restored := r if { r := outer(1) with f as input.u }
unmocked := g(1)
`,
      ['t/rules', 't/values', 't/constants', 't/nested', 't/restored', 't/unmocked'],
    );
    const input = { u: 10, w: 20 };
    expect(ev('t/rules', input)).toEqual([6, 8]);
    expect(ev('t/values', input)).toEqual([11, 21]);
    expect(ev('t/constants', input)).toEqual([8, 9, 8]);
    // The inner with of f wins inside its expression; the outer one applies again after it.
    expect(ev('t/nested', input)).toEqual([11, 21]);
    expect(ev('t/restored', input)).toEqual([21, 11]);
    expect(ev('t/unmocked', input)).toBe(1);
  }, 60_000);
});
