// Shadow mode: a candidate evaluated beside the enforcing bundle on every request, off the critical path;
// differences stored and counted exactly, never enforced.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcsClient, httpTransport } from '../../src/client/index.ts';
import { type LifecycleNode, shadowReport } from '../../src/lifecycle/index.ts';
import type { RunningHttpServer } from '../../src/server/http.ts';
import type { DurableStore } from '../../src/store/types.ts';
import { constantBundle, startLifecycleGuardian, type LifecycleGuardian } from './fixtures.ts';

const IKM = new Uint8Array(Array.from({ length: 32 }, (_, i) => (i * 13) & 255));
let store: DurableStore;
let node: LifecycleNode;
let server: RunningHttpServer;
let guardian: LifecycleGuardian;

beforeAll(async () => {
  const enforcing = await constantBundle('enforce-allow', { decision: { decision: 'allow', reasoning: 'ok' } });
  guardian = await startLifecycleGuardian(IKM, {
    pollIntervalMs: 60_000,
    initialBundle: { bytes: enforcing, source: 'test' },
  });
  ({ store, node, server } = guardian);
});
afterAll(async () => {
  await guardian.close();
});

describe('shadow mode', () => {
  it('a scripted session (1 sessionStart + 5 tool calls) against a deny-all candidate: exactly 6 differences counted and stored, none enforced', async () => {
    const candidate = await constantBundle('candidate-deny', {
      decision: { decision: 'deny', reasoning: 'candidate denies' },
    });
    await node.push(candidate, { source: 'test', by: 'tester' });
    const set = await node.setShadow('candidate-deny', 'tester');
    expect(set.revision).toBe('candidate-deny');

    const c = new AcsClient({ transport: httpTransport(server.url), ikm: IKM, agentId: 'shadowed' });
    await c.hello({ methods_implemented: ['steps/sessionStart', 'steps/toolCallRequest'] });
    const decisions: string[] = [];
    decisions.push((await c.step('steps/sessionStart', {})).decision);
    for (let i = 0; i < 5; i++)
      decisions.push((await c.step('steps/toolCallRequest', { tool: { name: `t${i}` }, arguments: {} })).decision);
    // Enforced: the enforcing bundle's allow, every time.
    expect(decisions).toEqual(Array(6).fill('allow'));
    await node.flushShadow();
    const local = node.local().shadow;
    expect(local).toMatchObject({ revision: 'candidate-deny', evaluated: 6, differences: 6, errors: 0 });
    const report = await shadowReport(store);
    expect(report.differences).toBe(6);
    expect(report.byMethod).toEqual([
      { method: 'steps/toolCallRequest', enforcing: 'allow', shadow: 'deny', count: 5 },
      { method: 'steps/sessionStart', enforcing: 'allow', shadow: 'deny', count: 1 },
    ]);
    expect(report.samples[0]).toMatchObject({
      enforcingRevision: 'enforce-allow',
      enforcing: { decision: 'allow', reasoning: 'ok' },
      shadow: { decision: 'deny', reasoning: 'candidate denies' },
    });
    // Entries record only the enforcing revision.
    const entries = await store.listContextEntries(c.sessionId);
    expect(new Set(entries.map((e) => e.bundleRevision))).toEqual(new Set(['enforce-allow']));
  });

  it('an identical candidate yields zero differences; stopping the shadow stops evaluation', async () => {
    const same = await constantBundle('candidate-same', {
      decision: { decision: 'allow', reasoning: 'ok' },
      data: { other: true },
    });
    await node.push(same, { source: 'test', by: 'tester' });
    await node.setShadow('candidate-same', 'tester');
    const c = new AcsClient({ transport: httpTransport(server.url), ikm: IKM, agentId: 'shadowed-2' });
    await c.hello({ methods_implemented: ['steps/sessionStart', 'steps/toolCallRequest'] });
    await c.step('steps/sessionStart', {});
    await c.step('steps/toolCallRequest', { tool: { name: 'x' }, arguments: {} });
    await node.flushShadow();
    expect(node.local().shadow).toMatchObject({ revision: 'candidate-same', evaluated: 2, differences: 0 });
    expect((await shadowReport(store)).differences).toBe(0);

    await node.setShadow(null, 'tester');
    await c.step('steps/toolCallRequest', { tool: { name: 'y' }, arguments: {} });
    await node.flushShadow();
    expect(node.local().shadow).toMatchObject({ revision: null, evaluated: 0, differences: 0 });
    expect(await node.registry.shadowTarget()).toBeNull();
  });
});
