// Decisions (§6, §6.3, §6.5, §9.2, hooks.md permitted dispositions): whatever the engine returns is validated and
// substituted before it reaches the wire. The engine here is real Wasm (fixture module) whose output the test
// chooses per step through the payload member `want` (unknown payload members are ignored by the schemas).
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { finalizeDecision, modificationViolation, pointersOverlap } from '../../src/acs/decisions/index.ts';
import { STEP_METHODS } from '../../src/acs/methods.ts';
import { sharedValidator } from '../../src/acs/validation/index.ts';
import { canonicalJson } from '../../src/chain/index.ts';
import type { AcsClient } from '../../src/client/index.ts';
import type { Json } from '../../src/json.ts';
import { scriptedDecisionEngine } from './fixtures/decision-module.ts';
import { ALL_STEPS, startHarness, type Harness } from './fixtures/harness.ts';
import { ASK_DETAILS, DEFER_DETAILS, STEP_PAYLOADS as PAYLOADS } from './fixtures/payloads.ts';

const want = (input: Json): Json | undefined => {
  const params = (input as { params?: { payload?: { want?: Json; throw?: boolean } } }).params;
  if (params?.payload?.throw) throw new Error('policy builtin exploded');
  return params?.payload?.want;
};
const MSG = { content: [{ type: 'text', value: 'hi' }] };
const TOOL = { tool: { name: 'Bash' }, arguments: { command: { value: 'ls' } } };

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ engine: await scriptedDecisionEngine(want, 'rev-42') });
});
afterAll(async () => {
  await h.close();
});

async function session(harness = h): Promise<AcsClient> {
  const c = harness.client();
  await c.hello({ methods_implemented: ALL_STEPS });
  return c;
}

describe('fail closed', () => {
  it('no decision, an unknown disposition, or a decision missing its required fields → DENY evaluation_failed with reasoning', async () => {
    const c = await session();
    for (const bad of [
      undefined,
      { decision: 'ALLOW' },
      { decision: 'deny' },
      { decision: 'ask', reasoning: 'r' },
      { decision: 'defer', reasoning: 'r', defer_details: { reason: 'low_confidence' } },
      { decision: 'allow', reason_codes: ['a', 'a'] },
      'allow',
    ]) {
      const out = await c.step('steps/toolCallRequest', { ...TOOL, ...(bad === undefined ? {} : { want: bad }) });
      expect(out.failure).toBeUndefined();
      expect(out.decision).toBe('deny');
      expect(out.result?.reason_codes).toContain('evaluation_failed');
      expect(out.result?.reasoning).toMatch(/fail closed/);
      expect(out.result?.chain_hash).toMatch(/^[0-9a-f]{64}$/);
    }
  });

  it('an engine failure (host builtin throws) → DENY evaluation_failed, audited', async () => {
    const c = await session();
    const out = await c.step('steps/toolCallRequest', { ...TOOL, throw: true });
    expect(out.decision).toBe('deny');
    expect(out.result?.reason_codes).toEqual(['evaluation_failed']);
    expect(h.audits.some((a) => a.code === 'evaluation_failed' && a.sessionId === c.sessionId)).toBe(true);
  });

  it('a modification violating §6.3 is never emitted (exclusive modified_content, overlapping redaction/override)', async () => {
    const c = await session();
    const exclusive = await c.step('steps/toolCallRequest', {
      ...TOOL,
      want: {
        decision: 'modify',
        reasoning: 'r',
        modifications: { modified_content: 'x', redactions: [{ path: '/a' }] },
      },
    });
    expect(exclusive.result?.reason_codes).toEqual(['evaluation_failed']);
    const overlap = await c.step('steps/toolCallRequest', {
      ...TOOL,
      want: {
        decision: 'modify',
        reasoning: 'r',
        modifications: { redactions: [{ path: '/arguments/command' }], parameter_overrides: { command: 'ls -l' } },
      },
    });
    expect(overlap.result?.reason_codes).toEqual(['evaluation_failed']);
    const ok = await c.step('steps/toolCallRequest', {
      ...TOOL,
      want: {
        decision: 'modify',
        reasoning: 'r',
        modifications: { redactions: [{ path: '/arguments/secret' }], parameter_overrides: { command: 'ls -l' } },
      },
    });
    expect(ok.decision).toBe('modify');
    expect(ok.result?.modifications).toEqual({
      redactions: [{ path: '/arguments/secret' }],
      parameter_overrides: { command: 'ls -l' },
    });
  });

  it('delegate_to "agent" without an agent layer → DENY agent_layer_unavailable', async () => {
    const c = await session();
    const out = await c.step('steps/toolCallRequest', { ...TOOL, want: { decision: 'allow', delegate_to: 'agent' } });
    expect(out.decision).toBe('deny');
    expect(out.result?.reason_codes).toEqual(['agent_layer_unavailable']);
  });
});

describe('every answer is complete', () => {
  it('metadata (evaluator, evaluator_version, evaluation_duration_ms) and policy_version in every policy reference', async () => {
    const c = await session();
    const out = await c.step('steps/toolCallRequest', {
      ...TOOL,
      want: {
        decision: 'deny',
        reasoning: 'no',
        policy_references: [
          { policy_id: 'p1', rule_id: 'r1' },
          { policy_id: 'p2', policy_version: 'stale' },
        ],
      },
    });
    expect(out.result?.metadata).toMatchObject({
      evaluator: 'deterministic',
      evaluator_version: expect.stringMatching(/^acs-guardian\//),
    });
    expect(Number.isInteger(out.result?.metadata?.evaluation_duration_ms)).toBe(true);
    expect(out.result?.policy_references).toEqual([
      { policy_id: 'p1', rule_id: 'r1', policy_version: 'rev-42' },
      { policy_id: 'p2', policy_version: 'rev-42' },
    ]);
  });

  it('all 19 steps/* hooks answer with a permitted disposition and a chain_hash', async () => {
    const c = await session();
    for (const [method, spec] of STEP_METHODS) {
      if (!method.startsWith('steps/')) continue;
      const wanted = spec.permitted.includes('deny')
        ? { decision: 'deny', reasoning: 'test deny' }
        : { decision: 'allow' };
      const out = await c.step(method, { ...PAYLOADS[method], want: wanted });
      expect(out.failure, method).toBeUndefined();
      expect(out.decision, method).toBe(wanted.decision);
      expect(out.result?.chain_hash, method).toMatch(/^[0-9a-f]{64}$/);
    }
  });

  it('ASK and DEFER are carried with their details (ACS-Core MUST dispositions)', async () => {
    const c = await session();
    const ask = await c.step('steps/toolCallRequest', {
      ...TOOL,
      want: { decision: 'ask', reasoning: 'needs approval', ask_details: ASK_DETAILS },
    });
    expect(ask.decision).toBe('ask');
    expect(ask.result?.ask_details).toEqual(ASK_DETAILS);
    const defer = await c.step('steps/toolCallRequest', {
      ...TOOL,
      want: { decision: 'defer', reasoning: 'wait', defer_details: DEFER_DETAILS },
    });
    expect(defer.decision).toBe('defer');
    expect(defer.result?.defer_details).toEqual(DEFER_DETAILS);
  });
});

describe('substitutions', () => {
  it('a disposition the hook does not permit: DENY when permitted, else ALLOW + disposition_not_permitted (audited)', async () => {
    const c = await session();
    const ask = await c.step('steps/userMessage', {
      ...MSG,
      want: { decision: 'ask', reasoning: 'r', ask_details: ASK_DETAILS },
    });
    expect(ask.decision).toBe('deny');
    expect(ask.result?.reason_codes).toContain('disposition_not_permitted');
    const end = await c.step('steps/turnEnd', {
      ...PAYLOADS['steps/turnEnd'],
      want: { decision: 'deny', reasoning: 'r' },
    });
    expect(end.decision).toBe('allow');
    expect(end.result?.reason_codes).toContain('disposition_not_permitted');
    const post = await c.step('steps/postCompact', {
      ...PAYLOADS['steps/postCompact'],
      want: { decision: 'deny', reasoning: 'r' },
    });
    expect(post.decision).toBe('allow');
    expect(h.audits.filter((a) => a.sessionId === c.sessionId && a.code === 'disposition_not_permitted')).toHaveLength(
      3,
    );
  });

  it('cascading deferrals are bounded per session (default 3): the next DEFER becomes DENY deferral_bound_exceeded', async () => {
    const c = await session();
    const wantDefer = { ...TOOL, want: { decision: 'defer', reasoning: 'wait', defer_details: DEFER_DETAILS } };
    for (let i = 0; i < 3; i++) expect((await c.step('steps/toolCallRequest', wantDefer)).decision).toBe('defer');
    const fourth = await c.step('steps/toolCallRequest', wantDefer);
    expect(fourth.decision).toBe('deny');
    expect(fourth.result?.reason_codes).toEqual(['deferral_bound_exceeded']);
  });
});

describe('MODIFY-/ASK-incapable clients (§6.5, §9.2)', () => {
  let weak: Harness;
  beforeAll(async () => {
    weak = await startHarness({
      engine: await scriptedDecisionEngine(want),
      client: { modifyCapable: false, askCapable: false },
      maxDeferralsPerSession: 1,
    });
  });
  afterAll(async () => {
    await weak.close();
  });

  it('MODIFY → DENY modify_unsupported naming the modification; postCompact → ALLOW modify_unsupported; both audited', async () => {
    const c = await session(weak);
    const mods = { parameter_overrides: { command: 'ls -l' } };
    const out = await c.step('steps/toolCallRequest', {
      ...TOOL,
      want: { decision: 'modify', reasoning: 'r', modifications: mods },
    });
    expect(out.decision).toBe('deny');
    expect(out.result?.reason_codes).toEqual(['modify_unsupported']);
    expect(out.result?.reasoning).toContain('ls -l');
    const post = await c.step('steps/postCompact', {
      ...PAYLOADS['steps/postCompact'],
      want: { decision: 'modify', reasoning: 'r', modifications: { modified_content: 'short' } },
    });
    expect(post.decision).toBe('allow');
    expect(post.result?.reason_codes).toEqual(['modify_unsupported']);
    expect(weak.audits.filter((a) => a.sessionId === c.sessionId && a.code === 'modify_unsupported')).toHaveLength(2);
  });

  it('ASK → DEFER with timeout_decision "deny" (counts toward the bound), then DENY approver_unavailable', async () => {
    const c = await session(weak);
    const wantAsk = { ...TOOL, want: { decision: 'ask', reasoning: 'needs approval', ask_details: ASK_DETAILS } };
    const first = await c.step('steps/toolCallRequest', wantAsk);
    expect(first.decision).toBe('defer');
    expect(first.result?.defer_details).toMatchObject({ timeout_decision: 'deny' });
    expect(first.result?.ask_details).toBeUndefined();
    const second = await c.step('steps/toolCallRequest', wantAsk);
    expect(second.decision).toBe('deny');
    expect(second.result?.reason_codes).toContain('approver_unavailable');
  });
});

describe('finalizeDecision and §6.3 helpers (pure)', () => {
  const ctx = {
    permitted: STEP_METHODS.get('steps/toolCallRequest')!.permitted,
    method: 'steps/toolCallRequest',
    wrappedMcp: false,
    client: { modifyCapable: true, askCapable: true },
    deferralsSoFar: 0,
    maxDeferrals: 3,
    revision: 'r',
    validator: sharedValidator(),
  };

  it('pointer overlap: equal, ancestor/descendant and "" overlap; siblings and prefixes of names do not', () => {
    expect(pointersOverlap('/a', '/a')).toBe(true);
    expect(pointersOverlap('/a', '/a/b')).toBe(true);
    expect(pointersOverlap('', '/x')).toBe(true);
    expect(pointersOverlap('/ab', '/a')).toBe(false);
    expect(pointersOverlap('/a/b', '/a/c')).toBe(false);
  });

  it('override keys are escaped (~0, ~1) and address /params/arguments for wrapped MCP', () => {
    expect(
      modificationViolation({ redactions: [{ path: '/arguments/a~1b' }], parameter_overrides: { 'a/b': 1 } }, false),
    ).toMatch(/overlaps/);
    expect(
      modificationViolation({ redactions: [{ path: '/arguments/x' }], parameter_overrides: { x: 1 } }, true),
    ).toBeNull();
    expect(
      modificationViolation({ redactions: [{ path: '/params/arguments/x' }], parameter_overrides: { x: 1 } }, true),
    ).toMatch(/overlaps/);
    expect(modificationViolation({ redactions: [{ path: 'no-slash' }] }, false)).toMatch(/JSON pointer/);
  });

  it('keeps reasoning, codes, policy_data and cited provenance of a valid decision', () => {
    const out = finalizeDecision(
      {
        decision: 'deny',
        reasoning: 'r',
        reason_codes: ['fides_p_t_violation'],
        policy_data: { fides: { path: '/arguments/x' } },
        cited_provenance_ids: ['p1'],
      },
      ctx,
    );
    expect(out.decision).toEqual({
      decision: 'deny',
      reasoning: 'r',
      reason_codes: ['fides_p_t_violation'],
      policy_data: { fides: { path: '/arguments/x' } },
      cited_provenance_ids: ['p1'],
      policy_references: [{ policy_id: 'acs/decision', policy_version: 'r' }],
    });
    expect(out.auditEvents).toEqual([]);
  });
});

describe('policy_version stamping', () => {
  it('gives every reference its string members and policy_version, in RFC 8785 member order', () => {
    const member = fc.option(fc.string({ maxLength: 6 }), { nil: undefined });
    const ref = fc.record(
      { policy_id: member, policy_version: member, policy_name: member, rule_id: member },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(fc.array(ref, { maxLength: 4 }), fc.string({ maxLength: 8 }), (refs, revision) => {
        const ctx = {
          permitted: ['allow', 'deny'] as const,
          method: 'steps/userMessage',
          wrappedMcp: false,
          client: { modifyCapable: true, askCapable: true },
          deferralsSoFar: 0,
          maxDeferrals: 3,
          revision,
          validator: sharedValidator(),
        };
        const { decision } = finalizeDecision({ decision: 'allow', policy_references: refs }, ctx);
        // The string members kept, policy_version overwritten or added, members sorted (so the signed answer's JCS
        // is what JSON.stringify writes).
        const clean = refs.map((r) =>
          Object.fromEntries(
            (['policy_id', 'policy_version', 'policy_name', 'rule_id'] as const)
              .filter((k) => r[k] !== undefined)
              .map((k) => [k, r[k]]),
          ),
        );
        const stamped = (clean.length ? clean : [{ policy_id: 'acs/decision' }]).map(
          (r): Record<string, unknown> => ({ ...r, policy_version: revision }),
        );
        const expected = stamped.map((r) =>
          Object.fromEntries(
            Object.keys(r)
              .sort()
              .map((k) => [k, r[k]]),
          ),
        );
        expect(JSON.stringify(decision.policy_references)).toBe(JSON.stringify(expected));
        expect(JSON.stringify(decision.policy_references)).toBe(canonicalJson(decision.policy_references));
      }),
    );
  });
});
