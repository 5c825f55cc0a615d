// Replay workers check decision details with a validator holding only the decision-detail schemas
// (src/replay/worker.ts). Against policies that answer MODIFY / ASK / DEFER with valid and invalid details, the
// threaded report must equal the in-process one (full validator): a schema missing from the worker's subset
// would turn a valid ASK into DENY evaluation_failed there.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWasmPolicyEngine } from '../../src/policy/index.ts';
import { resolveReplayPolicy, runReplay, type ReplayReport } from '../../src/replay/index.ts';
import { openStore } from '../../src/store/index.ts';
import type { Json } from '../../src/json.ts';
import type { DurableStore } from '../../src/store/types.ts';
import { buildDecisionModule } from '../acs/fixtures/decision-module.ts';
import { registerBundle, startRecorder } from './fixtures.ts';

const PROVENANCE = { provenance_id: 'p1', origin: 'user_input' };
const ASK_DETAILS = {
  approver: { type: 'human', id: 'ops' },
  question: 'Run it?',
  timeout_seconds: 30,
  intent_extension: { capabilities: ['read'], scope: 'session', provenance: PROVENANCE },
};
const DEFER_DETAILS = {
  reason: 'insufficient_context',
  resolution_method: 'additional_context',
  resolution_timeout_ms: 1000,
  timeout_decision: 'deny',
};
/** revision → the constant decision its module returns. */
const POLICIES: Record<string, Json> = {
  'modify-ok': { decision: 'modify', reasoning: 'r', modifications: { modified_content: 'x' } },
  'modify-bad': { decision: 'modify', reasoning: 'r', modifications: { redactions: [{ path: 7 }] } },
  'ask-ok': { decision: 'ask', reasoning: 'r', ask_details: ASK_DETAILS },
  'ask-bad-provenance': {
    decision: 'ask',
    reasoning: 'r',
    ask_details: {
      ...ASK_DETAILS,
      intent_extension: { ...ASK_DETAILS.intent_extension, provenance: { provenance_id: 'p1', origin: 'rumour' } },
    },
  },
  'defer-ok': { decision: 'defer', reasoning: 'r', defer_details: DEFER_DETAILS },
  'defer-bad': { decision: 'defer', reasoning: 'r', defer_details: { reason: 'low_confidence' } },
};

let store: DurableStore;
beforeAll(async () => {
  store = await openStore({ inMemory: true });
  const allow = await buildDecisionModule({
    constant: { decision: 'allow', reasoning: 'allow-all', reason_codes: [] },
  });
  await registerBundle(store, allow, 'allow-all');
  for (const [revision, decision] of Object.entries(POLICIES))
    await registerBundle(store, await buildDecisionModule({ constant: decision }), revision);
  const recorder = await startRecorder(store, await createWasmPolicyEngine({ bundle: allow, revision: 'allow-all' }));
  try {
    const c = recorder.client('agent-d');
    await c.hello({ methods_implemented: ['steps/sessionStart', 'steps/toolCallRequest', 'steps/userMessage'] });
    await c.step('steps/sessionStart', {});
    await c.step('steps/userMessage', { content: [{ type: 'text', value: 'hi' }] });
    await c.step('steps/toolCallRequest', { tool: { name: 'Bash' }, arguments: { command: { value: 'ls' } } });
  } finally {
    await recorder.close();
  }
}, 120_000);
afterAll(async () => {
  await store.close();
});

describe('replay workers: decision details', () => {
  it('MODIFY / ASK / DEFER details are accepted and refused in workers exactly as in-process', async () => {
    const comparable = (r: ReplayReport): unknown => {
      const {
        startedAt: _s,
        finishedAt: _f,
        durationMs: _d,
        entriesPerSecond: _e,
        evaluationMs: _m,
        workers: _w,
        ...rest
      } = r.summary;
      return { summary: rest, steps: r.steps };
    };
    const seen = new Set<string>();
    for (const revision of Object.keys(POLICIES)) {
      const policy = await resolveReplayPolicy(store, revision);
      const inProcess = await runReplay({ store, policy, workers: 0, reportUnchanged: true });
      const threaded = await runReplay({ store, policy, workers: 2, reportUnchanged: true });
      expect(comparable(threaded), revision).toEqual(comparable(inProcess));
      for (const step of inProcess.steps) {
        const failed = step.replayed?.reasonCodes.includes('evaluation_failed') === true;
        seen.add(`${revision.endsWith('-ok') ? 'ok' : 'bad'}:${step.replayed?.decision}:${failed}`);
      }
    }
    // Not vacuous: valid details came through as their disposition, invalid ones failed closed.
    for (const d of ['modify', 'ask', 'defer']) expect(seen, d).toContain(`ok:${d}:false`);
    expect(seen).toContain('bad:deny:true');
  }, 120_000);
});
