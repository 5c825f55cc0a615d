// referencedInputPaths: the static input prefixes a policy can read (what the engine host may send).
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { parseModule } from '../../../src/rego/ast/index.ts';
import { referencedInputPaths } from '../../../src/rego/semantic/input-paths.ts';

const paths = (...sources: string[]) => referencedInputPaths(sources.map((s, i) => parseModule(`p${i}.rego`, s)));

describe('referencedInputPaths', () => {
  it('keeps the static prefix of each reference, stopping at the first dynamic key, prefix-free and sorted', () => {
    expect(
      paths(`package p
a := input.session.turn.index
b := input.session.turn
c if input.params[k] == 1
d := input.method
e if { some x in input.session.provenance.trust; x == "trusted" }
f := input["client"].ask_capable
`),
    ).toEqual([
      ['client', 'ask_capable'],
      ['method'],
      ['params'],
      ['session', 'provenance', 'trust'],
      ['session', 'turn'],
    ]);
  });

  it('counts input references inside dynamic keys, comprehensions, calls and with targets', () => {
    expect(
      paths(`package p
a := data.x[input.key]
b := [y | some y in input.list]
c := count(input.items)
d if { e with input.over as 1 }
e if input.over
`),
    ).toEqual([['items'], ['key'], ['list'], ['over']]);
  });

  it('an import alias contributes the imported prefix', () => {
    expect(
      paths(`package p
import input.session.turn as t
a := t.index
`),
    ).toEqual([['session', 'turn']]);
  });

  it('a bare input (value, argument, iteration, import) means the whole input', () => {
    expect(paths('package p\na := input.method\nb := object.get(input, "x", 1)\n')).toEqual([[]]);
    expect(paths('package p\na := {k | some k, _ in input}\n')).toEqual([[]]);
    expect(paths('package p\nimport input\na := input.x\n')).toEqual([[]]);
    expect(paths('package p\na := input\n')).toEqual([[]]);
  });

  it('a dynamic key is a wildcard (null) when something follows it; a wildcard covers every key, not the reverse', () => {
    expect(
      paths(`package p
a := input.records[id].origin
b := input.records.a1.trust
c := [v | v := input.list[_].items[i].value]
d := input.params[k]
`),
    ).toEqual([
      ['list', null, 'items', null, 'value'],
      ['params'],
      ['records', null, 'origin'],
      ['records', 'a1', 'trust'],
    ]);
    // ["r", null, "x"] covers ["r", "k", "x", "y"]; ["r", "k"] covers ["r", "k", "z"] but not ["r", null, "x"].
    expect(paths('package p\na := input.r[k].x\nb := input.r.k.x.y\nc := input.r.k\nd := input.r.k.z\n')).toEqual([
      ['r', null, 'x'],
      ['r', 'k'],
    ]);
    expect(paths('package p\na := input.r[k].x\nb := input.r[j]\n')).toEqual([['r']]);
    expect(paths('package p\na := input.r[k][j].x\nb := input.r.k[j].x.y\nc := input.r[k].m.x\n')).toEqual([
      ['r', null, null, 'x'],
    ]);
  });

  it('over random references: every path is covered by one listed, none listed covers another, sorted', () => {
    type Seg = string | null;
    const covers = (q: Seg[], p: Seg[]) => q.length <= p.length && q.every((seg, i) => seg === null || seg === p[i]);
    const order = (a: Seg[], b: Seg[]): number => {
      for (let i = 0; i < Math.min(a.length, b.length); i++) {
        if (a[i] === b[i]) continue;
        if (a[i] === null) return -1;
        if (b[i] === null) return 1;
        return (a[i] as string) < (b[i] as string) ? -1 : 1;
      }
      return a.length - b.length;
    };
    const ref = fc.array(fc.constantFrom<Seg>('a', 'b', 'c', null), { minLength: 1, maxLength: 4 });
    fc.assert(
      fc.property(fc.array(ref, { minLength: 1, maxLength: 12 }), (refs) => {
        const source =
          'package p\n' +
          refs
            .map((r, i) => `r${i} if { some k; input${r.map((seg) => (seg === null ? '[k]' : `.${seg}`)).join('')} }`)
            .join('\n') +
          '\n';
        const got = paths(source) as Seg[][];
        const wanted = refs.map((r) => {
          const path = [...r];
          while (path.length > 0 && path[path.length - 1] === null) path.pop();
          return path;
        });
        for (const w of wanted)
          expect(
            got.some((g) => covers(g, w)),
            JSON.stringify(w),
          ).toBe(true);
        for (const g of got) expect(wanted.some((w) => JSON.stringify(w) === JSON.stringify(g))).toBe(true);
        for (const [i, g] of got.entries())
          for (const [j, h] of got.entries()) if (i !== j) expect(covers(g, h)).toBe(false);
        expect([...got].sort(order)).toEqual(got);
      }),
      { numRuns: 500 },
    );
  });

  it('a policy that reads no input needs none', () => {
    expect(paths('package p\na := 1\n')).toEqual([]);
  });
});
