// Builtins the Guardian refuses through the real CLI (child processes; docs/policy-authoring.md, "Refused
// builtins"): `policy test`, `policy eval` with a query and `policy check` compile them (a call reached unmocked
// fails with the refusal, a `with` replaces them), `policy build` refuses the same directory.
// Fixture: test/fixtures/rego/refused-builtins (library/ passes its tests; unmocked_test.rego reaches the calls).
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../../../bin/guardian.mjs', import.meta.url));
const FIXTURE = fileURLToPath(new URL('../../fixtures/rego/refused-builtins/', import.meta.url));

function guardian(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', cwd: FIXTURE, timeout: 300_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const HTTP_REFUSAL =
  'http.send: network I/O during policy evaluation is not allowed: decisions must be replayable from the audit log (replace it in tests with `with http.send as ...`)';

describe('refused builtins in the CLI', () => {
  it('policy test: the library passes, its refused calls mocked or not reached', { timeout: 300_000 }, () => {
    const r = guardian(['policy', 'test', 'library']);
    expect(r.stdout).toBe('PASS: 5/5\n');
    expect(r.code).toBe(0);
  });

  it('policy test: an unmocked call is an ERROR of that test with the refusal; the run completes, exit 1', {
    timeout: 300_000,
  }, () => {
    const r = guardian(['policy', 'test', 'library', 'unmocked_test.rego']);
    const lines = r.stdout.split('\n');
    const at = lines.findIndex((l) => l.startsWith('data.lookup_unmocked_test.test_allowed_unmocked: ERROR ('));
    expect(lines[at - 1]).toBe('unmocked_test.rego:');
    expect(lines[at + 1]).toBe(`  library/lookup.rego:9: eval_builtin_error: ${HTTP_REFUSAL}`);
    expect(lines.filter((l) => / ERROR \(/.test(l)).map((l) => l.split(':')[0])).toEqual([
      'data.lookup_unmocked_test.test_allowed_unmocked',
      'data.lookup_unmocked_test.test_denied_unmocked',
      'data.lookup_unmocked_test.test_resolves_unmocked',
      'data.lookup_unmocked_test.test_runtime_unmocked',
    ]);
    expect(r.stdout).toContain(
      '  library/lookup.rego:15: eval_builtin_error: net.lookup_ip_addr: DNS lookups during policy evaluation are not allowed: decisions must be replayable from the audit log (replace it in tests with `with net.lookup_ip_addr as ...`)',
    );
    expect(r.stdout).toContain(
      '  library/lookup.rego:17: eval_builtin_error: opa.runtime: the Guardian does not expose host runtime information to policies (replace it in tests with `with opa.runtime as ...`)',
    );
    expect(lines.slice(-3)).toEqual(['PASS: 6/10', 'ERROR: 4/10', '']);
    expect(r.code).toBe(1);
  });

  it('policy build of the same directory still refuses the module, exit 3, no bundle written', {
    timeout: 300_000,
  }, () => {
    const out = join(mkdtempSync(join(tmpdir(), 'policy-refused-')), 'bundle.tar.gz');
    const r = guardian(['policy', 'build', 'library', '-e', 'lookup/greeting', '-o', out]);
    expect(r.stderr).toContain(
      'lookup.rego:9:10: rego_compile_error: http.send is not allowed in Guardian policies: network I/O during policy evaluation is not allowed: decisions must be replayable from the audit log',
    );
    expect(r.stderr).toContain(
      'lookup.rego:15:25: rego_compile_error: net.lookup_ip_addr is not allowed in Guardian policies',
    );
    expect(r.stderr).toContain(
      'lookup.rego:17:16: rego_compile_error: opa.runtime is not allowed in Guardian policies',
    );
    expect(r.code).toBe(3);
    expect(existsSync(out)).toBe(false);
  });

  it('policy eval: an unmocked call fails the evaluation with the refusal, exit 1', { timeout: 300_000 }, () => {
    const http = guardian(['policy', 'eval', '-d', 'library', 'data.lookup.allowed("alice")']);
    expect(http.stderr).toBe(`guardian: evaluation failed: lookup.rego:9: eval_builtin_error: ${HTTP_REFUSAL}\n`);
    expect(http.stdout).toBe('');
    expect(http.code).toBe(1);
    const strict = guardian([
      'policy',
      'eval',
      '--strict-builtin-errors',
      '-d',
      'library',
      'not data.lookup.allowed("x")',
    ]);
    expect(strict.stderr).toBe(`guardian: evaluation failed: lookup.rego:9: eval_builtin_error: ${HTTP_REFUSAL}\n`);
    expect(strict.code).toBe(1);
    // A file given by name is named as given, as in compile errors.
    const named = guardian(['policy', 'eval', '-d', 'library/lookup.rego', 'data.lookup.allowed("alice")']);
    expect(named.stderr).toBe(
      `guardian: evaluation failed: library/lookup.rego:9: eval_builtin_error: ${HTTP_REFUSAL}\n`,
    );
    expect(named.code).toBe(1);
    const dns = guardian(['policy', 'eval', '-d', 'library', 'data.lookup.resolves("example.test")']);
    expect(dns.stderr).toMatch(
      /^guardian: evaluation failed: lookup\.rego:15: eval_builtin_error: net\.lookup_ip_addr: DNS lookups/,
    );
    expect(dns.code).toBe(1);
    const runtime = guardian(['policy', 'eval', '-d', 'library', 'data.lookup.runtime_env']);
    expect(runtime.stderr).toMatch(/^guardian: evaluation failed: lookup\.rego:17: eval_builtin_error: opa\.runtime: /);
    expect(runtime.code).toBe(1);
  });

  it('policy eval: a query that does not reach the call, or replaces it with `with`, evaluates', {
    timeout: 300_000,
  }, () => {
    const greeting = guardian(['policy', 'eval', '-d', 'library', 'data.lookup.greeting("bob")']);
    expect(greeting.code).toBe(0);
    expect(JSON.parse(greeting.stdout).result[0].expressions[0].value).toBe('hello bob');
    const mocked = guardian([
      'policy',
      'eval',
      '-d',
      'library',
      'data.lookup.allowed("alice") with http.send as {"status_code": 200, "body": {"allowed": true}}',
    ]);
    expect(mocked.stderr).toBe('');
    expect(mocked.code).toBe(0);
    expect(JSON.parse(mocked.stdout).result[0].expressions[0].value).toBe(true);
  });

  it('policy check: no error (as opa check); --lint reports one finding per refused call and exits 1', {
    timeout: 300_000,
  }, () => {
    const plain = guardian(['policy', 'check', 'library']);
    expect(plain).toMatchObject({ code: 0, stdout: '' });
    expect(plain.stderr).toMatch(/2 modules checked: 0 errors/);
    // Files below a directory argument are named relative to it, as in every check finding.
    const r = guardian(['policy', 'check', '--lint', 'library']);
    const refused = r.stdout.split('\n').filter((l) => l.includes('rego_lint_refused_builtin'));
    expect(refused).toEqual([
      'lookup.rego:9:10: rego_lint_refused_builtin: http.send is refused by `guardian policy build` and the Guardian: network I/O during policy evaluation is not allowed: decisions must be replayable from the audit log; tests can replace it with `with http.send as ...`',
      expect.stringMatching(/^lookup\.rego:15:25: rego_lint_refused_builtin: net\.lookup_ip_addr is refused by/),
      expect.stringMatching(/^lookup\.rego:17:16: rego_lint_refused_builtin: opa\.runtime is refused by/),
    ]);
    expect(r.stderr).toMatch(/2 modules checked: 0 errors, 3 lint findings/);
    expect(r.code).toBe(1);
  });

  it('--help of test, eval and check says what happens to refused builtins', { timeout: 300_000 }, () => {
    for (const verb of ['test', 'eval', 'check']) {
      const help = guardian(['policy', verb, '--help']);
      expect(help.code).toBe(0);
      expect(help.stdout, verb).toMatch(/refuses? (them|it)/);
      expect(help.stdout, verb).toContain('http.send');
    }
  });
});
