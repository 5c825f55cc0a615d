// Hot swap under load over real HTTP: many activations while concurrent agent sessions run → zero failed
// requests, and every stored decision names the revision whose module produced it (each test bundle's decision
// says which revision it came from). Failed activations (smoke test, unloadable module) keep the old version.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LifecycleError, type LifecycleNode } from '../../src/lifecycle/index.ts';
import { writeBundle } from '../../src/rego/bundle/index.ts';
import type { RunningHttpServer } from '../../src/server/http.ts';
import type { DurableStore } from '../../src/store/types.ts';
import {
  activateUnderLoad,
  constantBundle,
  startLifecycleGuardian,
  storedDecisionRevisions,
  type LifecycleGuardian,
} from './fixtures.ts';

const IKM = new Uint8Array(Array.from({ length: 32 }, (_, i) => (i * 7) & 255));
let store: DurableStore;
let node: LifecycleNode;
let server: RunningHttpServer;
let guardian: LifecycleGuardian;

beforeAll(async () => {
  guardian = await startLifecycleGuardian(IKM, {
    pollIntervalMs: 60_000,
    engine: { timeoutMs: 5_000 },
    initialBundle: { bytes: await constantBundle('rev-0'), source: 'test' },
  });
  ({ store, node, server } = guardian);
});
afterAll(async () => {
  await guardian.close();
});

describe('hot swap', () => {
  it('12 activations during 4 concurrent sessions over HTTP: zero failed requests, every decision names its revision', async () => {
    const ACTIVATIONS = 12;
    const revisions: string[] = [];
    for (let i = 1; i <= ACTIVATIONS; i++) {
      const r = await node.push(await constantBundle(`rev-${i}`), { source: 'test', by: 'tester' });
      revisions.push(r.record.sha256);
    }
    // Each activation waits for a few more answers, so requests are in flight across every swap.
    const { outcomes, sessions } = await activateUnderLoad(node, server.url, IKM, 4, 'load', revisions);

    expect(outcomes.length).toBeGreaterThan(ACTIVATIONS);
    expect(outcomes.filter((o) => o.failure !== undefined)).toEqual([]);
    expect(outcomes.filter((o) => o.decision !== 'allow')).toEqual([]);
    expect(node.engine.revision).toBe(`rev-${ACTIVATIONS}`);
    expect(node.engine.swaps).toBe(ACTIVATIONS);

    // The store: every entry's bundle_revision is the revision whose module produced its delivered result.
    const stored = await storedDecisionRevisions(store, sessions);
    expect(stored.mismatched).toEqual([]);
    expect(stored.checked).toBe(outcomes.length + sessions.length);
    // Swaps really happened while requests were in flight.
    expect(stored.revisions.size).toBeGreaterThan(3);
  }, 120_000);

  it('a bundle whose smoke test fails is refused with the reason; the old version stays in force', async () => {
    const before = node.engine.revision;
    const bad = await constantBundle('rev-smoke-bad', {
      decision: { decision: 'allow', reasoning: 'allows everything' },
      smoke: {
        cases: [{ name: 'rm -rf is denied', input: { method: 'steps/toolCallRequest' }, expect: { decision: 'deny' } }],
      },
    });
    const err = await node.push(bad, { source: 'test', activate: true, by: 'tester' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LifecycleError);
    expect((err as LifecycleError).code).toBe('smoke_failed');
    expect((err as LifecycleError).message).toBe('smoke case "rm -rf is denied": decision is "allow", expected "deny"');
    expect(node.engine.revision).toBe(before);
    expect((await node.registry.active())?.revision).toBe(before);

    const good = await constantBundle('rev-smoke-ok', {
      decision: { decision: 'deny', reasoning: 'denies everything' },
      smoke: {
        cases: [{ name: 'rm -rf is denied', input: { method: 'steps/toolCallRequest' }, expect: { decision: 'deny' } }],
      },
    });
    const ok = await node.push(good, { source: 'test', activate: true, by: 'tester' });
    expect(ok.activation?.smokeCases).toBe(1);
    expect(node.engine.revision).toBe('rev-smoke-ok');
  });

  it('a bundle without a loadable module and a corrupt tarball are refused; rollback returns to the previous version', async () => {
    const noWasm = writeBundle({ manifest: { revision: 'no-wasm' }, data: {}, sources: [] });
    const e1 = await node.push(noWasm, { source: 'test', activate: true, by: 'tester' }).catch((e: unknown) => e);
    expect((e1 as LifecycleError).code).toBe('load_failed');
    const e2 = await node
      .push(new Uint8Array([1, 2, 3]), { source: 'test', activate: true, by: 'tester' })
      .catch((e: unknown) => e);
    expect((e2 as LifecycleError).code).toBe('invalid_bundle');
    expect(node.engine.revision).toBe('rev-smoke-ok');
    const back = await node.rollback('tester');
    expect(back.revision).toBe(`rev-12`);
    expect(back.previousRevision).toBe('rev-smoke-ok');
    expect(node.engine.revision).toBe('rev-12');
    const hist = await node.registry.activations(2);
    expect(hist.map((h) => [h.revision, h.activatedBy])).toEqual([
      ['rev-12', 'tester'],
      ['rev-smoke-ok', 'tester'],
    ]);
  });
});
