// Bundle-service polling against a local OPA-compatible test server: ETag/If-None-Match and 304, 500s and
// timeouts with exponential backoff and jitter, ETag handling after failures, refused bundles, long polling.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backoffDelay, BundleServicePoller, type LifecycleNode } from '../../src/lifecycle/index.ts';
import type { DurableStore } from '../../src/store/types.ts';
import { constantBundle, startMemoryNode } from './fixtures.ts';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
let server: Server;
let url: string;
const handlers: Handler[] = [];
const seen: { ifNoneMatch: string | undefined; prefer: string | undefined }[] = [];
let store: DurableStore;
let node: LifecycleNode;

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push({ ifNoneMatch: req.headers['if-none-match'], prefer: req.headers.prefer as string | undefined });
    const h = handlers.shift();
    if (!h) {
      res.statusCode = 500;
      res.end('no scripted answer');
      return;
    }
    h(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/bundles/acs`;
  ({ store, node } = await startMemoryNode(await constantBundle('svc-0')));
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  await node.stop();
  await store.close();
});

const serveBundle =
  (bytes: Uint8Array, etag: string, contentType = 'application/gzip'): Handler =>
  (_req, res) => {
    res.writeHead(200, { 'content-type': contentType, etag });
    res.end(Buffer.from(bytes));
  };
const status =
  (code: number): Handler =>
  (_req, res) => {
    res.statusCode = code;
    res.end();
  };

function poller(extra: Partial<ConstructorParameters<typeof BundleServicePoller>[0]> = {}): BundleServicePoller {
  return new BundleServicePoller({
    name: 'acs',
    url,
    minDelayMs: 1000,
    maxDelayMs: 2000,
    backoffBaseMs: 100,
    backoffMaxMs: 1600,
    requestTimeoutMs: 300,
    random: () => 1,
    onBundle: async (bytes, meta) => {
      const r = await node.push(bytes, { source: meta.source, activate: true, by: 'bundle-service:acs' });
      return { revision: r.activation!.revision };
    },
    ...extra,
  });
}

describe('bundle service poller', () => {
  it('backoff: base·2^n capped at the maximum, jittered into [half, full]', () => {
    expect([1, 2, 3, 4, 5, 10].map((n) => backoffDelay(n, 100, 1600, () => 1))).toEqual([
      200, 400, 800, 1600, 1600, 1600,
    ]);
    expect(backoffDelay(3, 100, 1600, () => 0)).toBe(400);
    for (let i = 0; i < 50; i++) {
      const d = backoffDelay(2, 100, 1600);
      expect(d).toBeGreaterThanOrEqual(200);
      expect(d).toBeLessThanOrEqual(400);
    }
  });

  it('200 + ETag activates; the next poll sends If-None-Match and 304 changes nothing; 500s and timeouts back off and keep the version', async () => {
    seen.length = 0;
    const p = poller();
    handlers.push(serveBundle(await constantBundle('svc-1'), '"e1"'));
    const d1 = await p.pollOnce();
    expect(node.engine.revision).toBe('svc-1');
    expect(p.status).toMatchObject({
      etag: '"e1"',
      httpCode: 200,
      lastRevision: 'svc-1',
      message: null,
      consecutiveErrors: 0,
    });
    expect(d1).toBeGreaterThanOrEqual(1000);
    expect(d1).toBeLessThanOrEqual(2000);

    handlers.push(status(304));
    await p.pollOnce();
    expect(seen[1].ifNoneMatch).toBe('"e1"');
    expect(p.status).toMatchObject({ httpCode: 304, message: null, consecutiveErrors: 0 });

    handlers.push(status(500), status(500), status(500));
    const delays = [await p.pollOnce(), await p.pollOnce(), await p.pollOnce()];
    expect(delays).toEqual([200, 400, 800]);
    expect(p.status).toMatchObject({ httpCode: 500, message: 'server replied with HTTP 500', consecutiveErrors: 3 });
    // After a failed download the ETag falls back to the last *activated* one.
    expect(seen.slice(2).map((s) => s.ifNoneMatch)).toEqual(['"e1"', '"e1"', '"e1"']);

    handlers.push(() => {
      /* never answers: the request times out */
    });
    expect(await p.pollOnce()).toBe(1600);
    expect(p.status.message).toBe('request failed: request timed out after 300 ms');
    expect(p.status.consecutiveErrors).toBe(4);
    expect(node.engine.revision).toBe('svc-1');

    handlers.push(status(404));
    await p.pollOnce();
    expect(p.status.message).toBe('server replied with not found');
    handlers.push(status(401));
    await p.pollOnce();
    expect(p.status.message).toBe('server replied with not authorized');

    handlers.push(serveBundle(await constantBundle('svc-2'), '"e2"'));
    await p.pollOnce();
    expect(p.status).toMatchObject({ etag: '"e2"', lastRevision: 'svc-2', consecutiveErrors: 0, message: null });
    expect(node.engine.revision).toBe('svc-2');
  });

  it('a downloaded bundle that fails activation is reported; the ETag stays the last activated one', async () => {
    seen.length = 0;
    const p = poller();
    handlers.push(serveBundle(await constantBundle('svc-3'), '"e3"'));
    await p.pollOnce();
    handlers.push(serveBundle(new Uint8Array([0x1f, 0x8b, 0, 0]), '"broken"'));
    await p.pollOnce();
    expect(p.status.message).toMatch(/^activation failed: /);
    expect(p.status.etag).toBe('"e3"');
    expect(node.engine.revision).toBe('svc-3');
    handlers.push(status(304));
    await p.pollOnce();
    expect(seen[2].ifNoneMatch).toBe('"e3"');
  });

  it('long polling: Prefer wait=N is sent, the server holds the request, a change is picked up at once; a plain server falls back to short polling', async () => {
    seen.length = 0;
    const p = poller({ longPollSeconds: 5, minDelayMs: 60_000, maxDelayMs: 60_000 });
    const vnd = 'application/vnd.openpolicyagent.bundles';
    handlers.push(serveBundle(await constantBundle('svc-lp-1'), '"l1"', vnd));
    // Held for 300 ms, then "no change".
    handlers.push((_req, res) =>
      setTimeout(() => {
        res.writeHead(304, { 'content-type': vnd });
        res.end();
      }, 300),
    );
    const next = await constantBundle('svc-lp-2');
    handlers.push((_req, res) => setTimeout(() => serveBundle(next, '"l2"', vnd)(_req, res), 100));
    handlers.push((_req, res) => setTimeout(() => status(304)(_req, res), 10_000));
    p.start();
    const deadline = Date.now() + 20_000;
    while (node.engine.revision !== 'svc-lp-2' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await p.stop();
    expect(node.engine.revision).toBe('svc-lp-2');
    expect(seen[0].prefer).toBe('modes=snapshot, wait=5');
    expect(seen[1]).toEqual({ ifNoneMatch: '"l1"', prefer: 'modes=snapshot, wait=5' });
    expect(seen[2].ifNoneMatch).toBe('"l1"');
    expect(p.status.longPolling).toBe(true);

    // A server answering with a plain content type does not support long polling: short polling from then on.
    const q = poller({ longPollSeconds: 5 });
    handlers.length = 0;
    handlers.push(serveBundle(await constantBundle('svc-lp-3'), '"l3"'));
    const delay = await q.pollOnce();
    expect(q.status.longPolling).toBe(false);
    expect(delay).toBeGreaterThanOrEqual(1000);
  }, 60_000);
});
