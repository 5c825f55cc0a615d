// `policy test --coverage`: the modules are instrumented with trace probes and compiled to Wasm; the report
// (OPA's `opa test --coverage --format json` shape) says which lines the tests reached, and the test results
// are the same as without coverage.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { formatCoverageReport, runPolicyTests } from '../../../src/rego/tester/index.ts';
import { runGuardian } from '../../cli/run-guardian.ts';

const dir = mkdtempSync(join(tmpdir(), 'policy-coverage-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const policy = join(dir, 'p.rego');
const tests = join(dir, 'p_test.rego');
writeFileSync(
  policy,
  [
    'package p', // 1
    '', // 2
    'default allow := false', // 3
    '', // 4
    'allow if {', // 5
    '\tinput.role == "admin"', // 6
    '\tinput.mfa', // 7
    '}', // 8
    '', // 9
    'reason := "locked" if {', // 10
    '\tinput.locked', // 11
    '}', // 12
    '', // 13
    'limit := 3', // 14
    '',
  ].join('\n'),
);
writeFileSync(
  tests,
  [
    'package p_test', // 1
    '', // 2
    'import data.p', // 3
    '', // 4
    'test_admin if p.allow with input as {"role": "admin", "mfa": true}', // 5
    '', // 6
    'test_viewer if not p.allow with input as {"role": "viewer"}', // 7
    '',
  ].join('\n'),
);

describe('runPolicyTests with coverage', { timeout: 300_000 }, () => {
  it('reports reached and unreached lines per file, with the same test results', async () => {
    const plain = await runPolicyTests({ paths: [dir] });
    const covered = await runPolicyTests({ paths: [dir], coverage: true });
    expect(covered.results.map((r) => [r.name, r.status])).toEqual(plain.results.map((r) => [r.name, r.status]));
    expect(covered.results.every((r) => r.status === 'pass')).toBe(true);
    const report = covered.coverage!;
    const row = (start: number, end = start) => ({ start: { row: start }, end: { row: end } });
    // allow's head (5) and body (6-7) are reached; reason's body (11) is never evaluated, nor its head
    // (10), nor limit (14); the default rule is not counted.
    expect(report.files[policy]).toEqual({
      covered: [row(5, 7)],
      not_covered: [row(10, 11), row(14)],
      covered_lines: 3,
      not_covered_lines: 3,
      coverage: 50,
    });
    expect(report.files[tests]).toEqual({
      covered: [row(5), row(7)],
      covered_lines: 2,
      not_covered_lines: 0,
      coverage: 100,
    });
    expect(report).toMatchObject({ covered_lines: 5, not_covered_lines: 3, coverage: 62.5 });
    expect(formatCoverageReport(report)).toContain(`${policy}: 3/6 lines (50%); not covered: 10-11, 14`);
  });

  it("guardian policy test --coverage prints OPA's JSON report unless --format text is asked for", async () => {
    const json = await runGuardian(['policy', 'test', '--coverage', dir]);
    expect(json.code).toBe(0);
    // opa test --coverage writes the report alone (JSONCoverageReporter), so it pipes into opa eval -i -.
    const report = JSON.parse(json.stdout);
    expect(report).toMatchObject({ covered_lines: 5, not_covered_lines: 3, coverage: 62.5 });
    expect(report.files[policy].not_covered).toEqual([
      { start: { row: 10 }, end: { row: 11 } },
      { start: { row: 14 }, end: { row: 14 } },
    ]);
    const text = await runGuardian(['policy', 'test', '--coverage', '--format', 'text', dir]);
    expect(text.stdout).toMatch(/^PASS: 2\/2\n/);
    // opa test's short flags and its name for the text format
    const short = await runGuardian(['policy', 'test', '-c', '-f', 'pretty', dir]);
    expect(short.stdout).toBe(text.stdout);
    expect(text.stdout).toContain(`${policy}: 3/6 lines (50%); not covered: 10-11, 14\n`);
  });

  it("--threshold implies coverage and fails below it with OPA's message (-v lists the lines not covered)", async () => {
    const met = await runGuardian(['policy', 'test', '--threshold', '60', dir]);
    expect(met.code).toBe(0);
    expect(JSON.parse(met.stdout).coverage).toBe(62.5);
    expect(met.stderr).toBe('');
    const below = await runGuardian(['policy', 'test', '--threshold', '80', dir]);
    expect(below.code).toBe(1);
    expect(below.stderr).toBe('Code coverage threshold not met: got 62.50 instead of 80.00\n');
    const verbose = await runGuardian(['policy', 'test', '--threshold', '80', '-v', dir]);
    expect(verbose.stderr).toBe(
      `Code coverage threshold not met: got 62.50 instead of 80.00\nLines not covered:\n\t${policy}:10-11\n\t${policy}:14\n`,
    );
    const bad = await runGuardian(['policy', 'test', '--threshold', '101', dir]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--threshold: expected a percentage between 0 and 100/);
  });
});
