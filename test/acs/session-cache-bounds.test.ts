// The per-process session row cache (src/acs/pipeline/session-cache.ts) stays bounded as agents come and go: by
// entry count (least recently written first) and by idle time, so a finished session's state is not kept.
import { describe, expect, it } from 'vitest';
import { SessionCache } from '../../src/acs/pipeline/session-cache.ts';
import { initialSessionState } from '../../src/policy/index.ts';
import type { Json } from '../../src/json.ts';
import type { SessionRecord } from '../../src/store/types.ts';

function row(id: string): SessionRecord {
  return {
    id,
    tenantId: null,
    agentId: 'agent',
    keyId: null,
    hello: null,
    intent: null,
    state: initialSessionState({ session_id: id, agent_id: 'agent' }) as unknown as Json,
    parentSessionId: null,
    createdAt: new Date(0),
    closedAt: null,
  };
}

describe('session cache bounds', () => {
  it('keeps at most maxEntries, dropping the least recently written', () => {
    const cache = new SessionCache({ maxEntries: 3 });
    for (const id of ['a', 'b', 'c']) cache.remember(row(id), null);
    cache.remember(row('a'), { seq: 1, entryHash: 'h' }); // a written again: b is now the oldest
    cache.remember(row('d'), null);
    expect(cache.size).toBe(3);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')?.head).toEqual({ seq: 1, entryHash: 'h' });
    expect(cache.get('c')?.session.id).toBe('c');
    expect(cache.get('d')?.session.id).toBe('d');
  });

  it('drops sessions idle longer than maxIdleMs, on read and as newer sessions are written', () => {
    let now = 0;
    const cache = new SessionCache({ maxEntries: 1000, maxIdleMs: 60_000, now: () => now });
    for (let i = 0; i < 64; i++) cache.remember(row(`old-${i}`), null);
    now = 30_000;
    cache.remember(row('live'), null);
    expect(cache.get('old-0')?.session.id).toBe('old-0');
    now = 60_001;
    // Read after the idle bound: a miss (the pipeline reads the row again).
    expect(cache.get('old-1')).toBeUndefined();
    // One write sweeps the rest of the idle sessions; the one written 30 s ago stays.
    cache.remember(row('new'), null);
    expect(cache.size).toBe(2);
    expect(cache.get('live')?.session.id).toBe('live');
    expect(cache.get('new')?.session.id).toBe('new');
  });

  it('stays at a steady size under churn of new sessions', () => {
    let now = 0;
    const cache = new SessionCache({ maxIdleMs: 120_000, now: () => now });
    // 64 new sessions a minute, each written every second for one minute, for an hour.
    for (let minute = 0; minute < 60; minute++)
      for (let s = 0; s < 60; s++) {
        now = minute * 60_000 + s * 1000;
        for (let i = 0; i < 64; i++) cache.remember(row(`m${minute}-s${i}`), null);
      }
    expect(cache.size).toBeLessThanOrEqual(3 * 64);
  });
});
