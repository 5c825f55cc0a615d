// Admin HTTP API: disabled without a token, bearer auth (401 on a wrong/missing token), push/activate/rollback/
// shadow/status over real HTTP, precise refusals, and the audit of who activated what.
import { serve, type ServerType } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdminApp } from '../../src/admin/index.ts';
import { bearerTokenMatches } from '../../src/crypto/bearer-token.ts';
import type { LifecycleNode } from '../../src/lifecycle/index.ts';
import type { DurableStore } from '../../src/store/types.ts';
import { constantBundle, startMemoryNode } from '../lifecycle/fixtures.ts';

const TOKEN = 'test-admin-token-0123456789';
let store: DurableStore;
let node: LifecycleNode;
let server: ServerType;
let base: string;

beforeAll(async () => {
  ({ store, node } = await startMemoryNode(await constantBundle('adm-0'), { replicaId: 'admin-replica' }));
  const app = createAdminApp({ node, token: TOKEN });
  server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s));
  });
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
  await node.stop();
  await store.close();
});

const auth = (actor?: string): Record<string, string> => ({
  authorization: `Bearer ${TOKEN}`,
  ...(actor ? { 'x-guardian-actor': actor } : {}),
});

describe('admin API', () => {
  it('no token configured → disabled: every route 404s', async () => {
    const app = createAdminApp({ node, env: {} });
    const res = await app.request('/status', { headers: auth() });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: 'admin API disabled (set GUARDIAN_ADMIN_TOKEN)' });
    expect((await app.request('/rollback', { method: 'POST', headers: auth() })).status).toBe(404);
  });

  it('missing, malformed or wrong bearer token → 401; token check is exact', async () => {
    expect((await fetch(`${base}/status`)).status).toBe(401);
    expect((await fetch(`${base}/status`, { headers: { authorization: `Basic ${TOKEN}` } })).status).toBe(401);
    expect((await fetch(`${base}/status`, { headers: { authorization: `Bearer ${TOKEN}x` } })).status).toBe(401);
    expect(
      (await fetch(`${base}/bundles`, { method: 'POST', headers: { authorization: 'Bearer nope' }, body: 'x' })).status,
    ).toBe(401);
    expect(bearerTokenMatches(TOKEN, TOKEN)).toBe(true);
    expect(bearerTokenMatches(TOKEN.slice(0, -1), TOKEN)).toBe(false);
  });

  it('push + activate, list, status, rollback, shadow, with the actor audited', async () => {
    const v1 = await constantBundle('adm-1');
    let res = await fetch(`${base}/bundles?activate=true`, {
      method: 'POST',
      headers: auth('alice'),
      body: Buffer.from(v1),
    });
    expect(res.status).toBe(201);
    const pushed = (await res.json()) as {
      record: { sha256: string; revision: string };
      activation: { revision: string; previousRevision: string };
    };
    expect(pushed.activation).toMatchObject({ revision: 'adm-1', previousRevision: 'adm-0' });
    expect(node.engine.revision).toBe('adm-1');

    res = await fetch(`${base}/bundles`, {
      method: 'POST',
      headers: auth('bob'),
      body: Buffer.from(await constantBundle('adm-2')),
    });
    expect(res.status).toBe(201);
    expect(node.engine.revision).toBe('adm-1');
    res = await fetch(`${base}/bundles/adm-2/activate`, { method: 'POST', headers: auth('bob') });
    expect(res.status).toBe(200);
    expect(node.engine.revision).toBe('adm-2');

    const list = (await (await fetch(`${base}/bundles`, { headers: auth() })).json()) as {
      bundles: { revision: string }[];
    };
    expect(list.bundles.map((b) => b.revision)).toEqual(['adm-0', 'adm-1', 'adm-2']);

    const described = (await (await fetch(`${base}/bundles/adm-2`, { headers: auth() })).json()) as {
      revision: string;
      signed: boolean;
      files: { path: string }[];
      manifest: { revision: string };
    };
    expect(described).toMatchObject({ revision: 'adm-2', signed: false, manifest: { revision: 'adm-2' } });
    expect(described.files.map((f) => f.path)).toEqual(['/.manifest', '/data.json', '/policy.wasm']);
    const download = await fetch(`${base}/bundles/${pushed.record.sha256.slice(0, 10)}/download`, { headers: auth() });
    expect(Buffer.from(await download.arrayBuffer()).equals(Buffer.from(v1))).toBe(true);
    expect(download.headers.get('etag')).toBe(`"${pushed.record.sha256}"`);

    res = await fetch(`${base}/rollback`, { method: 'POST', headers: auth('carol') });
    expect(((await res.json()) as { revision: string }).revision).toBe('adm-1');

    const status = (await (await fetch(`${base}/status`, { headers: auth() })).json()) as {
      active: { revision: string; activatedBy: string };
      local: { revision: string };
      replicas: { replicaId: string; revision: string }[];
    };
    expect(status.active).toMatchObject({ revision: 'adm-1', activatedBy: 'admin-api:carol' });
    expect(status.local.revision).toBe('adm-1');
    expect(status.replicas.map((r) => [r.replicaId, r.revision])).toEqual([['admin-replica', 'adm-1']]);

    res = await fetch(`${base}/shadow/adm-2`, { method: 'PUT', headers: auth('dave') });
    expect(await res.json()).toMatchObject({ revision: 'adm-2' });
    const report = (await (await fetch(`${base}/shadow/report`, { headers: auth() })).json()) as {
      report: { shadowRevision: string; differences: number };
    };
    expect(report.report).toMatchObject({ shadowRevision: 'adm-2', differences: 0 });
    res = await fetch(`${base}/shadow`, { method: 'DELETE', headers: auth('dave') });
    expect(await res.json()).toEqual({ revision: null, sha256: null });

    const hist = (await (await fetch(`${base}/activations`, { headers: auth() })).json()) as {
      activations: { revision: string; activatedBy: string }[];
      audit: { actor: string; action: string; outcome: string }[];
    };
    expect(hist.activations.slice(0, 3).map((a) => [a.revision, a.activatedBy])).toEqual([
      ['adm-1', 'admin-api:carol'],
      ['adm-2', 'admin-api:bob'],
      ['adm-1', 'admin-api:alice'],
    ]);
    expect(hist.audit.map((a) => `${a.actor} ${a.action} ${a.outcome}`).slice(0, 4)).toEqual([
      'admin-api:dave shadow-stop ok',
      'admin-api:dave shadow ok',
      'admin-api:carol activate ok',
      'admin-api:bob activate ok',
    ]);
  });

  it('uploads over the size limit are refused with 413, with or without Content-Length', async () => {
    const app = createAdminApp({ node, token: TOKEN, maxBundleBytes: 1024 });
    const big = new Uint8Array(4096);
    let res = await app.request('/bundles', {
      method: 'POST',
      headers: { ...auth(), 'content-length': '4096' },
      body: big,
    });
    expect(res.status).toBe(413);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 4; i++) controller.enqueue(new Uint8Array(512));
        controller.close();
      },
    });
    res = await app.request('/bundles', {
      method: 'POST',
      headers: auth(),
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ error: 'too_large', reason: 'bundle larger than 1024 bytes' });
  });

  it('refusals are precise: unknown revision 404, corrupt upload 400, failing smoke test 422 (old version kept)', async () => {
    let res = await fetch(`${base}/bundles/does-not-exist/activate`, { method: 'POST', headers: auth() });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({
      error: 'not_found',
      reason: 'no registered bundle with revision or sha256 "does-not-exist"',
    });
    res = await fetch(`${base}/bundles?activate=true`, { method: 'POST', headers: auth(), body: 'not a bundle' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe('invalid_bundle');
    const bad = await constantBundle('adm-bad', {
      smoke: { cases: [{ name: 'must deny', input: {}, expect: { decision: 'deny' } }] },
    });
    res = await fetch(`${base}/bundles?activate=true`, {
      method: 'POST',
      headers: auth('eve'),
      body: Buffer.from(bad),
    });
    expect(res.status).toBe(422);
    expect(await res.json()).toEqual({
      error: 'smoke_failed',
      reason: 'smoke case "must deny": decision is "allow", expected "deny"',
    });
    expect(node.engine.revision).toBe('adm-1');
    const audit = await node.registry.auditLog(1);
    expect(audit[0]).toMatchObject({ actor: 'admin-api:eve', action: 'activate', outcome: 'refused' });
  });
});
