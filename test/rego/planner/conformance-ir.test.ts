// Our language cases of the planner's topics, planned by our compiler and evaluated by the reference IR
// evaluator (non-strict builtin errors: the expression is undefined, OPA's default).
import { describe, expect, it } from 'vitest';
import { loadCases, runCase } from './conformance-cases.ts';

const cases = loadCases();

describe('conformance through plan + IR evaluator', () => {
  it('loads the target topics', () => {
    expect(cases.length).toBeGreaterThan(150);
  });
  for (const c of cases) {
    it(c.note, () => {
      const r = runCase(c);
      expect(r.ok ? 'ok' : r.detail).toBe('ok');
    });
  }
});
