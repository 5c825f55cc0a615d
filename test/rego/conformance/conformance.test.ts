// One test per OPA conformance case (shared/rego-conformance), named by its note. Each case is compiled
// through our pipeline and evaluated by the unmodified opa-wasm on both evaluation paths (opa_eval and
// the ctx-based path), which must agree. Cases in known-failures.json are expected to fail; one that
// passes fails its test so the list stays honest.
import { describe, expect, it } from 'vitest';
import { loadCases, loadKnownFailures, runCase, topicOf } from './runner.ts';

const cases = loadCases();
const known = new Map(loadKnownFailures().map((k) => [k.note, k.reason]));

describe('conformance corpus', () => {
  it('has the documented number of cases', () => {
    // 433 cases; a few notes repeat across files (OPA's corpus), so a known-failure entry covers every case with its note.
    expect(cases.length).toBeGreaterThanOrEqual(433);
    for (const c of cases) expect(c.query.length, c.note).toBeGreaterThan(0);
  });
  it('known-failures.json names only existing cases, each with a reason', () => {
    const notes = new Set(cases.map((c) => c.note));
    for (const [note, reason] of known) {
      expect(notes.has(note), `unknown note in known-failures.json: ${note}`).toBe(true);
      expect(reason.length).toBeGreaterThan(0);
    }
  });
});

const topics = [...new Set(cases.map((c) => topicOf(c.note)))];
for (const topic of topics) {
  describe(topic, () => {
    for (const c of cases.filter((x) => topicOf(x.note) === topic)) {
      it(c.note, { timeout: 60_000 }, async () => {
        const outcome = await runCase(c);
        const reason = known.get(c.note);
        if (reason !== undefined) {
          if (outcome.status === 'pass')
            throw new Error(`known failure now passes, remove it from known-failures.json: ${c.note}`);
          return; // expected failure (reason recorded in known-failures.json)
        }
        if (outcome.status === 'fail') throw new Error(`[${outcome.stage}] ${c.file}\n${outcome.detail}`);
      });
    }
  });
}
