// Robustness of the pure state functions on arbitrary (schema-invalid) params: they never throw, never
// mutate their input, and are deterministic (replay rebuilds identical state); a state stored as JSON and read
// back (a restarted Guardian) gives the same policy inputs as the object the pipeline keeps (copy on write).
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { Json } from '../../src/json.ts';
import { advanceSessionState, buildPolicyInput, initialSessionState, recordDecision } from '../../src/policy/index.ts';

const methods = fc.constantFrom(
  'steps/sessionStart',
  'steps/agentTrigger',
  'steps/turnStart',
  'steps/userMessage',
  'steps/toolCallRequest',
  'steps/toolCallResult',
  'steps/skillRegister',
  'steps/skillLoad',
  'steps/sessionEnd',
  'protocols/MCP/tools/call',
  'x/unknown',
);
const provenance = fc.record({
  provenance_id: fc.constantFrom('p1', 'p2', 'p3', 'p4', 'constructor', '__proto__'),
  origin: fc.constantFrom('user_input', 'tool_output', 'agent_generated', 'weird'),
  derived_from: fc.array(fc.constantFrom('p1', 'p2', 'p3', 'p9'), { maxLength: 3 }),
});
const payload = fc.oneof(
  fc.jsonValue() as fc.Arbitrary<Json>,
  fc.record(
    {
      tool: fc.record({ name: fc.oneof(fc.string(), fc.constantFrom('__proto__', 'hasOwnProperty')) }),
      capability: fc.string(),
      arguments: fc.dictionary(fc.string(), fc.record({ value: fc.jsonValue(), provenance })),
    },
    { requiredKeys: ['tool', 'arguments'] },
  ) as fc.Arbitrary<Json>,
  fc.record({
    content: fc.array(fc.record({ type: fc.constant('text'), value: fc.string(), provenance })),
  }) as fc.Arbitrary<Json>,
  fc.record({
    intent: fc.jsonValue(),
    skill_id: fc.string(),
    definition: fc.jsonValue(),
    digest: fc.jsonValue(),
  }) as fc.Arbitrary<Json>,
);
const params = fc.oneof(
  fc.jsonValue() as fc.Arbitrary<Json>,
  fc.record({
    request_id: fc.string(),
    timestamp: fc.oneof(fc.string(), fc.constant('2026-01-01T00:00:00Z')),
    metadata: fc.oneof(fc.jsonValue(), fc.record({ turn_id: fc.string() })),
    payload,
  }) as fc.Arbitrary<Json>,
);

function hasUndefined(v: unknown): boolean {
  if (v === undefined) return true;
  if (v === null || typeof v !== 'object') return false;
  return Object.values(v).some(hasUndefined);
}

describe('session state on arbitrary input', () => {
  it('never throws, never mutates, and replays identically', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(methods, params, fc.constantFrom('allow', 'deny', 'defer', 'ask', 'modify')), {
          maxLength: 12,
        }),
        (steps) => {
          const fold = () => {
            let s = initialSessionState({ session_id: 's', agent_id: 'a' });
            for (const [m, p, d] of steps) {
              const before = JSON.stringify(s);
              const next = advanceSessionState(s, m, p);
              expect(JSON.stringify(s)).toBe(before);
              // Another payload with the state just advanced gets its own provenance, not the fold's (kept for the input).
              const other = {
                request_id: 'other',
                payload: { content: [{ value: 'x', provenance: { provenance_id: 'p-other', origin: 'retrieved' } }] },
              } as Json;
              expect(
                JSON.stringify(
                  buildPolicyInput(
                    m,
                    other,
                    next,
                    { modify_capable: true, ask_capable: false },
                    { now: 'n', policy_version: 'v' },
                  ),
                ),
              ).toBe(
                JSON.stringify(
                  buildPolicyInput(
                    m,
                    other,
                    JSON.parse(JSON.stringify(next)) as typeof s,
                    { modify_capable: true, ask_capable: false },
                    { now: 'n', policy_version: 'v' },
                  ),
                ),
              );
              const input = buildPolicyInput(
                m,
                p,
                next,
                { modify_capable: true, ask_capable: false },
                { now: 'n', policy_version: 'v' },
              );
              const advanced = JSON.stringify(next);
              const step = {
                step_id: String((p as { request_id?: unknown } | null)?.request_id ?? ''),
                method: m,
                params: p,
              };
              // Right after the fold: its own recent step is copied member by member.
              const decided = recordDecision(next, step, d);
              expect(JSON.stringify(next)).toBe(advanced);
              const stored = advanceSessionState(JSON.parse(before) as typeof s, m, p);
              expect(
                JSON.stringify(
                  buildPolicyInput(
                    m,
                    p,
                    stored,
                    { modify_capable: true, ask_capable: false },
                    { now: 'n', policy_version: 'v' },
                  ),
                ),
              ).toBe(JSON.stringify(input));
              // A stored state's recent step is copied by spread: the same state.
              expect(JSON.stringify(recordDecision(JSON.parse(advanced) as typeof s, step, d))).toBe(
                JSON.stringify(decided),
              );
              expect(input.method).toBe(m);
              const text = JSON.stringify(input);
              expect(JSON.stringify(JSON.parse(text))).toBe(text);
              expect(hasUndefined(input)).toBe(false);
              s = decided;
            }
            return JSON.stringify(s);
          };
          expect(fold()).toBe(fold());
        },
      ),
      { numRuns: 300 },
    );
  });
});
