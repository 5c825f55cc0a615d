// Signed chain heads of a session (ACS §8, docs/keys.md): what `audit verify` checks a chain's tail against.
import { OpenAPIHono, z } from '@hono/zod-openapi';
import { type AdminDeps, type AdminEnv, adminRoute, jsonContent } from '../api/index.ts';

const Checkpoint = z
  .object({
    seq: z.number().int(),
    head_hash: z.string(),
    algorithm: z.string(),
    key_id: z.string(),
    signature: z.string(),
    created_at: z.string(),
  })
  .openapi('Checkpoint');

const checkpointsRoute = adminRoute(
  {
    method: 'get',
    path: '/sessions/{id}/checkpoints',
    operationId: 'listCheckpoints',
    tags: ['sessions'],
    summary: "A session chain's signed checkpoints, in seq order",
    request: {
      params: z.object({
        id: z
          .string()
          .min(1)
          .max(200)
          .openapi({ param: { name: 'id', in: 'path' } }),
      }),
    },
    responses: { 200: jsonContent(z.object({ checkpoints: z.array(Checkpoint) }), 'Checkpoints') },
  },
  { role: 'viewer' },
);

export function checkpointRoutes(deps: AdminDeps): OpenAPIHono<AdminEnv> {
  const app = new OpenAPIHono<AdminEnv>();
  app.openapi(checkpointsRoute, async (c) => {
    const rows = await deps.store.listCheckpoints(c.req.valid('param').id);
    return c.json(
      {
        checkpoints: rows.map((r) => ({
          seq: r.seq,
          head_hash: r.headHash,
          algorithm: r.algorithm,
          key_id: r.keyId,
          signature: r.signature,
          created_at: r.createdAt.toISOString(),
        })),
      },
      200,
    );
  });
  return app;
}
