// The decision comparison's structural equality against the JCS texts it replaces (the definition of "same").
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/chain/index.ts';
import { compareDecisions, decisionView } from '../../src/replay/index.ts';
import { sameJson } from '../../src/replay/compare.ts';

/** The value with every object's keys in reverse order (same JSON value, different insertion order). */
function reordered(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(reordered);
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(
    Object.keys(v)
      .reverse()
      .map((k) => [k, reordered((v as Record<string, unknown>)[k])]),
  );
}

describe('sameJson', () => {
  it('agrees with comparing JCS texts on arbitrary JSON pairs, including reordered keys', () => {
    const json = fc.jsonValue({ maxDepth: 4 });
    fc.assert(
      fc.property(json, json, (a, b) => {
        expect(sameJson(a, b)).toBe(canonicalJson(a) === canonicalJson(b));
        expect(sameJson(a, reordered(a))).toBe(true);
        expect(sameJson(reordered(b), a)).toBe(canonicalJson(a) === canonicalJson(b));
      }),
      { numRuns: 2000 },
    );
  });

  it('treats undefined members as absent and -0 as 0, like JCS; tells arrays from objects', () => {
    expect(sameJson({ a: 1, b: undefined }, { a: 1 })).toBe(true);
    expect(sameJson({ a: 1 }, { a: 1, b: undefined })).toBe(true);
    expect(sameJson({ a: undefined }, { b: undefined })).toBe(true);
    expect(sameJson({ a: 1, b: undefined }, { a: 1, c: 2 })).toBe(false);
    expect(sameJson([undefined], [null])).toBe(true);
    expect(sameJson(-0, 0)).toBe(true);
    expect(sameJson([], {})).toBe(false);
    expect(sameJson({ 0: 'x' }, ['x'])).toBe(false);
    expect(sameJson({ a: [1, { b: 2 }] }, { a: [1, { b: 3 }] })).toBe(false);
    expect(sameJson(null, {})).toBe(false);
  });

  it('drives detailsChanged: policy_data in another key order is unchanged, another value is a change', () => {
    const base = { decision: 'deny', reason_codes: ['c'], policy_references: [{ rule_id: 'r' }] };
    const a = decisionView({ ...base, policy_data: { score: 3, tags: ['x', 'y'] }, reasoning: 'r' })!;
    const same = decisionView({ reasoning: 'r', policy_data: { tags: ['x', 'y'], score: 3 }, ...base })!;
    const other = decisionView({ ...base, policy_data: { score: 3, tags: ['y', 'x'] }, reasoning: 'r' })!;
    expect(compareDecisions(a, same)).toMatchObject({ detailsChanged: false, changed: false });
    expect(compareDecisions(a, other)).toMatchObject({ detailsChanged: true, changed: true });
    expect(compareDecisions(a, decisionView({ ...base, reasoning: 'r' })!)).toMatchObject({
      detailsChanged: true,
      changed: true,
    });
  });
});
