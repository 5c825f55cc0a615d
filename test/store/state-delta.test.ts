// The session-state patch (src/store/state-delta.ts) against the straightforward path it replaces: storing
// JSON.stringify(next) whole. Applied to the stored text of the state a step started from, the patch must give
// exactly that text back (members, values and member order), for random JSON edited copy-on-write and for the
// real policy state the pipeline folds step by step.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { nextSessionState } from '../../src/acs/pipeline/advance.ts';
import type { AcsRequest } from '../../src/acs/types.ts';
import { advanceSessionState, initialSessionState, type SessionState } from '../../src/policy/index.ts';
import { applyStatePatch, stateDiff } from '../../src/store/state-delta.ts';
import type { Json } from '../../src/json.ts';

/** What a store holding the state as `base` text ends up with after the step's patch went through JSON. */
function patchedText(baseText: string, base: unknown, next: unknown): string {
  const patch = stateDiff(base, next);
  if (patch === undefined) return baseText;
  return JSON.stringify(applyStatePatch(JSON.parse(baseText), JSON.parse(JSON.stringify(patch))));
}

type Edit = { path: number[]; op: 'set' | 'add' | 'delete' | 'push' | 'shift' | 'replace'; key: string; value: Json };

/** Applies an edit copy-on-write, as the policy code does: containers on the path are copied, the rest shared. */
function editCow(value: Json, edit: Edit, depth = 0): Json {
  if (value === null || typeof value !== 'object') return edit.value;
  const entries: [string | number, Json][] = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  if (depth < edit.path.length && entries.length > 0) {
    const [k] = entries[edit.path[depth] % entries.length];
    if (Array.isArray(value)) {
      const copy = [...value];
      copy[k as number] = editCow(value[k as number], edit, depth + 1);
      return copy;
    }
    const copy = { ...value };
    copy[k as string] = editCow(value[k as string], edit, depth + 1);
    return copy;
  }
  if (Array.isArray(value)) {
    if (edit.op === 'push' || edit.op === 'add') return [...value, edit.value];
    if (edit.op === 'shift' || edit.op === 'delete') return value.slice(1).concat([edit.value]);
    if (edit.op === 'set' && value.length > 0) return value.map((v, i) => (i === value.length - 1 ? edit.value : v));
    return edit.value;
  }
  if (edit.op === 'replace') return edit.value;
  const copy = { ...value };
  if (edit.op === 'delete') {
    const keys = Object.keys(copy);
    if (keys.length) delete copy[keys[edit.key.length % keys.length]];
    return copy;
  }
  if (edit.op === 'add' && edit.key in copy) {
    // Re-adding a member moves it to the end: the order the patch cannot express by edits alone.
    delete copy[edit.key];
  }
  Object.defineProperty(copy, edit.key, { value: edit.value, writable: true, enumerable: true, configurable: true });
  return copy;
}

const keyArb = fc.oneof(
  fc.constantFrom('a', 'b', 'count', '__proto__', 'constructor', '0', '7', '42', ''),
  fc.string({ maxLength: 4 }),
);
const editArb: fc.Arbitrary<Edit> = fc.record({
  path: fc.array(fc.nat(), { maxLength: 4 }),
  op: fc.constantFrom('set', 'add', 'delete', 'push', 'shift', 'replace'),
  key: keyArb,
  value: fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json>,
});

describe('session state patches', () => {
  it('give back the stored text of the next state for random JSON edited copy-on-write', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), fc.array(editArb, { maxLength: 5 }), (start, edits) => {
        let base = start as Json;
        for (const edit of edits) {
          const next = editCow(base, edit);
          expect(patchedText(JSON.stringify(base), base, next)).toBe(JSON.stringify(next));
          base = next;
        }
      }),
      { numRuns: 3000 },
    );
  });

  it('are exact when nothing is shared (a deep copy) and when values JSON drops or rewrites appear', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), fc.jsonValue({ maxDepth: 4 }), (a, b) => {
        expect(patchedText(JSON.stringify(a), a, b)).toBe(JSON.stringify(b));
        expect(patchedText(JSON.stringify(a), a, structuredClone(a))).toBe(JSON.stringify(a));
      }),
      { numRuns: 2000 },
    );
    const base = { a: 1, b: { c: [1, 2, 3] }, d: undefined, n: 2 };
    const next = { ...base, a: undefined, d: 4, n: NaN, b: { c: [2, 3, undefined] }, e: -0 };
    expect(patchedText(JSON.stringify(base), base, next)).toBe(JSON.stringify(next));
    // The same members in the same order, one of them appearing or vanishing from JSON's view.
    const kept = { a: 1, d: undefined as number | undefined, z: 2 };
    expect(patchedText(JSON.stringify(kept), kept, { ...kept, d: 4 })).toBe(JSON.stringify({ ...kept, d: 4 }));
    const dropped = { a: 1, d: 3 as number | undefined, z: 2 };
    expect(patchedText(JSON.stringify(dropped), dropped, { ...dropped, d: undefined })).toBe(
      JSON.stringify({ ...dropped, d: undefined }),
    );
    // Array-index member names sort first in JS objects: a new one is placed where JSON.parse would put it.
    const ordered = { z: 1, y: 2 };
    expect(patchedText(JSON.stringify(ordered), ordered, { ...ordered, 5: 'x', a: 3 })).toBe(
      JSON.stringify({ ...ordered, 5: 'x', a: 3 }),
    );
    // A `__proto__` member stays a member.
    const proto = JSON.parse('{"__proto__":{"x":1},"k":1}') as Record<string, Json>;
    const protoNext = JSON.parse('{"__proto__":{"x":2},"k":1,"m":{"__proto__":[]}}') as Record<string, Json>;
    expect(patchedText(JSON.stringify(proto), proto, protoNext)).toBe(JSON.stringify(protoNext));
  });

  it('are small for a bounded queue that drops its head and pushes', () => {
    const queue = Array.from({ length: 200 }, (_, i) => ['shell', i]);
    const next = [...queue.slice(1), ['shell', 200]];
    expect(stateDiff(queue, next)).toEqual(['a', 1, [], [['shell', 200]]]);
    expect(stateDiff({ q: queue, n: 1 }, { q: queue, n: 1 })).toBeUndefined();
  });

  it('refuse a malformed patch instead of guessing', () => {
    expect(() => applyStatePatch({}, ['x'])).toThrow(TypeError);
    expect(() => applyStatePatch([1], ['a', 2, [], []])).toThrow(TypeError);
    expect(() => applyStatePatch([1], ['a', 0, [[1, ['=', 2]]], []])).toThrow(TypeError);
    expect(() => applyStatePatch(1, ['o', [], []])).toThrow(TypeError);
  });

  it('give back the stored text of the policy state the pipeline folds, over random step sequences', () => {
    const methods = [
      'steps/userMessage',
      'steps/toolCallRequest',
      'steps/toolCallResult',
      'steps/turnStart',
      'steps/turnEnd',
      'steps/sessionStart',
      'steps/agentTrigger',
      'steps/skillRegister',
      'steps/skillLoad',
      'steps/skillUnload',
      'steps/subagentStart',
      'steps/memoryWrite',
      'steps/sessionEnd',
    ] as const;
    const name = fc.constantFrom('shell', 'search', 'fetch', '__proto__', 'constructor', '0', '12');
    const provenance = fc.record({
      provenance_id: fc.constantFrom('p1', 'p2', 'p3', '__proto__', 'x'),
      origin: fc.constantFrom('user', 'web', 'tool', 'memory'),
      derived_from: fc.array(fc.constantFrom('p1', 'p2', 'p9'), { maxLength: 2 }),
    });
    const stepArb = fc.record({
      method: fc.constantFrom(...methods),
      tool: name,
      skill: name,
      provenance: fc.option(provenance, { nil: undefined }),
      fresh: fc.nat(10_000),
      decision: fc.constantFrom('allow', 'deny', 'modify', 'ask', 'defer'),
      intent: fc.option(
        fc.record({
          raw: fc.string({ maxLength: 8 }),
          parsed: fc.array(fc.constantFrom('read', 'write'), { maxLength: 2 }),
        }),
        { nil: undefined },
      ),
    });
    fc.assert(
      fc.property(fc.array(stepArb, { minLength: 1, maxLength: 260 }), (steps) => {
        let state: SessionState = initialSessionState({ session_id: 's-1', agent_id: 'agent-1' });
        let stored: unknown = null;
        let storedText = 'null';
        steps.forEach((s, i) => {
          const pid =
            s.provenance && (s.fresh % 3 === 0 ? `${s.provenance.provenance_id}-${i}` : s.provenance.provenance_id);
          const payload: Record<string, Json> = {
            tool: { name: s.tool },
            arguments: {
              q: { value: `q${i}`, ...(pid ? { provenance: { ...s.provenance!, provenance_id: pid } } : {}) },
            },
            skill_id: s.skill,
            content: [
              {
                type: 'text',
                value: 'hi',
                ...(pid ? { content_provenance: { ...s.provenance!, provenance_id: pid } } : {}),
              },
            ],
            ...(s.intent ? { intent: s.intent } : {}),
          };
          const params = {
            acs_version: '0.1.0',
            request_id: `r-${i}`,
            timestamp: new Date(1_800_000_000_000 + i * 997).toISOString(),
            metadata: { session_id: 's-1', agent_id: 'agent-1', turn_id: `t-${i >> 3}` },
            payload,
          } as unknown as Json;
          const request = { jsonrpc: '2.0', id: i, method: s.method, params } as unknown as AcsRequest;
          const advanced = advanceSessionState(state, s.method, params);
          const next = nextSessionState(state, advanced, request, s.decision).state;
          // The store's view: the text it holds for the state the step started from, then this step's patch.
          const text = patchedText(storedText, stored, next);
          expect(text).toBe(JSON.stringify(next));
          stored = next;
          storedText = text;
          state = next;
        });
      }),
      { numRuns: 60 },
    );
  });
});
