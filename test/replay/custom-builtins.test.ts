// A deployment's custom builtins (docs/policy-authoring.md, "Custom builtins") in the live Guardian and in
// replay. The runtime `guardian serve` opens (openGuardianRuntime, real HTTP, the SDK client) records steps
// under a bundle that calls `custom.vouch`: a builtin that throws is a signed DENY evaluation_failed whose
// reasoning names the builtin in OPA's words, without what the thrown error must not show. Replay then
// evaluates that bundle with the same module: through the admin API of that runtime, and through
// `guardian replay` (--builtins or GUARDIAN_POLICY_BUILTINS, in process and in worker threads); without the
// module it stops with an error naming the builtin.
import { serve, type ServerType } from '@hono/node-server';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { AcsClient, httpTransport } from '../../src/client/index.ts';
import { vouchBundle } from '../policy/fixtures/custom-builtin-bundle.ts';
import { openGuardianRuntime, type GuardianRuntime } from '../../src/server/app.ts';
import { createHttpApp } from '../../src/server/http.ts';
import { expectValidAnswer } from '../acs/fixtures/harness.ts';

const IKM = Buffer.from(Array.from({ length: 32 }, (_, i) => (i * 7 + 1) & 255));
const TOKEN = 'cb-admin-token-7781';
const REVISION = 'vouch-1';

const POLICY = `package acs

decision := {"decision": "allow", "reasoning": custom.vouch(input.params.metadata.agent_id)}
`;

// The directory answers for most agents; for two it fails, once with credentials and a stack in its error.
const VOUCH = `export default {
  'custom.vouch': (agent) => {
    if (agent === 'unreachable-agent') throw new Error('directory unreachable');
    if (agent === 'leaky-agent') {
      const e = new Error('GET https://svc:hunter2@dir.internal/v1 failed (token=abc123)\\n    at lookup (/srv/dir.mjs:3:9)');
      throw e;
    }
    return 'the directory vouches for ' + agent;
  },
};
`;
// A later version of the module: the directory is down for everyone.
const VOUCH_DOWN = `export default { 'custom.vouch': () => { throw new Error('directory down'); } };\n`;

let dir: string;
let data: string;
let runtime: GuardianRuntime | undefined;
let server: ServerType | undefined;
let base = '';
const answers = new Map<string, { decision?: string; reasoning?: string; reason_codes?: string[] }>();

function client(agentId: string): AcsClient {
  const transport = httpTransport(`${base}/acs`);
  return new AcsClient({
    transport: async (m) => {
      const text = await transport(m);
      expectValidAnswer(JSON.parse(text));
      return text;
    },
    ikm: IKM,
    agentId,
  });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'replay-builtins-'));
  data = join(dir, 'data');
  writeFileSync(join(dir, 'vouch.tar.gz'), await vouchBundle(POLICY, REVISION));
  writeFileSync(join(dir, 'vouch.mjs'), VOUCH);
  writeFileSync(join(dir, 'vouch-down.mjs'), VOUCH_DOWN);

  runtime = await openGuardianRuntime({
    dataDir: data,
    bundlePath: join(dir, 'vouch.tar.gz'),
    cwd: dir,
    env: {
      GUARDIAN_HMAC_IKM: IKM.toString('base64'),
      GUARDIAN_ADMIN_TOKEN: TOKEN,
      GUARDIAN_POLICY_BUILTINS: 'vouch.mjs',
      GUARDIAN_LOG_LEVEL: 'silent',
    },
  });
  const app = createHttpApp(runtime.guardian, { admin: runtime.admin! });
  server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s));
  });
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  for (const agent of ['ada', 'bob', 'unreachable-agent', 'leaky-agent']) {
    const c = client(agent);
    await c.hello({ methods_implemented: ['steps/userMessage'] });
    const out = await c.step('steps/userMessage', { content: [{ type: 'text', value: 'hi' }] });
    expect(out.failure).toBeUndefined();
    answers.set(agent, out.result ?? {});
  }
}, 300_000);

afterAll(async () => {
  if (server) await new Promise((r) => server!.close(r));
  await runtime?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('a custom builtin that throws (live Guardian)', () => {
  it('the policy decides with the builtin value', () => {
    expect(answers.get('ada')).toMatchObject({ decision: 'allow', reasoning: 'the directory vouches for ada' });
  });

  it("the fail-closed DENY's reasoning names the builtin with OPA's error text", () => {
    const out = answers.get('unreachable-agent')!;
    expect(out.decision).toBe('deny');
    expect(out.reason_codes).toContain('evaluation_failed');
    expect(out.reasoning).toBe(
      'Policy evaluation failed; denied (fail closed): eval_builtin_error: custom.vouch: directory unreachable',
    );
  });

  it('keeps the first line of what was thrown, with credentials masked: no secret, no stack trace', () => {
    const out = answers.get('leaky-agent')!;
    expect(out.decision).toBe('deny');
    expect(out.reasoning).toBe(
      'Policy evaluation failed; denied (fail closed): eval_builtin_error: custom.vouch: GET https://[redacted]@dir.internal/v1 failed (token=[redacted])',
    );
    expect(out.reasoning).not.toMatch(/hunter2|abc123|\n|dir\.mjs/);
  });
});

describe('replay with the deployment builtins', () => {
  async function job(against: string): Promise<Record<string, unknown>> {
    const auth = { authorization: `Bearer ${TOKEN}` };
    const res = await fetch(`${base}/admin/replay`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ against }),
    });
    expect(res.status).toBe(202);
    const { id } = (await res.json()) as { id: string };
    for (let i = 0; i < 600; i++) {
      const status = (await (await fetch(`${base}/admin/replay/${id}`, { headers: auth })).json()) as Record<
        string,
        unknown
      >;
      if (status.status !== 'running') return status;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`replay job ${id} still running`);
  }

  it("the admin API's jobs evaluate with the module serve loaded: every decision reproduced", async () => {
    for (const against of ['recorded', REVISION]) {
      const done = await job(against);
      expect(done.error).toBeNull();
      expect(done.status).toBe('done');
      expect(done.summary).toMatchObject({ compared: 4, changed: 0 });
    }
  }, 120_000);

  describe('guardian replay (CLI)', () => {
    beforeAll(async () => {
      // The CLI opens the PGlite data directory itself.
      if (server) await new Promise((r) => server!.close(r));
      server = undefined;
      await runtime?.close();
      runtime = undefined;
    }, 120_000);

    async function replay(
      args: string[],
      env: Record<string, string> = {},
    ): Promise<{ code: number; stderr: string; report?: { summary: Record<string, unknown> } }> {
      const saved = { exitCode: process.exitCode, builtins: process.env.GUARDIAN_POLICY_BUILTINS, cwd: process.cwd() };
      const out = join(dir, `report-${Math.random().toString(36).slice(2)}.json`);
      let stderr = '';
      const write = process.stderr.write.bind(process.stderr);
      process.stderr.write = ((chunk: string | Uint8Array) => {
        stderr += chunk.toString();
        return true;
      }) as typeof process.stderr.write;
      if (env.GUARDIAN_POLICY_BUILTINS !== undefined)
        process.env.GUARDIAN_POLICY_BUILTINS = env.GUARDIAN_POLICY_BUILTINS;
      else delete process.env.GUARDIAN_POLICY_BUILTINS;
      process.chdir(dir);
      try {
        const code = await main([
          'node',
          'guardian',
          'replay',
          '--data-dir',
          data,
          '--no-progress',
          '--format',
          'json',
          '--out',
          out,
          ...args,
        ]);
        let report: { summary: Record<string, unknown> } | undefined;
        try {
          report = JSON.parse(readFileSync(out, 'utf8')) as { summary: Record<string, unknown> };
        } catch {
          report = undefined;
        }
        return { code, stderr, ...(report ? { report } : {}) };
      } finally {
        process.stderr.write = write;
        process.chdir(saved.cwd);
        process.exitCode = saved.exitCode;
        if (saved.builtins === undefined) delete process.env.GUARDIAN_POLICY_BUILTINS;
        else process.env.GUARDIAN_POLICY_BUILTINS = saved.builtins;
      }
    }

    it('--builtins: the recorded decisions (the two DENYs included) are reproduced, in process and in workers', async () => {
      for (const workers of ['0', '2']) {
        const r = await replay([
          '--against',
          'recorded',
          '--fail-on-diff',
          '--builtins',
          'vouch.mjs',
          '--workers',
          workers,
        ]);
        expect(r.code).toBe(0);
        expect(r.report?.summary).toMatchObject({ compared: 4, changed: 0, determinismCheck: true });
      }
    }, 180_000);

    it('GUARDIAN_POLICY_BUILTINS as serve reads it; --builtins wins over it', async () => {
      const env = await replay(['--against', REVISION, '--fail-on-diff'], { GUARDIAN_POLICY_BUILTINS: 'vouch.mjs' });
      expect(env.code).toBe(0);
      expect(env.report?.summary).toMatchObject({ compared: 4, changed: 0 });
      // The module's later version: the two ALLOWs become DENYs.
      const down = await replay(['--against', REVISION, '--builtins', 'vouch-down.mjs', '--workers', '2'], {
        GUARDIAN_POLICY_BUILTINS: 'vouch.mjs',
      });
      expect(down.code).toBe(0);
      // Every reasoning changes; the two ALLOWs turn into DENYs.
      expect(down.report?.summary).toMatchObject({ compared: 4, changed: 4 });
      expect(down.report?.summary.transitions).toMatchObject({ 'allow→deny': 2 });
    }, 180_000);

    it('without the module: exit 2 and a message naming the builtin and where replay takes the module from', async () => {
      for (const against of [REVISION, 'recorded']) {
        const r = await replay(['--against', against]);
        expect(r.code).toBe(2);
        expect(r.stderr).toContain(
          "policy bundle does not load: it calls custom builtins and no builtins module is loaded: custom.vouch (replay takes the deployment's builtins module as serve does: --builtins MODULE or GUARDIAN_POLICY_BUILTINS)",
        );
        expect(r.stderr).not.toMatch(/\n\s+at /);
      }
    }, 120_000);

    it('a module that does not load, or does not supply the builtin: exit 2, one line', async () => {
      const missing = await replay(['--against', REVISION, '--builtins', 'nowhere.mjs']);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toContain('cannot load builtins module nowhere.mjs: Cannot find module');
      expect(missing.stderr).toContain(join(dir, 'nowhere.mjs'));
      writeFileSync(join(dir, 'other.mjs'), "export default { 'custom.other': () => 1 };\n");
      const other = await replay(['--against', REVISION, '--builtins', 'other.mjs']);
      expect(other.code).toBe(2);
      expect(other.stderr).toContain(
        `it calls custom builtins ${join(dir, 'other.mjs')} does not supply: custom.vouch`,
      );
    }, 120_000);
  });
});
