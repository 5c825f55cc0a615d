// The Observed-Agent SDK against a real Guardian over HTTP: decision honouring and the §6.4 failure posture,
// response-signature verification and local chain-head verification.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcsClient, httpTransport } from '../../src/client/index.ts';
import { hmacEnvelopeSignatures, signEnvelope } from '../../src/acs/signing/index.ts';
import { startHarness, TEST_IKM, type Harness } from '../acs/fixtures/harness.ts';

const MSG = { content: [{ type: 'text', value: 'hi' }] };
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ onDecisionFailure: 'proceed' });
});
afterAll(async () => {
  await h.close();
});

/** A transport that lets the test rewrite answers in flight. */
function tampering(
  url: string,
  rewrite: (answer: Record<string, unknown>) => Promise<Record<string, unknown>> | Record<string, unknown>,
) {
  const base = httpTransport(url);
  return async (message: string) => JSON.stringify(await rewrite(JSON.parse(await base(message))));
}

describe('AcsClient', () => {
  it('adopts the ServerHello on_decision_failure posture and honours decisions that arrive', async () => {
    const c = h.client();
    const hello = await c.hello({ methods_implemented: ['steps/userMessage'] });
    expect(hello.on_decision_failure).toBe('proceed');
    const out = await c.step('steps/userMessage', MSG);
    expect(out.decision).toBe('allow');
    expect(out.failure).toBeUndefined();
    expect(c.audit).toEqual([]);
  });

  it('fail-open: an error instead of a decision proceeds and is audited; fail-closed denies', async () => {
    const open = h.client({ onDecisionFailure: 'proceed' });
    const o = await open.step('steps/userMessage', MSG); // no handshake → -32003
    expect(o.decision).toBe('allow');
    expect(o.failure?.error?.code).toBe(-32003);
    expect(open.audit).toHaveLength(1);
    expect(open.audit[0]).toMatchObject({ method: 'steps/userMessage', reason: 'error_response', applied: 'allow' });
    const closed = h.client({ onDecisionFailure: 'deny' });
    const d = await closed.step('steps/userMessage', MSG);
    expect(d.decision).toBe('deny');
    expect(closed.audit[0].applied).toBe('deny');
  });

  it('an unreachable Guardian is a transport failure handled by the posture', async () => {
    const c = new AcsClient({
      transport: httpTransport('http://127.0.0.1:9/acs', { timeoutMs: 2000 }),
      ikm: TEST_IKM,
      agentId: 'a',
      onDecisionFailure: 'deny',
    });
    const out = await c.step('steps/userMessage', MSG);
    expect(out.decision).toBe('deny');
    expect(out.failure?.reason).toBe('transport_failed');
  });

  it('a decision whose signature does not verify is not honoured (altered decision)', async () => {
    const c = new AcsClient({
      transport: tampering(h.url, (a) =>
        'result' in a && (a.result as { decision?: string }).decision
          ? { ...a, result: { ...(a.result as object), decision: 'allow', reasoning: 'forged' } }
          : a,
      ),
      ikm: TEST_IKM,
      agentId: 'agent-1',
      onDecisionFailure: 'deny',
    });
    await c.hello({ methods_implemented: ['steps/userMessage'] }).catch(() => undefined);
    const out = await c.step('steps/userMessage', MSG);
    expect(out.failure?.reason).toBe('signature_invalid');
    expect(out.decision).toBe('deny');
  });

  it('a correctly signed answer whose chain_hash is not the head recomputed from the request stream is refused', async () => {
    const sigs = hmacEnvelopeSignatures(TEST_IKM);
    let sessionId = '';
    const c = new AcsClient({
      transport: tampering(h.url, async (a) => {
        const r = a.result as Record<string, unknown> | undefined;
        if (!r || typeof r.chain_hash !== 'string') return a;
        const { signature, ...rest } = r;
        const forged = { ...a, result: { ...rest, chain_hash: '0'.repeat(64) } };
        return signEnvelope(forged, 'result', sigs, { sessionId, keyId: (signature as { key_id: string }).key_id });
      }),
      ikm: TEST_IKM,
      agentId: 'agent-1',
      onDecisionFailure: 'deny',
    });
    sessionId = c.sessionId;
    await c.hello({ methods_implemented: ['steps/userMessage'] });
    const out = await c.step('steps/userMessage', MSG);
    expect(out.failure?.reason).toBe('chain_head_mismatch');
    expect(c.chainHash).toBeNull();
  });
});
