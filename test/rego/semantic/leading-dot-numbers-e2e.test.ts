// Numbers written with a leading dot (`.5`, `-.5`, `- .5`): OPA's parseNumber reads them and keeps the text
// as written, which the module takes through MakeNumberRefStmt; they compare and compute by value.
import { describe, expect, it } from 'vitest';
import { compileBundle, evaluateEntrypoint, loadBundle } from '../../../src/rego/index.ts';

const POLICY = `package dots

assigned_equal if {
	x := .5
	x == 0.5
}

sum := .5 + .25

product := - .5 * 4

negative if -.5 < 0

member if {0.5, 1}[.5]

deduplicated := count({.5, 0.5, 5e-1})

scaled := .25e2 + 0

no_leading_zero_check := .0125 * 80

# OPA's sprintf formats a non-integer number as a big.Float with %v.
printed := sprintf("%v", [.5])
`;

const ENTRYPOINTS = [
  'dots/assigned_equal',
  'dots/sum',
  'dots/product',
  'dots/negative',
  'dots/member',
  'dots/deduplicated',
  'dots/scaled',
  'dots/no_leading_zero_check',
  'dots/printed',
];

describe('numbers with a leading dot', () => {
  it('evaluate by value in the Wasm module', async () => {
    const built = await compileBundle({ sources: [{ file: 'dots.rego', text: POLICY }], entrypoints: ENTRYPOINTS });
    const loaded = await loadBundle(built.bundle);
    const ev = (ep: string): unknown => {
      const rs = evaluateEntrypoint(loaded, ep, {}) as { result: unknown }[];
      return rs.length ? rs[0].result : undefined;
    };
    expect(ev('dots/assigned_equal')).toBe(true);
    expect(ev('dots/sum')).toBe(0.75);
    expect(ev('dots/product')).toBe(-2);
    expect(ev('dots/negative')).toBe(true);
    expect(ev('dots/member')).toBe(true);
    expect(ev('dots/deduplicated')).toBe(1);
    expect(ev('dots/scaled')).toBe(25);
    expect(ev('dots/no_leading_zero_check')).toBe(1);
    expect(ev('dots/printed')).toBe('0.5');
  });
});
