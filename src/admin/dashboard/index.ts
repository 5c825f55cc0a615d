// The console dashboard's figures (docs/admin-api.md "Routes"): decisions per minute by disposition, the top
// reason codes and evaluation latency over a recent window, the active bundle and whether the store answers.
import { OpenAPIHono, z } from '@hono/zod-openapi';
import { type AdminDeps, type AdminEnv, adminRoute, jsonContent, unavailable } from '../api/index.ts';

const Stats = z
  .object({
    since: z.string(),
    decisions: z.number().int(),
    per_minute: z.array(z.object({ minute: z.string(), disposition: z.string(), count: z.number().int() })),
    top_reason_codes: z.array(z.object({ code: z.string(), count: z.number().int() })),
    latency_ms: z.object({ p50: z.number().nullable(), p99: z.number().nullable(), max: z.number().nullable() }),
    active_revision: z.string().nullable(),
    store: z.object({ driver: z.string(), ok: z.boolean() }),
  })
  .openapi('DashboardStats');

const statsRoute = adminRoute(
  {
    method: 'get',
    path: '/stats',
    operationId: 'dashboardStats',
    tags: ['dashboard'],
    summary: 'Decisions per minute by disposition, top reason codes, latency, active bundle, store health',
    request: {
      query: z.object({
        minutes: z.coerce.number().int().min(1).max(1440).default(60).openapi({ description: 'Window length' }),
      }),
    },
    responses: { 200: jsonContent(Stats, 'The figures') },
  },
  { role: 'viewer' },
);

export function dashboardRoutes(deps: AdminDeps): OpenAPIHono<AdminEnv> {
  const app = new OpenAPIHono<AdminEnv>();
  app.openapi(statsRoute, async (c) => {
    if (!deps.queries) return unavailable('the dashboard');
    const since = new Date(Date.now() - c.req.valid('query').minutes * 60_000);
    const [stats, active, ok] = await Promise.all([
      deps.queries.decisionStats(since),
      deps.node.registry.active().catch(() => null),
      deps.store.getChainHead('00000000-0000-0000-0000-000000000000').then(
        () => true,
        () => false,
      ),
    ]);
    return c.json(
      {
        since: since.toISOString(),
        decisions: stats.decisions,
        per_minute: stats.perMinute.map((r) => ({ ...r, minute: r.minute.toISOString() })),
        top_reason_codes: stats.topReasonCodes,
        latency_ms: stats.latencyMs,
        active_revision: active?.revision ?? null,
        store: { driver: deps.store.driver, ok },
      },
      200,
    );
  });
  return app;
}
