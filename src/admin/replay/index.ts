// Replay jobs (docs/replay.md) under v1: these routes publish the schemas and apply roles and the audit log,
// then hand the request to the replay jobs app (src/replay/http.ts) — the one that also answers the unversioned
// /admin/replay paths, so both see the same jobs.
import { OpenAPIHono, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import {
  type AdminDeps,
  type AdminEnv,
  type ForwardedApp,
  adminRoute,
  errorResponse,
  eventStream,
  forwardedBody,
  isRenderedAnswer,
  jsonContent,
  unavailable,
} from '../api/index.ts';
import { JsonValue } from '../sessions/index.ts';

const REPLAY_APP: ForwardedApp = { name: 'replay', failure: 'replay_failed', reasonField: 'message' };

const Job = z
  .looseObject({
    id: z.string(),
    status: z.enum(['running', 'done', 'failed', 'cancelled']),
    against: z.string(),
    created_at: z.string(),
    finished_at: z.string().nullable(),
    progress: z.record(z.string(), JsonValue).nullable(),
    summary: z.record(z.string(), JsonValue).nullable(),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
  })
  .openapi('ReplayJob');

const StartReplay = z
  .strictObject({
    against: z.string().min(1).max(500).openapi({ description: 'A registry revision or sha256, or "recorded"' }),
    session: z.string().max(200).optional(),
    agent: z.string().max(200).optional(),
    since: z.string().max(100).optional(),
    until: z.string().max(100).optional(),
    method: z.string().max(100).optional(),
    decision: z.string().max(20).optional(),
    decided_by: z.string().max(200).optional(),
  })
  .openapi('StartReplay');

const JobId = z.object({
  id: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: 'id', in: 'path' } }),
});
const jobTarget = (c: Context): string | undefined => c.req.param('id');

const startRoute = adminRoute(
  {
    method: 'post',
    path: '/replay',
    operationId: 'startReplay',
    tags: ['replay'],
    summary: 'Replay recorded steps against another policy version (a background job)',
    request: { body: { content: { 'application/json': { schema: StartReplay } }, required: true } },
    responses: {
      202: jsonContent(Job, 'Started'),
      429: errorResponse('Too many jobs running (or too many failed attempts)'),
    },
  },
  { role: 'operator', target: () => undefined },
);
const listRoute = adminRoute(
  {
    method: 'get',
    path: '/replay',
    operationId: 'listReplays',
    tags: ['replay'],
    summary: 'Replay jobs, newest first',
    responses: { 200: jsonContent(z.object({ jobs: z.array(Job) }), 'Jobs') },
  },
  { role: 'viewer' },
);
const getRoute = adminRoute(
  {
    method: 'get',
    path: '/replay/{id}',
    operationId: 'getReplay',
    tags: ['replay'],
    summary: 'A job: status, progress, summary when done',
    request: { params: JobId },
    responses: { 200: jsonContent(Job, 'The job'), 404: errorResponse('No such job') },
  },
  { role: 'viewer' },
);
const eventsRoute = adminRoute(
  {
    method: 'get',
    path: '/replay/{id}/events',
    operationId: 'replayEvents',
    tags: ['replay'],
    summary: 'Progress as server-sent events, ending with `done` or `failed`',
    request: { params: JobId },
    responses: {
      200: eventStream(),
      404: errorResponse('No such job'),
    },
  },
  { role: 'viewer' },
);
const reportRoute = adminRoute(
  {
    method: 'get',
    path: '/replay/{id}/report',
    operationId: 'replayReport',
    tags: ['replay'],
    summary: 'The diff report: transitions and rule changes',
    request: { params: JobId, query: z.object({ format: z.enum(['json', 'md', 'html', 'table']).optional() }) },
    responses: {
      200: {
        description: 'The report in the requested format',
        content: {
          'application/json': { schema: z.record(z.string(), JsonValue) },
          'text/markdown': { schema: z.string() },
          'text/html': { schema: z.string() },
          'text/plain': { schema: z.string() },
        },
      },
      404: errorResponse('No such job'),
      409: errorResponse('The job has not finished, or failed'),
    },
  },
  { role: 'viewer' },
);
const cancelRoute = adminRoute(
  {
    method: 'delete',
    path: '/replay/{id}',
    operationId: 'cancelReplay',
    tags: ['replay'],
    summary: 'Cancel a running job',
    request: { params: JobId },
    responses: {
      202: jsonContent(Job, 'Cancelling'),
      404: errorResponse('No such job'),
      409: errorResponse('Not running'),
    },
  },
  { role: 'operator', target: jobTarget },
);

export function replayRoutes(deps: AdminDeps): OpenAPIHono<AdminEnv> {
  const app = new OpenAPIHono<AdminEnv>();
  const forward = async (c: Context<AdminEnv>, body?: unknown): Promise<Response> => {
    if (!deps.replay) return unavailable('replay');
    const url = new URL(c.req.url);
    // The jobs app's routes start with /replay; the v1 path is /…/v1/replay….
    const path = url.pathname.slice(url.pathname.lastIndexOf('/replay'));
    return deps.replay.request(`${path}${url.search}`, {
      method: c.req.method,
      ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
    });
  };
  const bodyOf = <T>(res: Response): Promise<T> => forwardedBody<T>(REPLAY_APP, res);
  app.openapi(startRoute, async (c) =>
    c.json(await bodyOf<z.infer<typeof Job>>(await forward(c, c.req.valid('json'))), 202),
  );
  app.openapi(listRoute, async (c) => c.json(await bodyOf<{ jobs: z.infer<typeof Job>[] }>(await forward(c)), 200));
  app.openapi(getRoute, async (c) => c.json(await bodyOf<z.infer<typeof Job>>(await forward(c)), 200));
  app.openapi(eventsRoute, async (c) => {
    const res = await forward(c);
    return res.ok ? res : c.json(await bodyOf<never>(res), 200);
  });
  app.openapi(reportRoute, async (c) => {
    const res = await forward(c);
    // json reports are re-sent (and validated); md, html and table go through as the jobs app made them.
    if (isRenderedAnswer(res)) return res;
    return c.json(await bodyOf<Record<string, null>>(res), 200);
  });
  app.openapi(cancelRoute, async (c) => c.json(await bodyOf<z.infer<typeof Job>>(await forward(c)), 202));
  return app;
}
