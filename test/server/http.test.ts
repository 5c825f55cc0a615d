// HTTP transport: POST /acs, body-size limit, bad bytes, health and readiness probes, runtime wiring (keys).
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openGuardianRuntime, resolveHmacKey } from '../../src/server/app.ts';
import { startHttpServer } from '../../src/server/http.ts';
import { openStore } from '../../src/store/index.ts';
import { constantDecisionEngine } from '../acs/fixtures/decision-module.ts';
import { startHarness, type Harness } from '../acs/fixtures/harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

describe('POST /acs', () => {
  it('a 10 MB body → -32600 body_too_large (HTTP 200, JSON-RPC error, id null), and the server keeps serving', async () => {
    const body =
      '{"jsonrpc":"2.0","id":1,"method":"system/ping","params":{"x":"' + 'a'.repeat(10 * 1024 * 1024) + '"}}';
    const a = await h.post(body);
    expect(a.id).toBeNull();
    expect('error' in a && a.error.code).toBe(-32600);
    expect('error' in a && a.error.data?.reason).toBe('body_too_large');
    expect((await h.client().ping('still here')).payload).toMatchObject({ echo: 'still here' });
  });

  it('a chunked body over the limit (no Content-Length) is cut off early', async () => {
    const chunk = new TextEncoder().encode('a'.repeat(256 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= 40) return controller.close();
        sent++;
        controller.enqueue(chunk);
      },
    });
    const res = await fetch(h.url, { method: 'POST', body: stream, duplex: 'half' } as RequestInit);
    const a = (await res.json()) as { error: { code: number; data: { reason: string } } };
    expect(a.error.code).toBe(-32600);
    expect(a.error.data.reason).toBe('body_too_large');
  });

  it('empty body → -32700; wrong verb → 405; unknown path → 404; answers are JSON', async () => {
    const empty = await h.post('');
    expect('error' in empty && empty.error.code).toBe(-32700);
    const get = await fetch(h.url);
    expect(get.status).toBe(405);
    const missing = await fetch(h.url.replace('/acs', '/nope'), { method: 'POST', body: '{}' });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toMatch(/application\/json/);
  });
});

describe('probes', () => {
  it('GET /healthz → 200; GET /readyz → 200 while the store answers, 503 once it is closed', async () => {
    const store = await openStore({ inMemory: true });
    const engine = await constantDecisionEngine({ decision: 'allow' });
    const dir = mkdtempSync(join(tmpdir(), 'acs-probe-'));
    const runtime = await openGuardianRuntime({ dataDir: dir, store, engine, env: {} });
    // A provided engine runs without the bundle lifecycle, so there is no admin API to mount either.
    expect(runtime.lifecycle).toBeUndefined();
    expect(runtime.admin).toBeUndefined();
    const server = await startHttpServer(runtime.guardian, { port: 0, ready: runtime.ready });
    try {
      const base = server.url.replace('/acs', '');
      expect((await fetch(base + '/healthz')).status).toBe(200);
      expect((await fetch(base + '/readyz')).status).toBe(200);
      await store.close();
      const res = await fetch(base + '/readyz');
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ status: 'unavailable' });
    } finally {
      await server.close();
      await runtime.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('HMAC key material', () => {
  it('generates a dev IKM once into the data dir (mode 0600) and reuses it; GUARDIAN_HMAC_IKM wins; bad values are refused', () => {
    const dir = mkdtempSync(join(tmpdir(), 'acs-key-'));
    try {
      const first = resolveHmacKey({}, dir);
      expect(first.source).toBe('generated');
      expect(first.ikm).toHaveLength(32);
      expect(statSync(first.path!).mode & 0o777).toBe(0o600);
      const second = resolveHmacKey({}, dir);
      expect(second.source).toBe('data-dir');
      expect(Buffer.from(second.ikm).equals(Buffer.from(first.ikm))).toBe(true);
      expect(second.fingerprint).toBe(first.fingerprint);
      expect(readFileSync(first.path!, 'utf8').trim()).toBe(Buffer.from(first.ikm).toString('base64'));
      const env = resolveHmacKey({ GUARDIAN_HMAC_IKM: Buffer.alloc(16, 7).toString('base64') }, dir);
      expect(env.source).toBe('env');
      expect(() => resolveHmacKey({ GUARDIAN_HMAC_IKM: 'c2hvcnQ=' }, dir)).toThrow(/at least 16 bytes/);
      expect(() => resolveHmacKey({ GUARDIAN_HMAC_IKM: '***' }, dir)).toThrow(/base64/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
