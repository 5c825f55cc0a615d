// OPA's loader rules (src/rego/bundle/loader.ts), checked against the behaviour of OPA's loader/loader.go and
// bundle/bundle.go: which files load, where data mounts, merge conflicts, --ignore, prefixes, bundle roots;
// then through `guardian policy test` and `policy build` as a user runs them.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runGuardian } from '../../cli/run-guardian.ts';
import { readBundle } from '../../../src/rego/bundle/index.ts';
import { goGlobMatcher, LoaderError, loadPaths, splitPathPrefix } from '../../../src/rego/bundle/loader.ts';
import { runPolicyTests } from '../../../src/rego/tester/index.ts';

const roots: string[] = [];
afterAll(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

function tree(files: Record<string, string>): string {
  const d = mkdtempSync(join(tmpdir(), 'loader-'));
  roots.push(d);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(d, name)), { recursive: true });
    writeFileSync(join(d, name), text);
  }
  return d;
}

function loadErrors(paths: string[], options: Parameters<typeof loadPaths>[1] = {}): string[] {
  try {
    loadPaths(paths, options);
  } catch (e) {
    if (e instanceof LoaderError) return e.errors;
    throw e;
  }
  throw new Error('expected a LoaderError');
}

describe('loadPaths: OPA loader rules', () => {
  it('loads every .rego/.json/.yaml/.yml, mounting data at its directory whatever the file name', () => {
    const d = tree({
      'p.rego': 'package p\n',
      'cfg/limits.yaml': 'limit: 3\nflag: yes\n',
      'cfg/more.json': '{"other": [1, 2]}',
      'a/b/x.yml': 'name: x\n',
      'a/b/c/deep.json': '{"k": true}',
      'notes.txt': 'not loaded',
      'cfg/readme.md': '# not loaded',
    });
    const r = loadPaths([d]);
    expect(r.modules.map((m) => m.relative)).toEqual(['p.rego']);
    // sigs.k8s.io/yaml reads YAML 1.1: `yes` is true.
    expect(r.data).toEqual({
      cfg: { limit: 3, flag: true, other: [1, 2] },
      a: { b: { name: 'x', c: { k: true } } },
    });
  });

  it('YAML data as go-yaml v2 reads it: the first document of a stream, application tags taken plainly', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error): void => {
      warnings.push(w.message);
    };
    process.on('warning', onWarning);
    try {
      const d = tree({
        'k8s/pod.yaml': 'kind: Pod\nspec: {a: 1}\n---\nkind: Service\n---\nbroken: [\n',
        'cfn/stack.yaml': [
          'Resources:',
          '  Bucket:',
          '    Properties:',
          '      Name: !Ref BucketName',
          '      Arn: !GetAtt [Bucket, Arn]',
          '      Policy: !Sub',
          '        - "${X}/*"',
          '        - {X: !Ref Y}',
          '',
        ].join('\n'),
      });
      expect(loadPaths([d]).data).toEqual({
        k8s: { kind: 'Pod', spec: { a: 1 } },
        cfn: {
          Resources: {
            Bucket: { Properties: { Name: 'BucketName', Arn: ['Bucket', 'Arn'], Policy: ['${X}/*', { X: 'Y' }] } },
          },
        },
      });
      // Node emits warnings on a later tick: wait one before checking none was raised.
      await new Promise((r) => setImmediate(r));
      expect(warnings).toEqual([]);
      // A syntax error in the first document is still an error.
      const bad = tree({ 'x/a.yaml': 'a: [1,\n---\nb: 1\n' });
      expect(loadErrors([bad])[0]).toMatch(/x\/a\.yaml: error converting YAML to JSON: /);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('a file named on the command line mounts at the root; an unknown extension is tried as Rego/JSON/YAML', () => {
    const d = tree({ 'data.json': '{"x": 1}', 'extra.conf': '{"y": 2}', 'rules.policy': 'package q\n' });
    const r = loadPaths([join(d, 'data.json'), join(d, 'extra.conf'), join(d, 'rules.policy')]);
    expect(r.data).toEqual({ x: 1, y: 2 });
    expect(r.modules.map((m) => [m.relative, m.inDirectory])).toEqual([['rules.policy', false]]);
  });

  it('objects merge key by key; any other value twice is a merge error; a root scalar is no object', () => {
    const ok = tree({ 'x/a.json': '{"o": {"a": 1}}', 'x/b.yaml': 'o:\n  b: 2\n' });
    expect(loadPaths([ok]).data).toEqual({ x: { o: { a: 1, b: 2 } } });
    const clash = tree({ 'x/a.json': '{"n": 1}', 'x/b.json': '{"n": 1}' });
    expect(loadErrors([clash])).toEqual([`${join(clash, 'x', 'b.json')}: merge error`]);
    const scalar = tree({ 'n.json': '7' });
    // OPA v1 loader/errors.go unsupportedDocumentType.
    expect(loadErrors([join(scalar, 'n.json')])).toEqual([
      `${join(scalar, 'n.json')}: document must be of type object`,
    ]);
    // Below a directory a scalar is fine: it is wrapped in its directory's object.
    expect(loadPaths([tree({ 'd/n.json': '7' })]).data).toEqual({ d: 7 });
  });

  it("collects every error and words them as OPA's loader", () => {
    const d = tree({ 'bad.json': '{"a": ', 'bad.yaml': 'a: [1,\n', 'ok.json': '{}' });
    const missing = join(d, 'missing');
    let error: LoaderError | undefined;
    try {
      loadPaths([d, missing]);
    } catch (e) {
      error = e as LoaderError;
    }
    expect(error).toBeInstanceOf(LoaderError);
    expect(error!.errors).toHaveLength(3);
    expect(error!.errors[0]).toBe(`${join(d, 'bad.json')}: unexpected EOF`);
    expect(error!.errors[1]).toBe(
      `${join(d, 'bad.yaml')}: error converting YAML to JSON: yaml: line 1: did not find expected node content`,
    );
    expect(error!.errors[2]).toBe(`stat ${missing}: no such file or directory`);
    expect(error!.message.split('\n')[0]).toBe('3 errors occurred during loading:');
    expect(loadErrors([missing])).toEqual([`stat ${missing}: no such file or directory`]);
    expect(new LoaderError(['x: merge error']).message).toBe('1 error occurred during loading: x: merge error');
  });

  it('--ignore matches names below the paths (Go filepath.Match), never the paths themselves', () => {
    const d = tree({
      '.hidden/x.json': '{"h": 1}',
      'vendor/v.rego': 'package v\n',
      'keep/k.json': '{"k": 1}',
      'keep/k_test.rego': 'package k\n',
    });
    // No default ignore: hidden directories load, as with opa.
    expect(loadPaths([d]).data).toEqual({ '.hidden': { h: 1 }, keep: { k: 1 } });
    const r = loadPaths([d], { ignore: ['.*', 'vendor', '*_test.rego'] });
    expect(r.data).toEqual({ keep: { k: 1 } });
    expect(r.modules).toEqual([]);
    expect(loadPaths([join(d, 'vendor')], { ignore: ['vendor'] }).modules.map((m) => m.relative)).toEqual(['v.rego']);
    expect(goGlobMatcher('[a-c]?.json').test('b1.json')).toBe(true);
    expect(goGlobMatcher('[^a-c]*').test('abc')).toBe(false);
    expect(goGlobMatcher('a\\*').test('a*')).toBe(true);
    expect(() => goGlobMatcher('[abc')).toThrow(/syntax error in pattern/);
  });

  it("'a.b:path' mounts what the path holds below data.a.b; URLs are not prefixes", () => {
    const d = tree({ 'x.json': '{"v": 1}', 'sub/y.json': '{"w": 2}' });
    expect(loadPaths([`a.b:${join(d, 'x.json')}`, `c:${d}`]).data).toEqual({
      a: { b: { v: 1 } },
      c: { v: 1, sub: { w: 2 } },
    });
    expect(splitPathPrefix('file:///tmp/x')).toEqual({ prefix: [], path: 'file:///tmp/x' });
    expect(splitPathPrefix('/tmp/x')).toEqual({ prefix: [], path: '/tmp/x' });
  });
});

/** The one error loading `name` (holding `text`) alone gives, without its path. */
function fileError(name: string, text: string | Uint8Array): string {
  const d = tree({});
  writeFileSync(join(d, name), text);
  const [e, ...rest] = loadErrors([d]);
  expect(rest).toEqual([]);
  const prefix = `${join(d, name)}: `;
  expect(e.startsWith(prefix), e).toBe(true);
  return e.slice(prefix.length);
}

describe('malformed data files: the texts of OPA v1 loader/loader.go', () => {
  // loadJSON: `<path>: ` and util.UnmarshalJSON's error, which is Go encoding/json's (scanner.go, stream.go) or
  // OPA's own for a second value (util/json.go); test/rego/bundle/go-json.test.ts has the rest of Go's texts.
  it('a .json file: Go decoder errors after the path', () => {
    // OPA's TestLoadErrors: an empty .json file is `a.json: EOF`.
    expect(fileError('a.json', '')).toBe('EOF');
    expect(fileError('a.json', '{"a": 1')).toBe('unexpected EOF');
    expect(fileError('a.json', '{"a": 1,}')).toBe("invalid character '}' looking for beginning of object key string");
    expect(fileError('a.json', '{"a": 1} {"b": 2}')).toBe("error: invalid character '{' after top-level value");
    expect(fileError('a.json', '{"a": 1}}')).toBe("invalid character '}' looking for beginning of value");
    expect(fileError('a.json', "{'a': 1}")).toBe("invalid character '\\'' looking for beginning of object key string");
    expect(fileError('a.json', new Uint8Array([0xef, 0xbb, 0xbf, 0x7b, 0x7d]))).toBe(
      "invalid character 'ï' looking for beginning of value",
    );
    // A `null` after the value is a nil token to OPA's one Token() call: the file loads.
    const d = tree({ 'a.json': '{"a": 1}\nnull trailing' });
    expect(loadPaths([d]).data).toEqual({ a: 1 });
  });

  it('a file named on the command line that is no Rego, JSON or YAML', () => {
    const d = tree({ 'x.conf': 'a: [1,\n', 'y.conf': '{"a": 1} null more' });
    expect(loadErrors([join(d, 'x.conf')])).toEqual([`${join(d, 'x.conf')}: can't recognize file type`]);
    // JSON as OPA's decoder reads it, so a trailing `null …` passes.
    expect(loadPaths([join(d, 'y.conf')]).data).toEqual({ a: 1 });
  });

  // loadYAML: `<path>: error converting YAML to JSON: ` and sigs.k8s.io/yaml YAMLToJSON's error, go-yaml v2's
  // (scannerc.go, parserc.go, readerc.go; decode.go parser.fail() prints a scanner error's mark as a 1-based line,
  // a parser error's as the 0-based one, and neither on the first line) or encoding/json Marshal's.
  it('a .yaml file: go-yaml errors, wrapped as the loader does', () => {
    const cases: [string, string | Uint8Array, string][] = [
      ['tab indentation', 'limits:\n\tmax: 3\n', 'yaml: line 2: found character that cannot start any token'],
      ['a second `: ` on the first line', 'name: my app: v2\n', 'yaml: mapping values are not allowed in this context'],
      [
        'a key indented past its siblings',
        'a:\n  b: 1\n   c: 2\n',
        'yaml: line 3: mapping values are not allowed in this context',
      ],
      ['a key indented short of its siblings', 'a:\n  b: 1\n c: 2\n', 'yaml: line 2: did not find expected key'],
      [
        'a sequence item out of line',
        'users:\n  - name: a\n    role: admin\n  - name: b\n   role: dev\n',
        "yaml: line 4: did not find expected '-' indicator",
      ],
      ['a key without its `:`', 'a: 1\nb: 2\nc\nd: 4\n', "yaml: line 4: could not find expected ':'"],
      ['an unclosed quote', '# config\nkey: "unterminated\nother: 1\n', 'yaml: line 4: found unexpected end of stream'],
      ['an unclosed flow sequence', 'list: [a, b\nnext: 1\n', "yaml: line 1: did not find expected ',' or ']'"],
      ['an alias without its anchor', 'x: 1\ny: *missing\n', "yaml: unknown anchor 'missing' referenced"],
      ['a control character', 'a: \u0001\n', 'yaml: control characters are not allowed'],
      ['bytes that are no UTF-8', new Uint8Array([0x61, 0x3a, 0x20, 0xff, 0x0a]), 'yaml: invalid leading UTF-8 octet'],
      // The JSON step: json.Marshal has no text for NaN and the infinities; a null key is no JSON key.
      ['a NaN', 'a: .nan\n', 'json: unsupported value: NaN'],
      ['a null key', '~: x\n', 'unsupported map key of type: %!s(<nil>), key: <nil>, value: "x"'],
    ];
    for (const [what, text, message] of cases)
      expect(fileError('d.yaml', text), what).toBe(`error converting YAML to JSON: ${message}`);
  });

  it('YAML go-yaml accepts: a key given twice keeps its last value, a later document is not read', () => {
    const d = tree({ 'x/a.yaml': 'k: 1\nk: 2\n---\nbroken: [\n' });
    expect(loadPaths([d]).data).toEqual({ x: { k: 2 } });
  });

  it('a file the loader cannot stat: Go fs.PathError texts', () => {
    const d = tree({ 'ok.json': '{}' });
    symlinkSync(join(d, 'loop-b'), join(d, 'loop-a'));
    symlinkSync(join(d, 'loop-a'), join(d, 'loop-b'));
    symlinkSync(join(d, 'gone'), join(d, 'dangling.json'));
    expect(loadErrors([d])).toEqual([
      `stat ${join(d, 'dangling.json')}: no such file or directory`,
      `stat ${join(d, 'loop-a')}: too many levels of symbolic links`,
      `stat ${join(d, 'loop-b')}: too many levels of symbolic links`,
    ]);
  });
});

describe('malformed files in bundle mode: the texts of OPA v1 bundle/bundle.go Reader.Read', () => {
  const bundleErrors = (files: Record<string, string>): { dir: string; errors: string[] } => {
    const dir = tree(files);
    return { dir, errors: loadErrors([dir], { asBundle: true }) };
  };

  it('data.json: util.UnmarshalJSON; data.yaml: util.Unmarshal (JSON when valid, else go-yaml unwrapped)', () => {
    const json = bundleErrors({ 'x/data.json': '{"a": 1,}' });
    expect(json.errors).toEqual([
      `bundle ${json.dir}: bundle load failed on ${join(json.dir, 'x', 'data.json')}: invalid character '}' looking for beginning of object key string`,
    ]);
    const yaml = bundleErrors({ 'x/data.yaml': 'a:\n\tb: 1\n' });
    expect(yaml.errors).toEqual([
      `bundle ${yaml.dir}: bundle load failed on ${join(yaml.dir, 'x', 'data.yaml')}: yaml: line 2: found character that cannot start any token`,
    ]);
    const root = bundleErrors({ 'data.yaml': '- 1\n' });
    expect(root.errors).toEqual([`bundle ${root.dir}: bundle load failed on /data.yaml: root value must be object`]);
    // A UTF-8 BOM is dropped before the JSON check.
    expect(loadPaths([tree({ 'x/data.yaml': '\ufeff{"a": 1}' })], { asBundle: true }).data).toEqual({ x: { a: 1 } });
  });

  it('.manifest: a Decode into bundle.Manifest — syntax errors, then type errors, then nothing after the value', () => {
    const cases: [string, string][] = [
      ['', 'EOF'],
      ['{"roots": ["a"],}', "invalid character '}' looking for beginning of object key string"],
      ['{"roots": "acs"}', 'json: cannot unmarshal string into Go struct field Manifest.roots of type []string'],
      ['["x"]', 'json: cannot unmarshal array into Go value of type bundle.Manifest'],
      [
        '{"rego_version": 1.5}',
        'json: cannot unmarshal number 1.5 into Go struct field Manifest.rego_version of type int',
      ],
      [
        '{"wasm": [{"entrypoint": "a/b", "module": 7}]}',
        'json: cannot unmarshal number into Go struct field WasmResolver.wasm.module of type string',
      ],
      [
        '{"metadata": []}',
        'json: cannot unmarshal array into Go struct field Manifest.metadata of type map[string]interface {}',
      ],
    ];
    for (const [manifest, message] of cases) {
      const { dir, errors } = bundleErrors({ '.manifest': manifest });
      expect(errors, manifest).toEqual([`bundle ${dir}: bundle load failed on manifest decode: ${message}`]);
    }
    // Keys match the JSON names ignoring case; what follows the value is never read.
    const d = tree({ '.manifest': '{"Roots": ["a"], "REVISION": "r7"} and more', 'a/p.rego': 'package a\n' });
    expect(loadPaths([d], { asBundle: true }).manifest).toMatchObject({ roots: ['a'], revision: 'r7' });
  });
});

describe('data and rules at the same path: OPA ast/conflicts.go CheckPathConflicts', () => {
  it('opa test compiles against the loaded data: a rule where data lies is a compile error at the rule', async () => {
    const d = tree({
      'p/data.json': '{"allow": true}',
      'p.rego': 'package p\n\nallow if input.x\n',
      'p_test.rego': 'package p_test\n\ntest_x if data.p.allow with input as {"x": true}\n',
    });
    await expect(runPolicyTests({ paths: [d] })).rejects.toThrow(
      `${join(d, 'p.rego')}:3:1: rego_compile_error: conflicting rule for data path p/allow found`,
    );
  }, 120_000);

  it('a rule below a number kept exact (a scalar, whatever its digits) conflicts too', async () => {
    const d = tree({
      'p/data.json': '{"n": 12345678901234567890}',
      'p.rego': 'package p\n\nn.x := 1\n',
      'p_test.rego': 'package p_test\n\ntest_x if data.p.n.x == 1\n',
    });
    await expect(runPolicyTests({ paths: [d] })).rejects.toThrow(
      `${join(d, 'p.rego')}:3:1: rego_compile_error: conflicting rule for data path p/n/x found`,
    );
  }, 120_000);
});

describe('a .tar.gz among the paths is a bundle', () => {
  it('its modules join, its data merges below its directory, its manifest is data.system.bundle.manifest', async () => {
    const { compileBundle } = await import('../../../src/rego/index.ts');
    const { bundle } = await compileBundle({
      sources: [{ file: 'b/q.rego', text: 'package b\n\nv := data.b.n\n' }],
      entrypoints: ['b/v'],
      data: { b: { n: 1 } },
      revision: 'r7',
    });
    const d = tree({ 'p.rego': 'package p\n' });
    mkdirSync(join(d, 'sub'));
    writeFileSync(join(d, 'sub', 'built.tar.gz'), bundle);
    const r = loadPaths([d]);
    expect(r.modules.map((m) => m.path)).toEqual([join(d, 'p.rego'), join(d, 'sub', 'built.tar.gz') + '/b/q.rego']);
    expect(r.data).toMatchObject({ sub: { b: { n: 1 }, system: { bundle: { manifest: { revision: 'r7' } } } } });
  }, 120_000);
});

describe('loadPaths in bundle mode', () => {
  it('only data.json/data.yaml are data; .manifest gives roots and revision', () => {
    const d = tree({
      '.manifest': JSON.stringify({ revision: 'r1', roots: ['acs'] }),
      'acs/p.rego': 'package acs.p\n',
      'acs/cfg/data.yaml': 'limit: 3\n',
      'acs/cfg/other.json': '{"ignored": true}',
    });
    const r = loadPaths([d], { asBundle: true });
    expect(r.data).toEqual({ acs: { cfg: { limit: 3 } } });
    expect(r.manifest).toMatchObject({ revision: 'r1', roots: ['acs'] });
    expect(r.modules.map((m) => m.relative)).toEqual(['acs/p.rego']);
  });

  it("refuses packages, data and overlapping roots outside the manifest's roots, with OPA's texts", () => {
    const pkg = tree({ '.manifest': '{"roots": ["acs"]}', 'x.rego': 'package other.p\n' });
    expect(loadErrors([pkg], { asBundle: true })).toEqual([
      `bundle ${pkg}: manifest roots [acs] do not permit 'package other.p' in module '${join(pkg, 'x.rego')}'`,
    ]);
    const data = tree({ '.manifest': '{"roots": ["acs/a"]}', 'acs/b/data.json': '{"x": 1}' });
    expect(loadErrors([data], { asBundle: true })).toEqual([
      `bundle ${data}: manifest roots [acs/a] do not permit data at path '/acs/b' (hint: check bundle directory structure)`,
    ]);
    const overlap = tree({ '.manifest': '{"roots": ["a", "a/b"]}' });
    expect(loadErrors([overlap], { asBundle: true })).toEqual([
      `bundle ${overlap}: manifest has overlapped roots: 'a' and 'a/b'`,
    ]);
  });

  it('two bundles merge their roots; two bundles owning everything overlap', () => {
    const a = tree({ '.manifest': '{"roots": ["a"]}', 'a/data.json': '{"x": 1}', 'a/p.rego': 'package a\n' });
    const b = tree({ '.manifest': '{"roots": ["b"]}', 'b/data.json': '{"y": 2}' });
    const r = loadPaths([a, b], { asBundle: true });
    expect(r.manifest?.roots).toEqual(['a', 'b']);
    expect(r.data).toEqual({ a: { x: 1 }, b: { y: 2 } });
    const c = tree({ 'p.rego': 'package c\n' });
    const e = tree({ 'q.rego': 'package e\n' });
    expect(loadErrors([c, e], { asBundle: true })).toEqual([
      "bundle merge failed: manifest has overlapped roots: '' and ''",
    ]);
  });
});

describe('through the CLI', () => {
  it('policy test finds fixtures in any .json/.yaml file mounted at its directory', { timeout: 300_000 }, async () => {
    const d = tree({
      'cfg/limits.yaml': 'limit: 3\n',
      'p.rego': 'package p\n\nallow if input.n < data.cfg.limit\n',
      'p_test.rego': 'package p_test\n\nimport data.p\n\ntest_small if p.allow with input as {"n": 1}\n',
      'vendor/broken.json': '{',
    });
    const report = await runPolicyTests({ paths: [d], ignore: ['vendor'] });
    expect(report.results.map((r) => [r.name, r.status])).toEqual([['data.p_test.test_small', 'pass']]);
    await expect(runPolicyTests({ paths: [d] })).rejects.toThrow(
      `1 error occurred during loading: ${join(d, 'vendor', 'broken.json')}: unexpected EOF`,
    );
  });

  it('policy build without -e builds the METADATA entrypoints, and says so when there are none', {
    timeout: 300_000,
  }, async () => {
    const d = tree({
      'p.rego': '# METADATA\n# entrypoint: true\npackage p\n\nallow if data.cfg.on\n',
      'cfg/x.yaml': 'on: true\n',
    });
    const out = join(d, 'bundle.tar.gz');
    const built = await runGuardian(['policy', 'build', d, '-o', out]);
    expect(built.code, built.stderr).toBe(0);
    expect(built.stderr).toContain('compiled 1 module for p (entrypoints from METADATA entrypoint: true)');
    // The bundle written into the input directory is not read back by the next build.
    expect((await runGuardian(['policy', 'build', d, '-o', out, '-q'])).code).toBe(0);
    const b = readBundle(new Uint8Array(readFileSync(out)));
    expect(b.manifest.wasm?.map((w) => w.entrypoint)).toEqual(['p']);
    // YAML 1.1: the key `on` is the boolean true, which JSON turns into the key "true".
    expect(b.data).toEqual({ cfg: { true: true } });

    const none = tree({ 'q.rego': 'package q\n\nallow := true\n' });
    expect(await runGuardian(['policy', 'build', none, '-o', join(none, 'b.tar.gz'), '-q'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'guardian: no entrypoints: pass -e pkg/rule or annotate a rule with METADATA entrypoint: true\n',
    });
  });

  it('policy build -b keeps the manifest roots and revision', { timeout: 300_000 }, async () => {
    const d = tree({
      '.manifest': JSON.stringify({ revision: 'from-manifest', roots: ['acs'] }),
      'acs/p.rego': 'package acs.p\n\nallow := data.acs.cfg.on\n',
      'acs/cfg/data.json': '{"on": true}',
    });
    const out = join(tree({}), 'b.tar.gz');
    const built = await runGuardian(['policy', 'build', '-b', d, '-e', 'acs/p/allow', '-o', out, '-q']);
    expect(built.code, built.stderr).toBe(0);
    const b = readBundle(new Uint8Array(readFileSync(out)));
    expect(b.manifest.roots).toEqual(['acs']);
    expect(b.manifest.revision).toBe('from-manifest');
    expect(b.data).toEqual({ acs: { cfg: { on: true } } });
  });
});

// OPA decodes data files with json.Number (util.UnmarshalJSON, UseNumber), so their numbers keep their digits;
// arithmetic on numbers outside the small-integer range is big.Float with 64-bit mantissas (topdown/arithmetic.go),
// which holds 12345678901234567890 + 1 exactly.
describe('data files keep their numbers as written', () => {
  const BIG = '12345678901234567890';
  const LONG = '0.1000000000000000055511151231257827';
  const files = (): Record<string, string> => ({
    'cfg/numbers.json': `{"n": ${BIG}, "x": ${LONG}, "small": 7, "list": [${BIG}, 1.50]}`,
    'cfg/more.yaml': `from_yaml: ${BIG}\n`,
    'p.rego': 'package p\n\nn := data.cfg.n\n\nnext := data.cfg.n + 1\n',
    'p_test.rego': [
      'package p_test',
      '',
      'import data.p',
      '',
      `test_big if data.cfg.n == ${BIG}`,
      '',
      `test_big_plus_one if p.next == 12345678901234567891`,
      '',
      `test_big_not_its_double if data.cfg.n != 12345678901234567168`,
      '',
      `test_long if data.cfg.x == ${LONG}`,
      '',
      `test_in_list if data.cfg.list[0] == ${BIG}`,
      '',
      'test_small if data.cfg.small + 1 == 8',
      '',
      // go-yaml v2 reads it as a uint64, which json.Marshal writes exactly.
      `test_yaml_uint64 if data.cfg.from_yaml == ${BIG}`,
      '',
    ].join('\n'),
  });

  it('loadPaths keeps the digits a double would change', async () => {
    const { DecimalText } = await import('../../../src/rego/json.ts');
    const r = loadPaths([tree(files())]);
    const cfg = r.data.cfg as Record<string, unknown>;
    expect(cfg.n).toBeInstanceOf(DecimalText);
    expect((cfg.n as InstanceType<typeof DecimalText>).text).toBe(BIG);
    expect((cfg.x as InstanceType<typeof DecimalText>).text).toBe(LONG);
    expect((cfg.from_yaml as InstanceType<typeof DecimalText>).text).toBe(BIG);
    expect(cfg.small).toBe(7);
  });

  it('through policy test', { timeout: 300_000 }, async () => {
    const report = await runPolicyTests({ paths: [tree(files())] });
    expect(report.results.map((r) => [r.name, r.status])).toEqual([
      ['data.p_test.test_big', 'pass'],
      ['data.p_test.test_big_plus_one', 'pass'],
      ['data.p_test.test_big_not_its_double', 'pass'],
      ['data.p_test.test_long', 'pass'],
      ['data.p_test.test_in_list', 'pass'],
      ['data.p_test.test_small', 'pass'],
      ['data.p_test.test_yaml_uint64', 'pass'],
    ]);
  });

  it('through policy eval -d and -i', { timeout: 300_000 }, async () => {
    const d = tree({ ...files(), 'input.json': `{"m": ${BIG}}` });
    const r = await runGuardian([
      'policy',
      'eval',
      '-d',
      d,
      '-i',
      join(d, 'input.json'),
      `[data.cfg.n, data.cfg.x, data.p.next, input.m == ${BIG}]`,
    ]);
    expect(r.code, r.stderr).toBe(0);
    const value = r.stdout.replace(/\s+/g, '');
    expect(value).toContain(`"value":[${BIG},${LONG},12345678901234567891,true]`);
  });

  it('from a built bundle: policy test -b, and the .tar.gz among the paths', { timeout: 300_000 }, async () => {
    const d = tree(files());
    const out = join(tree({}), 'bundle.tar.gz');
    const built = await runGuardian(['policy', 'build', d, '-e', 'p/n', '-o', out, '-q']);
    expect(built.code, built.stderr).toBe(0);
    const all = (r: { results: { status: string }[] }): string[] => [...new Set(r.results.map((x) => x.status))];
    const asBundle = await runPolicyTests({ paths: [out], asBundle: true });
    expect(asBundle.results).toHaveLength(7);
    expect(all(asBundle)).toEqual(['pass']);
    const amongPaths = await runPolicyTests({ paths: [out] });
    expect(amongPaths.results).toHaveLength(7);
    expect(all(amongPaths)).toEqual(['pass']);
    const cli = await runGuardian(['policy', 'test', '-b', out]);
    expect(cli.code, cli.stdout + cli.stderr).toBe(0);
  });

  it('through policy build: data.json keeps the digits', { timeout: 300_000 }, async () => {
    const d = tree(files());
    const out = join(d, 'bundle.tar.gz');
    const built = await runGuardian(['policy', 'build', d, '-e', 'p/n', '-o', out, '-q']);
    expect(built.code, built.stderr).toBe(0);
    const file = readBundle(new Uint8Array(readFileSync(out))).files.find((f) => f.path === '/data.json');
    expect(new TextDecoder().decode(file?.bytes)).toBe(
      `{"cfg":{"from_yaml":${BIG},"list":[${BIG},1.50],"n":${BIG},"small":7,"x":${LONG}}}`,
    );
  });
});
