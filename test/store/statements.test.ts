// The hot-path statements are rendered once with named placeholders: every batch sends the same text (the
// Postgres driver keeps it as a named prepared statement) and binds exactly one value per numbered parameter.
import { describe, expect, it } from 'vitest';
import { agbomVersionInsert, prepareAgbomVersion } from '../../src/store/agbom/versions.ts';
import { EntryColumns, appendWrites, stepWrites } from '../../src/store/entry-writes.ts';
import { prepareStep } from '../../src/store/prepare.ts';
import type { StepCommit } from '../../src/store/types.ts';
import { stepEntry } from './storage-suite.ts';

function step(sessionId: string, n: number, extra: Partial<StepCommit> = {}) {
  const entry = stepEntry(sessionId, n);
  const commit: StepCommit = {
    expectedHead: null,
    replayKeys: [{ kind: 'request_id', value: entry.content.entry_id }],
    replayKeysExpireAt: new Date(Date.now() + 60_000),
    entry,
    decision: { result: { n }, bundleRevision: 'r1', evaluationDurationMs: 1 },
    // A state change from a known base rides in the entry: the session row is left alone.
    session: { state: { n: n + 1 }, stateBase: { n } },
    ...extra,
  };
  return { key: sessionId, value: prepareStep(commit, 32) };
}

function columnsOf(batch: ReturnType<typeof step>[]): EntryColumns {
  const cols = new EntryColumns();
  for (const item of batch)
    cols.add(item.key, { seq: -1, headHash: null, pruned: false, changed: false }, item.value.append, item.value);
  return cols;
}

/** The numbers of the placeholders in a statement's text. */
const placeholders = (text: string) => new Set([...text.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));

describe('hot-path statements', () => {
  it('a step batch of any size and shape binds one value per $n, numbered 1…N, under one text', () => {
    const one = [step('a', 0)];
    const many = [
      step('b', 0),
      step('c', 0, { session: { intent: { goal: 'x' }, keyId: 'k1', closedAt: new Date() } }),
      step('d', 0, {
        childSession: {
          id: 'd-child',
          tenantId: null,
          agentId: 'agent',
          keyId: null,
          hello: {},
          intent: null,
          state: {},
          parentSessionId: 'd',
        },
      }),
    ];
    const a = stepWrites(one, columnsOf(one), new Date());
    const b = stepWrites(many, columnsOf(many), new Date());
    expect(b.text).toBe(a.text);
    const numbers = placeholders(a.text);
    expect(numbers.size).toBe(a.params.length);
    expect(Math.max(...numbers)).toBe(a.params.length);
    expect(b.params.length).toBe(a.params.length);
    // Every value is an array parameter or a single one, never spread into a list.
    expect(b.params.filter(Array.isArray).every((p) => (p as unknown[]).length <= many.length)).toBe(true);
    expect(b.params).toContainEqual(['d']);
    expect(b.params).toContainEqual(['c']);
  });

  it('an append batch binds its entries and the heads it moved', () => {
    const batch = [step('e', 0), step('f', 0)];
    const cols = columnsOf(batch);
    const heads = new Map([
      ['e', { seq: 0, headHash: cols.entryHash[0], pruned: false, changed: true }],
      ['f', { seq: -1, headHash: null, pruned: false, changed: false }],
    ]);
    const q = appendWrites(cols, heads);
    expect(placeholders(q.text).size).toBe(q.params.length);
    expect(q.params).toContainEqual(['e', 'f']);
    expect(q.params).toContainEqual([cols.entryHash[0]]);
  });

  it('an AgBOM version batch binds one array per column under one text; a batch without versions sends none', () => {
    const version = (method: string) => ({
      method,
      form: 'diff' as const,
      adopted: true,
      document: null,
      diff: { added: [method] },
      agbomHash: `sha256:${method}`,
      reportedHash: null,
      problems: [],
    });
    const placed = (sessionId: string, seq: number, v: ReturnType<typeof version> | null) => ({
      sessionId,
      appended: { seq, entryHash: `h-${sessionId}` },
      version: v && prepareAgbomVersion(v),
    });
    const one = agbomVersionInsert([placed('a', 0, version('agbom/update'))]);
    const two = agbomVersionInsert([
      placed('b', 1, version('agbom/snapshot')),
      placed('c', 0, null),
      placed('d', 2, version('agbom/update')),
    ]);
    expect(one && two).toBeTruthy();
    expect(two!.text).toBe(one!.text);
    expect(placeholders(two!.text).size).toBe(two!.params.length);
    expect(Math.max(...placeholders(two!.text))).toBe(two!.params.length);
    expect(two!.params).toContainEqual(['b', 'd']);
    expect(two!.params).toContainEqual([1, 2]);
    expect(two!.params).toContainEqual([null, null]);
    expect(agbomVersionInsert([placed('e', 0, null)])).toBeNull();
  });
});
