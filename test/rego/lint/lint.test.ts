// policy check's lint rules (--lint) on real parsed modules, and the real compile stage for checkPolicies.
import { describe, expect, it } from 'vitest';
import { checkPolicies, formatFinding, lintModules, type LintFinding } from '../../../src/rego/lint/index.ts';
import { parseModule } from '../../../src/rego/ast/index.ts';

function lint(text: string, file = 'p.rego', regoVersion: 0 | 1 = 1): string[] {
  const v0Files = new Set(regoVersion === 0 ? [file] : []);
  return lintModules([parseModule(file, text, { regoVersion })], { v0Files }).map(formatFinding);
}

function only(findings: string[], code: string): string[] {
  return findings.filter((f) => f.includes(`: ${code}: `));
}

describe('rego_lint_builtin_shadowed', () => {
  it('reports rules, functions and import aliases named like a builtin or builtin namespace, once per name', () => {
    const text = [
      'package p',
      'import data.q as count',
      'lower(s) := s',
      'lower(s) := s if { false }',
      'strings := 1',
      'fine := 2',
    ].join('\n');
    expect(only(lint(text), 'rego_lint_builtin_shadowed')).toEqual([
      'p.rego:2:1: rego_lint_builtin_shadowed: import alias count shadows builtin count',
      'p.rego:3:1: rego_lint_builtin_shadowed: function lower shadows builtin lower',
      'p.rego:5:1: rego_lint_builtin_shadowed: rule strings shadows builtins strings.*',
    ]);
  });
});

describe('deprecated syntax', () => {
  it('future.keywords and rego.v1 imports are redundant in v1', () => {
    const out = lint('package p\nimport future.keywords.in\nimport future.keywords\nimport rego.v1\nx := 1\n');
    expect(out).toEqual([
      'p.rego:2:1: rego_lint_redundant_import: import future.keywords.in is redundant in Rego v1 (the keywords are always enabled): remove it',
      'p.rego:3:1: rego_lint_redundant_import: import future.keywords is redundant in Rego v1 (the keywords are always enabled): remove it',
      'p.rego:4:1: rego_lint_redundant_import: import rego.v1 is redundant: modules are Rego v1 already: remove it',
    ]);
  });

  it('not in a file read as Rego v0, where those imports enable the keywords', () => {
    expect(lint('package p\nimport future.keywords.in\nx := 1 in [1]\n', 'p.rego', 0)).toEqual([]);
    expect(lint('package p\nimport rego.v1\nx := 1\n', 'p.rego', 0)).toEqual([]);
  });

  it('pre-v1 builtins are reported with their replacement, also inside comprehensions', () => {
    const text = [
      'package p',
      'a := re_match("a", "b")',
      'b := any([true])',
      'c := [x | x := set_diff({1}, {2})]',
      'd := cast_string(1)',
    ].join('\n');
    expect(only(lint(text), 'rego_lint_deprecated_builtin')).toEqual([
      'p.rego:2:6: rego_lint_deprecated_builtin: re_match is deprecated and unavailable in Rego v1: use regex.match',
      'p.rego:3:6: rego_lint_deprecated_builtin: any is deprecated and unavailable in Rego v1: use `some x in xs` / `in`, or a comprehension',
      'p.rego:4:16: rego_lint_deprecated_builtin: set_diff is deprecated and unavailable in Rego v1: use the `-` operator',
      'p.rego:5:6: rego_lint_deprecated_builtin: cast_string is deprecated and unavailable in Rego v1: use is_string',
    ]);
  });

  it('a module-defined function named like a deprecated builtin is not a deprecated call', () => {
    const out = lint('package p\nany(xs) := true if { true in xs }\nr := any([true])\n');
    expect(only(out, 'rego_lint_deprecated_builtin')).toEqual([]);
  });
});

describe('rego_lint_refused_builtin', () => {
  it('reports refused builtins with the reason', () => {
    const out = lint(
      'package p\nr := http.send({"method": "GET", "url": "http://x"})\nk := io.jwt.encode_sign({}, {}, {})\n',
    );
    expect(only(out, 'rego_lint_refused_builtin')).toEqual([
      'p.rego:2:6: rego_lint_refused_builtin: http.send is refused by `guardian policy build` and the Guardian: network I/O during policy evaluation is not allowed: decisions must be replayable from the audit log; tests can replace it with `with http.send as ...`',
      'p.rego:3:6: rego_lint_refused_builtin: io.jwt.encode_sign is refused by `guardian policy build` and the Guardian: signing keys do not belong in policies (only JWT verification is supported); tests can replace it with `with io.jwt.encode_sign as ...`',
    ]);
  });
});

describe('checkPolicies', () => {
  it('reports parse errors of every file, and lints the files that parsed', () => {
    const r = checkPolicies([
      { file: 'a.rego', text: 'package a\nx := 1 +\n' },
      { file: 'b.rego', text: 'package b\nimport rego.v1\ny := 1\n' },
    ]);
    expect(r.errors.map((e) => e.code)).toEqual(['rego_parse_error']);
    expect(r.errors[0].location?.file).toBe('a.rego');
    expect(r.findings.map((f: LintFinding) => `${f.location.file}:${f.code}`)).toEqual([
      'b.rego:rego_lint_redundant_import',
    ]);
    expect(r.modules).toBe(1);
  });

  it('compiles in OPA strict mode when asked: unused locals are errors then, lint findings stay findings', () => {
    const text = 'package p\nimport rego.v1\n\nf(a) := b if {\n  c := 1\n  b := a\n}\n';
    const lax = checkPolicies([{ file: 'p.rego', text }]);
    expect(lax.errors).toEqual([]);
    const strict = checkPolicies([{ file: 'p.rego', text }], { strict: true });
    expect(strict.errors.map((e) => e.format())).toEqual(['p.rego:5:3: rego_compile_error: assigned var c unused']);
    expect(strict.findings.map((f) => f.code)).toEqual(['rego_lint_redundant_import']);
    // A --v0-compatible source: its rego.v1 import is no redundant one; strict mode reports the unused import.
    const v0 = [
      { file: 'old.rego', text: 'package old\nimport rego.v1\nimport data.x\nr := 1\n', regoVersion: 0 as const },
    ];
    expect(checkPolicies(v0).findings).toEqual([]);
    expect(checkPolicies(v0, { strict: true }).errors.map((e) => e.format())).toEqual([
      'old.rego:3:1: rego_compile_error: import data.x unused',
    ]);
  });

  it('runs the compile stage: unsafe vars are errors, refused builtins a finding only, clean policies have none', () => {
    const unsafe = checkPolicies([{ file: 'p.rego', text: 'package p\nx := y\n' }]);
    expect(unsafe.errors.map((e) => e.format())).toEqual([
      expect.stringMatching(/^p\.rego:2:6: rego_unsafe_var_error: var y is unsafe/),
    ]);
    // As in `policy test`: the call compiles against OPA's declaration (its type is still checked).
    const refused = checkPolicies([{ file: 'p.rego', text: 'package p\nz := http.send({})\n' }]);
    expect(refused.errors).toEqual([]);
    expect(refused.findings.map((f) => f.code)).toEqual(['rego_lint_refused_builtin']);
    const mistyped = checkPolicies([{ file: 'p.rego', text: 'package p\nz := http.send("x")\n' }]);
    expect(mistyped.errors.map((e) => e.format())).toEqual([
      expect.stringMatching(/^p\.rego:2:\d+: rego_type_error: http\.send: invalid argument\(s\)/),
    ]);
    // internal.test_case is OPA's test runner's, not a policy's: still a compile error.
    const internal = checkPolicies([{ file: 'p.rego', text: 'package p\nz if internal.test_case([1])\n' }]);
    expect(internal.errors.map((e) => e.format())).toEqual([
      expect.stringMatching(/^p\.rego:2:\d+: rego_compile_error: internal\.test_case is not allowed/),
    ]);
    const good = checkPolicies([{ file: 'p.rego', text: 'package p\nallow if input.user == "alice"\n' }]);
    expect(good).toEqual({ errors: [], findings: [], modules: 1 });
  });
});

describe('the project rego/ library', () => {
  it('checks without compile errors; every finding points into a library file', async () => {
    const { readdirSync, readFileSync, statSync } = await import('node:fs');
    const { join, relative } = await import('node:path');
    const { fileURLToPath } = await import('node:url');
    const root = fileURLToPath(new URL('../../../rego', import.meta.url));
    const files: string[] = [];
    const walk = (d: string): void => {
      for (const n of readdirSync(d)) {
        const p = join(d, n);
        if (statSync(p).isDirectory()) walk(p);
        else if (p.endsWith('.rego')) files.push(p);
      }
    };
    walk(root);
    const sources = files.map((f) => ({ file: relative(root, f), text: readFileSync(f, 'utf8') }));
    const r = checkPolicies(sources);
    expect(r.errors.map((e) => e.format())).toEqual([]);
    expect(r.modules).toBe(sources.length);
    const names = new Set(sources.map((s) => s.file));
    for (const f of r.findings) expect(names.has(f.location.file)).toBe(true);
  });
});
