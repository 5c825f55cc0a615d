// The admin sub-app: standalone through app.request(), and once over real HTTP (@hono/node-server).
import { serve, type ServerType } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createReplayAdminRoutes, resolveReplayPolicy, runReplay } from '../../src/replay/index.ts';
import { openStore } from '../../src/store/index.ts';
import type { DurableStore } from '../../src/store/types.ts';
import { recordConstantHistory, storeSnapshot } from './fixtures.ts';

let store: DurableStore;
let history: { sessions: string[]; steps: number };
beforeAll(async () => {
  store = await openStore({ inMemory: true });
  history = await recordConstantHistory(store);
}, 120_000);
afterAll(async () => {
  await store?.close();
});

async function waitDone(app: Hono, id: string): Promise<Record<string, unknown>> {
  for (let i = 0; i < 600; i++) {
    const res = await app.request(`/replay/${id}`);
    const job = (await res.json()) as Record<string, unknown>;
    if (job.status !== 'running') return job;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('job did not finish');
}

describe('createReplayAdminRoutes (app.request)', () => {
  it('starts a job, follows it, serves the report in every format; writes nothing', async () => {
    const before = await storeSnapshot(store);
    const app = createReplayAdminRoutes({ store });
    const res = await app.request('/replay', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ against: 'deny-all', method: 'steps/toolCallRequest' }),
    });
    expect(res.status).toBe(202);
    const started = (await res.json()) as { id: string; status: string; links: Record<string, string> };
    expect(started.links.report).toBe(`replay/${started.id}/report`);
    const job = await waitDone(app, started.id);
    expect(job.status).toBe('done');
    const summary = job.summary as {
      compared: number;
      changed: number;
      transitions: Record<string, number>;
      rules: Record<string, { added: number; removed: number }>;
    };
    expect(summary.compared).toBe(4);
    expect(summary.transitions).toEqual({ 'allow→deny': 4 });
    expect(summary.rules['const.allow']).toEqual({ added: 0, removed: 4 });

    const json = await app.request(`/replay/${started.id}/report?format=json`);
    expect(json.headers.get('content-type')).toContain('application/json');
    const report = (await json.json()) as { steps: { status: string; delta: { transition: string } }[] };
    expect(report.steps).toHaveLength(4);
    expect(report.steps.every((s) => s.delta.transition === 'allow→deny')).toBe(true);

    const html = await (await app.request(`/replay/${started.id}/report?format=html`)).text();
    expect(html).toContain('const.deny&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).not.toContain('<script>');
    expect(html).not.toContain('<i>');
    const md = await (await app.request(`/replay/${started.id}/report?format=md`)).text();
    expect(md).toContain('allow→deny');
    expect(md).not.toContain('<script>');
    expect(md).toContain('denied\\_&lt;i\\>by&lt;/i\\>\\_constant\\|x');
    const table = await (await app.request(`/replay/${started.id}/report?format=table`)).text();
    expect(table).toMatch(/allow→deny\s+4/);
    expect((await app.request(`/replay/${started.id}/report?format=pdf`)).status).toBe(400);

    const list = (await (await app.request('/replay')).json()) as { jobs: { id: string }[] };
    expect(list.jobs.map((j) => j.id)).toContain(started.id);
    expect((await app.request(`/replay/${started.id}`, { method: 'DELETE' })).status).toBe(409);
    expect(await storeSnapshot(store)).toBe(before);
  }, 120_000);

  it('the determinism check over HTTP: "recorded" reproduces every decision', async () => {
    const app = createReplayAdminRoutes({ store });
    const res = await app.request('/replay', { method: 'POST', body: JSON.stringify({ against: 'recorded' }) });
    const job = await waitDone(app, ((await res.json()) as { id: string }).id);
    expect(job.status).toBe('done');
    expect(job.summary).toMatchObject({
      determinismCheck: true,
      compared: history.steps,
      changed: 0,
      nondeterministic: 0,
    });
  }, 120_000);

  it('refuses bad requests precisely: JSON, members, selection, paths, unknown revisions, unknown jobs', async () => {
    const app = createReplayAdminRoutes({ store });
    const post = (body: string) => app.request('/replay', { method: 'POST', body });
    expect((await post('{')).status).toBe(400);
    expect(await (await post('[]')).json()).toMatchObject({ error: 'invalid_json' });
    expect(await (await post(JSON.stringify({ against: 'deny-all', sesion: 'x' }))).json()).toMatchObject({
      error: 'invalid_selection',
      message: 'unknown member(s): sesion',
    });
    expect(await (await post(JSON.stringify({ against: 'deny-all', since: 'yesterday' }))).json()).toMatchObject({
      error: 'invalid_selection',
    });
    expect(await (await post(JSON.stringify({ against: 'deny-all', decision: 'maybe' }))).json()).toMatchObject({
      error: 'invalid_selection',
    });
    expect(await (await post(JSON.stringify({}))).json()).toMatchObject({ error: 'invalid_selection' });
    // A path is not read over HTTP: the job fails with policy_path_refused.
    const pathJob = (await (await post(JSON.stringify({ against: './bundles/acs.tar.gz' }))).json()) as { id: string };
    expect(await waitDone(app, pathJob.id)).toMatchObject({ status: 'failed', error: { code: 'policy_path_refused' } });
    const missing = (await (await post(JSON.stringify({ against: 'v99' }))).json()) as { id: string };
    expect(await waitDone(app, missing.id)).toMatchObject({ status: 'failed', error: { code: 'policy_not_found' } });
    expect((await app.request(`/replay/${missing.id}/report`)).status).toBe(409);
    expect((await app.request('/replay/nope')).status).toBe(404);
    expect((await app.request('/replay/nope/report')).status).toBe(404);
  }, 120_000);
});

describe('cancellation', () => {
  it('an aborted signal stops the replay with a cancelled error', async () => {
    const policy = await resolveReplayPolicy(store, 'deny-all');
    await expect(runReplay({ store, policy, signal: AbortSignal.abort() })).rejects.toMatchObject({
      code: 'cancelled',
    });
    const controller = new AbortController();
    let seen = 0;
    const run = runReplay({
      store,
      policy,
      concurrency: 1,
      pageSize: 1,
      onStep: () => (++seen === 2 ? controller.abort() : undefined),
      signal: controller.signal,
    });
    await expect(run).rejects.toMatchObject({ code: 'cancelled' });
    expect(seen).toBe(2);
  });
});

describe('createReplayAdminRoutes over real HTTP, mounted under /admin', () => {
  it('POST a job, follow its server-sent events to `done`, download the HTML report', async () => {
    const root = new Hono();
    root.route('/admin', createReplayAdminRoutes({ store }));
    const server: ServerType = await new Promise((resolve) => {
      const s = serve({ fetch: root.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s));
    });
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/admin`;
    try {
      const res = await fetch(`${base}/replay`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ against: 'deny-all', session: history.sessions[0] }),
      });
      expect(res.status).toBe(202);
      const { id } = (await res.json()) as { id: string };
      const events = await fetch(`${base}/replay/${id}/events`);
      expect(events.headers.get('content-type')).toContain('text/event-stream');
      const text = await events.text();
      expect(text).toContain('event: done');
      const done = JSON.parse(/event: done\ndata: (.*)\n/.exec(text)![1]) as {
        summary: { compared: number; transitions: Record<string, number> };
      };
      expect(done.summary.compared).toBe(3);
      expect(done.summary.transitions).toEqual({ 'allow→deny': 3 });
      const html = await fetch(`${base}/replay/${id}/report?format=html`);
      expect(html.status).toBe(200);
      expect(html.headers.get('content-type')).toContain('text/html');
      expect(html.headers.get('content-security-policy')).toContain("default-src 'none'");
      expect(await html.text()).toContain('<h1>Replay report</h1>');
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }, 120_000);
});
