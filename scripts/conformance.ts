// OPA's Rego conformance corpus (YAML cases from OPA's repository, not carried here) through our compiler and
// opa-wasm: `npm run conformance -- [--cases DIR] [--filter text] [--failures] [--fast-only] [--json file]`.
// DIR defaults to ../shared/rego-conformance beside the checkout. Progress goes to stderr, one line per topic;
// stdout gets the per-topic table, every failure not in test/rego/conformance/known-failures.json, and a final
// line `N passed, N failed`. Exit 0 when every failure is a known one, 1 when one is not or a known failure now
// passes (the list must stay honest), 2 on a usage error.
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { KNOWN_FAILURES_FILE, loadCases, loadKnownFailures, runCase } from '../test/rego/conformance/runner.ts';

const USAGE = 'usage: npm run conformance -- [--cases DIR] [--filter text] [--failures] [--fast-only] [--json file]';
const FLAGS = new Set(['--failures', '--fast-only']);
const OPTIONS = new Set(['--cases', '--filter', '--json']);

function usageError(message: string, showUsage = false): never {
  process.stderr.write(`conformance: ${message}\n${showUsage ? `${USAGE}\n` : ''}`);
  process.exit(2);
}

function parseArgs(argv: string[]): { flags: Set<string>; options: Map<string, string> } {
  const flags = new Set<string>();
  const options = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (FLAGS.has(arg)) flags.add(arg);
    else if (OPTIONS.has(arg)) {
      const v = argv[++i];
      if (v === undefined) usageError(`${arg} needs a value`, true);
      options.set(arg, v);
    } else if (arg === '--help' || arg === '-h') {
      process.stdout.write(`${USAGE}\n`);
      process.exit(0);
    } else usageError(`unknown argument ${arg}`, true);
  }
  return { flags, options };
}

const { flags, options } = parseArgs(process.argv.slice(2));
const defaultDir = fileURLToPath(new URL('../../shared/rego-conformance', import.meta.url));
const dir = options.get('--cases') ?? defaultDir;
if (!existsSync(dir) || !statSync(dir).isDirectory())
  usageError(
    options.has('--cases')
      ? `--cases ${dir}: no such directory`
      : `no corpus at ${dir}; pass --cases DIR (a checkout of OPA's test/cases/testdata, v1/test/cases/testdata)`,
  );

const filter = options.get('--filter');
let all: ReturnType<typeof loadCases>;
try {
  all = loadCases(dir);
} catch (e) {
  usageError(`cannot read the cases under ${dir}: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`);
}
if (all.length === 0) usageError(`no YAML cases under ${dir}`);
const cases = all.filter((c) => !filter || c.note.includes(filter) || c.file.includes(filter));
const known = new Map(loadKnownFailures().map((k) => [k.note, k.reason]));

// known-failures.json may name only cases of this corpus (checked on the whole corpus, not a filtered part).
const notes = new Set(all.map((c) => c.note));
const staleKnown = [...known.keys()].filter((note) => !notes.has(note));

// A topic is the YAML file's directory (`…/testdata/v1/aggregates/x.yaml` → aggregates), in order of first
// appearance; a topic's cases may live in both of OPA's trees (test/ and v1/).
const topicOfFile = (file: string): string => file.split(/[\\/]/).at(-2) ?? file;
const byTopic = new Map<string, typeof cases>();
for (const c of cases) {
  const list = byTopic.get(topicOfFile(c.file)) ?? [];
  list.push(c);
  byTopic.set(topicOfFile(c.file), list);
}

const perTopic = new Map<string, { pass: number; fail: number }>();
const unexpected: { note: string; file: string; stage: string; detail: string }[] = [];
const nowPassing: string[] = [];
const failures: { note: string; file: string; stage: string; detail: string; known: boolean }[] = [];
let passed = 0;
let failed = 0;
let done = 0;
const started = Date.now();
for (const [topic, topicCases] of byTopic) {
  const counts = { pass: 0, fail: 0 };
  for (const c of topicCases) {
    const t0 = Date.now();
    const outcome = await runCase(c, { bothPaths: !flags.has('--fast-only') });
    done++;
    if (outcome.status === 'pass') {
      counts.pass++;
      passed++;
      if (known.has(c.note)) nowPassing.push(c.note);
      continue;
    }
    counts.fail++;
    failed++;
    const failure = { note: c.note, file: c.file, stage: outcome.stage, detail: outcome.detail };
    failures.push({ ...failure, known: known.has(c.note) });
    if (!known.has(c.note)) unexpected.push(failure);
    if (flags.has('--failures'))
      console.log(
        `FAIL [${outcome.stage}] ${c.note} (${c.file}, ${Date.now() - t0} ms)${known.has(c.note) ? ' (known)' : ''}\n  ${outcome.detail.replace(/\n/g, '\n  ')}`,
      );
  }
  perTopic.set(topic, counts);
  process.stderr.write(
    `[${done}/${cases.length} ${((Date.now() - started) / 1000).toFixed(0)} s] ${topic}: ${counts.pass} passed, ${counts.fail} failed\n`,
  );
}

for (const [topic, { pass, fail }] of [...perTopic].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
  console.log(`${topic.padEnd(24)} ${String(pass).padStart(4)} passed ${String(fail).padStart(4)} failed`);
}
if (!flags.has('--failures'))
  for (const f of unexpected)
    console.log(`FAIL [${f.stage}] ${f.note} (${f.file})\n  ${f.detail.replace(/\n/g, '\n  ')}`);
for (const note of nowPassing) console.log(`NOW PASSING (remove it from ${KNOWN_FAILURES_FILE}): ${note}`);
for (const note of staleKnown) console.log(`NOT IN THE CORPUS (remove it from ${KNOWN_FAILURES_FILE}): ${note}`);
console.log(
  `(${unexpected.length} failures not in known-failures.json, ${nowPassing.length} known failures now passing; ` +
    `${((Date.now() - started) / 1000).toFixed(1)} s for ${cases.length} cases)`,
);
const jsonOut = options.get('--json');
if (jsonOut) writeFileSync(jsonOut, JSON.stringify(failures, null, 2));
console.log(`${passed} passed, ${failed} failed`);
process.exitCode = unexpected.length > 0 || nowPassing.length > 0 || staleKnown.length > 0 ? 1 : 0;
