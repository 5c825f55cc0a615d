// OPA conformance report: `npx tsx scripts/conformance.ts [--filter text] [--failures] [--fast-only] [--json file]`.
// Prints pass/fail counts per topic and a final line `N passed, N failed`.
import { writeFileSync } from 'node:fs';
import { loadCases, loadKnownFailures, runCase, topicOf } from '../test/rego/conformance/runner.ts';

const args = process.argv.slice(2);
const flag = (name: string): boolean => args.includes(name);
const value = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};

const filter = value('--filter');
const cases = loadCases().filter((c) => !filter || c.note.includes(filter) || c.file.includes(filter));
const known = new Map(loadKnownFailures().map((k) => [k.note, k.reason]));
const perTopic = new Map<string, { pass: number; fail: number }>();
const failures: { note: string; file: string; stage: string; detail: string; known: boolean }[] = [];
let passed = 0;
let failed = 0;
const started = Date.now();
for (const c of cases) {
  const t0 = Date.now();
  const outcome = await runCase(c, { bothPaths: !flag('--fast-only') });
  const topic = topicOf(c.note);
  const counts = perTopic.get(topic) ?? { pass: 0, fail: 0 };
  if (outcome.status === 'pass') {
    counts.pass++;
    passed++;
    if (known.has(c.note)) console.log(`NOW PASSING (remove from known-failures.json): ${c.note}`);
  } else {
    counts.fail++;
    failed++;
    failures.push({
      note: c.note,
      file: c.file,
      stage: outcome.stage,
      detail: outcome.detail,
      known: known.has(c.note),
    });
    if (flag('--failures'))
      console.log(
        `FAIL [${outcome.stage}] ${c.note} (${c.file}, ${Date.now() - t0} ms)\n  ${outcome.detail.replace(/\n/g, '\n  ')}`,
      );
  }
  perTopic.set(topic, counts);
}
for (const [topic, { pass, fail }] of [...perTopic].sort()) {
  console.log(`${topic.padEnd(24)} ${String(pass).padStart(4)} passed ${String(fail).padStart(4)} failed`);
}
const unknownFailures = failures.filter((f) => !f.known).length;
console.log(
  `(${unknownFailures} failures not in known-failures.json; ${((Date.now() - started) / 1000).toFixed(1)} s for ${cases.length} cases)`,
);
const jsonOut = value('--json');
if (jsonOut) writeFileSync(jsonOut, JSON.stringify(failures, null, 2));
console.log(`${passed} passed, ${failed} failed`);
