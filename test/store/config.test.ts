import { describe, expect, it } from 'vitest';
import { storeOptionsFrom } from '../../src/store/config.ts';

describe('store options from flags and environment', () => {
  it('uses DATABASE_URL when set, else PGlite under the data directory', () => {
    expect(storeOptionsFrom({}, { DATABASE_URL: 'postgres://u@h/db' })).toEqual({ databaseUrl: 'postgres://u@h/db' });
    expect(storeOptionsFrom({ dataDir: 'd' }, {})).toEqual({ dataDir: 'd' });
  });

  it('passes GUARDIAN_STATE_CHECKPOINT_EVERY to the store', () => {
    expect(storeOptionsFrom({ dataDir: 'd' }, { GUARDIAN_STATE_CHECKPOINT_EVERY: '8' })).toEqual({
      dataDir: 'd',
      stateCheckpointEvery: 8,
    });
  });

  it.each(['0', '-4', '2.5', 'many'])('refuses GUARDIAN_STATE_CHECKPOINT_EVERY=%s instead of ignoring it', (value) => {
    expect(() => storeOptionsFrom({ dataDir: 'd' }, { GUARDIAN_STATE_CHECKPOINT_EVERY: value })).toThrow(
      /GUARDIAN_STATE_CHECKPOINT_EVERY must be a positive integer/,
    );
  });
});
