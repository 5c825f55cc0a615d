// Our own Rego cases (language-cases.ts) compiled through our pipeline to Wasm and evaluated by the unmodified
// opa-wasm on both evaluation paths, which must agree; `data.a.b = x` cases are also built as the entrypoint
// `a/b` the way bundles are. OPA's own corpus runs outside `npm test`: `npm run conformance`.
import { describe, expect, it } from 'vitest';
import { LANGUAGE_CASES } from './language-cases.ts';
import { runCase, topicOf } from './runner.ts';

describe('language cases', () => {
  it('notes are unique (each names one test)', () => {
    const notes = LANGUAGE_CASES.map((c) => c.note);
    expect(notes.filter((n, i) => notes.indexOf(n) !== i)).toEqual([]);
  });
});

for (const topic of [...new Set(LANGUAGE_CASES.map((c) => topicOf(c.note)))]) {
  describe(topic, () => {
    for (const c of LANGUAGE_CASES.filter((x) => topicOf(x.note) === topic)) {
      it(c.note, async () => {
        const outcome = await runCase(c);
        expect(outcome.status === 'fail' ? `[${outcome.stage}] ${outcome.detail}` : 'pass').toBe('pass');
      });
    }
  });
}
