// Chained rule bodies, `p { a } { b }`: each body after the first defines the rule again with the same
// head (OPA's parser, parseRules), so the rule holds when any body does. Compiled by our compiler and
// evaluated by opa-wasm; the expected values are those of the equivalent unchained rules under OPA's
// semantics (one rule per body, same head).
import { describe, expect, it } from 'vitest';
import { compileBundle, evaluateEntrypoint, loadBundle } from '../../../src/rego/index.ts';

const V0 = `package chained

allow { input.role == "admin" } { input.role == "owner" }

ids[x] { x := 1 } { x := 2 }
{ x := input.extra }

level = "high" { input.score > 90 }
{ input.vip }

f(x) = y { x > 10; y := "big" } { x <= 10; y := "small" }

g(_) = 1 { input.g } { true }

size = f(input.n)
gee = g(0)
`;

const V1 = `package chained

allow if { input.role == "admin" } { input.role == "owner" }

named if input.name == "a" { input.name == "b" }

ids contains x if { x := 1 } { x := 2 }
`;

// The same rules unchained, one rule per body, as OPA's parser reads V0.
const V1_UNCHAINED = `package chained

allow if input.role == "admin"

allow if input.role == "owner"

ids contains x if x := 1

ids contains x if x := 2

ids contains x if x := input.extra

level := "high" if input.score > 90

level := "high" if input.vip

f(x) := y if {
	x > 10
	y := "big"
}

f(x) := y if {
	x <= 10
	y := "small"
}

g(_) := 1 if input.g

g(_) := 1

size := f(input.n)

gee := g(0)
`;

const NAMES = ['allow', 'ids', 'level', 'size', 'gee'];

const INPUTS: unknown[] = [
  {},
  { role: 'admin', score: 95, n: 11 },
  { role: 'owner', extra: 'e', vip: true, n: 10, g: true },
  { role: 'guest', extra: 2, score: 'x', n: 'x' },
];

async function load(text: string, regoVersion: 0 | 1, names: string[]) {
  const built = await compileBundle({
    sources: [{ file: 'chained.rego', text, regoVersion }],
    entrypoints: names.map((n) => `chained/${n}`),
  });
  const loaded = await loadBundle(built.bundle);
  return (n: string, input: unknown = {}) => {
    const rs = evaluateEntrypoint(loaded, `chained/${n}`, input) as { result: unknown }[];
    return rs.length ? rs[0].result : undefined;
  };
}

describe('chained rule bodies', () => {
  it('evaluate in a v0 module as one rule per body', { timeout: 120_000 }, async () => {
    const ev = await load(V0, 0, NAMES);
    expect(ev('allow', { role: 'admin' })).toBe(true);
    expect(ev('allow', { role: 'owner' })).toBe(true);
    expect(ev('allow', { role: 'guest' })).toBeUndefined();
    expect(ev('ids')).toEqual([1, 2]);
    expect(ev('ids', { extra: 3 })).toEqual([1, 2, 3]);
    expect(ev('level', { score: 95 })).toBe('high');
    expect(ev('level', { score: 10, vip: true })).toBe('high');
    expect(ev('level', { score: 10 })).toBeUndefined();
    expect(ev('size', { n: 11 })).toBe('big');
    expect(ev('size', { n: 3 })).toBe('small');
    expect(ev('gee')).toBe(1);
    expect(ev('gee', { g: true })).toBe(1);
  });

  it('evaluate in a v1 module (p if { a } { b }, p if a { b })', { timeout: 120_000 }, async () => {
    const ev = await load(V1, 1, ['allow', 'named', 'ids']);
    expect(ev('allow', { role: 'owner' })).toBe(true);
    expect(ev('allow', { role: 'admin' })).toBe(true);
    expect(ev('allow', { role: 'x' })).toBeUndefined();
    expect(ev('named', { name: 'a' })).toBe(true);
    expect(ev('named', { name: 'b' })).toBe(true);
    expect(ev('named', { name: 'c' })).toBeUndefined();
    expect(ev('ids')).toEqual([1, 2]);
  });

  it('a chained v0 module and its unchained v1 form give the same results', { timeout: 120_000 }, async () => {
    const chained = await load(V0, 0, NAMES);
    const unchained = await load(V1_UNCHAINED, 1, NAMES);
    for (const input of INPUTS) {
      for (const n of NAMES) expect(chained(n, input), `${n} ${JSON.stringify(input)}`).toEqual(unchained(n, input));
    }
  });
});
