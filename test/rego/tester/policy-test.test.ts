import { describe, expect, it, beforeAll } from 'vitest';
import { mkdtempSync, writeFileSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  formatPolicyTestReport,
  runPolicyTests,
  PolicyTestSetupError,
  type PolicyTestReport,
} from '../../../src/rego/tester/index.ts';

const LIBRARY = fileURLToPath(new URL('../../../rego', import.meta.url));

describe('the ACS Rego library passes its own tests (rego/**/*_test.rego)', () => {
  let report: PolicyTestReport;
  beforeAll(async () => {
    report = await runPolicyTests({ paths: [LIBRARY] });
  }, 300_000);

  it('runs every test rule and none fails', () => {
    const failures = report.results.filter((r) => r.status === 'fail' || r.status === 'error');
    expect(failures.map((f) => `${f.name} (${f.file}:${f.row}): ${f.message}`)).toEqual([]);
    expect(report.passed).toBeGreaterThanOrEqual(60);
  });

  it('covers every module of the library', () => {
    const packages = new Set(report.results.map((r) => r.name.split('.').slice(0, -1).join('.')));
    for (const m of [
      'baseline',
      'ibac',
      'fides',
      'aarm',
      'camel',
      'pii',
      'budgets',
      'skills',
      'approvals',
      'decision',
    ]) {
      expect(packages).toContain(`data.acs.${m}_test`);
    }
  });
});

describe('runPolicyTests', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'policy-test-'));
    mkdirSync(join(dir, 'cfg'));
    writeFileSync(join(dir, 'cfg', 'data.json'), JSON.stringify({ limit: 3 }));
    writeFileSync(
      join(dir, 'p.rego'),
      `package demo

allow if input.n < data.cfg.limit
`,
    );
    writeFileSync(
      join(dir, 'p_test.rego'),
      `package demo_test

import data.demo

test_small_allowed if demo.allow with input as {"n": 1}

test_large_denied if not demo.allow with input as {"n": 5}

test_override_data if demo.allow with input as {"n": 5} with data.cfg.limit as 10

test_fails_on_purpose if demo.allow with input as {"n": 99}

test_non_boolean := 7

todo_test_later if false
`,
    );
    return () => rmSync(dir, { recursive: true, force: true });
  });

  it('reports pass, fail, non-true values and todo skips with their file', async () => {
    const r = await runPolicyTests({ paths: [dir] });
    const byName = Object.fromEntries(r.results.map((x) => [x.name.replace('data.demo_test.', ''), x]));
    expect(byName.test_small_allowed.status).toBe('pass');
    expect(byName.test_large_denied.status).toBe('pass');
    expect(byName.test_override_data.status).toBe('pass');
    expect(byName.test_fails_on_purpose.status).toBe('fail');
    expect(byName.test_fails_on_purpose.row).toBe(11);
    expect(byName.test_non_boolean.status).toBe('fail');
    expect(byName.todo_test_later.status).toBe('skip');
    expect([r.passed, r.failed, r.skipped]).toEqual([3, 2, 1]);
    const text = formatPolicyTestReport(r);
    expect(text.split('\n').slice(-4)).toEqual(['PASS: 3/6', 'FAIL: 2/6', 'SKIPPED: 1/6', '']);
    expect(text).toContain(`${join(dir, 'p_test.rego')}:\ndata.demo_test.test_fails_on_purpose: FAIL (`);
    expect(text).not.toContain(': PASS (');
    expect(formatPolicyTestReport(r, { verbose: true })).toContain('data.demo_test.test_small_allowed: PASS (');
  });

  it('filters with --run', async () => {
    const r = await runPolicyTests({ paths: [dir], run: 'large|override' });
    expect(r.results.map((x) => x.name).sort()).toEqual([
      'data.demo_test.test_large_denied',
      'data.demo_test.test_override_data',
    ]);
    expect(r.failed).toBe(0);
  });

  it('reports parse errors with file:line:col and missing paths as usage errors', async () => {
    const bad = mkdtempSync(join(tmpdir(), 'policy-test-bad-'));
    writeFileSync(join(bad, 'x.rego'), 'package x\n\np if {\n');
    await expect(runPolicyTests({ paths: [bad] })).rejects.toThrow(PolicyTestSetupError);
    await expect(runPolicyTests({ paths: [bad] })).rejects.toThrow(/x\.rego:\d+:\d+/);
    await expect(runPolicyTests({ paths: [join(bad, 'missing')] })).rejects.toMatchObject({ kind: 'usage' });
    rmSync(bad, { recursive: true, force: true });
  });
});
