// SessionReplay keeps one live config per engine and sets its clock per step instead of spreading a config per
// step: every evaluation must still see its own step's recorded time (input.guardian.now), never a neighbour's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWasmPolicyEngine } from '../../src/policy/index.ts';
import { resolveReplayPolicy, runReplay } from '../../src/replay/index.ts';
import { openStore } from '../../src/store/index.ts';
import type { Json } from '../../src/json.ts';
import type { DurableStore } from '../../src/store/types.ts';
import { buildDecisionModule, scriptedDecisionEngine } from '../acs/fixtures/decision-module.ts';
import { registerBundle, startRecorder } from './fixtures.ts';

let store: DurableStore;
const stamps: string[] = [];
beforeAll(async () => {
  store = await openStore({ inMemory: true });
  const allow = await buildDecisionModule({
    constant: { decision: 'allow', reasoning: 'allow-all', reason_codes: [] },
  });
  await registerBundle(store, allow, 'allow-all');
  const recorder = await startRecorder(store, await createWasmPolicyEngine({ bundle: allow, revision: 'allow-all' }));
  try {
    // Two chains, interleaved, each step with its own client timestamp (inside the skew window).
    const clients = [recorder.client('agent-a'), recorder.client('agent-b')];
    for (const c of clients) await c.hello({ methods_implemented: ['steps/userMessage'] });
    const start = Date.now() - 120_000;
    for (let i = 0; i < 8; i++) {
      const timestamp = new Date(start + i * 7_001 + (i % 2) * 13).toISOString();
      stamps.push(timestamp);
      await clients[i % 2]!.step(
        'steps/userMessage',
        { content: [{ type: 'text', value: `m${i}` }] },
        { params: { timestamp } },
      );
    }
  } finally {
    await recorder.close();
  }
}, 120_000);
afterAll(async () => {
  await store.close();
});

describe('replay clock', () => {
  it('each replayed step is evaluated at its own recorded timestamp', async () => {
    const engine = await scriptedDecisionEngine(
      (input: Json) => ({ decision: 'deny', reasoning: `at ${(input as { guardian: { now: string } }).guardian.now}` }),
      'clock',
    );
    const report = await runReplay({
      store,
      policy: await resolveReplayPolicy(store, engine),
      workers: 0,
      reportUnchanged: true,
    });
    expect(report.steps).toHaveLength(stamps.length);
    for (const step of report.steps) {
      expect(step.replayed?.reasoning).toBe(`at ${new Date(Date.parse(step.timestamp!)).toISOString()}`);
    }
    expect(new Set(report.steps.map((s) => s.replayed?.reasoning))).toEqual(new Set(stamps.map((t) => `at ${t}`)));
  }, 60_000);
});
