// `guardian serve` over HTTP as a real child process: ephemeral port, dev HMAC key generated once into the data
// dir (its location and fingerprint printed, never the key), a signed decision answered over POST /acs.
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcsClient } from '../../src/client/index.ts';
import { decodeBase64Strict } from '../../src/crypto/index.ts';
import { buildDecisionModule } from '../acs/fixtures/decision-module.ts';
import { checkedHttpTransport } from '../acs/fixtures/harness.ts';
import { killAll, startGuardian, stopServe, type Serving } from '../store/fixtures/serve-process.ts';

let dir: string;
let serving: Serving | undefined;
const children: ChildProcessWithoutNullStreams[] = [];
let url = '';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'acs-serve-'));
  writeFileSync(
    join(dir, 'policy.wasm'),
    await buildDecisionModule({ constant: { decision: 'allow', reasoning: 'cli fixture' } }),
  );
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: '', GUARDIAN_ADMIN_TOKEN: 'serve-admin-token' };
  delete env.GUARDIAN_HMAC_IKM;
  // Start-up (tsx transform of the CLI, PGlite initdb) takes tens of seconds on a loaded 2-core machine.
  serving = await startGuardian(
    ['serve', '--port', '0', '--data-dir', join(dir, 'data'), '--bundle', join(dir, 'policy.wasm')],
    env,
    dir,
    children,
  );
  url = serving.url;
}, 300_000);
afterAll(async () => {
  if (serving) await stopServe(serving, 'SIGTERM');
  await killAll(children);
  rmSync(dir, { recursive: true, force: true });
});

describe('guardian serve (HTTP, child process)', () => {
  it('prints where it listens and the generated dev key location, and answers signed decisions with the dev key', async () => {
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/acs$/);
    const keyPath = join(dir, 'data', 'hmac-ikm.key');
    const stderr = serving!.stderr();
    expect(stderr).toContain(keyPath);
    const keyText = readFileSync(keyPath, 'utf8').trim();
    expect(stderr + serving!.stdout()).not.toContain(keyText);
    const c = new AcsClient({
      transport: checkedHttpTransport(url),
      ikm: decodeBase64Strict(keyText)!,
      agentId: 'cli-agent',
    });
    await c.hello({ methods_implemented: ['steps/userMessage'] });
    const out = await c.step('steps/userMessage', { content: [{ type: 'text', value: 'hi' }] });
    expect(out.failure).toBeUndefined();
    expect(out.result?.reasoning).toBe('cli fixture');
    const health = await fetch(url.replace('/acs', '/healthz'));
    expect(health.status).toBe(200);
    expect((await fetch(url.replace('/acs', '/readyz'))).status).toBe(200);
  });

  it('mounts the admin API, with replay beside it, under /admin behind the token', async () => {
    const admin = url.replace('/acs', '/admin');
    const auth = { authorization: 'Bearer serve-admin-token' };
    expect((await fetch(`${admin}/status`)).status).toBe(401);
    const status = await fetch(`${admin}/status`, { headers: auth });
    expect(status.status).toBe(200);
    expect(((await status.json()) as { replicas: unknown[] }).replicas).toHaveLength(1);
    const replay = await fetch(`${admin}/replay`, { headers: auth });
    expect(replay.status).toBe(200);
    expect(await replay.json()).toEqual({ jobs: [] });
  });

  it('on SIGTERM names each shutdown stage as it starts, then stops with exit code 0', async () => {
    const child = serving!.child;
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    // Log lines are pino JSON (src/telemetry/logging): one object per line, the text in `msg`.
    const messages = serving!
      .stderr()
      .split('\n')
      .filter((l) => l.startsWith('{"level"'))
      .map((l) => (JSON.parse(l) as { msg: string }).msg);
    const stages = messages.filter((m) => m.startsWith('guardian: SIGTERM: ') || m === 'guardian: stopped');
    expect(stages).toEqual([
      'guardian: SIGTERM: closing the HTTP listener',
      'guardian: SIGTERM: stopping the policy lifecycle',
      'guardian: SIGTERM: finishing pending commits and checkpoints, closing the store',
      'guardian: SIGTERM: exporting the last spans and OCSF events',
      'guardian: SIGTERM: closing the key registry',
      'guardian: stopped',
    ]);
  });
});
