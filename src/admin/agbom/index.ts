// A session's AgBOM (docs/agbom.md) under v1: these routes publish the schemas and apply roles, then hand the
// request to the AgBOM app (src/agbom/http.ts) — the one that also answers the unversioned /admin/agbom paths,
// so there is one implementation of each read.
import { OpenAPIHono, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { AGBOM_SERIALIZATIONS } from '../../agbom/formats.ts';
import {
  type AdminDeps,
  type AdminEnv,
  type ForwardedApp,
  adminRoute,
  errorResponse,
  forwardedBody,
  isRenderedAnswer,
  jsonContent,
  unavailable,
} from '../api/index.ts';
import { JsonValue, SessionId } from '../sessions/index.ts';

const AGBOM_APP: ForwardedApp = { name: 'the AgBOM', failure: 'agbom_failed', reasonField: 'reason' };

const Seq = z
  .string()
  .regex(/^\d{1,9}$/)
  .openapi({ description: 'A chain entry seq' });

const Version = z
  .looseObject({
    seq: z.number().int(),
    entry_hash: z.string(),
    method: z.string(),
    form: z.enum(['full', 'diff']),
    adopted: z.boolean(),
    agbom_hash: z.string(),
    reported_hash: z.string().nullable(),
    problems: z.array(JsonValue),
    diff: JsonValue,
  })
  .openapi('AgbomVersion');

const agbomRoute = adminRoute(
  {
    method: 'get',
    path: '/sessions/{id}/agbom',
    operationId: 'sessionAgbom',
    tags: ['sessions'],
    summary: "The session's AgBOM in force at a chain entry (default: the latest), in one of four serializations",
    request: {
      params: SessionId,
      query: z.object({ format: z.enum(AGBOM_SERIALIZATIONS).optional(), at: Seq.optional() }),
    },
    responses: {
      200: {
        description: 'The AgBOM: canonical JSON, CycloneDX 1.6, SPDX 3.0 (JSON-LD) or SWID (XML)',
        content: {
          'application/json': { schema: z.record(z.string(), JsonValue) },
          'application/vnd.cyclonedx+json': { schema: z.record(z.string(), JsonValue) },
          'application/ld+json': { schema: z.record(z.string(), JsonValue) },
          'application/swid+xml': { schema: z.string() },
        },
      },
      404: errorResponse('No such session, or no AgBOM at that entry'),
    },
  },
  { role: 'viewer' },
);
const versionsRoute = adminRoute(
  {
    method: 'get',
    path: '/sessions/{id}/agbom/versions',
    operationId: 'sessionAgbomVersions',
    tags: ['sessions'],
    summary: 'Every AgBOM version of the session, each bound to its chain entry, with what it changed',
    request: { params: SessionId },
    responses: {
      200: jsonContent(z.object({ session_id: z.string(), versions: z.array(Version) }), 'Versions, oldest first'),
      404: errorResponse('No such session'),
    },
  },
  { role: 'viewer' },
);
const diffRoute = adminRoute(
  {
    method: 'get',
    path: '/sessions/{id}/agbom/diff',
    operationId: 'sessionAgbomDiff',
    tags: ['sessions'],
    summary: 'Components added, removed and changed between the AgBOMs in force at two chain entries',
    request: { params: SessionId, query: z.object({ from: Seq, to: Seq }) },
    responses: {
      200: jsonContent(z.record(z.string(), JsonValue), 'The comparison'),
      404: errorResponse('No such session, or no AgBOM at an entry'),
    },
  },
  { role: 'viewer' },
);

export function agbomRoutes(deps: AdminDeps): OpenAPIHono<AdminEnv> {
  const app = new OpenAPIHono<AdminEnv>();
  /** The AgBOM app's path for this v1 path: /sessions/{id}/agbom[/rest] → /sessions/{id}[/rest]. */
  const forward = (c: Context<AdminEnv>): Promise<Response> | Response => {
    if (!deps.agbom) return unavailable('the AgBOM');
    const url = new URL(c.req.url);
    const rest = url.pathname.slice(url.pathname.lastIndexOf('/agbom') + '/agbom'.length);
    return deps.agbom.request(`/sessions/${encodeURIComponent(c.req.param('id') ?? '')}${rest}${url.search}`);
  };
  const bodyOf = <T>(res: Response): Promise<T> => forwardedBody<T>(AGBOM_APP, res);
  app.openapi(agbomRoute, async (c) => {
    const res = await forward(c);
    // Canonical JSON is re-sent (and validated); the other serializations go through as the renderers made them.
    if (isRenderedAnswer(res)) return res;
    return c.json(await bodyOf<Record<string, null>>(res), 200);
  });
  app.openapi(versionsRoute, async (c) =>
    c.json(await bodyOf<{ session_id: string; versions: z.infer<typeof Version>[] }>(await forward(c)), 200),
  );
  app.openapi(diffRoute, async (c) => c.json(await bodyOf<Record<string, null>>(await forward(c)), 200));
  return app;
}
