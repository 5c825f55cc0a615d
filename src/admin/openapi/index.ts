// The OpenAPI 3.1 document of the admin API, generated from the route definitions (the same zod schemas that
// validate requests and answers), served at /admin/v1/openapi.json.
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AdminEnv } from '../api/index.ts';

export function addOpenApiDocument(app: OpenAPIHono<AdminEnv>, version: string): void {
  app.openAPIRegistry.registerComponent('securitySchemes', 'bearer', {
    type: 'http',
    scheme: 'bearer',
    description: 'An admin token (docs/admin-api.md "Tokens and roles")',
  });
  let document: unknown;
  app.get('/openapi.json', (c) => {
    document ??= app.getOpenAPI31Document({
      openapi: '3.1.0',
      info: {
        title: 'acs-guardian admin API',
        version,
        description:
          'Sessions, audit chains, decisions, the bundle lifecycle, replay, keys and the admin audit log. Roles: viewer < operator < admin.',
      },
      servers: [{ url: '/admin/v1' }],
    });
    return c.json(document);
  });
}
