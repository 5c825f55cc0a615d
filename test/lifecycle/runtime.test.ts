// `openGuardianRuntime` with the lifecycle: the --bundle is activated at start, the admin app (mounted under
// /admin next to POST /acs) activates a new bundle over real HTTP and the next ACS step is decided by it; a
// restart on the same data directory resumes the activated version.
import { serve, type ServerType } from '@hono/node-server';
import { createServer } from 'node:http';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcsClient, httpTransport } from '../../src/client/index.ts';
import { openGuardianRuntime } from '../../src/server/app.ts';
import { createHttpApp } from '../../src/server/http.ts';
import { createLogger } from '../../src/telemetry/index.ts';
import { constantBundle } from './fixtures.ts';

const IKM = Buffer.from(Array.from({ length: 32 }, (_, i) => (i * 3) & 255));
let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'lifecycle-runtime-'));
  writeFileSync(join(dir, 'v1.tar.gz'), await constantBundle('rt-1'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('guardian runtime with the bundle lifecycle', () => {
  it('--bundle activates at start; POST /admin/bundles?activate=true switches the policy deciding POST /acs; a restart resumes it', async () => {
    const env = {
      GUARDIAN_HMAC_IKM: IKM.toString('base64'),
      GUARDIAN_ADMIN_TOKEN: 'rt-token',
      GUARDIAN_REPLICA_ID: 'rt-replica',
    };
    let runtime = await openGuardianRuntime({ dataDir: join(dir, 'data'), bundlePath: join(dir, 'v1.tar.gz'), env });
    expect(runtime.lifecycle).toBeDefined();
    expect(runtime.engine.revision).toBe('rt-1');
    const app = createHttpApp(runtime.guardian, { admin: runtime.admin! });
    const server = await new Promise<ServerType>((resolve) => {
      const s = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s));
    });
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const c = new AcsClient({ transport: httpTransport(`${base}/acs`), ikm: IKM, agentId: 'rt-agent' });
      await c.hello({ methods_implemented: ['steps/sessionStart', 'steps/toolCallRequest'] });
      expect((await c.step('steps/sessionStart', {})).result?.reasoning).toBe('decided by rt-1');
      expect((await fetch(`${base}/admin/status`)).status).toBe(401);
      const res = await fetch(`${base}/admin/bundles?activate=true`, {
        method: 'POST',
        headers: { authorization: 'Bearer rt-token', 'x-guardian-actor': 'ops' },
        body: Buffer.from(await constantBundle('rt-2')),
      });
      expect(res.status).toBe(201);
      expect((await c.step('steps/toolCallRequest', { tool: { name: 'x' }, arguments: {} })).result?.reasoning).toBe(
        'decided by rt-2',
      );
      const status = (await (
        await fetch(`${base}/admin/status`, { headers: { authorization: 'Bearer rt-token' } })
      ).json()) as { replicas: { replicaId: string; revision: string }[] };
      expect(status.replicas).toEqual([expect.objectContaining({ replicaId: 'rt-replica', revision: 'rt-2' })]);
      // Replay's admin routes ride on the same app and token.
      const replay = await fetch(`${base}/admin/replay`, { headers: { authorization: 'Bearer rt-token' } });
      expect(replay.status).toBe(200);
      expect(await replay.json()).toEqual({ jobs: [] });
      expect((await fetch(`${base}/admin/replay`)).status).toBe(401);
      const entries = await (runtime.store as import('../../src/store/types.ts').DurableStore).listContextEntries(
        c.sessionId,
      );
      expect(entries.map((e) => e.bundleRevision)).toEqual(['rt-1', 'rt-2']);
    } finally {
      await new Promise((r) => server.close(r));
      await runtime.close();
    }
    // Restart without --bundle: the activated version, not a default, is served.
    runtime = await openGuardianRuntime({ dataDir: join(dir, 'data'), cwd: dir, env });
    try {
      expect(runtime.engine.revision).toBe('rt-2');
    } finally {
      await runtime.close();
    }
  }, 120_000);

  it('GUARDIAN_BUNDLE_SERVICE_URL: the runtime polls the service, activates its bundle, and reports the source in /admin/status', async () => {
    const svcBundle = await constantBundle('rt-svc');
    let requests = 0;
    const svc = createServer((req, res) => {
      requests++;
      if (req.headers['if-none-match'] === '"svc-1"') {
        res.statusCode = 304;
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/gzip', etag: '"svc-1"' });
      res.end(Buffer.from(svcBundle));
    });
    await new Promise<void>((r) => svc.listen(0, '127.0.0.1', () => r()));
    const env = {
      GUARDIAN_HMAC_IKM: IKM.toString('base64'),
      GUARDIAN_ADMIN_TOKEN: 'svc-token',
      GUARDIAN_REPLICA_ID: 'svc-replica',
      GUARDIAN_BUNDLE_SERVICE_URL: `http://127.0.0.1:${(svc.address() as AddressInfo).port}/bundles/acs`,
      GUARDIAN_BUNDLE_SERVICE_MIN_DELAY_S: '0.05',
      GUARDIAN_BUNDLE_SERVICE_MAX_DELAY_S: '0.1',
    };
    const runtime = await openGuardianRuntime({
      dataDir: join(dir, 'data-svc'),
      bundlePath: join(dir, 'v1.tar.gz'),
      env,
    });
    try {
      const deadline = Date.now() + 20_000;
      while ((runtime.engine.revision !== 'rt-svc' || requests < 3) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 20));
      expect(runtime.engine.revision).toBe('rt-svc');
      const res = await runtime.admin!.request('/status', { headers: { authorization: 'Bearer svc-token' } });
      const status = (await res.json()) as {
        sources: { etag: string; lastRevision: string; httpCode: number; consecutiveErrors: number }[];
      };
      expect(status.sources).toEqual([
        expect.objectContaining({ etag: '"svc-1"', lastRevision: 'rt-svc', httpCode: 304, consecutiveErrors: 0 }),
      ]);
      const history = await runtime.lifecycle!.node.registry.activations(5);
      // Downloaded once, activated once; the following polls were 304s.
      expect(history.filter((a) => a.activatedBy === 'bundle-service')).toHaveLength(1);
    } finally {
      await runtime.close();
      svc.closeAllConnections();
      await new Promise((r) => svc.close(r));
    }
  }, 120_000);
  it('the bundle file loaded while the store opens is served only when it is the active bundle; a hot-swapped one stays', async () => {
    const env = { GUARDIAN_HMAC_IKM: IKM.toString('base64'), GUARDIAN_REPLICA_ID: 'preload-replica' };
    const cwd = join(dir, 'preload');
    mkdirSync(join(cwd, 'bundles'), { recursive: true });
    writeFileSync(join(cwd, 'bundles', 'acs.tar.gz'), await constantBundle('pre-1'));
    const dataDir = join(cwd, 'data');
    const start = async () => {
      const lines: string[] = [];
      const destination = new Writable({
        write(chunk: Buffer, _enc, done) {
          lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
          done();
        },
      });
      const runtime = await openGuardianRuntime({ dataDir, cwd, env, logger: createLogger({ destination }) });
      const adopted = lines.some((l) => l.includes('as loaded while the store opened'));
      return { runtime, adopted };
    };
    // First start: the file seeds the empty store, and the seed is the preloaded version.
    let { runtime, adopted } = await start();
    try {
      expect(runtime.engine.revision).toBe('pre-1');
      expect(adopted).toBe(true);
    } finally {
      await runtime.close();
    }
    // Restart: the file is the active bundle, served as preloaded.
    ({ runtime, adopted } = await start());
    try {
      expect(runtime.engine.revision).toBe('pre-1');
      expect(adopted).toBe(true);
      await runtime.lifecycle!.node.push(await constantBundle('pre-2'), { source: 'test', activate: true, by: 'ops' });
      expect(runtime.engine.revision).toBe('pre-2');
    } finally {
      await runtime.close();
    }
    // Restart after a hot swap: the file still loads early, but the store's active version is what is served.
    ({ runtime, adopted } = await start());
    try {
      expect(runtime.engine.revision).toBe('pre-2');
      expect(adopted).toBe(false);
    } finally {
      await runtime.close();
    }
  }, 120_000);
});
