// Many clients on ONE session, spread over two `guardian serve` replicas on one Postgres database: the replicas race
// for the session's chain head on nearly every step. A step must wait its turn (docs/running-a-fleet.md, "Steps of
// one session on several replicas"), never be answered DENY store_unavailable while Postgres is up, and the chain
// must come out as one linear chain holding every answer's chain_hash.
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcsClient, httpTransport } from '../../src/client/index.ts';
import type { AcsResult } from '../../src/acs/types.ts';
import { openStore } from '../../src/store/index.ts';
import { buildDecisionModule } from '../acs/fixtures/decision-module.ts';
import { expectValidAnswer } from '../acs/fixtures/harness.ts';
import { IKM, TOOL, auditVerifyAll, killAll, startServe, type Serving } from '../store/fixtures/serve-process.ts';
import { scratchDatabase } from '../store/postgres-schema.ts';

const database = scratchDatabase('acs_contention');
const dbUrl = database.url;

let dir: string;
const children: ChildProcessWithoutNullStreams[] = [];
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'acs-contention-'));
  writeFileSync(join(dir, 'policy.wasm'), await buildDecisionModule({ constant: { decision: 'allow' } }));
  await database.create();
}, 60_000);
afterAll(async () => {
  await killAll(children);
  await database.drop().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

const CLIENTS = 16;
const STEPS_PER_CLIENT = 30;

describe('one session, two replicas, sixteen clients', () => {
  it('every step waits its turn: no DENY store_unavailable, one linear chain, audit verify clean', async () => {
    const replicas: Serving[] = [];
    for (const name of ['replica-1', 'replica-2']) {
      mkdirSync(join(dir, name));
      replicas.push(await startServe(dbUrl, join(dir, name), join(dir, 'policy.wasm'), children));
    }
    const urls = replicas.map((r) => r.url.replace('0.0.0.0', '127.0.0.1'));
    const opener = new AcsClient({ transport: httpTransport(urls[0]), ikm: IKM, agentId: 'contended' });
    await opener.hello({ methods_implemented: ['steps/toolCallRequest'] });
    let next = 0;
    // Sixteen agents' worth of traffic on one session: no chain hints (each client sees only its own answers).
    const clients = Array.from(
      { length: CLIENTS },
      () =>
        new AcsClient({
          transport: (m) => httpTransport(urls[next++ % urls.length], { timeoutMs: 30_000 })(m),
          ikm: IKM,
          agentId: 'contended',
          sessionId: opener.sessionId,
          sendChainHint: false,
        }),
    );
    const answers: AcsResult[] = [];
    await Promise.all(
      clients.map(async (c, ci) => {
        for (let i = 0; i < STEPS_PER_CLIENT; i++) {
          const request = await c.buildRequest('steps/toolCallRequest', TOOL(ci * STEPS_PER_CLIENT + i));
          const response = await c.exchange(request);
          expectValidAnswer(response);
          expect(await c.verifyResponse(response)).toBe(true);
          expect('result' in response, JSON.stringify(response)).toBe(true);
          const result = (response as { result: AcsResult }).result;
          expect(result.request_id).toBe(request.params.request_id);
          answers.push(result);
        }
      }),
    );
    const total = CLIENTS * STEPS_PER_CLIENT;
    const unavailable = answers.filter((a) => a.reason_codes?.includes('store_unavailable')).length;
    const denied = answers.filter((a) => a.decision !== 'allow');
    console.log(`${total} steps of one session over 2 replicas: ${unavailable} DENY store_unavailable`);
    expect(unavailable).toBe(0);
    expect(denied.map((a) => a.reason_codes)).toEqual([]);

    const store = await openStore({ databaseUrl: dbUrl, skipMigrations: true });
    try {
      const entries = await store.listContextEntries(opener.sessionId, { limit: total + 10 });
      expect(entries.map((e) => e.seq)).toEqual(Array.from({ length: total }, (_, i) => i));
      entries.forEach((e, i) => expect(e.previousHash).toBe(i === 0 ? null : entries[i - 1].entryHash));
      // Every answer's chain_hash is an entry of the chain, and every entry was answered once.
      expect(new Set(answers.map((a) => a.chain_hash))).toEqual(new Set(entries.map((e) => e.entryHash)));
      const row = await store.getSession(opener.sessionId);
      const counters = (row?.state as { counters?: { tool_calls_total?: number } } | undefined)?.counters;
      expect(counters?.tool_calls_total).toBe(total);
    } finally {
      await store.close();
    }
    const verify = await auditVerifyAll(dbUrl, dir);
    expect(verify.out).toMatch(new RegExp(`1 chains?, ${total} entries, 0 broken`));
    expect(verify.code).toBe(0);
  }, 300_000);
});
