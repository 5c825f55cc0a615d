// Token management (role admin): who holds a token and with which role, and rereading the token file so a token
// can be added or revoked without a restart. Tokens and their hashes are never answered.
import { OpenAPIHono, z } from '@hono/zod-openapi';
import { ROLES, TokenConfigError } from '../auth/index.ts';
import { type AdminDeps, type AdminEnv, adminRoute, errorResponse, jsonContent, refuse } from '../api/index.ts';

const TokenList = z
  .object({ tokens: z.array(z.object({ name: z.string(), role: z.enum(ROLES), source: z.string() })) })
  .openapi('TokenList');

const listRoute = adminRoute(
  {
    method: 'get',
    path: '/tokens',
    operationId: 'listTokens',
    tags: ['tokens'],
    summary: 'Configured tokens: names, roles, where each is configured',
    responses: { 200: jsonContent(TokenList, 'Tokens') },
  },
  { role: 'admin' },
);
const reloadRoute = adminRoute(
  {
    method: 'post',
    path: '/tokens/reload',
    operationId: 'reloadTokens',
    tags: ['tokens'],
    summary: 'Reread GUARDIAN_ADMIN_TOKENS_FILE (a bad file keeps the tokens in force)',
    responses: { 200: jsonContent(TokenList, 'The tokens now in force'), 422: errorResponse('The file is invalid') },
  },
  { role: 'admin' },
);

const whoamiRoute = adminRoute(
  {
    method: 'get',
    path: '/whoami',
    operationId: 'whoami',
    tags: ['tokens'],
    summary: "The calling token's name and role (the console shows what the role may do)",
    responses: {
      200: jsonContent(z.object({ name: z.string(), role: z.enum(ROLES) }).openapi('Principal'), 'The caller'),
    },
  },
  { role: 'viewer' },
);

export function tokenRoutes(deps: AdminDeps): OpenAPIHono<AdminEnv> {
  const app = new OpenAPIHono<AdminEnv>();
  app.openapi(whoamiRoute, (c) => c.json(c.get('principal'), 200));
  app.openapi(listRoute, (c) => c.json({ tokens: deps.tokens.list() }, 200));
  app.openapi(reloadRoute, (c) => {
    try {
      deps.tokens.reload();
    } catch (err) {
      if (err instanceof TokenConfigError) refuse(422, 'invalid_token_file', err.message);
      throw err;
    }
    return c.json({ tokens: deps.tokens.list() }, 200);
  });
  return app;
}
