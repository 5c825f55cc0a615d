// The operations metrics of a served Guardian with its bundle lifecycle, scraped from GET /metrics over real HTTP
// and parsed as Prometheus text: store group commits (transaction time and batch size per writer), replay jobs
// started and finished through the admin API, shadow evaluations and differences of a candidate bundle, and the
// active bundle (revision and SHA-256) as an info metric. PGlite in a temporary data directory, real bundles.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcsClient } from '../../src/client/index.ts';
import { openGuardianRuntime, type GuardianRuntime } from '../../src/server/app.ts';
import { startHttpServer, type RunningHttpServer } from '../../src/server/http.ts';
import { createLogger } from '../../src/telemetry/index.ts';
import { expectValidAnswer } from '../acs/fixtures/harness.ts';
import { constantBundle } from '../lifecycle/fixtures.ts';
import { eventually } from './receivers.ts';
import { parsePrometheus } from './prometheus-text.ts';

const IKM = Buffer.from(Array.from({ length: 32 }, (_, i) => (i * 7) & 255));
const TOKEN = 'om-admin-token-5566';
const auth = { authorization: `Bearer ${TOKEN}`, 'x-guardian-actor': 'ops' };

describe('operations metrics at /metrics', () => {
  let dir: string;
  let runtime: GuardianRuntime;
  let server: RunningHttpServer;
  let base: string;
  let client: AcsClient;
  const scrape = async (): Promise<Map<string, number>> => {
    const res = await fetch(`${base}/metrics`);
    expect(res.status).toBe(200);
    return parsePrometheus(await res.text());
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'acs-ops-metrics-'));
    writeFileSync(join(dir, 'v1.tar.gz'), await constantBundle('om-1'));
    runtime = await openGuardianRuntime({
      dataDir: join(dir, 'data'),
      bundlePath: join(dir, 'v1.tar.gz'),
      logger: createLogger({ level: 'silent' }),
      env: { GUARDIAN_HMAC_IKM: IKM.toString('base64'), GUARDIAN_ADMIN_TOKEN: TOKEN, GUARDIAN_REPLICA_ID: 'om' },
    });
    server = await startHttpServer(runtime.guardian, {
      port: 0,
      admin: runtime.admin!,
      ...(runtime.telemetry.metricsApp ? { metrics: runtime.telemetry.metricsApp } : {}),
    });
    base = server.url.replace(/\/acs$/, '');
    client = new AcsClient({
      ikm: IKM,
      agentId: 'om-agent',
      transport: async (message) => {
        const res = await fetch(server.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: message,
        });
        const text = await res.text();
        expectValidAnswer(JSON.parse(text));
        return text;
      },
    });
    await client.hello({ methods_implemented: ['steps/sessionStart', 'steps/toolCallRequest'] });
  }, 120_000);

  afterAll(async () => {
    await server?.close();
    await runtime?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('store commits: transaction time and batch size per writer, one observation per committed batch', async () => {
    const before = await scrape();
    const steps = 3;
    expect((await client.step('steps/sessionStart', {})).decision).toBe('allow');
    for (let i = 1; i < steps; i++)
      expect((await client.step('steps/toolCallRequest', { tool: { name: 'ls' }, arguments: {} })).decision).toBe(
        'allow',
      );
    const m = await scrape();
    const grew = (key: string) => (m.get(key) ?? 0) - (before.get(key) ?? 0);
    // One client, one step at a time: every step is its own batch of one.
    expect(grew('acs_guardian_store_commit_duration_seconds_count{kind="step"}')).toBe(steps);
    expect(grew('acs_guardian_store_commit_batch_size_count{kind="step"}')).toBe(steps);
    expect(grew('acs_guardian_store_commit_batch_size_sum{kind="step"}')).toBe(steps);
    expect(m.get('acs_guardian_store_commit_batch_size_bucket{kind="step",le="1"}')).toBe(
      m.get('acs_guardian_store_commit_batch_size_count{kind="step"}'),
    );
    expect(grew('acs_guardian_store_commit_duration_seconds_sum{kind="step"}')).toBeGreaterThan(0);
    // Concurrent steps of different sessions share batches: fewer batches than steps, the sizes add up.
    const others = Array.from({ length: 8 }, (_, i) => {
      const c = new AcsClient({
        ikm: IKM,
        agentId: `om-agent-${i}`,
        transport: async (message) => {
          const res = await fetch(server.url, { method: 'POST', body: message });
          const text = await res.text();
          expectValidAnswer(JSON.parse(text));
          return text;
        },
      });
      return c;
    });
    await Promise.all(others.map((c) => c.hello({ methods_implemented: ['steps/sessionStart'] })));
    const mid = await scrape();
    await Promise.all(others.map(async (c) => expect((await c.step('steps/sessionStart', {})).decision).toBe('allow')));
    const after = await scrape();
    const delta = (key: string) => (after.get(key) ?? 0) - (mid.get(key) ?? 0);
    expect(delta('acs_guardian_store_commit_batch_size_sum{kind="step"}')).toBe(others.length);
    expect(delta('acs_guardian_store_commit_batch_size_count{kind="step"}')).toBeLessThanOrEqual(others.length);
  });

  it('the active bundle as an info metric: revision and SHA-256 from the registry', async () => {
    const m = await scrape();
    const sha256 = runtime.lifecycle!.engine.current.sha256;
    expect(sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(m.get(`acs_guardian_policy_info{revision="om-1",sha256="${sha256}"}`)).toBe(1);
  });

  it('shadow: evaluations and differences of the candidate, by its revision', async () => {
    const pushed = await fetch(`${base}/admin/bundles`, {
      method: 'POST',
      headers: auth,
      body: Buffer.from(await constantBundle('om-2', { decision: { decision: 'deny', reasoning: 'candidate' } })),
    });
    expect(pushed.status).toBe(201);
    expect((await fetch(`${base}/admin/shadow/om-2`, { method: 'PUT', headers: auth })).status).toBe(200);
    const steps = 4;
    for (let i = 0; i < steps; i++)
      expect((await client.step('steps/toolCallRequest', { tool: { name: 'ls' }, arguments: {} })).decision).toBe(
        'allow',
      );
    await runtime.lifecycle!.node.flushShadow();
    await eventually(() => runtime.lifecycle!.node.local().shadow.evaluated === steps);
    const m = await scrape();
    expect(m.get('acs_guardian_shadow_evaluations_total{revision="om-2"}')).toBe(steps);
    // The candidate denies what the active bundle allows: every evaluation differs.
    expect(m.get('acs_guardian_shadow_differences_total{revision="om-2"}')).toBe(steps);
    expect(m.get('acs_guardian_shadow_errors_total{revision="om-2"}')).toBe(0);
    expect(
      m.get('acs_guardian_policy_info{revision="om-1",sha256="' + runtime.lifecycle!.engine.current.sha256 + '"}'),
    ).toBe(1);
  });

  it('replay: jobs started and finished (by outcome) through the admin API', async () => {
    const before = await scrape();
    const start = async (against: string): Promise<string> => {
      const res = await fetch(`${base}/admin/replay`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ against, session: client.sessionId }),
      });
      expect(res.status).toBe(202);
      return ((await res.json()) as { id: string }).id;
    };
    const finished = async (id: string): Promise<string> => {
      for (let i = 0; i < 600; i++) {
        const res = await fetch(`${base}/admin/replay/${id}`, { headers: auth });
        expect(res.status).toBe(200);
        const { status } = (await res.json()) as { status: string };
        if (status !== 'running') return status;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`replay job ${id} still running`);
    };
    expect(await finished(await start('om-2'))).toBe('done');
    expect(await finished(await start('no-such-revision'))).toBe('failed');
    const m = await scrape();
    const grew = (key: string) => (m.get(key) ?? 0) - (before.get(key) ?? 0);
    expect(grew('acs_guardian_replay_jobs_started_total')).toBe(2);
    expect(grew('acs_guardian_replay_jobs_finished_total{status="done"}')).toBe(1);
    expect(grew('acs_guardian_replay_jobs_finished_total{status="failed"}')).toBe(1);
  });
});
