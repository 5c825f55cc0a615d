// A Guardian serving from the worker-thread engine pool (LifecycleNodeOptions.poolSize) follows activations like
// the in-process engine: activations during concurrent sessions over real HTTP → zero failed requests, every
// stored decision names the revision whose module produced it, evaluations in flight finish on their version,
// and each replaced version leaves the workers once its last evaluation has answered.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LifecycleError } from '../../src/lifecycle/index.ts';
import type { PooledPolicyVersion } from '../../src/policy/pool/pool.ts';
import {
  activateUnderLoad,
  constantBundle,
  policyInput,
  startLifecycleGuardian,
  storedDecisionRevisions,
  type LifecycleGuardian,
} from './fixtures.ts';

const IKM = new Uint8Array(Array.from({ length: 32 }, (_, i) => (i * 11) & 255));
let guardian: LifecycleGuardian;

beforeAll(async () => {
  guardian = await startLifecycleGuardian(IKM, {
    poolSize: 2,
    pollIntervalMs: 60_000,
    engine: { timeoutMs: 5_000 },
    initialBundle: { bytes: await constantBundle('pool-0'), source: 'test' },
  });
}, 180_000);
afterAll(async () => {
  await guardian?.close();
});

describe('pool-backed Guardian and activations', () => {
  it('8 activations during 4 concurrent sessions over HTTP: zero failed requests, every decision names its revision', async () => {
    const { node, server, store } = guardian;
    expect(node.engine.current.pooled?.revision).toBe('pool-0');
    const ACTIVATIONS = 8;
    const shas: string[] = [];
    for (let i = 1; i <= ACTIVATIONS; i++)
      shas.push((await node.push(await constantBundle(`pool-${i}`), { source: 'test', by: 'tester' })).record.sha256);
    const replaced: PooledPolicyVersion[] = [];

    const { outcomes, sessions } = await activateUnderLoad(node, server.url, IKM, 4, 'pool-load', shas, () => {
      const before = node.engine.current.pooled;
      if (before) replaced.push(before);
    });

    expect(outcomes.length).toBeGreaterThan(ACTIVATIONS);
    expect(outcomes.filter((o) => o.failure !== undefined)).toEqual([]);
    expect(outcomes.filter((o) => o.decision !== 'allow')).toEqual([]);
    expect(node.engine.revision).toBe(`pool-${ACTIVATIONS}`);
    expect(node.engine.current.pooled?.revision).toBe(`pool-${ACTIVATIONS}`);

    const stored = await storedDecisionRevisions(store, sessions);
    expect(stored.mismatched).toEqual([]);
    expect(stored.checked).toBe(outcomes.length + sessions.length);
    expect(stored.revisions.size).toBeGreaterThan(3);
    // Every replaced version answered all it was sent and left the workers.
    expect(replaced.map((v) => [v.revision, v.inFlight, v.unloaded])).toEqual(
      Array.from({ length: ACTIVATIONS }, (_, i) => [`pool-${i}`, 0, true]),
    );
  }, 240_000);

  it('evaluations started before a swap finish on the version they started with', async () => {
    const { node } = guardian;
    const input = policyInput();
    const from = node.engine.revision;
    const sha = (await node.push(await constantBundle('pool-next'), { source: 'test', by: 'tester' })).record.sha256;
    // Sent on the current version; the activation below swaps while many of them are still queued in the workers.
    const started = Array.from({ length: 200 }, () => node.engine.evaluate(input));
    const activation = node.activate(sha, 'tester');
    const during = Array.from({ length: 200 }, () => node.engine.evaluate(input));
    await activation;
    const after = await node.engine.evaluate(input);
    for (const r of await Promise.all(started))
      expect(r).toMatchObject({ revision: from, decision: { reasoning: `decided by ${from}` } });
    for (const r of await Promise.all(during))
      expect(r.decision).toMatchObject({ reasoning: `decided by ${r.revision}` });
    expect(after).toMatchObject({ revision: 'pool-next', decision: { reasoning: 'decided by pool-next' } });
  }, 120_000);

  it('a refused activation leaves the pool serving the old version', async () => {
    const { node } = guardian;
    const before = node.engine.current.pooled;
    const bad = await constantBundle('pool-smoke-bad', {
      smoke: { cases: [{ name: 'denies', input: {}, expect: { decision: 'deny' } }] },
    });
    const err = await node.push(bad, { source: 'test', activate: true, by: 'tester' }).catch((e: unknown) => e);
    expect((err as LifecycleError).code).toBe('smoke_failed');
    expect(node.engine.current.pooled).toBe(before);
    expect(before?.unloaded).toBe(false);
    const input = policyInput();
    expect(await node.engine.evaluate(input)).toMatchObject({ revision: 'pool-next' });
  }, 120_000);
});
