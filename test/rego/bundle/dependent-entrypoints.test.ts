// `opa build -t wasm -e X` also compiles every rule that reads X's document, directly or through other rules,
// and lists them in the manifest after the asked-for ones, sorted by path (compile.go's compileWasm and
// transitiveDocumentDependents). An SDK user evaluating such a rule of an OPA-built bundle finds it in ours too.
import { describe, expect, it } from 'vitest';
import { compileBundle, evaluateEntrypoint, loadBundle } from '../../../src/rego/index.ts';

const sources = [
  {
    file: 'report.rego',
    text: `package app.report

violations contains v if {
	some v in input.items
	v < 0
}

complete := {"violations": violations}
`,
  },
  {
    file: 'summary.rego',
    text: `package other.summary

# reads app.report through a var: every rule below data.app, complete included
all_messages contains m if {
	some _, pkg in data.app
	some m in pkg.complete.violations
}

# reads all_messages, so complete transitively
total := count(all_messages)

# reads only violations, not complete
raw := count(data.app.report.violations)

# a function reading complete is no document to evaluate
size(x) := count(data.app.report.complete) + x

unrelated := 1
`,
  },
];

describe('rules reading an entrypoint become entrypoints, as opa build -t wasm makes them', () => {
  it('adds the transitive readers sorted by path, evaluable like the asked-for entrypoint', async () => {
    const built = await compileBundle({ sources, entrypoints: ['app/report/complete'] });
    expect(built.manifest.wasm?.map((w) => w.entrypoint)).toEqual([
      'app/report/complete',
      'other/summary/all_messages',
      'other/summary/total',
    ]);
    const loaded = await loadBundle(built.bundle);
    const input = { items: [1, -2, -3] };
    expect(evaluateEntrypoint(loaded, 'other/summary/total', input)).toEqual([{ result: 2 }]);
    expect(evaluateEntrypoint(loaded, 'other/summary/all_messages', input)).toEqual([{ result: [-3, -2] }]);
  });

  it('an entrypoint nothing reads adds nothing; one asked for is not listed twice', async () => {
    const alone = await compileBundle({ sources, entrypoints: ['other/summary/unrelated'] });
    expect(alone.manifest.wasm?.map((w) => w.entrypoint)).toEqual(['other/summary/unrelated']);
    const both = await compileBundle({ sources, entrypoints: ['other/summary/total', 'app/report/complete'] });
    expect(both.manifest.wasm?.map((w) => w.entrypoint)).toEqual([
      'other/summary/total',
      'app/report/complete',
      'other/summary/all_messages',
    ]);
  });
});
