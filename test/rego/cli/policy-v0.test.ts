// `--v0-compatible` on `guardian policy build|check|test` (spawns the real CLI): Rego v0 modules build,
// check and test as OPA reads them under the same flag; without it they are refused as v1.
import { describe, expect, it, beforeAll } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readBundle } from '../../../src/rego/bundle/index.ts';

const BIN = fileURLToPath(new URL('../../../bin/guardian.mjs', import.meta.url));

function guardian(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 300_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const V0_POLICY = `package legacy

default allow = false

allow {
	input.user == "alice"
}

deny[msg] {
	input.tool == "shell"
	msg := "no shell"
}
`;

const V0_TEST = `package legacy

test_alice_allowed {
	allow with input as {"user": "alice"}
}

test_shell_denied {
	deny["no shell"] with input as {"tool": "shell"}
}
`;

let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'policy-v0-'));
  mkdirSync(join(dir, 'src'));
  writeFileSync(join(dir, 'src', 'legacy.rego'), V0_POLICY);
  writeFileSync(join(dir, 'src', 'legacy_test.rego'), V0_TEST);
});

describe('guardian policy --v0-compatible', () => {
  it('build compiles v0 modules, eval runs them, and the manifest says rego_version 0', { timeout: 600_000 }, () => {
    const out = join(dir, 'v0.tar.gz');
    const refused = guardian(['policy', 'build', join(dir, 'src'), '-e', 'legacy/allow', '-o', out, '-q']);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain('`if` keyword is required before rule body');

    const r = guardian([
      'policy',
      'build',
      join(dir, 'src'),
      '-e',
      'legacy/allow',
      '-e',
      'legacy/deny',
      '-o',
      out,
      '-q',
      '--v0-compatible',
    ]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(readBundle(new Uint8Array(readFileSync(out))).manifest.rego_version).toBe(0);
    writeFileSync(join(dir, 'in.json'), JSON.stringify({ user: 'alice', tool: 'shell' }));
    const allow = guardian(['policy', 'eval', '-b', out, '-e', 'legacy/allow', '-i', join(dir, 'in.json')]);
    expect(allow.code).toBe(0);
    expect(JSON.parse(allow.stdout)).toEqual([{ result: true }]);
    const deny = guardian(['policy', 'eval', '-b', out, '-e', 'legacy/deny', '-i', join(dir, 'in.json')]);
    expect(JSON.parse(deny.stdout)).toEqual([{ result: ['no shell'] }]);
  });

  it('check and test accept the flag', { timeout: 600_000 }, () => {
    expect(guardian(['policy', 'check', join(dir, 'src')]).code).toBe(3);
    const check = guardian(['policy', 'check', join(dir, 'src'), '--v0-compatible']);
    expect(check.code).toBe(0);
    const test = guardian(['policy', 'test', join(dir, 'src'), '--v0-compatible']);
    expect(test.stdout).toBe('PASS: 2/2\n');
    expect(test.code).toBe(0);
  });
});
