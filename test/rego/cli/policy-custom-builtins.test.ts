// `--capabilities FILE` on `guardian policy build|check|eval` and `--builtins module.mjs` on eval (spawns the
// real CLI): a custom builtin declared in OPA's capabilities JSON builds, and eval runs it with the module's
// JavaScript implementation in opa-wasm.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { capabilitiesDocument } from '../../../src/rego/builtins/capabilities.ts';

const BIN = fileURLToPath(new URL('../../../bin/guardian.mjs', import.meta.url));

function guardian(args: string[], cwd: string): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd, encoding: 'utf8', timeout: 300_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const POLICY = `package authz

default allow := false

allow if custom.is_member(input.user, "admins")
`;

let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'guardian-custom-builtins-'));
  writeFileSync(join(dir, 'authz.rego'), POLICY);
  const doc = capabilitiesDocument();
  const isMember = {
    name: 'custom.is_member',
    decl: { type: 'function', args: [{ type: 'string' }, { type: 'string' }], result: { type: 'boolean' } },
  };
  writeFileSync(join(dir, 'caps.json'), JSON.stringify({ ...doc, builtins: [...doc.builtins, isMember] }));
  writeFileSync(join(dir, 'no-custom.json'), JSON.stringify(doc));
  writeFileSync(join(dir, 'bad-caps.json'), JSON.stringify({ builtins: [{ name: 'x' }] }));
  writeFileSync(
    join(dir, 'builtins.mjs'),
    `const groups = { admins: ['ada'] };
export default { 'custom.is_member': (user, group) => (groups[group] ?? []).includes(user) };
`,
  );
  writeFileSync(
    join(dir, 'throwing.mjs'),
    `export default { 'custom.is_member': () => { throw new Error('directory unreachable'); } };\n`,
  );
  writeFileSync(join(dir, 'not-a-table.mjs'), 'export default 42;\n');
  writeFileSync(join(dir, 'ada.json'), '{"user": "ada"}');
  writeFileSync(join(dir, 'bob.json'), '{"user": "bob"}');
  const r = guardian(
    ['policy', 'build', 'authz.rego', '-e', 'authz/allow', '-o', 'b.tar.gz', '--capabilities', 'caps.json', '-q'],
    dir,
  );
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
}, 300_000);

describe('guardian policy … --capabilities / --builtins', () => {
  it('eval --builtins runs the custom builtin: ada is allowed, bob is not', () => {
    for (const [input, allowed] of [
      ['ada.json', true],
      ['bob.json', false],
    ] as const) {
      const r = guardian(
        ['policy', 'eval', '-b', 'b.tar.gz', '-e', 'authz/allow', '-i', input, '--builtins', 'builtins.mjs'],
        dir,
      );
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual([{ result: allowed }]);
    }
  });

  it('eval without the implementation refuses the bundle before evaluating (exit 2)', () => {
    const r = guardian(['policy', 'eval', '-b', 'b.tar.gz', '-e', 'authz/allow', '-i', 'ada.json'], dir);
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toBe(
      'guardian: b.tar.gz: no implementation of builtin custom.is_member (custom builtins come from --builtins module.mjs)',
    );
  });

  it('a builtin that throws fails the evaluation with its message (exit 1)', () => {
    const r = guardian(
      ['policy', 'eval', '-b', 'b.tar.gz', '-e', 'authz/allow', '-i', 'ada.json', '--builtins', 'throwing.mjs'],
      dir,
    );
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe('guardian: evaluation failed: directory unreachable');
  });

  it('a builtins module whose default export is not a table is a usage error', () => {
    const r = guardian(['policy', 'eval', '-b', 'b.tar.gz', '-e', 'authz/allow', '--builtins', 'not-a-table.mjs'], dir);
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toBe('guardian: not-a-table.mjs: the default export must map builtin names to functions');
  });

  it('eval --capabilities refuses a bundle calling builtins outside them (exit 3)', () => {
    const r = guardian(
      ['policy', 'eval', '-b', 'b.tar.gz', '-e', 'authz/allow', '--capabilities', 'no-custom.json'],
      dir,
    );
    expect(r.code).toBe(3);
    expect(r.stderr.trim()).toBe(
      'guardian: b.tar.gz: the policy calls builtins outside no-custom.json: custom.is_member',
    );
  });

  it('eval --capabilities names net.cidr_contains_matches, not the host builtin the planner lowers it to', () => {
    writeFileSync(join(dir, 'nets.rego'), 'package nets\n\nm := net.cidr_contains_matches(input.a, input.b)\n');
    writeFileSync(join(dir, 'nets.json'), '{"a": {"x": "10.0.0.0/8"}, "b": ["10.1.1.1", "11.0.0.1"]}');
    const doc = capabilitiesDocument();
    writeFileSync(
      join(dir, 'no-cidr.json'),
      JSON.stringify({ ...doc, builtins: doc.builtins.filter((b) => b.name !== 'net.cidr_contains_matches') }),
    );
    const build = guardian(['policy', 'build', 'nets.rego', '-e', 'nets/m', '-o', 'nets.tar.gz', '-q'], dir);
    expect(build.stderr).toBe('');
    expect(build.code).toBe(0);
    const ok = guardian(
      ['policy', 'eval', '-b', 'nets.tar.gz', '-e', 'nets/m', '-i', 'nets.json', '--capabilities', 'no-custom.json'],
      dir,
    );
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toEqual([{ result: [['x', 0]] }]);
    const outside = guardian(
      ['policy', 'eval', '-b', 'nets.tar.gz', '-e', 'nets/m', '-i', 'nets.json', '--capabilities', 'no-cidr.json'],
      dir,
    );
    expect(outside.code).toBe(3);
    expect(outside.stderr.trim()).toBe(
      'guardian: nets.tar.gz: the policy calls builtins outside no-cidr.json: net.cidr_contains_matches',
    );
  });

  it("build and check without the declaration report OPA's undefined function (exit 3)", () => {
    const build = guardian(['policy', 'build', 'authz.rego', '-e', 'authz/allow', '-o', 'x.tar.gz', '-q'], dir);
    expect(build.code).toBe(3);
    expect(build.stderr).toContain('authz.rego:5:10: rego_type_error: undefined function custom.is_member');
    const check = guardian(['policy', 'check', 'authz.rego', '--capabilities', 'no-custom.json'], dir);
    expect(check.code).toBe(3);
    expect(check.stdout).toContain('authz.rego:5:10: rego_type_error: undefined function custom.is_member');
    const declared = guardian(['policy', 'check', 'authz.rego', '--capabilities', 'caps.json'], dir);
    expect(declared.code).toBe(0);
  });

  it('an unusable capabilities file is a usage error naming the entry (exit 2)', () => {
    const r = guardian(
      ['policy', 'build', 'authz.rego', '-e', 'authz/allow', '-o', 'x.tar.gz', '--capabilities', 'bad-caps.json'],
      dir,
    );
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toBe(
      'guardian: bad-caps.json: capabilities: builtins[0] (x).decl: expected a function type',
    );
  });
});
