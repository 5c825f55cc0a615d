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
  // What OPA's strict mode accepts: rego.v1 and future.keywords imports are no-ops in Rego v1, never unused.
  writeFileSync(
    join(dir, 'accepted.rego'),
    'package accepted\nimport rego.v1\nimport future.keywords.in\nimport data.users\n\nallow if {\n  some u in users\n  u == input.user\n}\n',
  );
  writeFileSync(join(dir, 'legacy.rego'), 'package legacy\n\nok = any([true])\n');
  writeFileSync(join(dir, 'legacy_fn.rego'), 'package legacyfn\n\nf(x, y) = x\n');
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
  it('a clean policy: exit 0, nothing printed, also with --strict and --lint', { timeout: 120_000 }, () => {
    const r = guardian(['policy', 'check', 'clean.rego'], dir);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^1 module checked: 0 errors\n$/);
    expect(r.code).toBe(0);
    const both = guardian(['policy', 'check', 'clean.rego', '--strict', '--lint'], dir);
    expect(both).toMatchObject({ code: 0, stdout: '' });
    expect(both.stderr).toMatch(/1 module checked: 0 errors, 0 lint findings/);
  });

  it("--strict is OPA's strict mode: unused locals are compile errors (exit 3), no lint findings", {
    timeout: 120_000,
  }, () => {
    expect(guardian(['policy', 'check', 'lint.rego'], dir)).toMatchObject({ code: 0, stdout: '' });
    const strict = guardian(['policy', 'check', 'lint.rego', '--strict'], dir);
    expect(strict.stdout.trim().split('\n')).toEqual(['lint.rego:5:3: rego_compile_error: assigned var c unused']);
    expect(strict.stderr).toMatch(/1 module checked: 1 error/);
    expect(strict.code).toBe(3);
    // opa check's short flag and format name
    expect(guardian(['policy', 'check', 'lint.rego', '-S', '-f', 'pretty'], dir)).toMatchObject({
      code: 3,
      stdout: strict.stdout,
    });
    const accepted = guardian(['policy', 'check', 'accepted.rego', '--strict'], dir);
    expect(accepted).toMatchObject({ code: 0, stdout: '' });
    expect(accepted.stderr).toMatch(/1 module checked: 0 errors/);
  });

  it('--strict under --v0-compatible: deprecated builtins and unused arguments of v0 modules are errors', {
    timeout: 120_000,
  }, () => {
    const lax = guardian(['policy', 'check', 'legacy.rego', 'legacy_fn.rego', '--v0-compatible'], dir);
    expect(lax).toMatchObject({ code: 0, stdout: '' });
    const builtin = guardian(['policy', 'check', 'legacy.rego', '--v0-compatible', '--strict'], dir);
    expect(builtin.stdout.trim().split('\n')).toEqual([
      'legacy.rego:3:6: rego_type_error: deprecated built-in function calls in expression: any',
    ]);
    expect(builtin.code).toBe(3);
    const fn = guardian(['policy', 'check', 'legacy_fn.rego', '--v0-compatible', '--strict'], dir);
    expect(fn.stdout.trim().split('\n')).toEqual([
      'legacy_fn.rego:3:1: rego_compile_error: unused argument y. (hint: use _ (wildcard variable) instead)',
    ]);
    expect(fn.code).toBe(3);
  });

  it('--lint prints the Guardian lint findings as file:row:col: code: message and exits 1', {
    timeout: 120_000,
  }, () => {
    const r = guardian(['policy', 'check', 'lint.rego', '--lint'], dir);
    expect(r.stdout.trim().split('\n')).toEqual([
      'lint.rego:2:1: rego_lint_redundant_import: import rego.v1 is redundant: modules are Rego v1 already: remove it',
    ]);
    expect(r.stderr).toMatch(/1 module checked: 0 errors, 1 lint finding/);
    expect(r.code).toBe(1);
  });

  it('compile errors exit 3 (whatever the flags); --format json carries errors, and findings with --lint', {
    timeout: 120_000,
  }, () => {
    const r = guardian(['policy', 'check', 'broken.rego', 'lint.rego', '--format', 'json', '--lint'], dir);
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
    expect(report.findings.map((f) => [f.code, f.row])).toEqual([['rego_lint_redundant_import', 2]]);
    const plain = JSON.parse(guardian(['policy', 'check', 'lint.rego', '--format', 'json'], dir).stdout) as object;
    expect(plain).toEqual({ modules: 1, errors: [] });
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
    expect(r.stderr).toMatch(/0 modules checked: 3 errors\n/);
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
