// `guardian policy check` and `--strict-builtin-errors` through the real CLI (child process).
import { describe, expect, it, beforeAll } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readBundle } from '../../../src/rego/bundle/index.ts';

const BIN = fileURLToPath(new URL('../../../bin/guardian.mjs', import.meta.url));

function guardian(args: string[], cwd: string): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', cwd, timeout: 300_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'policy-check-'));
  writeFileSync(join(dir, 'clean.rego'), 'package clean\n\nallow if input.user == "alice"\n');
  writeFileSync(join(dir, 'lint.rego'), 'package lint\nimport rego.v1\n\nf(a) := b if {\n  c := 1\n  b := a\n}\n');
  writeFileSync(join(dir, 'broken.rego'), 'package broken\nx := y\n');
  writeFileSync(
    join(dir, 'v0style.rego'),
    'package v0style\n\nallow {\n\tinput.admin\n}\n\ndeny[msg] {\n\tmsg := "no"\n}\n',
  );
  writeFileSync(
    join(dir, 'builtins.rego'),
    'package sb\n\nquotient := q if {\n  q := 10 / input.d\n}\n\nnum := to_number(input.s)\n\nok := true\n\ntyped := input.s + 1\n',
  );
  writeFileSync(join(dir, 'input.json'), JSON.stringify({ d: 0, s: 'abc' }));
});

describe('guardian policy check', () => {
  it('a clean policy: exit 0, no findings', { timeout: 120_000 }, () => {
    const r = guardian(['policy', 'check', 'clean.rego'], dir);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/1 module checked: 0 errors, 0 lint findings/);
    expect(r.code).toBe(0);
  });

  it('lint findings print file:row:col: code: message; exit 0 without --strict, 1 with it', {
    timeout: 120_000,
  }, () => {
    const expected = [
      'lint.rego:2:1: rego_lint_redundant_import: import rego.v1 is redundant: modules are Rego v1 already: remove it',
      'lint.rego:5:3: rego_lint_unused_var: var c is assigned but never used',
    ];
    const lax = guardian(['policy', 'check', 'lint.rego'], dir);
    expect(lax.stdout.trim().split('\n')).toEqual(expected);
    expect(lax.code).toBe(0);
    const strict = guardian(['policy', 'check', 'lint.rego', '--strict'], dir);
    expect(strict.stdout.trim().split('\n')).toEqual(expected);
    expect(strict.stderr).toMatch(/2 lint findings/);
    expect(strict.code).toBe(1);
  });

  it('compile errors exit 3 (even without --strict); --format json carries errors and findings', {
    timeout: 120_000,
  }, () => {
    const r = guardian(['policy', 'check', 'broken.rego', 'lint.rego', '--format', 'json'], dir);
    expect(r.code).toBe(3);
    const report = JSON.parse(r.stdout) as {
      modules: number;
      errors: unknown[];
      findings: { code: string; row: number }[];
    };
    expect(report.modules).toBe(2);
    expect(report.errors).toEqual([
      { file: 'broken.rego', row: 2, col: 6, code: 'rego_unsafe_var_error', message: 'var y is unsafe' },
    ]);
    expect(report.findings.map((f) => [f.code, f.row])).toEqual([
      ['rego_lint_redundant_import', 2],
      ['rego_lint_unused_var', 5],
    ]);
  });

  it('every parse error of a module is printed, as OPA reports them (a v0 module: each missing keyword)', {
    timeout: 120_000,
  }, () => {
    const r = guardian(['policy', 'check', 'v0style.rego'], dir);
    expect(r.stdout.trim().split('\n')).toEqual([
      'v0style.rego:3:1: rego_parse_error: `if` keyword is required before rule body',
      'v0style.rego:7:1: rego_parse_error: `if` keyword is required before rule body',
      'v0style.rego:7:1: rego_parse_error: `contains` keyword is required for partial set rules',
    ]);
    expect(r.stderr).toMatch(/0 modules checked: 3 errors, 0 lint findings/);
    expect(r.code).toBe(3);
    const build = guardian(['policy', 'build', 'v0style.rego', '-e', 'v0style/allow', '-o', 'v0.tar.gz', '-q'], dir);
    expect(build.stderr).toContain(
      'v0style.rego:7:1: rego_parse_error: `contains` keyword is required for partial set rules',
    );
    expect(build.stderr).toMatch(/3 errors occurred/);
    expect(build.code).toBe(3);
  });

  it('refuses an unknown --format with a usage error', { timeout: 120_000 }, () => {
    const r = guardian(['policy', 'check', 'clean.rego', '--format', 'xml'], dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--format must be text or json/);
  });
});

describe('--strict-builtin-errors', () => {
  let strictBundle: string;
  let laxBundle: string;

  beforeAll(() => {
    strictBundle = join(dir, 'strict.tar.gz');
    laxBundle = join(dir, 'lax.tar.gz');
    const args = ['builtins.rego', '-e', 'sb/quotient', '-e', 'sb/num', '-e', 'sb/ok', '-e', 'sb/typed', '-q'];
    expect(guardian(['policy', 'build', ...args, '-o', strictBundle, '--strict-builtin-errors'], dir).code).toBe(0);
    expect(guardian(['policy', 'build', ...args, '-o', laxBundle], dir).code).toBe(0);
  }, 600_000);

  it('build records strict mode in the manifest metadata; the default build does not', () => {
    expect(readBundle(new Uint8Array(readFileSync(strictBundle))).manifest.metadata).toEqual({
      strict_builtin_errors: true,
    });
    expect(readBundle(new Uint8Array(readFileSync(laxBundle))).manifest.metadata).toBeUndefined();
  });

  it('default mode: failing builtins (native div, host to_number) make the rule undefined', {
    timeout: 120_000,
  }, () => {
    for (const ep of ['sb/quotient', 'sb/num']) {
      const r = guardian(['policy', 'eval', '-b', laxBundle, '-e', ep, '-i', 'input.json'], dir);
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual([]);
    }
  });

  it('strict bundle: a native builtin error aborts with eval_builtin_error at the rule location', {
    timeout: 120_000,
  }, () => {
    const r = guardian(['policy', 'eval', '-b', strictBundle, '-e', 'sb/quotient', '-i', 'input.json'], dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/evaluation failed: builtins\.rego:4: eval_builtin_error: div: divide by zero/);
  });

  it('strict bundle: a run-time type error aborts with eval_type_error at the rule location; undefined by default', {
    timeout: 120_000,
  }, () => {
    const strict = guardian(['policy', 'eval', '-b', strictBundle, '-e', 'sb/typed', '-i', 'input.json'], dir);
    expect(strict.code).toBe(1);
    expect(strict.stderr).toMatch(
      /evaluation failed: builtins\.rego:11: eval_type_error: plus: operand 1 must be number but got string/,
    );
    const lax = guardian(['policy', 'eval', '-b', laxBundle, '-e', 'sb/typed', '-i', 'input.json'], dir);
    expect(lax.code).toBe(0);
    expect(JSON.parse(lax.stdout)).toEqual([]);
  });

  it('strict bundle: host builtin errors abort too, at the call site (eval picks strict mode from the manifest)', {
    timeout: 120_000,
  }, () => {
    const r = guardian(['policy', 'eval', '-b', strictBundle, '-e', 'sb/num', '-i', 'input.json'], dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/evaluation failed: builtins\.rego:7: eval_builtin_error: to_number: .*invalid syntax/);
  });

  it('eval --strict-builtin-errors makes host builtins strict on a default bundle', { timeout: 120_000 }, () => {
    const r = guardian(
      ['policy', 'eval', '-b', laxBundle, '-e', 'sb/num', '-i', 'input.json', '--strict-builtin-errors'],
      dir,
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/eval_builtin_error: to_number/);
  });

  it('strict mode does not change rules whose builtins succeed', { timeout: 120_000 }, () => {
    const r = guardian(
      ['policy', 'eval', '-b', strictBundle, '-e', 'sb/ok', '-i', 'input.json', '--strict-builtin-errors'],
      dir,
    );
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([{ result: true }]);
  });
});
