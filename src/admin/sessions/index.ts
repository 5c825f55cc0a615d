// Sessions and their audit chains (docs/admin-api.md "Routes"): the list with filters and a cursor, one
// session, its chain entries with the decision each step got (ACS §6: decision, reasoning, reason_codes,
// policy_references, the bundle revision) and the request as received (AgBOM and provenance data included), and
// the chain's verification (ACS §8.2, the same check as `guardian audit verify`) streamed as server-sent events.
import { OpenAPIHono, z } from '@hono/zod-openapi';
import { streamSSE } from 'hono/streaming';
import { registryCheckpointCheck, verifyChain } from '../../audit/index.ts';
import type { Json } from '../../json.ts';
import type { ContextEntryRecord } from '../../store/types.ts';
import {
  type AdminDeps,
  type AdminEnv,
  Cursor,
  Instant,
  Limit,
  adminRoute,
  errorResponse,
  eventStream,
  jsonContent,
  refuse,
  unavailable,
} from '../api/index.ts';

/** Any JSON value (the answers are JSON text, so nothing else can arrive); not recursive: OpenAPI 3.1 needs no more. */
export const JsonValue = z.unknown().openapi('JsonValue', { description: 'Any JSON value' });

const SessionSummary = z
  .object({
    id: z.string(),
    tenant_id: z.string().nullable(),
    agent_id: z.string(),
    parent_session_id: z.string().nullable(),
    created_at: z.string(),
    closed_at: z.string().nullable(),
    entries: z.number().int(),
    head_hash: z.string().nullable(),
    pruned_at: z.string().nullable(),
  })
  .openapi('SessionSummary');

const SessionList = z
  .object({ sessions: z.array(SessionSummary), next_cursor: z.string().nullable() })
  .openapi('SessionList');

export const Decision = z
  .object({
    decision: z.string(),
    reasoning: z.string().optional(),
    reason_codes: z.array(z.string()).optional(),
    policy_references: z.array(z.record(z.string(), JsonValue)).optional(),
  })
  .catchall(JsonValue)
  .openapi('Decision', { description: 'The signed result delivered to the agent (ACS §6)' });

const Entry = z
  .object({
    seq: z.number().int(),
    entry_id: z.string(),
    step_id: z.string(),
    method: z.string(),
    timestamp: z.string().nullable(),
    created_at: z.string(),
    request_hash: z.string().nullable(),
    entry_hash: z.string(),
    previous_hash: z.string().nullable(),
    provenance_summary: JsonValue.nullable(),
    decision: Decision.nullable(),
    bundle_revision: z.string().nullable(),
    evaluation_duration_ms: z.number().nullable(),
    params: JsonValue.openapi({ description: 'The request params as received (signature included)' }),
  })
  .openapi('ChainEntry');

const EntryList = z
  .object({ entries: z.array(Entry), next_after_seq: z.number().int().nullable() })
  .openapi('ChainEntryList');

const SessionDetail = z
  .object({
    session: SessionSummary.extend({ key_id: z.string().nullable(), intent: JsonValue, state: JsonValue }),
    checkpoints: z.number().int(),
  })
  .openapi('SessionDetail');

export const SessionId = z.object({
  id: z
    .string()
    .min(1)
    .max(200)
    .openapi({ param: { name: 'id', in: 'path' } }),
});

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

export function entryView(e: ContextEntryRecord): z.infer<typeof Entry> {
  const result = e.result as Record<string, Json> | null;
  return {
    seq: e.seq,
    entry_id: e.content.entry_id,
    step_id: e.content.step_id,
    method: e.content.step_type,
    timestamp: e.content.timestamp ?? null,
    created_at: e.createdAt.toISOString(),
    request_hash: e.content.request_hash ?? null,
    entry_hash: e.entryHash,
    previous_hash: e.previousHash,
    provenance_summary: (e.content.provenance_summary as Json | undefined) ?? null,
    decision: result && typeof result.decision === 'string' ? (result as z.infer<typeof Decision>) : null,
    bundle_revision: e.bundleRevision,
    evaluation_duration_ms: e.evaluationDurationMs,
    params: e.params,
  };
}

const listRoute = adminRoute(
  {
    method: 'get',
    path: '/sessions',
    operationId: 'listSessions',
    tags: ['sessions'],
    summary: 'Sessions, newest first',
    description:
      'Filters combine with AND; method, disposition, reason_code and revision match sessions with at least one step that has all of them.',
    request: {
      query: z.object({
        agent: z.string().max(200).optional(),
        since: Instant,
        until: Instant,
        method: z.string().max(100).optional(),
        disposition: z.enum(['allow', 'deny', 'modify', 'ask', 'defer']).optional(),
        reason_code: z.string().max(200).optional(),
        revision: z.string().max(200).optional(),
        closed: z.enum(['true', 'false']).optional(),
        cursor: Cursor,
        limit: Limit,
      }),
    },
    responses: { 200: jsonContent(SessionList, 'A page of sessions') },
  },
  { role: 'viewer' },
);

const getRoute = adminRoute(
  {
    method: 'get',
    path: '/sessions/{id}',
    operationId: 'getSession',
    tags: ['sessions'],
    summary: 'One session',
    request: { params: SessionId },
    responses: { 200: jsonContent(SessionDetail, 'The session'), 404: errorResponse('No such session') },
  },
  { role: 'viewer' },
);

const entriesRoute = adminRoute(
  {
    method: 'get',
    path: '/sessions/{id}/entries',
    operationId: 'listChainEntries',
    tags: ['sessions'],
    summary: "A session's chain entries with their decisions, in chain order",
    request: {
      params: SessionId,
      query: z.object({
        after_seq: z.coerce.number().int().min(-1).default(-1).openapi({ description: 'Entries after this seq' }),
        limit: Limit,
      }),
    },
    responses: { 200: jsonContent(EntryList, 'A page of entries') },
  },
  { role: 'viewer' },
);

const verifyRoute = adminRoute(
  {
    method: 'get',
    path: '/sessions/{id}/verify',
    operationId: 'verifyChain',
    tags: ['sessions'],
    summary: "Verify a session's hash chain and checkpoints (server-sent events)",
    description:
      'Events: `progress` {"entries": n} after each page of entries checked, then `result` with the report (the shape of `guardian audit verify --json`).',
    request: { params: SessionId },
    responses: {
      200: eventStream(),
      404: errorResponse('No such chain'),
    },
  },
  { role: 'viewer' },
);

export function sessionRoutes(deps: AdminDeps): OpenAPIHono<AdminEnv> {
  const app = new OpenAPIHono<AdminEnv>();
  app.openapi(listRoute, async (c) => {
    if (!deps.queries) return unavailable('session listing');
    const q = c.req.valid('query');
    const page = await deps.queries.listSessions(
      {
        agentId: q.agent,
        since: q.since,
        until: q.until,
        method: q.method,
        disposition: q.disposition,
        reasonCode: q.reason_code,
        revision: q.revision,
        closed: q.closed === undefined ? undefined : q.closed === 'true',
      },
      { cursor: q.cursor, limit: q.limit },
    );
    return c.json(
      {
        sessions: page.items.map((s) => ({
          id: s.id,
          tenant_id: s.tenantId,
          agent_id: s.agentId,
          parent_session_id: s.parentSessionId,
          created_at: s.createdAt.toISOString(),
          closed_at: iso(s.closedAt),
          entries: s.entries,
          head_hash: s.headHash,
          pruned_at: iso(s.prunedAt),
        })),
        next_cursor: page.nextCursor,
      },
      200,
    );
  });
  app.openapi(getRoute, async (c) => {
    const { id } = c.req.valid('param');
    const [session, chain, checkpoints] = await Promise.all([
      deps.store.getSession(id),
      deps.store.getChain(id),
      deps.store.listCheckpoints(id),
    ]);
    if (!session) refuse(404, 'not_found', 'no such session');
    return c.json(
      {
        session: {
          id: session.id,
          tenant_id: session.tenantId,
          agent_id: session.agentId,
          parent_session_id: session.parentSessionId,
          key_id: session.keyId,
          created_at: session.createdAt.toISOString(),
          closed_at: iso(session.closedAt),
          entries: chain ? chain.seq + 1 : 0,
          head_hash: chain?.headHash ?? null,
          pruned_at: iso(chain?.prunedAt ?? null),
          intent: session.intent,
          state: session.state,
        },
        checkpoints: checkpoints.length,
      },
      200,
    );
  });
  app.openapi(entriesRoute, async (c) => {
    const { id } = c.req.valid('param');
    const { after_seq, limit } = c.req.valid('query');
    const rows = await deps.store.listContextEntries(id, { afterSeq: after_seq, limit: limit + 1 });
    const page = rows.slice(0, limit);
    return c.json(
      { entries: page.map(entryView), next_after_seq: rows.length > limit ? (page.at(-1)?.seq ?? null) : null },
      200,
    );
  });
  app.openapi(verifyRoute, async (c) => {
    const { id } = c.req.valid('param');
    const chain = await deps.store.getChain(id);
    if (!chain) refuse(404, 'not_found', 'no such chain');
    const registry = deps.signatures;
    return streamSSE(c, async (stream) => {
      await stream.writeSSE({ event: 'start', data: JSON.stringify({ session_id: id, head_seq: chain.seq }) });
      const report = await verifyChain(deps.store, id, {
        pageSize: 500,
        ...(registry ? { checkpointSignature: registryCheckpointCheck(registry) } : {}),
        onProgress: (entries: number) => {
          void stream.writeSSE({ event: 'progress', data: JSON.stringify({ entries, head_seq: chain.seq }) });
        },
      });
      await stream.writeSSE({ event: 'result', data: JSON.stringify(report) });
    });
  });
  return app;
}
