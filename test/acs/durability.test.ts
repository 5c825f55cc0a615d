// The pipeline on real Postgres (TEST_DATABASE_URL): replay memory and sealed sessions survive a Guardian restart,
// and concurrent steps of one session are serialised into one consistent chain.
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { AcsClient, httpTransport } from '../../src/client/index.ts';
import { createSignatureRegistry } from '../../src/crypto/index.ts';
import { createGuardian } from '../../src/acs/pipeline/index.ts';
import { cryptoEnvelopeSignatures } from '../../src/acs/signing/index.ts';
import { computeEntryHash } from '../../src/chain/index.ts';
import { startHttpServer, type RunningHttpServer } from '../../src/server/http.ts';
import { openStore } from '../../src/store/index.ts';
import type { DurableStore } from '../../src/store/types.ts';
import { TEST_DATABASE_URL, dropSchema, uniqueSchema } from '../store/postgres-schema.ts';
import { constantDecisionEngine } from './fixtures/decision-module.ts';
import { TEST_IKM } from './fixtures/harness.ts';

const DATABASE_URL = TEST_DATABASE_URL;
const SCHEMA = uniqueSchema('acs_front');
const MSG = { content: [{ type: 'text', value: 'hi' }] };

async function boot(): Promise<{ store: DurableStore; server: RunningHttpServer; stop(): Promise<void> }> {
  const store = await openStore({ databaseUrl: DATABASE_URL, schema: SCHEMA });
  const registry = createSignatureRegistry({ hmacIkm: TEST_IKM, workerPool: false });
  const guardian = createGuardian({
    store,
    engine: await constantDecisionEngine({ decision: 'allow' }),
    signatures: cryptoEnvelopeSignatures(registry),
  });
  const server = await startHttpServer(guardian, { port: 0 });
  return {
    store,
    server,
    async stop() {
      await server.close();
      await store.close();
      await registry.close();
    },
  };
}

afterAll(() => dropSchema(SCHEMA));

describe('on Postgres', () => {
  it('a request replayed after a Guardian restart is still -32005; a sealed session stays sealed', async () => {
    const first = await boot();
    const sessionId = randomUUID();
    const c1 = new AcsClient({ transport: httpTransport(first.server.url), ikm: TEST_IKM, agentId: 'a', sessionId });
    await c1.hello({ methods_implemented: ['steps/userMessage', 'steps/sessionEnd'] });
    const req = await c1.buildRequest('steps/userMessage', MSG);
    expect('result' in (await c1.exchange(req))).toBe(true);
    await first.stop();

    const second = await boot();
    try {
      const c2 = new AcsClient({
        transport: httpTransport(second.server.url),
        ikm: TEST_IKM,
        agentId: 'a',
        sessionId,
        sendChainHint: false,
      });
      const replay = await c2.exchange(req);
      expect('error' in replay && replay.error.code).toBe(-32005);
      await c2.step('steps/sessionEnd', { reason: 'completed' });
    } finally {
      await second.stop();
    }
    const third = await boot();
    try {
      const c3 = new AcsClient({
        transport: httpTransport(third.server.url),
        ikm: TEST_IKM,
        agentId: 'a',
        sessionId,
        sendChainHint: false,
      });
      const late = await c3.step('steps/userMessage', MSG);
      expect(late.result?.reason_codes).toEqual(['session_closed']);
    } finally {
      await third.stop();
    }
  });

  it('20 concurrent steps of one session all get decisions and form one unbroken chain', async () => {
    const g = await boot();
    try {
      const c = new AcsClient({
        transport: httpTransport(g.server.url),
        ikm: TEST_IKM,
        agentId: 'a',
        sendChainHint: false,
      });
      await c.hello({ methods_implemented: ['steps/userMessage'] });
      const requests = await Promise.all(Array.from({ length: 20 }, () => c.buildRequest('steps/userMessage', MSG)));
      const answers = await Promise.all(requests.map((r) => c.exchange(r)));
      const heads = answers.map((a) => ('result' in a ? (a.result as { chain_hash?: string }).chain_hash : undefined));
      expect(heads.every((x) => typeof x === 'string')).toBe(true);
      expect(new Set(heads).size).toBe(20);
      const entries = await g.store.listContextEntries(c.sessionId);
      expect(entries).toHaveLength(20);
      let prev: string | null = null;
      for (const e of entries) {
        expect(e.previousHash).toBe(prev);
        expect(computeEntryHash(e.content, prev)).toBe(e.entryHash);
        prev = e.entryHash;
      }
      expect(new Set(entries.map((e) => e.entryHash))).toEqual(new Set(heads));
    } finally {
      await g.stop();
    }
  });
});
