// Admin HTTP API (Hono sub-app, mounted under /admin): bundle registry, activation, rollback, shadow mode and
// fleet status. Bearer token from config or GUARDIAN_ADMIN_TOKEN; no token configured → the API is disabled
// (every route 404s, nothing is exposed). Tokens are compared in constant time (SHA-256 of both, then
// timingSafeEqual, so length differences do not leak either). Every mutating call is audited with the actor
// (`X-Guardian-Actor` header, else "admin") in lifecycle_audit and policy_activations.activated_by.
import { bearerTokenMatches } from '../crypto/bearer-token.ts';
import { Hono, type Context } from 'hono';
import { LifecycleError, type LifecycleNode } from '../lifecycle/index.ts';
import { listReplicas, shadowReport } from '../lifecycle/node.ts';
import type { BundleSourceStatus } from '../lifecycle/bundle-service.ts';
import { readStreamWithLimit } from '../http-body/index.ts';
import { createAgbomRoutes } from '../agbom/http.ts';

export interface AdminAppOptions {
  node: LifecycleNode;
  /** Bearer token; default process.env.GUARDIAN_ADMIN_TOKEN. Empty/absent → admin API disabled. */
  token?: string;
  env?: Readonly<Record<string, string | undefined>>;
  /** Bundle-service sources to report in /status. */
  sources?: () => BundleSourceStatus[];
  /** Largest accepted bundle upload (default 64 MiB). */
  maxBundleBytes?: number;
  /** Extra sub-apps mounted on the admin app at the given path (replay at "/": its routes start with /replay), behind the same token. */
  mount?: Record<string, Hono>;
}

const STATUS_OF: Record<string, number> = {
  not_found: 404,
  ambiguous: 409,
  nothing_to_roll_back: 409,
  invalid_bundle: 400,
  signature_required: 422,
  signature_unexpected: 422,
  signature_invalid: 422,
  unknown_key: 422,
  smoke_failed: 422,
  load_failed: 422,
  bundle_service: 502,
};

export function createAdminApp(options: AdminAppOptions): Hono {
  const env = options.env ?? process.env;
  const token = options.token ?? env.GUARDIAN_ADMIN_TOKEN ?? '';
  const app = new Hono();
  const json = (body: unknown, status = 200): Response =>
    new Response(JSON.stringify(body, null, 2), {
      status,
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });
  if (!token) {
    app.all('*', () => json({ error: 'admin API disabled (set GUARDIAN_ADMIN_TOKEN)' }, 404));
    return app;
  }
  const { node } = options;
  app.use('*', async (c, next) => {
    const h = c.req.header('authorization') ?? '';
    const m = /^Bearer\s+(.+)$/i.exec(h);
    if (!m || !bearerTokenMatches(m[1].trim(), token)) {
      return new Response(JSON.stringify({ error: 'unauthorized' }), {
        status: 401,
        headers: { 'content-type': 'application/json', 'www-authenticate': 'Bearer realm="guardian-admin"' },
      });
    }
    await next();
  });
  const actor = (c: Context): string => {
    const raw = c.req.header('x-guardian-actor') ?? 'admin';
    // Free text from the caller: bounded and printable, it lands in the audit tables.
    return `admin-api:${raw.replace(/[^\x20-\x7e]/g, '?').slice(0, 100)}`;
  };
  const fail = (e: unknown): Response => {
    if (e instanceof LifecycleError) return json({ error: e.code, reason: e.message }, STATUS_OF[e.code] ?? 400);
    return json({ error: 'internal', reason: e instanceof Error ? e.message : String(e) }, 500);
  };

  app.get('/status', async () => {
    try {
      const [active, replicas] = await Promise.all([
        node.registry.active(),
        listReplicas(node.store, 3 * (node.options.heartbeatMs ?? 2000)),
      ]);
      return json({ active, local: node.local(), replicas, sources: options.sources?.() ?? [] });
    } catch (e) {
      return fail(e);
    }
  });
  app.get('/bundles', async () => {
    try {
      return json({ bundles: await node.registry.list() });
    } catch (e) {
      return fail(e);
    }
  });
  app.get('/bundles/:ref', async (c) => {
    try {
      return json(await node.registry.describe(c.req.param('ref')));
    } catch (e) {
      return fail(e);
    }
  });
  app.get('/bundles/:ref/download', async (c) => {
    try {
      const rec = await node.registry.resolve(c.req.param('ref'));
      const bytes = await node.registry.bytes(rec.sha256);
      return new Response(bytes, { headers: { 'content-type': 'application/gzip', etag: `"${rec.sha256}"` } });
    } catch (e) {
      return fail(e);
    }
  });
  app.get('/activations', async () => {
    try {
      return json({ activations: await node.registry.activations(), audit: await node.registry.auditLog() });
    } catch (e) {
      return fail(e);
    }
  });
  app.post('/bundles', async (c) => {
    const max = options.maxBundleBytes ?? 64 * 1024 * 1024;
    const declared = Number(c.req.header('content-length'));
    if (Number.isFinite(declared) && declared > max)
      return json({ error: 'too_large', reason: `bundle larger than ${max} bytes` }, 413);
    const body = await readStreamWithLimit(c.req.raw.body, max);
    if (body === null) return json({ error: 'too_large', reason: `bundle larger than ${max} bytes` }, 413);
    const activate = c.req.query('activate') === 'true' || c.req.query('activate') === '1';
    try {
      const r = await node.push(body, { source: c.req.query('source') ?? 'admin-api', activate, by: actor(c) });
      return json(r, 201);
    } catch (e) {
      return fail(e);
    }
  });
  app.post('/bundles/:ref/activate', async (c) => {
    try {
      return json(await node.activate(c.req.param('ref'), actor(c)));
    } catch (e) {
      return fail(e);
    }
  });
  app.post('/rollback', async (c) => {
    try {
      return json(await node.rollback(actor(c)));
    } catch (e) {
      return fail(e);
    }
  });
  app.put('/shadow/:ref', async (c) => {
    try {
      return json(await node.setShadow(c.req.param('ref'), actor(c)));
    } catch (e) {
      return fail(e);
    }
  });
  app.delete('/shadow', async (c) => {
    try {
      return json(await node.setShadow(null, actor(c)));
    } catch (e) {
      return fail(e);
    }
  });
  app.get('/shadow/report', async () => {
    try {
      await node.flushShadow();
      return json({ local: node.local().shadow, report: await shadowReport(node.store) });
    } catch (e) {
      return fail(e);
    }
  });
  app.route('/agbom', createAgbomRoutes({ store: node.store }));
  for (const [path, sub] of Object.entries(options.mount ?? {})) app.route(path, sub);
  app.notFound(() => json({ error: 'not found' }, 404));
  app.onError((e) => fail(e));
  return app;
}
