// Decisions across sessions (docs/admin-api.md "Routes"): search newest first with a cursor, and the live
// feed as server-sent events. The feed polls the store (so it sees every replica's steps, not only this
// process's) from the moment it was opened, or from `since`; a step's created_at is its transaction's start, so
// each poll looks back a little and drops what it already sent.
import { OpenAPIHono, z } from '@hono/zod-openapi';
import { streamSSE } from 'hono/streaming';
import type { DecisionFilter, DecisionRow } from '../../store/admin/index.ts';
import {
  type AdminDeps,
  type AdminEnv,
  Cursor,
  Instant,
  Limit,
  adminRoute,
  eventStream,
  jsonContent,
  unavailable,
} from '../api/index.ts';
import { Decision } from '../sessions/index.ts';

const DecisionItem = z
  .object({
    session_id: z.string(),
    seq: z.number().int(),
    agent_id: z.string(),
    entry_id: z.string(),
    method: z.string(),
    created_at: z.string(),
    decision: Decision.nullable(),
    bundle_revision: z.string().nullable(),
    evaluation_duration_ms: z.number().nullable(),
  })
  .openapi('DecisionItem');

const DecisionList = z
  .object({ decisions: z.array(DecisionItem), next_cursor: z.string().nullable() })
  .openapi('DecisionList');

const filterQuery = {
  session: z.string().max(200).optional(),
  agent: z.string().max(200).optional(),
  method: z.string().max(100).optional(),
  disposition: z.enum(['allow', 'deny', 'modify', 'ask', 'defer']).optional(),
  reason_code: z.string().max(200).optional(),
  revision: z.string().max(200).optional(),
};

type FilterQuery = { [K in keyof typeof filterQuery]?: string };

const toFilter = (q: FilterQuery): DecisionFilter => ({
  sessionId: q.session,
  agentId: q.agent,
  method: q.method,
  disposition: q.disposition,
  reasonCode: q.reason_code,
  revision: q.revision,
});

export function decisionView(d: DecisionRow): z.infer<typeof DecisionItem> {
  const r = d.result as z.infer<typeof Decision> | null;
  return {
    session_id: d.sessionId,
    seq: d.seq,
    agent_id: d.agentId,
    entry_id: d.entryId,
    method: d.method,
    created_at: d.createdAt.toISOString(),
    decision: r && typeof r.decision === 'string' ? r : null,
    bundle_revision: d.bundleRevision,
    evaluation_duration_ms: d.evaluationDurationMs,
  };
}

const searchRoute = adminRoute(
  {
    method: 'get',
    path: '/decisions',
    operationId: 'searchDecisions',
    tags: ['decisions'],
    summary: 'Decisions across sessions, newest first',
    request: { query: z.object({ ...filterQuery, since: Instant, until: Instant, cursor: Cursor, limit: Limit }) },
    responses: { 200: jsonContent(DecisionList, 'A page of decisions') },
  },
  { role: 'viewer' },
);

const feedRoute = adminRoute(
  {
    method: 'get',
    path: '/decisions/feed',
    operationId: 'decisionFeed',
    tags: ['decisions'],
    summary: 'Live decisions (server-sent events)',
    description:
      'One `decision` event per step decided after the stream opened (or after `since`), data = a DecisionItem; a `ping` event every 15 s keeps proxies from closing an idle stream.',
    request: { query: z.object({ ...filterQuery, since: Instant }) },
    responses: { 200: eventStream() },
  },
  { role: 'viewer' },
);

/** How far back each feed poll looks (a step's row can be older than its commit by up to its transaction's length). */
const LOOKBACK_US = 5_000_000n;

export function decisionRoutes(deps: AdminDeps): OpenAPIHono<AdminEnv> {
  const app = new OpenAPIHono<AdminEnv>();
  app.openapi(searchRoute, async (c) => {
    if (!deps.queries) return unavailable('decision search');
    const q = c.req.valid('query');
    const page = await deps.queries.searchDecisions(
      { ...toFilter(q), since: q.since, until: q.until },
      { cursor: q.cursor, limit: q.limit },
    );
    return c.json({ decisions: page.items.map(decisionView), next_cursor: page.nextCursor }, 200);
  });
  app.openapi(feedRoute, async (c) => {
    const queries = deps.queries;
    if (!queries) return unavailable('the decision feed');
    const q = c.req.valid('query');
    const filter = toFilter(q);
    const start = BigInt((q.since ?? new Date()).getTime()) * 1000n;
    return streamSSE(c, async (stream) => {
      let position = start;
      // Keys sent within the look-back window, with their position, so a re-read row is not sent twice.
      const sent = new Map<string, bigint>();
      let lastPing = Date.now();
      let wake: (() => void) | undefined;
      stream.onAbort(() => wake?.());
      await stream.writeSSE({
        event: 'open',
        data: JSON.stringify({ since: new Date(Number(start / 1000n)).toISOString() }),
      });
      while (!stream.aborted) {
        const from = position - LOOKBACK_US > start ? position - LOOKBACK_US : start;
        const rows = await queries.decisionsSince(from.toString(), filter, 500);
        let fresh = 0;
        for (const row of rows) {
          const key = `${row.sessionId}/${row.seq}`;
          if (sent.has(key)) continue;
          fresh++;
          const at = BigInt(row.at);
          sent.set(key, at);
          if (at > position) position = at;
          await stream.writeSSE({ event: 'decision', id: key, data: JSON.stringify(decisionView(row)) });
        }
        for (const [key, at] of sent) if (at < position - LOOKBACK_US) sent.delete(key);
        if (Date.now() - lastPing >= 15_000) {
          lastPing = Date.now();
          await stream.writeSSE({ event: 'ping', data: '{}' });
        }
        // A full page with new rows means more are waiting: read on at once.
        if (rows.length < 500 || fresh === 0)
          await new Promise<void>((resolve) => {
            wake = resolve;
            setTimeout(resolve, deps.feedPollMs).unref();
          });
      }
    });
  });
  return app;
}
