// Regex host builtins on the PII library's own patterns (rego/data.json `acs_config.pii`), called exactly as
// rego/acs/pii/pii.rego calls them: one `regex.find_n(pattern, text, -1)` per category whose pre-filter
// literals occur in the text, one for the national-phone alternation when the text holds a digit, and one
// `regex.find_n("[0-9]", candidate, -1)` per card / Aadhaar candidate (the Luhn / Verhoeff digits).
// Prints, per text, alternating in one process: the calls through the builtins as registered (RE2 addon
// where it applies), the same builtins matching with re2js (the engine before issue #5's work; both cache
// compiled patterns), the JSON marshalling opa-wasm adds per call (arguments and result cross Wasm ↔ JS as
// JSON, approximated by a stringify/parse round trip), and per pattern RE2 against re2js.
// Run under the shared lock: `flock /tmp/bench.lock npx tsx bench/regex.ts`. BENCH_ITERATIONS (default 300).
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { regexBuiltins, regexBuiltinsUsing } from '../src/rego/builtins/host/regex.ts';
import { re2Available } from '../src/rego/builtins/host/regex-re2.ts';
import type { HostBuiltinContext } from '../src/rego/builtins/host/context.ts';

const iterations = Number(process.env.BENCH_ITERATIONS ?? 300);

interface PiiConfig {
  patterns: Record<string, string>;
  national_phones: Record<string, string>;
  prefilters: Record<string, string[]>;
}
const data = JSON.parse(readFileSync(new URL('../rego/data.json', import.meta.url), 'utf8')) as { acs_config: { pii: PiiConfig } };
const pii = data.acs_config.pii;

// As the policy builds it: countries in key order (Rego objects iterate sorted), each in a non-capturing group.
const nationalPhone = Object.keys(pii.national_phones)
  .sort()
  .map((k) => `(?:${pii.national_phones[k]})`)
  .join('|');
const categories: [string, string, string[] | undefined][] = [
  ...Object.entries(pii.patterns).map(([c, p]): [string, string, string[] | undefined] => [c, p, pii.prefilters[c]]),
  ['national_phone', nationalPhone, pii.prefilters.national_phone],
];

function logLines(bytes: number): string {
  const lines: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const line =
      `2026-11-${String(10 + (i % 19)).padStart(2, '0')}T12:${String(i % 60).padStart(2, '0')}:03.${100 + i}Z INFO ` +
      `order ${48213 + i * 7} processed amount=${1234 + i * 13}.56 EUR latency=${37 + i}ms items=${i % 9} v1.${i % 4}.2`;
    lines.push(line);
    size += line.length + 1;
  }
  return lines.join('\n').slice(0, bytes);
}

const texts: [string, string][] = [
  ['4 KiB log lines (dates, amounts)', logLines(4096)],
  [
    'user message (email + phone + card)',
    'Hi, this is Jane. Contact me at jane.doe@example.com or +44 20 7946 0958, or 020 7946 0958 after 6pm. ' +
      'Please charge card 4111 1111 1111 1111 for order 8812 of 2026-11-29. Thanks!',
  ],
  ['1 KiB prose, no digits', 'The quick brown fox jumps over the lazy dog, then rests in the shade by the river. '.repeat(13)],
];

const ctx = {} as HostBuiltinContext; // the regex builtins read no context
const findN = regexBuiltins['regex.find_n'];
const findNRe2js = regexBuiltinsUsing('re2js')['regex.find_n'];

interface Call {
  category: string;
  pattern: string;
  input: string;
}

/** The find_n calls one evaluation makes on one text, as pii.rego makes them. */
function callsFor(text: string): Call[] {
  const calls: Call[] = [];
  for (const [category, pattern, literals] of categories) {
    if (literals && !literals.some((l) => text.includes(l))) continue;
    calls.push({ category, pattern, input: text });
    if (category === 'credit_card' || category === 'in_aadhaar') {
      for (const m of findN([pattern, text, -1], ctx) as string[]) calls.push({ category: `${category} digits`, pattern: '[0-9]', input: m });
    }
  }
  return calls;
}

function viaBuiltin(c: Call): unknown {
  return findN([c.pattern, c.input, -1], ctx);
}

function viaRe2js(c: Call): unknown {
  return findNRe2js([c.pattern, c.input, -1], ctx);
}

/** What opa-wasm adds per host call: the arguments dumped to JSON and parsed, the result stringified back. */
function marshalling(c: Call, result: unknown): unknown {
  const args = JSON.parse(JSON.stringify([c.pattern, c.input, -1])) as unknown[];
  return [args, JSON.stringify(result)];
}

function quantiles(samples: number[]): { p50: number; p99: number } {
  const s = [...samples].sort((a, b) => a - b);
  return { p50: s[Math.floor(s.length * 0.5)], p99: s[Math.min(s.length - 1, Math.floor(s.length * 0.99))] };
}

const fmt = (ms: number): string => (ms >= 1 ? `${ms.toFixed(2)} ms` : `${(ms * 1000).toFixed(1)} µs`);

/** Runs each variant alternately, `iterations` rounds, one sample per round per variant. */
function measure(variants: Record<string, () => unknown>): Record<string, { p50: number; p99: number }> {
  const names = Object.keys(variants);
  const samples: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (let i = 0; i < Math.min(50, iterations); i++) for (const n of names) variants[n](); // warm-up
  for (let i = 0; i < iterations; i++) {
    for (const n of names) {
      const t0 = performance.now();
      variants[n]();
      samples[n].push(performance.now() - t0);
    }
  }
  return Object.fromEntries(names.map((n) => [n, quantiles(samples[n])]));
}

console.log(`node ${process.version}, RE2 addon ${re2Available ? 'loaded' : 'MISSING'}, ${iterations} rounds; load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);

// The builtin must give re2js's answers here before its time means anything.
for (const [, text] of texts) {
  for (const c of callsFor(text)) {
    const a = JSON.stringify(viaBuiltin(c));
    const b = JSON.stringify(viaRe2js(c));
    if (a !== b) throw new Error(`builtin and re2js differ on ${c.category}: ${a} vs ${b}`);
  }
}

for (const [name, text] of texts) {
  const calls = callsFor(text);
  const results = calls.map(viaBuiltin);
  const matched = calls.flatMap((c, i) => (c.category.endsWith('digits') ? [] : [`${c.category}:${(results[i] as string[]).length}`]));
  console.log(`\n${name}: ${text.length} chars, ${calls.length} find_n calls (${matched.join(' ')})`);
  const whole = measure({
    'builtin (RE2)': () => calls.map(viaBuiltin),
    'builtin (re2js)': () => calls.map(viaRe2js),
    marshalling: () => calls.map((c, i) => marshalling(c, results[i])),
  });
  for (const [v, q] of Object.entries(whole)) console.log(`  ${v.padEnd(16)} p50 ${fmt(q.p50).padStart(10)}  p99 ${fmt(q.p99).padStart(10)}`);
  const perPattern = new Map<string, Call[]>();
  for (const c of calls) perPattern.set(c.category, [...(perPattern.get(c.category) ?? []), c]);
  const rounds = Math.max(20, Math.floor(iterations / 5));
  for (const [category, cs] of perPattern) {
    const q = measureRounds(rounds, { re2: () => cs.map(viaBuiltin), re2js: () => cs.map(viaRe2js) });
    console.log(`    ${category.padEnd(20)} RE2 ${fmt(q.re2.p50).padStart(10)}  re2js ${fmt(q.re2js.p50).padStart(10)}`);
  }
}

function measureRounds(rounds: number, variants: Record<string, () => unknown>): Record<string, { p50: number; p99: number }> {
  const names = Object.keys(variants);
  const samples: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (let i = 0; i < rounds; i++) {
    for (const n of names) {
      const t0 = performance.now();
      variants[n]();
      samples[n].push(performance.now() - t0);
    }
  }
  return Object.fromEntries(names.map((n) => [n, quantiles(samples[n])]));
}
console.log(`\nload average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
