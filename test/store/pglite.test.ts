import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.ts';
import { defineStorageSuite, stepEntry } from './storage-suite.ts';

defineStorageSuite('pglite', (extra) => openStore({ inMemory: true, ...extra }));

describe('PGlite data directory', () => {
  it('persists sessions and chains across reopen under <dataDir>/pgdata', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'guardian-store-'));
    try {
      const sessionId = randomUUID();
      const first = await openStore({ dataDir: dir });
      const a = await first.appendContextEntry(sessionId, stepEntry(sessionId, 0));
      await first.close();
      const second = await openStore({ dataDir: dir });
      const b = await second.appendContextEntry(sessionId, stepEntry(sessionId, 1));
      expect(b).toMatchObject({ seq: 1, previousHash: a.entryHash });
      await second.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
