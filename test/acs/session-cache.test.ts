// Two Guardians (two "replicas") on one store serve the same session alternately. Each keeps a per-process copy
// of the session row (src/acs/pipeline/session-cache.ts); the copy must be dropped as soon as the other replica
// advanced the chain, or state counters regress and a sealed session keeps accepting steps.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AcsClient } from '../../src/client/index.ts';
import { createGuardian, type Guardian } from '../../src/acs/pipeline/index.ts';
import { cryptoEnvelopeSignatures } from '../../src/acs/signing/index.ts';
import { createSignatureRegistry } from '../../src/crypto/index.ts';
import { isSessionState } from '../../src/policy/index.ts';
import { startHarness, TEST_IKM, type Harness } from './fixtures/harness.ts';
import { constantDecisionEngine } from './fixtures/decision-module.ts';

let h: Harness;
let replicaB: Guardian;
const registry = createSignatureRegistry({ hmacIkm: TEST_IKM, workerPool: false });
beforeAll(async () => {
  h = await startHarness();
  replicaB = createGuardian({
    store: h.store,
    engine: await constantDecisionEngine({ decision: 'allow' }),
    signatures: cryptoEnvelopeSignatures(registry),
  });
});
afterAll(async () => {
  await h.close();
  await registry.close();
});

/** A client whose next message goes to replica A (over HTTP) or B (in process), as `route` says. */
function alternatingClient(route: { to: 'A' | 'B' }): AcsClient {
  const a = h.client();
  return h.client({
    transport: async (message) =>
      route.to === 'A' ? JSON.stringify(await h.post(message)) : JSON.stringify(await replicaB.handle(message, 'http')),
    sessionId: a.sessionId,
  });
}

describe('session row cache across replicas', () => {
  it('state keeps counting when steps alternate between replicas', async () => {
    const route: { to: 'A' | 'B' } = { to: 'A' };
    const client = alternatingClient(route);
    await client.hello({ methods_implemented: ['steps/sessionStart', 'steps/toolCallRequest', 'steps/sessionEnd'] });
    const plan: ('A' | 'B')[] = ['A', 'A', 'B', 'A', 'B', 'B', 'A', 'A'];
    for (const to of plan) {
      route.to = to;
      const out = await client.step('steps/toolCallRequest', { tool: { name: 'shell' }, arguments: {} });
      expect(out.failure).toBeUndefined();
      expect(out.decision).toBe('allow');
    }
    const row = await h.store.getSession(client.sessionId);
    expect(isSessionState(row?.state)).toBe(true);
    const state = row!.state as unknown as { counters: { tool_calls_total: number; steps_total: number } };
    expect(state.counters.tool_calls_total).toBe(plan.length);
    expect(state.counters.steps_total).toBe(plan.length);
    expect((await h.store.getChainHead(client.sessionId))?.seq).toBe(plan.length - 1);
  });

  it('a session sealed on one replica is refused on the other, which had it cached', async () => {
    const route: { to: 'A' | 'B' } = { to: 'A' };
    const client = alternatingClient(route);
    await client.hello({ methods_implemented: ['steps/sessionStart', 'steps/toolCallRequest', 'steps/sessionEnd'] });
    expect((await client.step('steps/toolCallRequest', { tool: { name: 'shell' }, arguments: {} })).decision).toBe(
      'allow',
    );
    expect((await client.step('steps/toolCallRequest', { tool: { name: 'shell' }, arguments: {} })).decision).toBe(
      'allow',
    );
    route.to = 'B';
    expect((await client.step('steps/sessionEnd', {})).failure).toBeUndefined();
    route.to = 'A';
    const after = await client.step('steps/toolCallRequest', { tool: { name: 'shell' }, arguments: {} });
    expect(after.decision).toBe('deny');
    expect(after.result?.reason_codes).toEqual(['session_closed']);
  });
});
