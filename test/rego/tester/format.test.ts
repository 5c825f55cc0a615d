// Canonical formatting (src/rego/format): on every .rego the project ships (rego/, docs/examples, test
// fixtures) the formatted module parses to the same AST, keeps every comment and formats to itself; the
// v0 → v1 rewrite; the unified diff; and `guardian policy fmt` as a user runs it.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { runGuardian } from '../../cli/run-guardian.ts';
import { parseModule } from '../../../src/rego/ast/index.ts';
import type { Module } from '../../../src/rego/ast/types.ts';
import { unifiedDiff } from '../../../src/rego/format/diff.ts';
import { formatSource } from '../../../src/rego/format/index.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

function regoBelow(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .sort()
    .flatMap((n) => {
      const p = join(dir, n);
      return statSync(p).isDirectory() ? regoBelow(p) : p.endsWith('.rego') ? [p] : [];
    });
}

/**
 * The AST without what formatting may change: locations, comment positions, wildcard numbering, `=` or `:=`
 * in rule heads (the same rule either way; opa fmt writes `:=`), generated bodies (`p if true` is `p := true`),
 * and the order of imports (sorted within their group).
 */
function shape(m: Module): string {
  const imports = [...m.imports].map((i) => JSON.stringify(i, (k, v) => (k === 'location' ? undefined : v))).sort();
  return JSON.stringify({ ...m, imports, comments: m.comments.map((c) => c.text.trim()) }, (k, v) =>
    k === 'location' || k === 'assign' || k === 'generated' || k === 'index'
      ? undefined
      : k === 'value' && typeof v === 'string' && /^\$\d+$/.test(v)
        ? '_'
        : v,
  );
}

const shipped = ['rego', 'docs/examples', 'test/fixtures'].flatMap((d) => regoBelow(join(ROOT, d)));

describe('formatSource on every shipped module', () => {
  it('finds the library', () => expect(shipped.length).toBeGreaterThanOrEqual(20));

  it.each(shipped.map((f) => [f.slice(ROOT.length), f]))('%s: same AST, idempotent', (_name, file) => {
    const text = readFileSync(file, 'utf8');
    const once = formatSource(file, text);
    expect(shape(parseModule(file, once))).toBe(shape(parseModule(file, text)));
    expect(formatSource(file, once)).toBe(once);
    expect(once).not.toMatch(/^ +\S/m); // tabs, as opa fmt indents
  });
});

describe('formatting rules', () => {
  it('canonical forms: infix operators with needed parentheses, refs with dots, one blank line per rule', () => {
    const text =
      'package  p\nimport data.lib   as l\nx := plus(1, mul(2, 3))\ny := mul(plus(1, 2), 3)\nz := input["a"]["b-c"][0]\n\n\n\nw := {"k": [1,2], "s": set()}\n';
    expect(formatSource('p.rego', text)).toBe(
      'package p\n\nimport data.lib as l\n\nx := 1 + (2 * 3)\ny := (1 + 2) * 3\nz := input.a["b-c"][0]\n\nw := {"k": [1, 2], "s": set()}\n',
    );
  });

  it('keeps comments: leading, trailing, before a closing brace, at the end', () => {
    const text = '# head\npackage p\n\n# about allow\nallow if {\n  input.a # why\n  # last\n}\n# tail\n';
    const out = formatSource('p.rego', text);
    expect(out).toBe('# head\npackage p\n\n# about allow\nallow if {\n\tinput.a # why\n\t# last\n}\n\n# tail\n');
    expect(formatSource('p.rego', out)).toBe(out);
  });

  it('--rego-v1 rewrites v0 rules (if, contains, import rego.v1) and the result is stable v1', () => {
    const v0 =
      'package v\n\nimport future.keywords.in\n\ndeny[msg] {\n    input.user == "eve"\n    msg := "no"\n}\n\nallow {\n    not deny[_]\n}\n\nf(x) = y {\n    y := x + 1\n} else = 0 {\n    true\n}\n';
    const v1 = formatSource('v.rego', v0, { regoV1: true });
    expect(v1).toBe(
      'package v\n\nimport rego.v1\n\ndeny contains msg if {\n\tinput.user == "eve"\n\tmsg := "no"\n}\n\nallow if {\n\tnot deny[_]\n}\n\nf(x) := y if {\n\ty := x + 1\n} else := 0\n',
    );
    expect(formatSource('v.rego', v1)).toBe(v1);
    // Same rules as the v0 module read as v0 (imports aside).
    const rules = (m: Module) => shape({ ...m, imports: [], comments: [], regoVersion: 1 });
    expect(rules(parseModule('v.rego', v1))).toBe(rules(parseModule('v.rego', v0, { regoVersion: 0 })));
  });

  it('unifiedDiff: hunks with context, nothing for equal texts', () => {
    expect(unifiedDiff('f', 'a\nb\n', 'a\nb\n')).toBe('');
    expect(unifiedDiff('/x/f.rego', 'a\nb\nc\n', 'a\nB\nc\n')).toBe(
      '--- a/x/f.rego\n+++ b/x/f.rego\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n',
    );
  });
});

describe('guardian policy fmt', () => {
  const dir = mkdtempSync(join(tmpdir(), 'policy-fmt-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const messy = join(dir, 'messy.rego');
  const clean = join(dir, 'clean.rego');
  writeFileSync(messy, 'package m\nallow if {\n    input.ok\n}\n');
  writeFileSync(clean, 'package c\n\nallow if {\n\tinput.ok\n}\n');

  const fmt = (args: string[]) => runGuardian(['policy', 'fmt', ...args]);

  it('--check lists the files to change and exits 1; --diff prints the diff', async () => {
    expect(await fmt(['--check', dir])).toEqual({ code: 1, stdout: `${messy}\n`, stderr: '' });
    const d = await fmt(['--diff', messy]);
    expect(d.code).toBe(1);
    expect(d.stdout).toContain('-    input.ok\n+\tinput.ok\n');
    expect(await fmt(['--check', clean])).toEqual({ code: 0, stdout: '', stderr: '' });
  });

  it("opa fmt's -l (list, exit 1 only with --fail) and -d (the diff)", async () => {
    expect(await fmt(['-l', dir])).toEqual({ code: 0, stdout: `${messy}\n`, stderr: '' });
    expect(await fmt(['-l', '--fail', dir])).toEqual({ code: 1, stdout: `${messy}\n`, stderr: '' });
    expect(await fmt(['-l', '--fail', clean])).toEqual({ code: 0, stdout: '', stderr: '' });
    expect((await fmt(['-d', messy])).stdout).toBe((await fmt(['--diff', messy])).stdout);
  });

  it('prints to stdout by default; -w rewrites only what differs', async () => {
    expect((await fmt([messy])).stdout).toBe('package m\n\nallow if {\n\tinput.ok\n}\n');
    expect(readFileSync(messy, 'utf8')).toBe('package m\nallow if {\n    input.ok\n}\n');
    expect((await fmt(['-w', dir])).code).toBe(0);
    expect(readFileSync(messy, 'utf8')).toBe('package m\n\nallow if {\n\tinput.ok\n}\n');
    expect((await fmt(['--check', dir])).code).toBe(0);
  });

  it('a module that does not parse: its error, exit 3', async () => {
    const bad = join(dir, 'sub');
    execFileSync('mkdir', ['-p', bad]);
    writeFileSync(join(bad, 'bad.rego'), 'package b\n\nallow if {\n');
    const r = await fmt([bad]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/bad\.rego:\d+:\d+: rego_parse_error/);
    expect(r.stderr).toMatch(/guardian: 1 error occurred\n$/);
  });

  it('a v0 module without --rego-v1: exit 3 with the hint; with it, the v1 rewrite', async () => {
    const v0 = join(dir, 'v0');
    execFileSync('mkdir', ['-p', v0]);
    writeFileSync(join(v0, 'old.rego'), 'package o\n\nallow {\n    input.ok\n}\n');
    const r = await fmt([v0]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(`${join(v0, 'old.rego')}: this is Rego v0; --rego-v1 rewrites it to Rego v1\n`);
    const ok = await fmt(['--rego-v1', v0]);
    expect(ok).toEqual({
      code: 0,
      stdout: 'package o\n\nimport rego.v1\n\nallow if {\n\tinput.ok\n}\n',
      stderr: '',
    });
  });
});
