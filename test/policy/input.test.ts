import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { Json } from '../../src/json.ts';
import {
  advanceSessionState,
  buildPolicyInput,
  collectProvenance,
  initialSessionState,
  lineageOf,
  normaliseDigest,
  recordApproval,
  recordDecision,
  type SessionState,
} from '../../src/policy/index.ts';
import {
  isSessionState,
  provenanceRecords,
  toolCallColumns,
  upgradeSessionState,
} from '../../src/policy/session-state/index.ts';

const SESSION = '5b0e3c1a-1111-4222-8333-444455556666';
let n = 0;
function params(payload: Json, extra: { turn_id?: string; timestamp?: string } = {}): Json {
  n += 1;
  return {
    acs_version: '0.1.0',
    request_id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
    timestamp: extra.timestamp ?? '2026-03-01T10:00:00Z',
    metadata: { agent_id: 'agent-1', session_id: SESSION, ...(extra.turn_id ? { turn_id: extra.turn_id } : {}) },
    payload,
    signature: { algorithm: 'HMAC-SHA256', value: 'c2VjcmV0', key_id: 'k1' },
  };
}
const prov = (id: string, origin: string, derived_from?: string[]): Json => ({
  provenance_id: id,
  origin,
  ...(derived_from ? { derived_from } : {}),
});

function run(
  steps: [string, Json][],
  state = initialSessionState({ session_id: SESSION, agent_id: 'agent-1' }),
): SessionState {
  return steps.reduce((s, [m, p]) => advanceSessionState(s, m, p), state);
}

describe('advanceSessionState', () => {
  it('keeps the newest N of the bounded histories, oldest first, and leaves the prior state untouched', () => {
    const tools = ['a', 'b', 'c', 'd', 'e'];
    let s = initialSessionState({ session_id: SESSION, agent_id: 'agent-1' });
    const states: SessionState[] = [];
    for (const [i, tool] of tools.entries()) {
      s = advanceSessionState(
        s,
        'steps/toolCallRequest',
        params({ tool: { name: tool }, arguments: {} }, { timestamp: `2026-03-01T10:00:0${i}Z` }),
        { recentToolCalls: 3, recentSteps: 2 },
      );
      states.push(s);
    }
    expect(s.recent_tool_calls.map(([tool]) => tool)).toEqual(['c', 'd', 'e']);
    expect(s.recent_tool_calls.map(([, at]) => at)).toEqual(
      [2, 3, 4].map((i) => Date.parse(`2026-03-01T10:00:0${i}Z`)),
    );
    expect(s.recent_steps.map((r) => r.tool)).toEqual(['d', 'e']);
    expect(states[1].recent_tool_calls.map(([tool]) => tool)).toEqual(['a', 'b']);
    expect(states[2].recent_tool_calls.map(([tool]) => tool)).toEqual(['a', 'b', 'c']);
    const none = advanceSessionState(s, 'steps/toolCallRequest', params({ tool: { name: 'f' }, arguments: {} }), {
      recentToolCalls: 0,
      recentSteps: 0,
    });
    expect(none.recent_tool_calls).toEqual([]);
    expect(none.recent_steps).toEqual([]);
  });

  it('counts turns, steps and tool calls per turn and per tool', () => {
    const s = run([
      ['steps/sessionStart', params({})],
      ['steps/turnStart', params({ turn_id: 't1' }, { turn_id: 't1' })],
      ['steps/toolCallRequest', params({ tool: { name: 'shell' }, arguments: {} }, { turn_id: 't1' })],
      ['steps/toolCallRequest', params({ tool: { name: 'http' }, arguments: {} }, { turn_id: 't1' })],
      ['steps/turnEnd', params({ turn_id: 't1', outcome: 'completed' }, { turn_id: 't1' })],
      ['steps/turnStart', params({ turn_id: 't2' }, { turn_id: 't2' })],
      ['steps/toolCallRequest', params({ tool: { name: 'shell' }, arguments: {} }, { turn_id: 't2' })],
    ]);
    expect(s.turn).toEqual({ id: 't2', index: 2, step_count: 2, tool_call_count: 1, open: true });
    expect(s.counters.tool_calls_total).toBe(3);
    expect(s.counters.tool_calls_by_tool).toEqual({ shell: 2, http: 1 });
    expect(s.counters.steps_total).toBe(7);
    expect(s.counters.turns_total).toBe(2);
    expect(s.counters.steps_by_method['steps/turnStart']).toBe(2);
  });

  it('does not mutate the state it is given', () => {
    const s0 = initialSessionState({ session_id: SESSION, agent_id: 'agent-1' });
    const copy = JSON.stringify(s0);
    advanceSessionState(
      s0,
      'steps/userMessage',
      params({ content: [{ type: 'text', value: 'hi', provenance: prov('p1', 'user_input') }] }),
    );
    expect(JSON.stringify(s0)).toBe(copy);
  });

  it('applies §7.2 default trust and the minimum over lineage for agent_generated data', () => {
    const s = run([
      ['steps/userMessage', params({ content: [{ type: 'text', value: 'hi', provenance: prov('u1', 'user_input') }] })],
      [
        'steps/toolCallResult',
        params({
          tool: { name: 'web' },
          exit_status: 'success',
          outputs: [{ value: 'page', provenance: prov('t1', 'tool_output') }],
        }),
      ],
      [
        'steps/agentResponse',
        params({ content: [{ type: 'text', value: 'a', provenance: prov('a1', 'agent_generated', ['u1']) }] }),
      ],
      [
        'steps/agentResponse',
        params({ content: [{ type: 'text', value: 'b', provenance: prov('a2', 'agent_generated', ['u1', 't1']) }] }),
      ],
      // Laundering through a summary of a summary keeps the lowest trust (lineage is transitive).
      ['steps/postCompact', params({ summary: { value: 's', provenance: prov('c1', 'agent_generated', ['a2']) } })],
      [
        'steps/agentResponse',
        params({ content: [{ type: 'text', value: 'c', provenance: prov('a3', 'agent_generated') }] }),
      ],
      [
        'steps/agentResponse',
        params({ content: [{ type: 'text', value: 'd', provenance: prov('a4', 'agent_generated', ['never-seen']) }] }),
      ],
      [
        'steps/userMessage',
        params({ content: [{ type: 'text', value: 'x', provenance: prov('u2', 'user_input', ['t1']) }] }),
      ],
    ]);
    const trust = Object.fromEntries(Object.entries(provenanceRecords(s)).map(([k, v]) => [k, v.trust]));
    expect(trust).toEqual({
      u1: 'trusted',
      t1: 'untrusted',
      a1: 'trusted',
      a2: 'untrusted',
      c1: 'untrusted',
      a3: 'unknown',
      a4: 'unknown',
      u2: 'untrusted',
    });
    expect(provenanceRecords(s).c1.lineage_depth).toBe(2);
    expect(s.provenance.summary.max_lineage_depth).toBe(2);
    expect(s.provenance.summary.origins_seen).toEqual(['user_input', 'tool_output', 'agent_generated']);
    expect(s.provenance.summary.entry_count_by_origin).toEqual({ user_input: 2, tool_output: 1, agent_generated: 5 });
  });

  it('honours origin trust overrides', () => {
    const s0 = initialSessionState({ session_id: SESSION, agent_id: 'agent-1' });
    const s = advanceSessionState(
      s0,
      'steps/knowledgeRetrieval',
      params({
        query: { value: 'q', provenance: prov('q1', 'user_input') },
        results: [{ value: 'r', provenance: prov('r1', 'retrieved') }],
      }),
      {
        originTrust: { retrieved: 'trusted' },
      },
    );
    expect(provenanceRecords(s).r1.trust).toBe('trusted');
  });

  it('keeps taint history: earliest and latest untrusted step with turn indexes', () => {
    const s = run([
      ['steps/turnStart', params({ turn_id: 't1' }, { turn_id: 't1' })],
      [
        'steps/toolCallResult',
        params(
          {
            tool: { name: 'web' },
            exit_status: 'success',
            outputs: [{ value: 'x', provenance: prov('w1', 'retrieved') }],
          },
          { turn_id: 't1' },
        ),
      ],
      ['steps/turnStart', params({ turn_id: 't2' }, { turn_id: 't2' })],
      [
        'steps/toolCallResult',
        params(
          {
            tool: { name: 'web' },
            exit_status: 'success',
            outputs: [{ value: 'y', provenance: prov('w2', 'external') }],
          },
          { turn_id: 't2' },
        ),
      ],
    ]);
    expect(s.taint.earliest_untrusted).toMatchObject({
      provenance_id: 'w1',
      turn_index: 1,
      turn_id: 't1',
      origin: 'retrieved',
    });
    expect(s.taint.latest_untrusted).toMatchObject({ provenance_id: 'w2', turn_index: 2 });
    expect(s.taint.untrusted_steps).toBe(2);
    expect(s.recent_steps.map((r) => r.untrusted)).toEqual([false, true, false, true]);
  });

  it('fixes intent at sessionStart and counts later change attempts', () => {
    const intent = {
      raw: 'fix the bug',
      parsed: ['filesystem.read', 'filesystem.write'],
      scope_mode: 'strict',
      parser_provenance: prov('ip', 'user_input'),
    };
    const s = run([
      ['steps/sessionStart', params({ intent, policy_mode: 'moderate' })],
      ['steps/agentTrigger', params({ trigger_type: 'user_message', intent: { parsed: ['network.egress'] } })],
    ]);
    expect(s.intent?.parsed).toEqual(['filesystem.read', 'filesystem.write']);
    expect(s.intent?.scope_mode).toBe('strict');
    expect(s.intent_change_attempts).toBe(1);
    expect(s.policy_mode).toBe('moderate');
  });

  it('tracks skill registrations by normalised digest; a denied registration is not approved', () => {
    let s = run([
      [
        'steps/skillRegister',
        params({
          skill_id: 'pdf',
          definition: { ref: 'r', digest: 'SHA-256:ABC' },
          declared_capabilities: ['filesystem.read'],
        }),
      ],
    ]);
    expect(s.skills.registered.pdf).toMatchObject({
      digest: 'sha256:abc',
      approved: true,
      declared_capabilities: ['filesystem.read'],
    });
    s = recordDecision(s, { step_id: s.skills.registered.pdf.step_id, method: 'steps/skillRegister' }, 'deny');
    expect(s.skills.registered.pdf.approved).toBe(false);
    expect(s.counters.denials).toBe(1);
    expect(normaliseDigest({ algorithm: 'SHA-256', value: 'ABC' })).toBe('sha256:abc');
  });

  it('caps provenance records by evicting the oldest; data derived from an evicted id is not trusted', () => {
    let s = initialSessionState({ session_id: SESSION, agent_id: 'agent-1' });
    for (let i = 0; i < 15; i++) {
      s = advanceSessionState(
        s,
        'steps/userMessage',
        params({ content: [{ type: 'text', value: 'x', provenance: prov(`u${i}`, 'user_input') }] }),
        { maxProvenanceRecords: 10 },
      );
    }
    const ids = Object.keys(provenanceRecords(s));
    expect(ids.length).toBeLessThanOrEqual(10);
    expect(s.provenance.record_count).toBe(ids.length);
    expect(ids).toContain('u14');
    expect(ids).not.toContain('u0');
    expect(s.provenance.summary.entry_count).toBe(15);
    s = advanceSessionState(
      s,
      'steps/agentResponse',
      params({
        content: [
          { type: 'text', value: 'a', provenance: prov('a0', 'agent_generated', ['u0']) },
          { type: 'text', value: 'b', provenance: prov('a14', 'agent_generated', ['u14']) },
        ],
      }),
      { maxProvenanceRecords: 10 },
    );
    expect(provenanceRecords(s).a0.trust).toBe('unknown');
    expect(provenanceRecords(s).a14.trust).toBe('trusted');
  });

  it('recordDecision and recordApproval leave the given state untouched', () => {
    const s0 = run([['steps/skillRegister', params({ skill_id: 'k', definition: { digest: 'sha256:aa' } })]]);
    const before = JSON.stringify(s0);
    const stepId = s0.recent_steps[0].step_id;
    const s1 = recordDecision(s0, { step_id: stepId, method: 'steps/skillRegister' }, 'deny');
    recordApproval(s1, {
      ask_step_id: 'x',
      approver: { type: 'human', id: 'a' },
      capabilities: ['c'],
      scope: 'session',
      granted_at: 't',
    });
    expect(JSON.stringify(s0)).toBe(before);
    expect(s1.recent_steps[0].decision).toBe('deny');
    expect(s1.skills.registered.k.approved).toBe(false);
  });

  it('is deterministic: the same steps give byte-identical state (replay)', () => {
    const steps: [string, Json][] = [
      ['steps/sessionStart', params({ intent: { parsed: ['a'] } })],
      ['steps/turnStart', params({ turn_id: 't1' }, { turn_id: 't1' })],
      [
        'steps/toolCallRequest',
        params(
          { tool: { name: 'shell' }, arguments: { cmd: { value: 'ls', provenance: prov('x1', 'user_input') } } },
          { turn_id: 't1' },
        ),
      ],
    ];
    expect(JSON.stringify(run(steps))).toBe(JSON.stringify(run(steps)));
  });
});

describe('collectProvenance', () => {
  it('finds provenance on arguments, content and outputs with RFC 6901 paths', () => {
    const found = collectProvenance({
      arguments: {
        'a/b': { value: 1, provenance: prov('p1', 'user_input') },
        'c~d': { value: 2, provenance: prov('p2', 'tool_output', ['p1']) },
      },
      content: [{ type: 'text', value: 'x', provenance: prov('p3', 'system') }],
      registration_provenance: prov('p4', 'system'),
      provenance: { not: 'a provenance object' },
    });
    expect(found.map((f) => [f.provenance_id, f.path])).toEqual([
      ['p1', '/arguments/a~1b'],
      ['p2', '/arguments/c~0d'],
      ['p3', '/content/0'],
      ['p4', ''],
    ]);
    expect(found[1].derived_from).toEqual(['p1']);
  });
});

describe('buildPolicyInput', () => {
  it('strips the signature and projects only referenced provenance with its lineage', () => {
    let s = run([
      ['steps/userMessage', params({ content: [{ type: 'text', value: 'hi', provenance: prov('u1', 'user_input') }] })],
      [
        'steps/toolCallResult',
        params({
          tool: { name: 'web' },
          exit_status: 'success',
          outputs: [{ value: 'page', provenance: prov('t1', 'tool_output') }],
        }),
      ],
      [
        'steps/agentResponse',
        params({ content: [{ type: 'text', value: 'a', provenance: prov('a1', 'agent_generated', ['t1']) }] }),
      ],
      [
        'steps/userMessage',
        params({ content: [{ type: 'text', value: 'other', provenance: prov('u9', 'user_input') }] }),
      ],
    ]);
    const p = params({
      tool: { name: 'email.send' },
      capability: 'email.send',
      arguments: { body: { value: 'x', provenance: prov('b1', 'agent_generated', ['a1', 'u1']) } },
    });
    s = advanceSessionState(s, 'steps/toolCallRequest', p);
    const input = buildPolicyInput(
      'steps/toolCallRequest',
      p,
      s,
      { modify_capable: true, ask_capable: false },
      { now: '2026-03-01T10:00:00Z', policy_version: 'r1' },
    );
    expect((input.params as Record<string, Json>).signature).toBeUndefined();
    expect((input.params as Record<string, Json>).payload).toEqual((p as Record<string, Json>).payload);
    const session = input.session as Record<string, Record<string, Json>>;
    expect(session.provenance.trust).toEqual({ b1: 'untrusted', a1: 'untrusted', t1: 'untrusted', u1: 'trusted' });
    expect(session.provenance.lineage).toEqual({ b1: ['a1', 't1', 'u1'] });
    expect((session.provenance.lineage as Record<string, Json>).b1).toEqual(lineageOf(s, 'b1'));
    expect(Object.keys(session.provenance.records as object).sort()).toEqual(['a1', 'b1', 't1', 'u1']);
    expect(input.client).toEqual({ modify_capable: true, ask_capable: false });
    expect(input.guardian).toEqual({ now: '2026-03-01T10:00:00Z', policy_version: 'r1' });
    expect(session.turn).toEqual({ id: null, index: 0, step_count: 5, tool_call_count: 1 });
  });

  it('counts tool calls in the last minute and hour relative to the step timestamp', () => {
    const at = (t: string): Json => params({ tool: { name: 'http' }, arguments: {} }, { timestamp: t });
    const s = run([
      ['steps/toolCallRequest', at('2026-03-01T08:59:59Z')],
      ['steps/toolCallRequest', at('2026-03-01T09:59:30Z')],
      ['steps/toolCallRequest', at('2026-03-01T10:00:00Z')],
    ]);
    const input = buildPolicyInput(
      'steps/toolCallRequest',
      at('2026-03-01T10:00:00Z'),
      s,
      { modify_capable: true, ask_capable: true },
      { now: 'x', policy_version: 'r' },
    );
    const counters = (input.session as Record<string, Record<string, Json>>).counters;
    expect(counters.tool_calls_last_minute).toBe(2);
    expect(counters.tool_calls_last_hour).toBe(2);
    expect(counters.tool_calls_total).toBe(3);
    // The state's counters followed by the windows, whatever members (and order) the stored counters have.
    const windows = {
      tool_calls_last_minute: 2,
      tool_calls_last_minute_by_tool: { http: 2 },
      tool_calls_last_hour: 2,
      tool_calls_last_hour_by_tool: { http: 2 },
    };
    expect(JSON.stringify(counters)).toBe(JSON.stringify({ ...s.counters, ...windows }));
    const { steps_total, ...rest } = s.counters;
    for (const stored of [
      { ...rest, steps_total },
      { ...s.counters, legacy: 1 },
      { ...s.counters, tool_calls_last_hour: 99 },
    ]) {
      const other = buildPolicyInput(
        'steps/toolCallRequest',
        at('2026-03-01T10:00:00Z'),
        { ...s, counters: stored as SessionState['counters'] },
        { modify_capable: true, ask_capable: true },
        { now: 'x', policy_version: 'r' },
      );
      expect(JSON.stringify((other.session as Record<string, Json>).counters)).toBe(
        JSON.stringify({ ...stored, ...windows }),
      );
    }
  });

  it('counts the windows as a plain filter over the history would, tools in first-seen order', () => {
    const nowMs = Date.parse('2026-03-01T10:00:00Z');
    const client = { modify_capable: true, ask_capable: true };
    const facts = { now: 'x', policy_version: 'r' };
    const call = fc.tuple(
      fc.constantFrom('a', 'b', '', '__proto__', 'toString'),
      fc.integer({ min: -3_700_000, max: 100_000 }),
    );
    fc.assert(
      fc.property(fc.array(call, { maxLength: 60 }), (calls) => {
        const state = {
          ...initialSessionState({ session_id: SESSION, agent_id: 'agent-1' }),
          recent_tool_calls: calls.map(([tool, dt]) => [tool, nowMs + dt] as [string, number]),
        };
        const counters = (
          buildPolicyInput('steps/userMessage', params({}, { timestamp: '2026-03-01T10:00:00Z' }), state, client, facts)
            .session as Record<string, Record<string, Json>>
        ).counters;
        const window = (floor: number) => {
          const inside = state.recent_tool_calls.filter(([, at]) => at > floor && at <= nowMs);
          const byTool: Record<string, number> = {};
          for (const [tool] of inside)
            Object.defineProperty(byTool, tool, {
              value: (Object.hasOwn(byTool, tool) ? byTool[tool] : 0) + 1,
              enumerable: true,
              writable: true,
              configurable: true,
            });
          return [inside.length, byTool];
        };
        expect(JSON.stringify([counters.tool_calls_last_minute, counters.tool_calls_last_minute_by_tool])).toBe(
          JSON.stringify(window(nowMs - 60_000)),
        );
        expect(JSON.stringify([counters.tool_calls_last_hour, counters.tool_calls_last_hour_by_tool])).toBe(
          JSON.stringify(window(nowMs - 3_600_000)),
        );
      }),
      { numRuns: 300 },
    );
  });

  it('lets a this_request grant serve only the next tool call', () => {
    let s = run([['steps/sessionStart', params({ intent: { parsed: ['filesystem.read'] } })]]);
    s = recordApproval(s, {
      ask_step_id: 'ask-1',
      approver: { type: 'human', id: 'alice' },
      capabilities: ['filesystem.delete'],
      scope: 'this_request',
      granted_at: 't',
    });
    s = recordApproval(s, {
      ask_step_id: 'ask-2',
      approver: { type: 'human', id: 'alice' },
      capabilities: ['network.egress'],
      scope: 'session',
      granted_at: 't',
    });
    const client = { modify_capable: true, ask_capable: true };
    const facts = { now: 'x', policy_version: 'r' };
    const approvalsOf = (input: { session: Json }) =>
      ((input.session as Record<string, Json>).approvals as { ask_step_id: string }[]).map((g) => g.ask_step_id).sort();
    const pending = params({ content: [] });
    expect(
      approvalsOf(
        buildPolicyInput(
          'steps/userMessage',
          pending,
          advanceSessionState(s, 'steps/userMessage', pending),
          client,
          facts,
        ),
      ),
    ).toEqual(['ask-1', 'ask-2']);
    const first = params({ tool: { name: 'delete_file' }, arguments: {} });
    s = advanceSessionState(s, 'steps/toolCallRequest', first);
    expect(approvalsOf(buildPolicyInput('steps/toolCallRequest', first, s, client, facts))).toEqual(['ask-1', 'ask-2']);
    const second = params({ tool: { name: 'delete_file' }, arguments: {} });
    s = advanceSessionState(s, 'steps/toolCallRequest', second);
    expect(approvalsOf(buildPolicyInput('steps/toolCallRequest', second, s, client, facts))).toEqual(['ask-2']);
  });

  it('exposes effective capabilities including session-scoped approver extensions', () => {
    let s = run([['steps/sessionStart', params({ intent: { parsed: ['filesystem.read'], scope_mode: 'moderate' } })]]);
    s = recordApproval(s, {
      ask_step_id: 'ask-1',
      approver: { type: 'human', id: 'alice' },
      capabilities: ['network.egress'],
      scope: 'session',
      granted_at: '2026-03-01T10:00:00Z',
    });
    s = recordApproval(s, {
      ask_step_id: 'ask-2',
      approver: { type: 'human', id: 'alice' },
      capabilities: ['filesystem.delete'],
      scope: 'this_request',
      granted_at: '2026-03-01T10:00:00Z',
    });
    const p = params({});
    const input = buildPolicyInput(
      'steps/turnStart',
      p,
      s,
      { modify_capable: true, ask_capable: true },
      { now: 'x', policy_version: 'r' },
    );
    const session = input.session as Record<string, Record<string, Json>>;
    expect(session.intent.effective_capabilities).toEqual(['filesystem.read', 'network.egress']);
    expect(session.intent.parsed).toEqual(['filesystem.read']);
    expect((session.approvals as unknown as Json[]).length).toBe(2);
  });
});

describe('session state representation', () => {
  const client = { modify_capable: true, ask_capable: true };
  const facts = { now: 'x', policy_version: 'r' };

  it('treats provenance ids, origins and tool names that are Object.prototype members as plain names', () => {
    const s = run([
      [
        'steps/userMessage',
        params({
          content: [
            { type: 'text', value: 'a', provenance: prov('constructor', 'user_input') },
            { type: 'text', value: 'b', provenance: prov('__proto__', 'constructor') },
          ],
        }),
      ],
      ['steps/toolCallRequest', params({ tool: { name: '__proto__' }, arguments: {} })],
      ['steps/toolCallRequest', params({ tool: { name: 'toString' }, arguments: {} })],
    ]);
    const records = provenanceRecords(s);
    expect(Object.keys(records).sort()).toEqual(['__proto__', 'constructor']);
    expect(Object.getOwnPropertyDescriptor(records, 'constructor')?.value.trust).toBe('trusted');
    // An origin named like a prototype member has no default trust: unknown, not a function.
    expect(Object.getOwnPropertyDescriptor(records, '__proto__')?.value.trust).toBe('unknown');
    expect(JSON.parse(JSON.stringify(s.counters.tool_calls_by_tool))).toEqual({ ['__proto__']: 1, toString: 1 });
    const p = params({
      tool: { name: 'x' },
      arguments: { a: { value: 1, provenance: prov('g', 'agent_generated', ['constructor', '__proto__']) } },
    });
    const next = advanceSessionState(s, 'steps/toolCallRequest', p);
    expect(provenanceRecords(next).g.trust).toBe('unknown');
    const input = JSON.parse(JSON.stringify(buildPolicyInput('steps/toolCallRequest', p, next, client, facts))) as {
      session: { provenance: { trust: Record<string, string> }; counters: Record<string, Json> };
    };
    expect(input.session.provenance.trust).toEqual({ g: 'unknown', constructor: 'trusted', ['__proto__']: 'unknown' });
    expect(input.session.counters.tool_calls_last_minute_by_tool).toEqual({ ['__proto__']: 1, toString: 1, x: 1 });
  });

  it('folds the same states step after step as from the stored form each step (the layer size the fold keeps)', () => {
    const steps = Array.from({ length: 200 }, (_, i) =>
      params({
        content: [
          {
            type: 'text',
            value: 'x',
            provenance: prov(`q${i}`, i % 3 ? 'agent_generated' : 'retrieved', i % 3 ? [`q${i - 1}`] : undefined),
          },
          ...(i % 7 ? [] : [{ type: 'text', value: 'y', provenance: prov(`q${i - 1}`, 'retrieved') }]),
        ],
      }),
    );
    const options = { maxProvenanceRecords: 150 };
    let live = initialSessionState({ session_id: SESSION, agent_id: 'agent-1' });
    const liveStates = steps.map((p) =>
      JSON.stringify((live = advanceSessionState(live, 'steps/agentResponse', p, options))),
    );
    let stored = initialSessionState({ session_id: SESSION, agent_id: 'agent-1' });
    const storedStates = steps.map((p) =>
      JSON.stringify(
        (stored = advanceSessionState(
          JSON.parse(JSON.stringify(stored)) as SessionState,
          'steps/agentResponse',
          p,
          options,
        )),
      ),
    );
    expect(liveStates).toEqual(storedStates);
  });

  it('keeps the newest records in a small layer: lookups, eviction and the persisted form agree across folds', () => {
    let s = initialSessionState({ session_id: SESSION, agent_id: 'agent-1' });
    let persisted = JSON.parse(JSON.stringify(s)) as SessionState;
    const options = { maxProvenanceRecords: 150 };
    for (let i = 0; i < 200; i++) {
      const parent = i === 0 ? [] : [`r${i - 1}`];
      const origin = i % 50 === 0 ? 'retrieved' : 'agent_generated';
      const p = params({
        content: [
          { type: 'text', value: 'x', provenance: prov(`r${i}`, origin, origin === 'retrieved' ? undefined : parent) },
        ],
      });
      const live = advanceSessionState(s, 'steps/agentResponse', p, options);
      const reread = advanceSessionState(persisted, 'steps/agentResponse', p, options);
      // The live pipeline continues from the object it wrote; a restarted one from the stored JSON.
      expect(JSON.stringify(buildPolicyInput('steps/agentResponse', p, reread, client, facts))).toBe(
        JSON.stringify(buildPolicyInput('steps/agentResponse', p, live, client, facts)),
      );
      s = live;
      persisted = JSON.parse(JSON.stringify(live)) as SessionState;
    }
    const records = provenanceRecords(s);
    expect(Object.keys(records).length).toBe(s.provenance.record_count);
    expect(s.provenance.record_count).toBeLessThanOrEqual(150);
    expect(records.r0).toBeUndefined();
    expect(records.r199.trust).toBe('untrusted');
    expect(records.r199.lineage_depth).toBe(49);
    expect(Object.keys(s.provenance.recent_records ?? {}).length).toBeLessThan(64);
    expect(Object.keys(s.provenance.records).length).toBeGreaterThan(64);
  });

  it('counts the same windows over a history carried from step to step as over the same history read back', () => {
    const client = { modify_capable: true, ask_capable: true };
    const facts = { now: 'x', policy_version: 'r' };
    const baseMs = Date.parse('2026-03-01T10:00:00Z');
    // More tool names than the shortest histories hold, so names gone from the window pile up and get dropped.
    const call = fc.tuple(
      fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', '', '__proto__'),
      fc.integer({ min: -7_200, max: 7_200 }),
    );
    const windowsOf = (state: SessionState, p: Json): string => {
      const counters = (
        buildPolicyInput('steps/toolCallRequest', p, state, client, facts).session as Record<
          string,
          Record<string, Json>
        >
      ).counters;
      return JSON.stringify([
        counters.tool_calls_last_minute,
        counters.tool_calls_last_minute_by_tool,
        counters.tool_calls_last_hour,
        counters.tool_calls_last_hour_by_tool,
      ]);
    };
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 8 }), fc.array(call, { minLength: 1, maxLength: 40 }), (keep, calls) => {
        let state = initialSessionState({ session_id: SESSION, agent_id: 'agent-1' });
        for (const [tool, dt] of calls) {
          const timestamp = new Date(baseMs + dt * 1000).toISOString();
          const p = params({ tool: { name: tool }, arguments: {} }, { timestamp });
          const previous = state;
          state = advanceSessionState(previous, 'steps/toolCallRequest', p, { recentToolCalls: keep });
          // A second step from the same state (a retry after a stale head) must not disturb the first one's history.
          const sibling = advanceSessionState(
            previous,
            'steps/toolCallRequest',
            params({ tool: { name: `${tool}2` }, arguments: {} }, { timestamp }),
            { recentToolCalls: keep },
          );
          for (const s of [state, sibling]) {
            const stored = JSON.parse(JSON.stringify(s)) as SessionState;
            expect(s.recent_tool_calls).toEqual(stored.recent_tool_calls);
            expect(windowsOf(s, p)).toBe(windowsOf(stored, p));
          }
          // Nor do the histories derived from it change the range of the one they came from.
          expect(windowsOf(previous, p)).toBe(windowsOf(JSON.parse(JSON.stringify(previous)) as SessionState, p));
          // The columns stay within twice the history: neither calls before the window nor names gone from it pile up.
          const columns = toolCallColumns(state.recent_tool_calls);
          expect(columns.end - columns.start).toBe(state.recent_tool_calls.length);
          expect(columns.nameAt.length).toBeLessThanOrEqual(2 * state.recent_tool_calls.length);
          expect(columns.names.length).toBeLessThanOrEqual(2 * state.recent_tool_calls.length + 1);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('shares what a step does not change with the state it came from (copy on write)', () => {
    const s0 = run([
      ['steps/userMessage', params({ content: [{ type: 'text', value: 'a', provenance: prov('u1', 'user_input') }] })],
    ]);
    const s1 = advanceSessionState(s0, 'steps/userMessage', params({ content: [] }));
    expect(s1.provenance).toBe(s0.provenance);
    expect(s1.skills).toBe(s0.skills);
    expect(s1.recent_tool_calls).toBe(s0.recent_tool_calls);
    const s2 = recordDecision(s1, { step_id: s1.recent_steps[1].step_id, method: 'steps/userMessage' }, 'allow');
    expect(s2.counters).toBe(s1.counters);
    expect(s2.recent_steps[1].decision).toBe('allow');
    expect(s1.recent_steps[1].decision).toBeUndefined();
  });

  it('reads tool-call history written as {step_id, tool, at_ms} objects (states stored before the pair form)', () => {
    const at = (t: string): Json => params({ tool: { name: 'http' }, arguments: {} }, { timestamp: t });
    const s = run([
      ['steps/toolCallRequest', at('2026-03-01T09:59:30Z')],
      ['steps/toolCallRequest', at('2026-03-01T09:30:00Z')],
    ]);
    const legacy = {
      ...s,
      recent_tool_calls: s.recent_tool_calls.map(([tool, at_ms], i) => ({ step_id: `s${i}`, tool, at_ms })),
    } as unknown as SessionState;
    expect(isSessionState(JSON.parse(JSON.stringify(legacy)))).toBe(true);
    const upgraded = upgradeSessionState(legacy);
    expect(upgraded.recent_tool_calls).toEqual(s.recent_tool_calls);
    expect(upgradeSessionState(s)).toBe(s);
    const p = at('2026-03-01T10:00:00Z');
    const counters = (state: SessionState) =>
      (
        buildPolicyInput(
          'steps/toolCallRequest',
          p,
          advanceSessionState(state, 'steps/toolCallRequest', p),
          client,
          facts,
        ).session as Record<string, Json>
      ).counters;
    expect(counters(upgraded)).toEqual(counters(s));
    expect(counters(upgraded)).toMatchObject({ tool_calls_last_minute: 2, tool_calls_last_hour: 3 });
  });
});
