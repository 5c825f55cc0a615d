// Test rules that share a name, and the other shapes a `test_` rule can take, as `opa test` (OPA's
// tester.Runner, PrettyReporter, JSONReporter) runs and reports them: every definition of a name is its own test
// (`test_x`, `test_x#01`, … — chained bodies included, across the files of a package too), `todo_test_` rules
// are SKIPPED and not renamed, a `test_` function is an ERROR (its query does not type-check), a partial set or a
// non-boolean value FAILs, a conflict ERRORs, a `test_x[case]` rule counts its cases; `--run` is an RE2 pattern
// over the test's full reference; the text and JSON reports and the exit codes.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  formatPolicyTestReport,
  goDuration,
  policyTestReportJson,
  runPolicyTests,
  type PolicyTestReport,
  type TestCaseResult,
} from '../../../src/rego/tester/index.ts';
import { runGuardian } from '../../cli/run-guardian.ts';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function fixture(files: Record<string, string>): string {
  const d = mkdtempSync(join(tmpdir(), 'same-name-tests-'));
  dirs.push(d);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(d, name), text);
  return d;
}

const outcomes = (report: PolicyTestReport): [string, string][] => report.results.map((r) => [r.name, r.status]);

/** Durations vary from run to run; everything else of a report is compared as it is. */
const withoutDurations = (text: string): string => text.replace(/: (PASS|FAIL|ERROR) \([^)]*\)$/gm, ': $1 (D)');

const cases = (m: Map<string, TestCaseResult> | undefined): Record<string, unknown> =>
  Object.fromEntries(
    [...(m ?? new Map<string, TestCaseResult>()).entries()].map(([k, c]) => [
      k,
      c.subResults?.size ? { fail: c.fail, cases: cases(c.subResults) } : c.fail,
    ]),
  );

describe('what runs, and under which name', { timeout: 300_000 }, () => {
  let dir: string;
  let report: PolicyTestReport;
  beforeAll(async () => {
    dir = fixture({
      'shapes_test.rego': [
        'package shapes', // 1
        '', // 2
        'test_chain if { 1 == 1 } { 1 == 2 }', // 3: the parser makes two rules of the same name
        '', // 4
        'test_else if { false } else := true', // 5
        '', // 6
        'test_else_false := true if { false } else := false', // 7
        '', // 8
        'test_set contains 1', // 9
        '', // 10
        'test_set contains 2', // 11
        '', // 12
        'test_number := 100', // 13
        '', // 14
        'test_string := "true"', // 15
        '', // 16
        'test_undefined if { false }', // 17
        '', // 18
        'test_keyed[1] := true', // 19: a ground key: a complete document {"1": true}, not a test with cases
        '', // 20
        'todo_test_later if false', // 21
        '', // 22
        'todo_test_later if true', // 23
        '', // 24
        'test_f(x) if x == 1', // 25
        '', // 26
        'test_f(x) if x == 2', // 27
        '', // 28
        'todo_test_g(x) if x == 1', // 29
        '', // 30
        'a.b.test_ref if false', // 31
        '', // 32
        'a.b.test_ref if true', // 33
        '', // 34
        'default test_default := false', // 35
        '', // 36
        'test_default if true', // 37
        '',
      ].join('\n'),
      // Two files of one package: the second definition, in file order, is the renamed one.
      'split_a_test.rego': 'package split\n\ntest_twice if true\n',
      'split_b_test.rego': 'package split\n\ntest_twice if false\n\ntest_once if true\n',
    });
    report = await runPolicyTests({ paths: [dir] });
  });

  it('each definition of a name is a test of its own, numbered from the second on', () => {
    expect(outcomes(report)).toEqual([
      ['data.shapes.test_chain', 'pass'],
      ['data.shapes.test_chain#01', 'fail'],
      ['data.shapes.test_else', 'pass'],
      ['data.shapes.test_else_false', 'fail'],
      ['data.shapes.test_set', 'fail'],
      ['data.shapes.test_set#01', 'fail'],
      ['data.shapes.test_number', 'fail'],
      ['data.shapes.test_string', 'fail'],
      ['data.shapes.test_undefined', 'fail'],
      ['data.shapes.test_keyed', 'fail'],
      ['data.shapes.todo_test_later', 'skip'],
      ['data.shapes.todo_test_later', 'skip'],
      ['data.shapes.test_f', 'error'],
      ['data.shapes.test_f#01', 'error'],
      ['data.shapes.todo_test_g', 'skip'],
      ['data.shapes.a.b.test_ref', 'fail'],
      ['data.shapes.a.b["test_ref#01"]', 'pass'],
      ['data.shapes.test_default', 'fail'],
      ['data.shapes.test_default#01', 'pass'],
      ['data.split.test_twice', 'pass'],
      ['data.split.test_twice#01', 'fail'],
      ['data.split.test_once', 'pass'],
    ]);
  });

  it('a chained body is located at its own brace; names split into package and rule as OPA reports them', () => {
    const chained = report.results.filter((r) => r.rule.startsWith('test_chain'));
    expect(chained.map((r) => [r.package, r.rule, r.row, r.col])).toEqual([
      ['data.shapes', 'test_chain', 3, 1],
      ['data.shapes', 'test_chain#01', 3, 26],
    ]);
    const ref = report.results.filter((r) => r.rule.startsWith('a.b'));
    expect(ref.map((r) => r.rule)).toEqual(['a.b.test_ref', 'a.b["test_ref#01"]']);
    expect(report.results.find((r) => r.name === 'data.split.test_twice#01')?.file).toBe(
      join(dir, 'split_b_test.rego'),
    );
  });

  it('a test that is a function errors as its query does', () => {
    const [f, again] = report.results.filter((r) => r.rule.startsWith('test_f'));
    expect(f.message).toBe(
      '1 error occurred: 1:1: rego_type_error: undefined ref: data.shapes.test_f\n\tdata.shapes.test_f\n\t            ^',
    );
    expect(f.error).toEqual([
      { code: 'rego_type_error', message: 'undefined ref: data.shapes.test_f', location: { file: '', row: 1, col: 1 } },
    ]);
    // The renamed one is queried as data.shapes["test_f#01"].
    expect(again.message?.split('\n')[0]).toBe(
      '1 error occurred: 1:1: rego_type_error: undefined ref: data.shapes["test_f#01"]',
    );
  });

  it('counts as OPA sums them up', () => {
    expect([report.passed, report.failed, report.skipped, report.errored]).toEqual([6, 11, 3, 2]);
  });
});

describe('cases and run-time errors', { timeout: 300_000 }, () => {
  it('a test_x[case] rule passes or fails each case; a conflict is an error of the test', async () => {
    const dir = fixture({
      'cases_test.rego': [
        'package cases',
        '',
        'test_some[name] if {',
        '\tsome name in ["b", "a", "c"]',
        '\tname != "b"',
        '}',
        '',
        'test_groups[group][name] := ok if {',
        '\tsome group, names in {"small": [1, 2], "large": [100]}',
        '\tsome n in names',
        '\tname := sprintf("n%d", [n])',
        '\tok := n < 50',
        '}',
        '',
        'test_none[name] if {',
        '\tsome name in []',
        '}',
        '',
        'conflict = true',
        '',
        'conflict = false',
        '',
        'test_conflict if conflict',
        '',
        'test_key_conflict[k] := v if {',
        '\tsome pair in [["a", true], ["a", false]]',
        '\tk := pair[0]',
        '\tv := pair[1]',
        '}',
        '',
      ].join('\n'),
    });
    const report = await runPolicyTests({ paths: [dir] });
    expect(outcomes(report)).toEqual([
      ['data.cases.test_some', 'fail'],
      ['data.cases.test_groups', 'fail'],
      ['data.cases.test_none', 'pass'],
      ['data.cases.test_conflict', 'error'],
      ['data.cases.test_key_conflict', 'error'],
    ]);
    const [some, groups] = report.results;
    // "b" got its name and then failed: a failed case (OPA's internal.test_case).
    expect(cases(some.subResults)).toEqual({ a: false, b: true, c: false });
    expect(cases(groups.subResults)).toEqual({
      large: { fail: true, cases: { n100: true } },
      small: { fail: false, cases: { n1: false, n2: false } },
    });
    const file = join(dir, 'cases_test.rego');
    for (const r of report.results.slice(3)) {
      expect(r.message).toMatch(
        new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:\\d+:\\d+: \\w+ \\w+ conflict$`),
      );
      expect(r.error).toMatchObject({ code: 'eval_conflict_error', location: { file } });
    }
    // Cases count one each: a, c, n1, n2 pass; b, n100 fail; test_none (no case) passes.
    expect([report.passed, report.failed, report.errored]).toEqual([5, 2, 2]);
  });
});

describe('--run', { timeout: 300_000 }, () => {
  let dir: string;
  beforeAll(() => {
    dir = fixture({
      'run_test.rego': [
        'package run',
        '',
        'test_dup if true',
        '',
        'test_dup if false',
        '',
        'test_other if true',
        '',
        'todo_test_later if true',
        '',
        'x.test_deep if true',
        '',
      ].join('\n'),
      'other_test.rego': 'package bar\n\ntest_bar if true\n',
    });
  });
  const names = async (run: string): Promise<string[]> =>
    (await runPolicyTests({ paths: [dir], run })).results.map((r) => r.name);

  it('matches the full reference, a renamed duplicate as data.pkg["test_x#01"]', async () => {
    expect(await names('test_dup')).toEqual(['data.run.test_dup', 'data.run.test_dup#01']);
    expect(await names('^data\\.run\\["test_dup#01"\\]$')).toEqual(['data.run.test_dup#01']);
    expect(await names('^data\\.run\\.test_dup#01$')).toEqual([]);
    expect(await names('data.run.x')).toEqual(['data.run.x.test_deep']);
    expect(await names('later')).toEqual(['data.run.todo_test_later']);
    expect(await names('^$')).toEqual([]);
  });

  it('is RE2, as Go reads it: inline flags, and an invalid pattern is a usage error', async () => {
    expect(await names('(?i)DATA.BAR')).toEqual(['data.bar.test_bar']);
    await expect(runPolicyTests({ paths: [dir], run: '(' })).rejects.toMatchObject({
      kind: 'usage',
      message: '--run: invalid regular expression: error parsing regexp: missing closing ): `(`',
    });
  });
});

describe('the reports', { timeout: 300_000 }, () => {
  let dir: string;
  let report: PolicyTestReport;
  beforeAll(async () => {
    dir = fixture({
      'a_test.rego': [
        'package rep', // 1
        '', // 2
        'test_pass if true', // 3
        '', // 4
        'test_fail if false', // 5
        '', // 6
        'test_print if {', // 7
        '\tprint("x is", 1)', // 8
        '\tfalse', // 9
        '}', // 10
        '', // 11
        'todo_test_later if false', // 12
        '', // 13
        'test_cases[name] if {', // 14
        '\tsome name in ["a", "b"]', // 15
        '\tname != "b"', // 16
        '}', // 17
        '',
      ].join('\n'),
      'b_test.rego': 'package rep\n\ntest_fail if true\n\ntest_f(x) if x\n',
    });
    report = await runPolicyTests({ paths: [dir] });
  });
  const a = () => join(dir, 'a_test.rego');
  const b = () => join(dir, 'b_test.rego');
  const functionError = [
    '  1 error occurred: 1:1: rego_type_error: undefined ref: data.rep.test_f',
    '\tdata.rep.test_f',
    `\t${' '.repeat(9)}^`,
  ];
  const summary = [
    '-'.repeat(80),
    'PASS: 3/8', // test_pass, case a, test_fail#01
    'FAIL: 3/8', // test_fail, test_print, case b
    'SKIPPED: 1/8',
    'ERROR: 1/8',
  ];

  it('text: the tests not passed under their file, then the counts', () => {
    expect(withoutDurations(formatPolicyTestReport(report))).toBe(
      [
        `${a()}:`,
        'data.rep.test_fail: FAIL (D)',
        'data.rep.test_print: FAIL (D)',
        '',
        '  x is 1',
        '',
        'data.rep.todo_test_later: SKIPPED',
        'data.rep.test_cases: FAIL (D)',
        '  b: FAIL',
        '',
        `${b()}:`,
        'data.rep.test_f: ERROR (D)',
        ...functionError,
        ...summary,
        '',
      ].join('\n'),
    );
  });

  it('text with -v: FAILURES first, then every test with all its cases', () => {
    expect(withoutDurations(formatPolicyTestReport(report, { verbose: true }))).toBe(
      [
        'FAILURES',
        '-'.repeat(80),
        'data.rep.test_fail: FAIL (D)',
        '',
        '',
        'data.rep.test_print: FAIL (D)',
        '',
        '',
        'data.rep.test_cases: FAIL (D)',
        '',
        '',
        '  b: FAIL',
        '',
        'SUMMARY',
        '-'.repeat(80),
        `${a()}:`,
        'data.rep.test_pass: PASS (D)',
        'data.rep.test_fail: FAIL (D)',
        'data.rep.test_print: FAIL (D)',
        '',
        '  x is 1',
        '',
        'data.rep.todo_test_later: SKIPPED',
        'data.rep.test_cases: FAIL (D)',
        '  a: PASS',
        '  b: FAIL',
        '',
        `${b()}:`,
        'data.rep.test_fail#01: PASS (D)',
        'data.rep.test_f: ERROR (D)',
        ...functionError,
        ...summary,
        '',
      ].join('\n'),
    );
  });

  it('nothing at all when no test ran', async () => {
    const none = await runPolicyTests({ paths: [dir], run: '^$' });
    expect(formatPolicyTestReport(none)).toBe('');
    expect(policyTestReportJson(none)).toBe('[]\n');
  });

  it("JSON: OPA's result objects, in its field order", () => {
    const rows = JSON.parse(policyTestReportJson(report)) as Record<string, unknown>[];
    expect(rows.map((r) => Object.keys(r))).toEqual([
      ['location', 'package', 'name', 'duration'],
      ['location', 'package', 'name', 'duration', 'fail'],
      ['location', 'package', 'name', 'output', 'duration', 'fail'],
      ['location', 'package', 'name', 'duration', 'skip'],
      ['location', 'sub_results', 'package', 'name', 'duration', 'fail'],
      ['location', 'package', 'name', 'duration'],
      ['error', 'location', 'package', 'name', 'duration'],
    ]);
    expect(rows[0]).toMatchObject({ location: { file: a(), row: 3, col: 1 }, package: 'data.rep', name: 'test_pass' });
    expect(Number.isInteger(rows[0].duration)).toBe(true);
    expect(Buffer.from(rows[2].output as string, 'base64').toString()).toBe('x is 1\n');
    expect(rows[3]).toEqual({
      location: { file: a(), row: 12, col: 1 },
      package: 'data.rep',
      name: 'todo_test_later',
      duration: 0,
      skip: true,
    });
    expect(rows[4].sub_results).toEqual({ a: { name: 'a' }, b: { name: 'b', fail: true } });
    expect(rows[5]).toMatchObject({ name: 'test_fail#01', location: { file: b(), row: 3 } });
    expect(rows[6].error).toEqual([
      { code: 'rego_type_error', message: 'undefined ref: data.rep.test_f', location: { file: '', row: 1, col: 1 } },
    ]);
  });

  it("durations as Go's time.Duration prints them", () => {
    expect(
      [
        0, 1, 512, 1_000, 1_500, 999_999, 1_234_567, 2_000_000, 1_500_000_000, 61_000_000_000, 3_723_500_000_000,
        3_600e9,
      ].map(goDuration),
    ).toEqual([
      '0s',
      '1ns',
      '512ns',
      '1µs',
      '1.5µs',
      '999.999µs',
      '1.234567ms',
      '2ms',
      '1.5s',
      '1m1s',
      '1h2m3.5s',
      '1h0m0s',
    ]);
  });
});

describe('guardian policy test: exit codes', { timeout: 300_000 }, () => {
  it('a skipped test fails the run unless -z; -r filters; nothing matched prints nothing and passes', async () => {
    const dir = fixture({ 'z_test.rego': 'package z\n\ntest_ok if true\n\ntodo_test_later if false\n' });
    const skipped = await runGuardian(['policy', 'test', dir]);
    expect(skipped).toEqual({
      code: 1,
      stdout: `${join(dir, 'z_test.rego')}:\ndata.z.todo_test_later: SKIPPED\n${'-'.repeat(80)}\nPASS: 1/2\nSKIPPED: 1/2\n`,
      stderr: '',
    });
    expect((await runGuardian(['policy', 'test', dir, '-z'])).code).toBe(0);
    expect(await runGuardian(['policy', 'test', dir, '-r', 'test_ok'])).toEqual({
      code: 0,
      stdout: 'PASS: 1/1\n',
      stderr: '',
    });
    expect(await runGuardian(['policy', 'test', dir, '--run', 'nothing'])).toEqual({ code: 0, stdout: '', stderr: '' });
    const json = await runGuardian(['policy', 'test', dir, '--format', 'json', '-z']);
    expect(json.code).toBe(0);
    expect((JSON.parse(json.stdout) as { name: string }[]).map((r) => r.name)).toEqual(['test_ok', 'todo_test_later']);
  });
});
