// `guardian policy test` takes the flags opa test command lines carry (GCP policy-library's Makefile:
// `opa test --timeout 30s -v lib/ validator/ --explain=notes`): Go durations for --timeout, --explain accepted
// with a note that no trace is recorded, and clear usage errors otherwise.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runGuardian } from '../../cli/run-guardian.ts';

const dir = mkdtempSync(join(tmpdir(), 'policy-test-flags-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
writeFileSync(join(dir, 'p_test.rego'), 'package p_test\n\ntest_ok if 1 + 1 == 2\n');

describe('policy test flags from opa test command lines', { timeout: 120_000 }, () => {
  it('--timeout takes a Go duration or milliseconds; anything else is a usage error', async () => {
    for (const t of ['30s', '1m30s', '500ms', '2000']) {
      const r = await runGuardian(['policy', 'test', '--timeout', t, dir]);
      expect(r.code, t).toBe(0);
      expect(r.stdout).toBe('PASS: 1/1\n');
    }
    for (const t of ['soon', '0s', '-1s', '10x']) {
      const r = await runGuardian(['policy', 'test', '--timeout', t, dir]);
      expect(r.code, t).toBe(2);
      expect(r.stderr).toMatch(/--timeout: expected a positive duration \(30s, 500ms\) or milliseconds/);
    }
  });

  it('--explain runs the tests and says no trace is recorded; an unknown mode is a usage error', async () => {
    const r = await runGuardian(['policy', 'test', '-v', dir, '--explain=notes']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/data\.p_test\.test_ok: PASS/);
    expect(r.stderr).toMatch(/--explain notes: the Wasm test runner records no evaluation trace/);
    const bad = await runGuardian(['policy', 'test', dir, '--explain', 'everything']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--explain must be fails, full, notes or debug, not "everything"/);
  });
});
