// The compiled-pattern cache of the regex builtins: patterns in use stay compiled, the rest are dropped.
import { describe, expect, it } from 'vitest';
import { compileRegex } from '../../../src/rego/builtins/host/regex.ts';

describe('compiled-pattern cache', () => {
  it('keeps a pattern in use while hundreds of others come and go, and drops one not used since', () => {
    const hot = compileRegex('hot[0-9]+');
    const cold = compileRegex('cold[0-9]+');
    for (let i = 0; i < 3000; i++) {
      compileRegex(`other${i}`);
      if (i % 100 === 0) expect(compileRegex('hot[0-9]+')).toBe(hot);
    }
    expect(compileRegex('hot[0-9]+')).toBe(hot);
    expect(compileRegex('cold[0-9]+')).not.toBe(cold);
    expect(compileRegex('cold[0-9]+').test('cold42')).toBe(true);
  });

  it('does not keep a pattern that does not compile', () => {
    expect(() => compileRegex('(')).toThrow();
    expect(() => compileRegex('(')).toThrow();
  });
});
