import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Json } from '../../src/json.ts';
import { openStore, StoreError } from '../../src/store/index.ts';
import type { StoreDriver } from '../../src/store/driver.ts';
import { DrizzleGuardianStore } from '../../src/store/drizzle-store.ts';
import { openPgliteDriver, PGLITE_SHARED_BUFFERS } from '../../src/store/pglite/index.ts';
import { defineStorageSuite, stepEntry } from './storage-suite.ts';

defineStorageSuite('pglite', (extra) => openStore({ inMemory: true, ...extra }));

describe('PGlite data directory', () => {
  it('runs Postgres with the embedded shared_buffers, on disk and in memory', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'guardian-store-'));
    const onDisk = await openPgliteDriver({ dataDir: dir });
    const inMemory = await openPgliteDriver();
    try {
      expect(PGLITE_SHARED_BUFFERS).not.toBe('128MB');
      for (const driver of [onDisk, inMemory])
        expect(await driver.query('show shared_buffers')).toEqual([{ shared_buffers: PGLITE_SHARED_BUFFERS }]);
    } finally {
      await onDisk.close();
      await inMemory.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

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
      // Session state kept as changes in the entries (no whole state since creation) survives the reopen too.
      await second.createSession({
        id: sessionId,
        tenantId: null,
        agentId: 'agent-1',
        keyId: null,
        hello: {},
        intent: null,
        state: null,
        parentSessionId: null,
      });
      let head = { seq: b.seq, entryHash: b.entryHash };
      let state: Json = null;
      for (let n = 2; n < 5; n++) {
        const entry = stepEntry(sessionId, n);
        const next: Json = { n, seen: [...((state as { seen?: Json[] } | null)?.seen ?? []), n] };
        const out = await second.commitStep(sessionId, {
          expectedHead: head,
          replayKeys: [{ kind: 'request_id', value: entry.content.entry_id }],
          replayKeysExpireAt: new Date(Date.now() + 60_000),
          entry,
          decision: { result: { decision: 'allow' }, bundleRevision: null, evaluationDurationMs: 0 },
          session: { state: next, stateBase: state },
        });
        if (out.status !== 'committed') throw new Error(out.status);
        head = { seq: out.appended.seq, entryHash: out.appended.entryHash };
        state = next;
      }
      await second.close();
      const third = await openStore({ dataDir: dir });
      expect(await third.getSession(sessionId)).toMatchObject({ state: { n: 4, seen: [2, 3, 4] }, stateHead: head });
      await third.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('a commit whose acknowledgement is lost', () => {
  // The real PGlite driver, with the failure a dropped connection causes around COMMIT: the transaction ran (or
  // did not), then the caller saw an error. The store must look before it reports a failure.
  async function storeWithLostAck(when: 'after' | 'before') {
    const driver = await openPgliteDriver();
    let fail = false;
    const lossy: StoreDriver = {
      ...driver,
      async transaction(work) {
        if (fail && when === 'before') {
          fail = false;
          throw Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' });
        }
        const result = await driver.transaction(work);
        if (fail && when === 'after') {
          fail = false;
          throw Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' });
        }
        return result;
      },
    };
    return { store: new DrizzleGuardianStore(lossy), failNext: () => (fail = true) };
  }
  const commit = (sessionId: string, n: number, expectedHead: { seq: number; entryHash: string } | null) => {
    const entry = stepEntry(sessionId, n);
    return {
      expectedHead,
      replayKeys: [{ kind: 'request_id' as const, value: entry.content.entry_id }],
      replayKeysExpireAt: new Date(Date.now() + 60_000),
      entry,
      decision: { result: { n }, bundleRevision: null, evaluationDurationMs: 1 },
      session: {},
    };
  };

  it('reports a step that landed as committed, at the place and hash it was signed with', async () => {
    const { store, failNext } = await storeWithLostAck('after');
    try {
      const sessionId = randomUUID();
      const first = await store.commitStep(sessionId, commit(sessionId, 0, null));
      expect(first.status).toBe('committed');
      failNext();
      const head =
        first.status === 'committed' ? { seq: first.appended.seq, entryHash: first.appended.entryHash } : null;
      const second = await store.commitStep(sessionId, commit(sessionId, 1, head));
      expect(second).toMatchObject({ status: 'committed', appended: { seq: 1, previousHash: head?.entryHash } });
      expect((await store.getChainHead(sessionId))?.entryHash).toBe(
        second.status === 'committed' ? second.appended.entryHash : null,
      );
    } finally {
      await store.close();
    }
  });

  it('reports a step that did not land as unavailable, and wrote nothing', async () => {
    const { store, failNext } = await storeWithLostAck('before');
    try {
      const sessionId = randomUUID();
      failNext();
      const err = await store.commitStep(sessionId, commit(sessionId, 0, null)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreError);
      expect((err as StoreError).code).toBe('unavailable');
      expect(await store.getChainHead(sessionId)).toBeNull();
    } finally {
      await store.close();
    }
  });
});
