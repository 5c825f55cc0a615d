// The reports of `guardian policy test`, as `opa test` writes them (OPA's tester.PrettyReporter and JSONReporter).
// Text: with -v a FAILURES section first, then the tests not passed (every test with -v) under a `<file>:` line
// per file, each `data.pkg.test_x: FAIL (1.2ms)` with its failed cases, its print output and its error, then
// a rule and `PASS: n/m`, `FAIL: …`, `SKIPPED: …`, `ERROR: …` (cases count one each). Nothing at all when no
// test ran. A compiled Wasm module has no trace, so where `opa test -v` prints a failed test's trace there is
// none, as with `opa test --target wasm -v`. JSON: OPA's array of results, field names and order as its
// tester.Result marshals (duration in nanoseconds, output base64).
import { compareUtf8, utf8Bytes } from '../utf8.ts';
import type { PolicyTestReport, PolicyTestResult, TestCaseResult, TestStatus } from './runner.ts';

/** A duration as Go's time.Duration.String prints it: `0s`, `512ns`, `1.5µs`, `2.25ms`, `1m3.5s`. */
export function goDuration(ns: number): string {
  let u = BigInt(Math.round(Math.abs(ns)));
  const sign = ns < 0 && u !== 0n ? '-' : '';
  // The fraction of v / 10^prec without trailing zeros (and without the point when it is 0), and the rest.
  const split = (v: bigint, prec: number): [bigint, string] => {
    const p = 10n ** BigInt(prec);
    const digits = prec === 0 ? '' : (v % p).toString().padStart(prec, '0').replace(/0+$/, '');
    return [v / p, digits ? `.${digits}` : ''];
  };
  if (u < 1_000_000_000n) {
    if (u === 0n) return '0s';
    const [prec, unit] = u < 1_000n ? [0, 'ns'] : u < 1_000_000n ? [3, 'µs'] : [6, 'ms'];
    const [whole, fraction] = split(u, prec);
    return `${sign}${whole}${fraction}${unit}`;
  }
  const [seconds, fraction] = split(u, 9);
  let out = `${seconds % 60n}${fraction}s`;
  u = seconds / 60n;
  if (u > 0n) {
    out = `${u % 60n}m${out}`;
    u /= 60n;
    if (u > 0n) out = `${u}h${out}`;
  }
  return sign + out;
}

const nanoseconds = (r: PolicyTestResult): number => Math.round(r.durationMs * 1e6);

const OUTCOME: Record<TestStatus, string> = { pass: 'PASS', fail: 'FAIL', error: 'ERROR', skip: 'SKIPPED' };

/** `data.pkg.test_x: PASS (1.2ms)`; a skipped test has no duration (OPA's Result.String). */
function resultLine(r: PolicyTestResult): string {
  return r.status === 'skip' ? `${r.name}: SKIPPED` : `${r.name}: ${OUTCOME[r.status]} (${goDuration(nanoseconds(r))})`;
}

/** The cases depth first, keys in byte order (OPA's SubResultMap.Iter), with the keys leading to each. */
function* eachCase(cases: Map<string, TestCaseResult>, prefix: string[] = []): Generator<[string[], TestCaseResult]> {
  for (const key of [...cases.keys()].sort(compareUtf8)) {
    const c = cases.get(key) as TestCaseResult;
    const path = [...prefix, key];
    yield [path, c];
    if (c.subResults) yield* eachCase(c.subResults, path);
  }
}

const isLeaf = (c: TestCaseResult): boolean => !c.subResults || c.subResults.size === 0;

/** What a test printed, as OPA's Result.Output holds it: a line per print call. */
const outputText = (r: PolicyTestResult): string => (r.output ?? []).map((l) => `${l}\n`).join('');

const RULE = '-'.repeat(80);

/** The text report, as `opa test` (with `verbose`: `opa test -v`) prints it; empty when no test ran. */
export function formatPolicyTestReport(report: PolicyTestReport, options: { verbose?: boolean } = {}): string {
  const verbose = options.verbose === true;
  let out = '';
  const println = (line = ''): void => {
    out += `${line}\n`;
  };
  if (report.failed > 0 && verbose) {
    println('FAILURES');
    println(RULE);
    for (const f of report.results) {
      if (f.status !== 'fail') continue;
      println(resultLine(f));
      // OPA prints the trace here, after an empty line; a test with cases has one more empty line, then the
      // failed cases each with the keys leading to it.
      println();
      if (f.subResults && f.subResults.size > 0) {
        println();
        for (const [path, c] of eachCase(f.subResults)) {
          if (!c.fail || !isLeaf(c)) continue;
          path.forEach((key, depth) => println(`${'  '.repeat(depth + 1)}${key}: FAIL`));
        }
      }
      println();
    }
    println('SUMMARY');
    println(RULE);
  }
  let dirty = false;
  let lastFile = '';
  for (const r of report.results) {
    if (verbose || r.status !== 'pass') {
      if (r.file !== lastFile) {
        if (lastFile !== '') println();
        println(`${r.file}:`);
        lastFile = r.file;
      }
      dirty = true;
      println(resultLine(r));
      for (const [path, c] of r.subResults ? eachCase(r.subResults) : []) {
        if (c.fail || verbose) println(`${'  '.repeat(path.length)}${c.name}: ${c.fail ? 'FAIL' : 'PASS'}`);
      }
      const printed = outputText(r);
      if (printed.length > 0) {
        println();
        println(
          printed
            .trim()
            .split('\n')
            .map((l) => `  ${l}`)
            .join('\n'),
        );
        println();
      }
    }
    if (r.status === 'error') println(`  ${r.message ?? ''}`);
  }
  if (dirty) println(RULE);
  const total = report.passed + report.failed + report.skipped + report.errored;
  if (report.passed) println(`PASS: ${report.passed}/${total}`);
  if (report.failed) println(`FAIL: ${report.failed}/${total}`);
  if (report.skipped) println(`SKIPPED: ${report.skipped}/${total}`);
  if (report.errored) println(`ERROR: ${report.errored}/${total}`);
  return out;
}

type JsonCases = Record<string, { sub_results?: JsonCases; name?: string; fail?: true }>;

function casesJson(cases: Map<string, TestCaseResult>): JsonCases {
  const out: JsonCases = {};
  for (const key of [...cases.keys()].sort(compareUtf8)) {
    const c = cases.get(key) as TestCaseResult;
    Object.defineProperty(out, key, {
      value: {
        ...(c.subResults && c.subResults.size > 0 ? { sub_results: casesJson(c.subResults) } : {}),
        ...(c.name ? { name: c.name } : {}),
        ...(c.fail ? { fail: true } : {}),
      },
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

function base64(text: string): string {
  let binary = '';
  for (const b of utf8Bytes(text)) binary += String.fromCharCode(b);
  return btoa(binary);
}

/**
 * The JSON report, as `opa test --format json` writes it: an array of results, fields in the order OPA's
 * tester.Result declares them, empty ones left out as its `omitempty` tags do. Go's encoder escapes `<`, `>`,
 * `&`, U+2028 and U+2029 in strings.
 */
export function policyTestReportJson(report: PolicyTestReport): string {
  const results = report.results.map((r) => ({
    ...(r.error ? { error: r.error } : {}),
    location: { file: r.file, row: r.row, col: r.col },
    ...(r.subResults && r.subResults.size > 0 ? { sub_results: casesJson(r.subResults) } : {}),
    package: r.package,
    name: r.rule,
    ...(r.output?.length ? { output: base64(outputText(r)) } : {}),
    duration: nanoseconds(r),
    ...(r.status === 'fail' ? { fail: true } : {}),
    ...(r.status === 'skip' ? { skip: true } : {}),
  }));
  const text = JSON.stringify(results, null, 2).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  return `${text}\n`;
}
