// Spawns the real CLI (`node bin/guardian.mjs policy …`).
import { describe, expect, it, beforeAll } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readBundle } from '../../../src/rego/bundle/index.ts';

const BIN = fileURLToPath(new URL('../../../bin/guardian.mjs', import.meta.url));

function guardian(
  args: string[],
  stdin?: string,
  cwd?: string,
): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], { input: stdin, encoding: 'utf8', cwd, timeout: 300_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const POLICY = `package acs.guardian

default allow := false

allow if {
  input.user == "alice"
  input.tool in data.acs.tools.allowed
}

greeting := sprintf("hello %s", [input.user])
`;

let dir: string;
let bundlePath: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'policy-cli-'));
  mkdirSync(join(dir, 'src', 'acs', 'tools'), { recursive: true });
  writeFileSync(join(dir, 'src', 'acs', 'guardian.rego'), POLICY);
  writeFileSync(join(dir, 'src', 'acs', 'tools', 'data.json'), JSON.stringify({ allowed: ['search'] }));
  bundlePath = join(dir, 'out.tar.gz');
});

describe('guardian policy', () => {
  it('build writes a bundle with manifest entrypoints, wasm, plan, data mounted at its directory', {
    timeout: 600_000,
  }, () => {
    const r = guardian([
      'policy',
      'build',
      join(dir, 'src'),
      '-e',
      'acs/guardian/allow',
      '-e',
      'acs/guardian/greeting',
      '-o',
      bundlePath,
    ]);
    expect(r.stderr).toMatch(/compiling 1 module/);
    expect(r.stderr).toMatch(/wrote .*out\.tar\.gz \(\d+ bytes, revision [0-9a-f]{64}\)/);
    expect(r.code).toBe(0);
    const b = readBundle(new Uint8Array(readFileSync(bundlePath)));
    expect(b.manifest.wasm?.map((w) => w.entrypoint)).toEqual(['acs/guardian/allow', 'acs/guardian/greeting']);
    expect(b.data).toEqual({ acs: { tools: { allowed: ['search'] } } });
    expect(b.sources.map((s) => s.path)).toEqual(['/acs/guardian.rego']);
    expect(b.wasm?.subarray(0, 4)).toEqual(new Uint8Array([0x00, 0x61, 0x73, 0x6d]));
  });

  it('build is reproducible (same inputs → same bytes) and honours --revision', { timeout: 600_000 }, () => {
    // Two builds inside this test (the toolchain itself may change between tests while it is developed).
    const first = join(dir, 'first.tar.gz');
    const second = join(dir, 'again.tar.gz');
    for (const out of [first, second]) {
      expect(guardian(['policy', 'build', join(dir, 'src'), '-e', 'acs/guardian/allow', '-o', out, '-q']).code).toBe(0);
    }
    expect(readFileSync(second).equals(readFileSync(first))).toBe(true);
    const named = join(dir, 'named.tar.gz');
    expect(
      guardian(['policy', 'build', join(dir, 'src'), '-e', 'acs/guardian/allow', '-o', named, '--revision', 'v7', '-q'])
        .code,
    ).toBe(0);
    expect(readBundle(new Uint8Array(readFileSync(named))).manifest.revision).toBe('v7');
    // opa build's spelling: -t wasm and -r give the same bundle; -O is accepted with a note; -t rego is refused
    const opaStyle = join(dir, 'opa-style.tar.gz');
    const o = guardian([
      'policy',
      'build',
      '-t',
      'wasm',
      '-O',
      '1',
      '-e',
      'acs/guardian/allow',
      '-r',
      'v7',
      '-o',
      opaStyle,
      join(dir, 'src'),
    ]);
    expect(o.code).toBe(0);
    expect(o.stderr).toMatch(/-O 1: OPA's partial-evaluation rewrite is not applied/);
    expect(readFileSync(opaStyle).equals(readFileSync(named))).toBe(true);
    const rego = guardian(['policy', 'build', '-t', 'rego', '-e', 'acs/guardian/allow', join(dir, 'src')]);
    expect(rego.code).toBe(2);
    expect(rego.stderr).toMatch(/-t rego: the Guardian builds Wasm bundles only/);
  });

  it('eval prints the result set for input from a file and from stdin', { timeout: 600_000 }, () => {
    const inputFile = join(dir, 'input.json');
    writeFileSync(inputFile, JSON.stringify({ user: 'alice', tool: 'search' }));
    const r1 = guardian(['policy', 'eval', '-b', bundlePath, '-e', 'acs/guardian/allow', '--input', inputFile]);
    expect(r1.code).toBe(0);
    expect(JSON.parse(r1.stdout)).toEqual([{ result: true }]);
    const r2 = guardian(
      ['policy', 'eval', '-b', bundlePath, '-e', 'acs/guardian/greeting', '--input', '-'],
      JSON.stringify({ user: 'bob' }),
    );
    expect(r2.code).toBe(0);
    expect(JSON.parse(r2.stdout)).toEqual([{ result: 'hello bob' }]);
    const r3 = guardian(
      ['policy', 'eval', '-b', bundlePath, '-e', 'acs/guardian/allow', '--input', '-'],
      JSON.stringify({ user: 'eve', tool: 'search' }),
    );
    expect(JSON.parse(r3.stdout)).toEqual([{ result: false }]);
  });

  it('eval refuses an unknown entrypoint', { timeout: 600_000 }, () => {
    const r = guardian(['policy', 'eval', '-b', bundlePath, '-e', 'acs/guardian/nope']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/entrypoint acs\/guardian\/nope not in bundle/);
  });

  it('inspect shows manifest, entrypoints and builtins', { timeout: 600_000 }, () => {
    const r = guardian(['policy', 'inspect', '-b', bundlePath, '--json']);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as {
      entrypoints: string[];
      builtins: string[];
      manifest: { revision: string };
      files: { path: string }[];
    };
    expect(report.entrypoints).toEqual(['acs/guardian/allow', 'acs/guardian/greeting']);
    expect(report.builtins).toContain('sprintf');
    expect(report.builtins).toContain('internal.member_2');
    expect(report.manifest.revision).toMatch(/^[0-9a-f]{64}$/);
    expect(report.files.map((f) => f.path)).toContain('/policy.wasm');
    const text = guardian(['policy', 'inspect', '-b', bundlePath]);
    expect(text.stdout).toMatch(/entrypoints: acs\/guardian\/allow, acs\/guardian\/greeting/);
  });

  it('compile errors print file:row:col: code: message and exit 3', { timeout: 600_000 }, () => {
    const bad = join(dir, 'bad');
    mkdirSync(bad, { recursive: true });
    writeFileSync(join(bad, 'p.rego'), 'package p\n\nallow if {\n  x := [1,\n}\n');
    const r = guardian(['policy', 'build', bad, '-e', 'p/allow', '-o', join(dir, 'bad.tar.gz')]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/^p\.rego:5:1: rego_parse_error: /m);
    writeFileSync(join(bad, 'p.rego'), 'package p\n\nallow if {\n  y == 1\n}\n');
    const r2 = guardian(['policy', 'build', bad, '-e', 'p/allow', '-o', join(dir, 'bad.tar.gz')]);
    expect(r2.code).toBe(3);
    expect(r2.stderr).toMatch(/^p\.rego:4:\d+: rego_unsafe_var_error: var y is unsafe/m);
  });

  it('usage errors exit 2; every command has --help', { timeout: 600_000 }, () => {
    expect(guardian(['policy', 'build', join(dir, 'src')]).code).toBe(2);
    for (const sub of ['build', 'eval', 'inspect']) {
      const h = guardian(['policy', sub, '--help']);
      expect(h.code).toBe(0);
      expect(h.stdout).toMatch(new RegExp(`Usage: guardian policy ${sub}`));
    }
  });
});
