// Throughput of hot host builtins (strings, sprintf, RE2 regex, globs, time, JSON) called the way
// opa-wasm calls them (createHostBuiltins wrappers, JSON operands), plus one evaluation through Wasm.
// Run: `npm run bench builtins` (or `node --import tsx bench/builtins.ts`). BENCH_SECONDS scales the
// time per measurement (default 0.5). The library's regex patterns are also timed on both engines
// (irregexp where regex-irregexp.ts allows it, re2js), alternately in one process.
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { createHostBuiltins, HostBuiltinContext } from '../src/rego/builtins/index.ts';
import { irregexpFor, setIrregexpEnabled } from '../src/rego/builtins/host/regex-irregexp.ts';
import { compileQuery, hostBuiltins, instantiatePolicy } from '../src/rego/index.ts';

const budgetMs = 1000 * Number(process.env.BENCH_SECONDS ?? 0.5);
const ctx = new HostBuiltinContext({ strict: false, print: () => {} });
const b = createHostBuiltins(ctx);

/** Calls `op` in batches until the budget is spent; returns operations per second. */
function opsPerSec(op: () => unknown): number {
  for (let i = 0; i < 200; i++) op(); // warm-up (JIT, pattern caches)
  let n = 0;
  const start = performance.now();
  let elapsed = 0;
  while (elapsed < budgetMs) {
    for (let i = 0; i < 100; i++) op();
    n += 100;
    elapsed = performance.now() - start;
  }
  return (n * 1000) / elapsed;
}

const toolArgs = { cmd: 'ls -la /tmp', path: '/home/agent/projects/acs-guardian/src/rego/builtins/index.ts' };
const email = 'Contact ops@guardian.test or admin@example.com, card 4111-1111-1111-1111, phone +1 555 0100.';

const cases: [string, () => unknown][] = [
  ['startswith', () => b.startswith(toolArgs.path, '/home/agent/')],
  ['contains', () => b.contains(email, 'admin@')],
  ['lower', () => b.lower('Some Mixed Case Tool Name')],
  ['split', () => b.split(toolArgs.path, '/')],
  ['concat', () => b.concat('/', ['a', 'b', 'c', 'd'])],
  ['trim_space', () => b.trim_space('   padded value   ')],
  ['indexof (unicode)', () => b.indexof('skön var våren', 'vår')],
  ['replace', () => b.replace(toolArgs.cmd, ' ', '_')],
  ['strings.any_prefix_match', () => b['strings.any_prefix_match'](toolArgs.path, ['/etc/', '/root/', '/home/agent/'])],
  ['sprintf %s %d %v', () => b.sprintf('tool %s denied for %d: %v', ['shell', 42, ['rm', '-rf']])],
  ['regex.match (cached RE2)', () => b['regex.match']('[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}', email)],
  ['regex.match (anchored, no match)', () => b['regex.match']('^(?:rm|dd|mkfs)\\b', toolArgs.cmd)],
  ['regex.find_n (all emails)', () => b['regex.find_n']('[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}', email, -1)],
  ['regex.replace (mask digits)', () => b['regex.replace'](email, '\\d', '#')],
  ['regex.split', () => b['regex.split']('[/.]', toolArgs.path)],
  ['glob.match', () => b['glob.match']('/home/agent/**/*.ts', ['/'], toolArgs.path)],
  ['time.parse_rfc3339_ns', () => b['time.parse_rfc3339_ns']('2026-11-29T12:00:00.123456789Z')],
  ['time.date [ns, zone]', () => b['time.date']([1764417600000000000, 'Europe/Berlin'])],
  ['time.now_ns', () => b['time.now_ns']()],
  ['json.marshal', () => b['json.marshal'](toolArgs)],
  ['json.unmarshal', () => b['json.unmarshal']('{"tool":"shell","args":{"cmd":"ls"}}')],
  ['base64.encode', () => b['base64.encode'](email)],
  ['crypto.sha256', () => b['crypto.sha256'](email)],
  ['net.cidr_contains', () => b['net.cidr_contains']('10.0.0.0/8', '10.1.2.3')],
  ['uuid.rfc4122', () => b['uuid.rfc4122']('k')],
];

console.log(`host builtins (JSON operands, createHostBuiltins wrappers), ${budgetMs} ms each`);
const width = Math.max(...cases.map(([n]) => n.length));
for (const [name, op] of cases) {
  const r = opsPerSec(op);
  console.log(
    `  ${name.padEnd(width)}  ${Math.round(r).toLocaleString('en-US').padStart(12)} ops/s  ${(1e6 / r).toFixed(2).padStart(8)} µs/op`,
  );
}

// The library's patterns (rego/data.json, combined as rego/acs/pii and rego/acs/baseline combine them) on a
// ~300-character PII text and a destructive command: regex.find_n / regex.match µs per call on each engine.
const acs = JSON.parse(readFileSync(new URL('../rego/data.json', import.meta.url), 'utf8')).acs_config;
const piiText =
  'Contact jane.doe@example.com or +44 20 7946 0958, card 4111 1111 1111 1111, ref 2024-01-15 id 12345. '.repeat(3);
const libraryCalls: [string, string, () => unknown][] = [
  ...Object.entries({ ...acs.pii.patterns } as Record<string, string>).map(
    ([name, p]): [string, string, () => unknown] => [`find_n ${name}`, p, () => b['regex.find_n'](p, piiText, -1)],
  ),
  ...(() => {
    const p = Object.values(acs.pii.national_phones as Record<string, string>)
      .map((x) => `(?:${x})`)
      .join('|');
    return [['find_n national phones', p, () => b['regex.find_n'](p, piiText, -1)] as [string, string, () => unknown]];
  })(),
  ...(() => {
    const p = `(?:${(acs.baseline.destructive_shell_patterns as string[]).join(')|(?:')})`;
    return [
      ['match destructive (rm -rf /)', p, () => b['regex.match'](p, 'rm -rf / --no-preserve-root')],
      ['match destructive (git push, benign)', p, () => b['regex.match'](p, 'git push origin feature/x')],
    ] as [string, string, () => unknown][];
  })(),
];
console.log(
  `\nlibrary regexes, µs per call: irregexp path vs re2js (load ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')})`,
);
const libWidth = Math.max(...libraryCalls.map(([n]) => n.length));
for (const [name, pattern, op] of libraryCalls) {
  const fast = irregexpFor(pattern, false) !== null;
  const rates = { irregexp: [] as number[], re2js: [] as number[] };
  for (let round = 0; round < 3; round++) {
    setIrregexpEnabled(true);
    rates.irregexp.push(opsPerSec(op));
    setIrregexpEnabled(false);
    rates.re2js.push(opsPerSec(op));
  }
  setIrregexpEnabled(true);
  const best = (xs: number[]) => 1e6 / Math.max(...xs);
  const [tf, tr] = [best(rates.irregexp), best(rates.re2js)];
  console.log(
    `  ${name.padEnd(libWidth)}  ${fast ? 'irregexp' : 're2js   '} ${tf.toFixed(2).padStart(8)} µs  re2js ${tr.toFixed(2).padStart(8)} µs  ×${(tr / tf).toFixed(1)}`,
  );
}
console.log(
  `  (load ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')})\n`,
);

// One policy evaluation that calls several host builtins through opa_builtinN (JSON round trips included).
const q = await compileQuery({
  sources: [
    {
      file: 'bench.rego',
      text: `package bench

deny contains msg if {
  regex.match("^(?:rm|dd|mkfs)\\\\b", input.cmd)
  msg := sprintf("destructive command %s", [input.cmd])
}

deny contains msg if {
  not startswith(input.path, "/home/agent/")
  msg := concat(" ", ["path outside workspace:", lower(input.path)])
}

x := count(deny)
`,
    },
  ],
  query: 'data.bench.x = v',
});
const policy = await instantiatePolicy(q.wasm, hostBuiltins(ctx));
const input = { cmd: 'rm -rf /', path: '/ETC/passwd' };
const check = policy.evaluate(input, q.entrypoint) as { v: number }[];
if (check[0]?.v !== 2) throw new Error(`bench policy returned ${JSON.stringify(check)}`);
const evalRate = opsPerSec(() => policy.evaluate(input, q.entrypoint));
console.log(
  `policy evaluation through Wasm (4 host builtin calls): ${Math.round(evalRate).toLocaleString('en-US')} evals/s, ${(1e6 / evalRate).toFixed(1)} µs/eval`,
);
