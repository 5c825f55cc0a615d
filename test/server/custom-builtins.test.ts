// `guardian serve` with a deployment's custom builtins (docs/policy-authoring.md, "Custom builtins"), as real
// child processes over HTTP: the policy pool's workers run the module's implementation; a builtin that throws
// is a signed DENY evaluation_failed; a missing or malformed module, or a bundle calling a custom builtin the
// deployment does not supply, stops the start with a one-line error and its exit code.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcsClient } from '../../src/client/index.ts';
import { decodeBase64Strict } from '../../src/crypto/index.ts';
import { vouchBundle } from '../policy/fixtures/custom-builtin-bundle.ts';
import { checkedHttpTransport } from '../acs/fixtures/harness.ts';
import { ROOT, killAll, startGuardian, stopServe, type Serving } from '../store/fixtures/serve-process.ts';

const BIN = join(ROOT, 'bin/guardian.mjs');

// The decision's reasoning is whatever the deployment's builtin answers for the calling agent.
const POLICY = `package acs

decision := {"decision": "allow", "reasoning": custom.vouch(input.params.metadata.agent_id)}
`;

let dir: string;

function env(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const e: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: '', ...extra };
  delete e.GUARDIAN_HMAC_IKM;
  delete e.GUARDIAN_POLICY_BUILTINS;
  delete e.GUARDIAN_ADMIN_TOKEN;
  return { ...e, ...extra };
}

/** `serve` arguments (after the CLI's path) on the data dir `name`. */
function serveArgs(name: string, extra: string[] = []): string[] {
  return ['serve', '--port', '0', '--data-dir', join(dir, name), '--bundle', join(dir, 'vouch.tar.gz'), ...extra];
}

/** Runs `serve` expecting it to refuse to start: its exit code and stderr. */
function refusedStart(args: string[], e: NodeJS.ProcessEnv): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: dir, env: e });
  let stderr = '';
  let stdout = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  return new Promise((resolve) =>
    child.once('exit', (code) => {
      if (/listening on/.test(stdout)) child.kill('SIGTERM');
      resolve({ code, stderr });
    }),
  );
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'acs-serve-builtins-'));
  writeFileSync(join(dir, 'vouch.tar.gz'), await vouchBundle(POLICY));
  writeFileSync(
    join(dir, 'vouch.mjs'),
    `export default {
  'custom.vouch': (agent) => {
    if (agent === 'unreachable-agent') throw new Error('directory unreachable');
    return 'the directory vouches for ' + agent;
  },
};
`,
  );
  writeFileSync(join(dir, 'not-a-table.mjs'), 'export default 42;\n');
  writeFileSync(join(dir, 'not-a-function.mjs'), "export default { 'custom.vouch': 'yes' };\n");
}, 300_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('guardian serve with custom builtins (HTTP, child process)', () => {
  let serving: Serving | undefined;
  const children: ChildProcessWithoutNullStreams[] = [];

  beforeAll(async () => {
    // Two policy workers: each imports the module by path (functions do not cross a thread).
    serving = await startGuardian(
      serveArgs('data'),
      env({ GUARDIAN_POLICY_BUILTINS: 'vouch.mjs', GUARDIAN_POLICY_WORKERS: '2' }),
      dir,
      children,
    );
  }, 300_000);
  afterAll(async () => {
    if (serving) await stopServe(serving, 'SIGTERM');
    await killAll(children);
  });

  function client(agentId: string): AcsClient {
    const keyText = readFileSync(join(dir, 'data', 'hmac-ikm.key'), 'utf8').trim();
    return new AcsClient({ transport: checkedHttpTransport(serving!.url), ikm: decodeBase64Strict(keyText)!, agentId });
  }

  it('names the module and its builtins at start, and the policy decides with the builtin value', async () => {
    expect(serving!.stderr() + serving!.stdout()).toContain(
      `custom builtins custom.vouch from ${join(dir, 'vouch.mjs')}`,
    );
    for (const agent of ['ada', 'bob', 'carol']) {
      const c = client(agent);
      await c.hello({ methods_implemented: ['steps/userMessage'] });
      const out = await c.step('steps/userMessage', { content: [{ type: 'text', value: 'hi' }] });
      expect(out.failure).toBeUndefined();
      expect(out.result?.decision).toBe('allow');
      expect(out.result?.reasoning).toBe(`the directory vouches for ${agent}`);
    }
  });

  it('a builtin that throws is a signed DENY evaluation_failed (fail closed)', async () => {
    const c = client('unreachable-agent');
    await c.hello({ methods_implemented: ['steps/userMessage'] });
    const out = await c.step('steps/userMessage', { content: [{ type: 'text', value: 'hi' }] });
    expect(out.failure).toBeUndefined();
    expect(out.result?.decision).toBe('deny');
    expect(out.result?.reason_codes).toContain('evaluation_failed');
    expect(out.result?.reasoning).toMatch(/^Policy evaluation failed; denied \(fail closed\): /);
  });
});

describe('guardian serve refuses to start on a bad builtins configuration', () => {
  it('a missing module (--builtins): exit 2, one line naming it, no stack trace', async () => {
    const r = await refusedStart(serveArgs('d-missing', ['--builtins', 'nowhere.mjs']), env());
    expect(r.code).toBe(2);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toBe(
      `guardian: cannot start: cannot load builtins module nowhere.mjs: Cannot find module '${join(dir, 'nowhere.mjs')}'`,
    );
    expect(r.stderr).not.toMatch(/\n\s+at /);
  }, 300_000);

  it('a default export that is not a table, or an entry that is not a function: exit 2, one line', async () => {
    for (const [file, message] of [
      [
        'not-a-table.mjs',
        'guardian: cannot start: not-a-table.mjs: the default export must map builtin names to functions',
      ],
      ['not-a-function.mjs', 'guardian: cannot start: not-a-function.mjs: builtin custom.vouch is not a function'],
    ]) {
      const r = await refusedStart(serveArgs(`d-${file}`), env({ GUARDIAN_POLICY_BUILTINS: file }));
      expect(r.code).toBe(2);
      expect(r.stderr.trim()).toBe(message);
    }
  }, 300_000);

  it('a bundle calling a custom builtin the deployment does not supply is refused at load', async () => {
    const r = await refusedStart(serveArgs('d-unsupplied'), env());
    expect(r.code).toBe(1);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(r.stderr.trim().split('\n').at(-1)).toBe(
      "guardian: cannot start: bundle does not load: policy module calls builtins no implementation is loaded for: custom.vouch (a deployment's custom builtins come from its builtins module, docs/policy-authoring.md)",
    );
  }, 300_000);
});
