// A step of a contended session waits for the session's turn only until its decision deadline (timeout_config,
// docs/running-a-fleet.md): while another writer holds the turn past it, the step is answered a signed DENY
// `session_busy` with nothing recorded, and the session carries on once the turn is free. On PGlite the other
// writer is this process; on Postgres it is a second store (another replica's pool) holding the head row lock.
import { afterAll, describe, expect, it } from 'vitest';
import type { AcsClient } from '../../src/client/index.ts';
import type { AcsResult, ResponseEnvelope } from '../../src/acs/types.ts';
import { verifyChain } from '../../src/audit/index.ts';
import { openStore } from '../../src/store/index.ts';
import type { DurableStore } from '../../src/store/types.ts';
import { TEST_DATABASE_URL, dropSchema, uniqueSchema } from '../store/postgres-schema.ts';
import { stepEntry } from '../store/storage-suite.ts';
import { expectValidAnswer, startHarness } from './fixtures/harness.ts';

const schema = uniqueSchema('session_turn');
afterAll(async () => {
  await dropSchema(schema);
});

const TIMEOUT_MS = 600;

async function send(client: AcsClient, i: number): Promise<{ result: AcsResult; ms: number }> {
  const request = await client.buildRequest('steps/toolCallRequest', {
    tool: { name: 'search' },
    arguments: { query: { value: `q${i}` } },
  });
  const t0 = performance.now();
  const response: ResponseEnvelope = await client.exchange(request);
  const ms = performance.now() - t0;
  expectValidAnswer(response);
  expect(await client.verifyResponse(response)).toBe(true);
  expect('result' in response, JSON.stringify(response)).toBe(true);
  const result = (response as { result: AcsResult }).result;
  expect(result.request_id).toBe(request.params.request_id);
  return { result, ms };
}

describe.each(['pglite', 'postgres'] as const)('a session turn held past the decision deadline (%s)', (driver) => {
  it('answers a signed DENY session_busy, records nothing, and serves the session once the turn is free', async () => {
    const store =
      driver === 'pglite'
        ? await openStore({ inMemory: true })
        : await openStore({ databaseUrl: TEST_DATABASE_URL, schema });
    const other: DurableStore =
      driver === 'pglite' ? store : await openStore({ databaseUrl: TEST_DATABASE_URL, schema, skipMigrations: true });
    const h = await startHarness({ store, timeoutConfig: { default_ms: TIMEOUT_MS } });
    try {
      const client = h.client({ sendChainHint: false });
      await client.hello({ methods_implemented: ['steps/toolCallRequest'] });
      expect((await send(client, 1)).result.decision).toBe('allow');
      // Another writer appends: the Guardian's next step goes stale once, and the session counts as contended.
      await other.appendContextEntry(client.sessionId, stepEntry(client.sessionId, 100));
      expect((await send(client, 2)).result.decision).toBe('allow');

      let release: (() => void) | undefined;
      const held = other.withSessionTurn(
        client.sessionId,
        1000,
        () => new Promise<void>((resolve) => (release = resolve)),
      );
      while (!release) await new Promise((r) => setTimeout(r, 5));
      const before = await store.getChainHead(client.sessionId);
      const busy = await send(client, 3);
      expect(busy.result.decision).toBe('deny');
      expect(busy.result.reason_codes).toEqual(['session_busy']);
      expect(busy.result.chain_hash).toBeUndefined();
      // It waited its turn for most of the deadline before giving up (a DENY, so not after the holder let go:
      // the holder lets go only below). No upper bound: a loaded machine only makes the wait longer.
      expect(busy.ms).toBeGreaterThan(TIMEOUT_MS * 0.5);
      release();
      await held;
      expect(await store.getChainHead(client.sessionId)).toEqual(before);

      const after = await send(client, 4);
      expect(after.result.decision).toBe('allow');
      const entries = await store.listContextEntries(client.sessionId);
      expect(entries).toHaveLength(4);
      expect(entries.at(-1)?.entryHash).toBe(after.result.chain_hash);
      expect((await verifyChain(store, client.sessionId)).ok).toBe(true);
    } finally {
      await h.close();
      if (other !== store) await other.close();
    }
  }, 30_000);
});
