// Stage 1 (decode): the nesting limit holds exactly at its bound whether or not the bracket count lets the depth
// walk be skipped, and brackets inside strings count toward neither.
import { describe, expect, it } from 'vitest';
import { decodeMessage } from '../../src/acs/pipeline/decode.ts';
import { AcsError } from '../../src/acs/errors.ts';

const nested = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);
const reason = (text: string): string | null => {
  try {
    decodeMessage(text, 64);
    return null;
  } catch (err) {
    return err instanceof AcsError ? String(err.data?.reason) : 'other';
  }
};

describe('decodeMessage nesting limit', () => {
  it('admits 64 levels and refuses 65, with few or many brackets elsewhere', () => {
    expect(reason(nested(64))).toBeNull();
    expect(reason(nested(65))).toBe('nesting_too_deep');
    const wide = (inner: string) => '[' + Array.from({ length: 100 }, () => '{}').join(',') + ',' + inner + ']';
    expect(reason(wide(nested(63)))).toBeNull();
    expect(reason(wide(nested(64)))).toBe('nesting_too_deep');
  });

  it('does not count brackets inside strings as nesting', () => {
    expect(reason(JSON.stringify({ text: '['.repeat(500) + '{'.repeat(500) }))).toBeNull();
  });
});
