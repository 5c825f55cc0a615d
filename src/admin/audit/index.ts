// The admin audit log (docs/admin-api.md "Audit log"): every state-changing admin call, newest first.
import { OpenAPIHono, z } from '@hono/zod-openapi';
import { type AdminDeps, type AdminEnv, Cursor, Limit, adminRoute, jsonContent, unavailable } from '../api/index.ts';

const AuditEntry = z
  .object({
    id: z.number().int(),
    at: z.string(),
    actor: z.string(),
    role: z.string(),
    method: z.string(),
    path: z.string(),
    action: z.string(),
    target: z.string().nullable(),
    status: z.number().int(),
    outcome: z.enum(['ok', 'refused', 'failed']),
    detail: z.string().nullable(),
  })
  .openapi('AdminAuditEntry');

const auditRoute = adminRoute(
  {
    method: 'get',
    path: '/audit',
    operationId: 'listAdminAudit',
    tags: ['audit'],
    summary: 'The admin audit log, newest first',
    request: {
      query: z.object({
        actor: z.string().max(64).optional(),
        action: z.string().max(100).optional(),
        cursor: Cursor,
        limit: Limit,
      }),
    },
    responses: {
      200: jsonContent(z.object({ entries: z.array(AuditEntry), next_cursor: z.string().nullable() }), 'Entries'),
    },
  },
  { role: 'viewer' },
);

export function auditRoutes(deps: AdminDeps): OpenAPIHono<AdminEnv> {
  const app = new OpenAPIHono<AdminEnv>();
  app.openapi(auditRoute, async (c) => {
    if (!deps.queries) return unavailable('the admin audit log');
    const q = c.req.valid('query');
    const page = await deps.queries.listAdminAudit(
      { actor: q.actor, action: q.action },
      { cursor: q.cursor, limit: q.limit },
    );
    return c.json(
      { entries: page.items.map((e) => ({ ...e, at: e.at.toISOString() })), next_cursor: page.nextCursor },
      200,
    );
  });
  return app;
}
