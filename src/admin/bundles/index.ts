// The bundle lifecycle (docs/bundle-lifecycle.md) over HTTP: fleet status, the registry, pushes, activation,
// rollback and shadow mode. The answers keep the shapes the unversioned /admin routes always had, so those
// paths stay as aliases of these.
import { OpenAPIHono, z } from '@hono/zod-openapi';
import { listReplicas, shadowReport } from '../../lifecycle/node/index.ts';
import { readStreamWithLimit } from '../../http-body/index.ts';
import {
  type AdminDeps,
  type AdminEnv,
  adminRoute,
  errorResponse,
  jsonContent,
  lifecycleActor,
  refuse,
  wire,
} from '../api/index.ts';
import { JsonValue } from '../sessions/index.ts';

const Bundle = z
  .looseObject({ sha256: z.string(), revision: z.string(), source: z.string().nullable(), createdAt: z.string() })
  .openapi('Bundle');
const Activation = z
  .looseObject({
    id: z.number().int(),
    sha256: z.string(),
    revision: z.string(),
    activatedBy: z.string().nullable(),
    activatedAt: z.string(),
  })
  .openapi('Activation');
const ActivationResult = z
  .looseObject({
    sha256: z.string(),
    revision: z.string(),
    previousRevision: z.string().nullable(),
    smokeCases: z.number().int(),
    signature: z.string(),
    durationMs: z.number(),
  })
  .openapi('ActivationResult');
const Status = z
  .object({
    active: Activation.nullable(),
    local: z.record(z.string(), JsonValue),
    replicas: z.array(z.record(z.string(), JsonValue)),
    sources: z.array(z.record(z.string(), JsonValue)),
  })
  .openapi('FleetStatus');
const Ref = z.object({
  ref: z
    .string()
    .min(1)
    .max(200)
    .openapi({ param: { name: 'ref', in: 'path' }, description: 'A revision or a sha256 (prefix)' }),
});
const Shadow = z.object({ revision: z.string().nullable(), sha256: z.string().nullable() }).openapi('ShadowTarget');

const refTarget = (c: { req: { param(name: string): string | undefined } }): string | undefined => c.req.param('ref');

const statusRoute = adminRoute(
  {
    method: 'get',
    path: '/status',
    operationId: 'getStatus',
    tags: ['bundles'],
    summary: 'Active bundle, this replica, the fleet, bundle-service sources',
    responses: { 200: jsonContent(Status, 'Status') },
  },
  { role: 'viewer' },
);
const listRoute = adminRoute(
  {
    method: 'get',
    path: '/bundles',
    operationId: 'listBundles',
    tags: ['bundles'],
    summary: 'Registered bundles',
    responses: { 200: jsonContent(z.object({ bundles: z.array(Bundle) }), 'The registry') },
  },
  { role: 'viewer' },
);
const describeRoute = adminRoute(
  {
    method: 'get',
    path: '/bundles/{ref}',
    operationId: 'describeBundle',
    tags: ['bundles'],
    summary: 'A bundle: manifest, files, Rego sources',
    request: { params: Ref },
    responses: {
      200: jsonContent(Bundle.extend({ manifest: JsonValue, signed: z.boolean() }), 'The bundle'),
      404: errorResponse('No such bundle'),
      409: errorResponse('The reference matches several bundles'),
    },
  },
  { role: 'viewer' },
);
const downloadRoute = adminRoute(
  {
    method: 'get',
    path: '/bundles/{ref}/download',
    operationId: 'downloadBundle',
    tags: ['bundles'],
    summary: 'The bundle file (tar.gz)',
    request: { params: Ref },
    responses: {
      200: {
        description: 'The bundle',
        content: { 'application/gzip': { schema: z.string().openapi({ format: 'binary' }) } },
      },
      404: errorResponse('No such bundle'),
    },
  },
  { role: 'viewer' },
);
const activationsRoute = adminRoute(
  {
    method: 'get',
    path: '/activations',
    operationId: 'listActivations',
    tags: ['bundles'],
    summary: 'Activation history and the lifecycle audit log',
    responses: {
      200: jsonContent(
        z.object({ activations: z.array(Activation), audit: z.array(z.record(z.string(), JsonValue)) }),
        'History',
      ),
    },
  },
  { role: 'viewer' },
);
const pushRoute = adminRoute(
  {
    method: 'post',
    path: '/bundles',
    operationId: 'pushBundle',
    tags: ['bundles'],
    summary: 'Register a bundle (body: the tar.gz), optionally activating it',
    request: {
      query: z.object({
        activate: z.enum(['true', 'false', '1', '0']).optional(),
        source: z.string().max(200).optional(),
      }),
      body: { content: { 'application/gzip': { schema: z.string().openapi({ format: 'binary' }) } } },
    },
    responses: {
      201: jsonContent(
        z.looseObject({ record: Bundle, activation: ActivationResult.nullable().optional() }),
        'Registered',
      ),
      413: errorResponse('Larger than the upload limit'),
      422: errorResponse('Refused: signature, smoke tests or load failed'),
    },
  },
  { role: 'operator' },
);
const activateRoute = adminRoute(
  {
    method: 'post',
    path: '/bundles/{ref}/activate',
    operationId: 'activateBundle',
    tags: ['bundles'],
    summary: 'Activate a registered bundle fleet-wide',
    request: { params: Ref },
    responses: {
      200: jsonContent(ActivationResult, 'Activated'),
      404: errorResponse('No such bundle'),
      409: errorResponse('Ambiguous reference'),
      422: errorResponse('Refused: signature, smoke tests or load failed'),
    },
  },
  { role: 'operator', target: refTarget },
);
const rollbackRoute = adminRoute(
  {
    method: 'post',
    path: '/rollback',
    operationId: 'rollback',
    tags: ['bundles'],
    summary: 'Activate the bundle active before the current one',
    responses: { 200: jsonContent(ActivationResult, 'Rolled back'), 409: errorResponse('Nothing to roll back to') },
  },
  { role: 'operator' },
);
const shadowRoute = adminRoute(
  {
    method: 'put',
    path: '/shadow/{ref}',
    operationId: 'setShadow',
    tags: ['bundles'],
    summary: 'Evaluate a candidate bundle in shadow beside the active one',
    request: { params: Ref },
    responses: { 200: jsonContent(Shadow, 'Shadow target set'), 404: errorResponse('No such bundle') },
  },
  { role: 'operator', target: refTarget },
);
const unshadowRoute = adminRoute(
  {
    method: 'delete',
    path: '/shadow',
    operationId: 'clearShadow',
    tags: ['bundles'],
    summary: 'Stop shadow evaluation',
    responses: { 200: jsonContent(Shadow, 'Shadow mode off') },
  },
  { role: 'operator' },
);
const shadowReportRoute = adminRoute(
  {
    method: 'get',
    path: '/shadow/report',
    operationId: 'shadowReport',
    tags: ['bundles'],
    summary: 'Where the shadow candidate disagreed with the active bundle',
    responses: {
      200: jsonContent(
        z.object({ local: z.record(z.string(), JsonValue), report: z.record(z.string(), JsonValue) }),
        'Shadow report',
      ),
    },
  },
  { role: 'viewer' },
);

export function bundleRoutes(deps: AdminDeps): OpenAPIHono<AdminEnv> {
  const { node } = deps;
  const app = new OpenAPIHono<AdminEnv>();
  app.openapi(statusRoute, async (c) => {
    const [active, replicas] = await Promise.all([
      node.registry.active(),
      listReplicas(node.store, 3 * (node.options.heartbeatMs ?? 2000)),
    ]);
    return c.json(
      wire<z.infer<typeof Status>>({ active, local: node.local(), replicas, sources: deps.sources() }),
      200,
    );
  });
  app.openapi(listRoute, async (c) =>
    c.json(wire<{ bundles: z.infer<typeof Bundle>[] }>({ bundles: await node.registry.list() }), 200),
  );
  app.openapi(describeRoute, async (c) =>
    c.json(
      wire<z.infer<typeof Bundle> & { manifest: null; signed: boolean }>(
        await node.registry.describe(c.req.valid('param').ref),
      ),
      200,
    ),
  );
  app.openapi(downloadRoute, async (c) => {
    const rec = await node.registry.resolve(c.req.valid('param').ref);
    const bytes = await node.registry.bytes(rec.sha256);
    return c.body(new Uint8Array(bytes), 200, { 'content-type': 'application/gzip', etag: `"${rec.sha256}"` });
  });
  app.openapi(activationsRoute, async (c) =>
    c.json(
      wire<{ activations: z.infer<typeof Activation>[]; audit: Record<string, null>[] }>({
        activations: await node.registry.activations(),
        audit: await node.registry.auditLog(),
      }),
      200,
    ),
  );
  app.openapi(pushRoute, async (c) => {
    const max = deps.maxBundleBytes;
    const declared = Number(c.req.header('content-length'));
    if (Number.isFinite(declared) && declared > max) refuse(413, 'too_large', `bundle larger than ${max} bytes`);
    const body = await readStreamWithLimit(c.req.raw.body, max);
    if (body === null) refuse(413, 'too_large', `bundle larger than ${max} bytes`);
    const activate = ['true', '1'].includes(c.req.valid('query').activate ?? '');
    const r = await node.push(body, {
      source: c.req.valid('query').source ?? 'admin-api',
      activate,
      by: lifecycleActor(c),
    });
    return c.json(wire<{ record: z.infer<typeof Bundle> }>(r), 201);
  });
  app.openapi(activateRoute, async (c) =>
    c.json(
      wire<z.infer<typeof ActivationResult>>(await node.activate(c.req.valid('param').ref, lifecycleActor(c))),
      200,
    ),
  );
  app.openapi(rollbackRoute, async (c) =>
    c.json(wire<z.infer<typeof ActivationResult>>(await node.rollback(lifecycleActor(c))), 200),
  );
  app.openapi(shadowRoute, async (c) => c.json(await node.setShadow(c.req.valid('param').ref, lifecycleActor(c)), 200));
  app.openapi(unshadowRoute, async (c) => c.json(await node.setShadow(null, lifecycleActor(c)), 200));
  app.openapi(shadowReportRoute, async (c) => {
    await node.flushShadow();
    return c.json(
      wire<{ local: Record<string, null>; report: Record<string, null> }>({
        local: node.local().shadow,
        report: await shadowReport(node.store),
      }),
      200,
    );
  });
  return app;
}
