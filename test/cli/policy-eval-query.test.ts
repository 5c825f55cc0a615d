// `guardian policy eval 'QUERY' -d … -i …` in-process through main(): opa eval's JSON output (expressions with
// captured values, bindings, `{}` when undefined), data from any .json/.yaml below -d, -b bundles, --fail.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { capabilitiesDocument } from '../../src/rego/builtins/capabilities.ts';
import { VOUCH_BUILTIN } from '../policy/fixtures/custom-builtin-bundle.ts';
import { runGuardian } from './run-guardian.ts';

const dir = mkdtempSync(join(tmpdir(), 'policy-eval-query-'));
mkdirSync(join(dir, 'pol', 'cfg'), { recursive: true });
writeFileSync(join(dir, 'pol', 'p.rego'), 'package x\n\nallow if input.n < data.cfg.limit\n\nxs := [1, 2, 3]\n');
writeFileSync(join(dir, 'pol', 'cfg', 'limits.yaml'), 'limit: 3\n');
writeFileSync(join(dir, 'in.json'), '{"n": 1}');
mkdirSync(join(dir, 'bundle', 'b'), { recursive: true });
writeFileSync(join(dir, 'bundle', '.manifest'), '{"roots": ["b"]}');
writeFileSync(join(dir, 'bundle', 'b', 'q.rego'), 'package b\n\nname := data.b.who\n');
writeFileSync(join(dir, 'bundle', 'b', 'data.json'), '{"who": "ada"}');
// A custom builtin declared in capabilities (as `opa eval --capabilities` takes it) and its implementation.
mkdirSync(join(dir, 'custom'), { recursive: true });
writeFileSync(join(dir, 'custom', 'v.rego'), 'package v\n\ngreeting := custom.vouch("ada")\n');
const caps = join(dir, 'caps.json');
const doc = capabilitiesDocument();
writeFileSync(caps, JSON.stringify({ ...doc, builtins: [...doc.builtins, VOUCH_BUILTIN] }));
const impl = join(dir, 'vouch.mjs');
writeFileSync(impl, "export default { 'custom.vouch': (who) => `vouched for ${who}` };\n");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function evalQuery(args: string[]): Promise<{ code: number; out: unknown; stderr: string }> {
  const r = await runGuardian(['policy', 'eval', ...args]);
  return { code: r.code, out: r.stdout ? JSON.parse(r.stdout) : undefined, stderr: r.stderr };
}

const at = (row: number, col: number) => ({ row, col });
const guardianBin = fileURLToPath(new URL('../../bin/guardian.mjs', import.meta.url));

describe('guardian policy eval QUERY', { timeout: 300_000 }, () => {
  const d = ['-d', join(dir, 'pol')];

  it('a rule reference: its value as the one expression', async () => {
    const r = await evalQuery([...d, 'data.x.allow', '-i', join(dir, 'in.json')]);
    expect(r.code).toBe(0);
    expect(r.out).toEqual({ result: [{ expressions: [{ value: true, text: 'data.x.allow', location: at(1, 1) }] }] });
  });

  it('a single expression is captured even when false; undefined prints {}', async () => {
    expect((await evalQuery([...d, 'data.cfg.limit == 4'])).out).toEqual({
      result: [{ expressions: [{ value: false, text: 'data.cfg.limit == 4', location: at(1, 1) }] }],
    });
    expect((await evalQuery([...d, 'count(data.x.xs)'])).out).toEqual({
      result: [{ expressions: [{ value: 3, text: 'count(data.x.xs)', location: at(1, 1) }] }],
    });
    const undef = await evalQuery([...d, 'data.x.allow']);
    expect([undef.code, undef.out]).toEqual([0, {}]);
    const failed = await evalQuery([...d, 'data.x.allow', '--fail']);
    expect([failed.code, failed.out]).toEqual([1, {}]);
  });

  it('several expressions: every result has bindings, and a false expression filters it out', async () => {
    const r = await evalQuery([...d, 'x := data.x.xs[_]; x > 1']);
    const row = (x: number) => ({
      expressions: [
        { value: true, text: 'x := data.x.xs[_]', location: at(1, 1) },
        { value: true, text: 'x > 1', location: at(1, 20) },
      ],
      bindings: { x },
    });
    expect(r.out).toEqual({ result: [row(2), row(3)] });
  });

  it('with modifiers apply; -b loads a bundle directory next to -d', async () => {
    const r = await evalQuery([...d, 'data.x.allow with input as {"n": 0}']);
    expect(r.out).toEqual({
      result: [{ expressions: [{ value: true, text: 'data.x.allow with input as {"n": 0}', location: at(1, 1) }] }],
    });
    const b = await evalQuery(['-b', join(dir, 'bundle'), 'data.b.name']);
    expect(b.out).toEqual({ result: [{ expressions: [{ value: 'ada', text: 'data.b.name', location: at(1, 1) }] }] });
  });

  it('a query that does not parse: its error with location, exit 3', async () => {
    const r = await evalQuery([...d, 'x = ']);
    expect(r.code).toBe(3);
    // OPA's scanner places the end of input at the column of the last character read (the space).
    expect(r.stderr).toMatch(/^query:1:4: rego_parse_error: unexpected eof token\n\tx = \n\t {2}\^\n/);
    expect(r.stderr).toMatch(/guardian: 1 error occurred\n$/);
  });

  it('-f values, bindings, raw and pretty print as opa eval --format does; -I reads stdin; --fail-defined', async () => {
    const q = 'x := data.x.xs[_]; y := "a b"';
    const run = async (args: string[]) => (await runGuardian(['policy', 'eval', ...d, ...args])).stdout;
    // values and bindings: one indented JSON document per result
    expect(await run(['-f', 'values', 'data.x.xs[0]; data.x.xs[1]'])).toBe('[\n  1,\n  2\n]\n');
    expect(await run(['-f', 'bindings', 'x := data.x.xs[_]; x > 2'])).toBe('{\n  "x": 3\n}\n');
    // raw: strings unquoted, other values compact JSON, expressions separated by a space, a line per result
    expect(await run(['-f', 'raw', '"hi"; data.x.xs; {"k": "v"}'])).toBe('hi [1,2,3] {"k":"v"}\n');
    // pretty: one value as JSON, undefined as such, several results as a table of bindings
    expect(await run(['-f', 'pretty', 'data.x.xs'])).toBe('[\n  1,\n  2,\n  3\n]\n');
    expect(await run(['-f', 'pretty', 'data.x.xs[_] > 5'])).toBe('undefined\n');
    expect(await run(['-f', 'pretty', q])).toBe(
      '+---+-------+\n| x |   y   |\n+---+-------+\n| 1 | "a b" |\n| 2 | "a b" |\n| 3 | "a b" |\n+---+-------+\n',
    );
    // -I reads fd 0: the built CLI in a child process, fed on stdin
    const child = spawnSync(
      process.execPath,
      [guardianBin, 'policy', 'eval', ...d, '-I', '-f', 'raw', 'data.x.allow'],
      {
        input: '{"n": 1}',
        encoding: 'utf8',
      },
    );
    expect(child.stdout).toBe('true\n');
    const defined = await runGuardian(['policy', 'eval', ...d, '--fail-defined', 'data.x.xs']);
    expect(defined.code).toBe(1);
    const undefinedOne = await runGuardian(['policy', 'eval', ...d, '--fail-defined', 'data.x.nothing']);
    expect(undefinedOne.code).toBe(0);
    const bad = await runGuardian(['policy', 'eval', ...d, '-f', 'yaml', 'data.x.xs']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--format must be one of json, values, bindings, raw, pretty, not "yaml"/);
    // without a query (-b/-e), the query's flags are refused rather than ignored
    for (const flags of [['-d', join(dir, 'pol')], ['-f', 'raw'], ['--fail'], ['--fail-defined']]) {
      const r = await runGuardian(['policy', 'eval', '-b', join(dir, 'b.tar.gz'), '-e', 'x/allow', ...flags]);
      expect(r.code, flags.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/-d, -f, --fail and --fail-defined apply to a query/);
    }
  });

  it('--v0-compatible reads the query as v0 too: deprecated builtins callable there, refused in a v1 query', async () => {
    const v0 = await evalQuery(['--v0-compatible', 'x := all([]); y := any([false, true])']);
    expect(v0.code).toBe(0);
    expect(v0.out).toMatchObject({ result: [{ bindings: { x: true, y: true } }] });
    const v1 = await evalQuery(['x := all([])']);
    expect(v1.code).toBe(3);
    expect(v1.stderr).toMatch(/^query:1:6: rego_type_error: deprecated built-in function calls in expression: all\n/);
    // v1 keywords are plain names in a v0 query, as in a v0 module without future imports.
    const kw = await evalQuery(['--v0-compatible', 'contains := 1; if := contains + 1']);
    expect(kw.out).toMatchObject({ result: [{ bindings: { contains: 1, if: 2 } }] });
  });

  it('a rule at a path the -d data holds: OPA compiles against the store and refuses it (CheckPathConflicts), exit 3', async () => {
    const c = join(dir, 'conflict');
    mkdirSync(join(c, 'x'), { recursive: true });
    writeFileSync(join(c, 'p.rego'), 'package x\n\nallow if input.n < 3\n');
    writeFileSync(join(c, 'x', 'data.json'), '{"allow": true}');
    const r = await evalQuery(['-d', c, 'data.x.allow']);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/p\.rego:3:1: rego_compile_error: conflicting rule for data path x\/allow found\n/);
  });

  it('custom builtins: declared by --capabilities, implemented by --builtins, in the modules and the query', async () => {
    const c = ['-d', join(dir, 'custom'), '--capabilities', caps];
    const r = await evalQuery([...c, '--builtins', impl, 'data.v.greeting']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.out).toEqual({
      result: [{ expressions: [{ value: 'vouched for ada', text: 'data.v.greeting', location: at(1, 1) }] }],
    });
    const q = await evalQuery([...c, '--builtins', impl, 'custom.vouch("bo")']);
    expect(q.out).toEqual({
      result: [{ expressions: [{ value: 'vouched for bo', text: 'custom.vouch("bo")', location: at(1, 1) }] }],
    });
  });

  it('custom builtins: undeclared is a compile error; declared but unimplemented is a usage error', async () => {
    const undeclared = await evalQuery(['-d', join(dir, 'custom'), 'data.v.greeting']);
    expect(undeclared.code).toBe(3);
    expect(undeclared.stderr).toMatch(/rego_type_error: undefined function custom\.vouch/);
    const missing = await evalQuery(['-d', join(dir, 'custom'), '--capabilities', caps, 'data.v.greeting']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe(
      'guardian: the query: no implementation of builtin custom.vouch (custom builtins come from --builtins module.mjs)\n',
    );
  });

  it('numbers print as the module computed them: integers past 2^53 and floats past the double range', async () => {
    const r = await runGuardian([
      'policy',
      'eval',
      'x := 9007199254740993 + 1; y := 1e400; z := 12345678901234567890123',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('"x": 9007199254740994,');
    expect(r.stdout).toContain('"y": 1e400,');
    expect(r.stdout).toContain('"z": 12345678901234567890123\n');
  });
});

describe('template strings follow --capabilities in every verb', { timeout: 300_000 }, () => {
  // A capabilities document from before template strings (no `template_strings` feature), as OPA refuses them.
  const tmplDir = join(dir, 'tmpl');
  mkdirSync(tmplDir, { recursive: true });
  writeFileSync(join(tmplDir, 't.rego'), 'package t\n\nmsg := $"hello {input.who}"\n');
  const old = join(dir, 'caps-no-template.json');
  writeFileSync(old, JSON.stringify({ ...doc, features: doc.features.filter((f) => f !== 'template_strings') }));

  it('policy check: accepted with our capabilities, refused with OPA text without the feature', async () => {
    const ok = await runGuardian(['policy', 'check', join(tmplDir, 't.rego'), '--capabilities', caps]);
    expect(ok.code, ok.stderr).toBe(0);
    const refused = await runGuardian(['policy', 'check', join(tmplDir, 't.rego'), '--capabilities', old]);
    expect(refused.code).not.toBe(0);
    expect(refused.stdout + refused.stderr).toContain('template strings are not supported by current capabilities');
  });

  it('policy eval: the same document refuses the module', async () => {
    const r = await evalQuery(['-d', tmplDir, '--capabilities', old, 'data.t.msg']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('template strings are not supported by current capabilities');
    writeFileSync(join(dir, 'who.json'), '{"who": "ada"}');
    const ok = await evalQuery(['-d', tmplDir, '-i', join(dir, 'who.json'), 'data.t.msg']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.stringify(ok.out)).toContain('"hello ada"');
  });
});
