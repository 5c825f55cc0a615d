// Admin HTTP routes for a session's AgBOM (ACS Inspect: "serialize the canonical AgBOM … on request"), a Hono
// sub-app the admin app mounts at /agbom (authentication is the mount point's job):
//   GET /sessions/:id?format=canonical|cyclonedx-1.6|spdx-3.0|swid&at=SEQ   the AgBOM in force at seq (default latest)
//   GET /sessions/:id/versions                                            every version, bound to its chain entry
//   GET /sessions/:id/diff?from=SEQ&to=SEQ                                added / removed / changed components
import { Hono } from 'hono';
import { listAgbomVersions } from './versions.ts';
import { AGBOM_SERIALIZATIONS, isAgbomSerialization } from './formats.ts';
import { type AgbomHistoryStore, AgbomNotFoundError, agbomChanges, agbomVersionAt } from './history.ts';
import { renderAgbom } from './renderers/index.ts';

export interface AgbomRoutesOptions {
  store: AgbomHistoryStore;
  generator?: { name: string; version: string };
}

const json = (body: unknown, status = 200): Response =>
  new Response(JSON.stringify(body, null, 2), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8' },
  });

/** A seq query parameter: undefined when absent, null when malformed. */
function seqParam(value: string | undefined): number | undefined | null {
  if (value === undefined) return undefined;
  return /^\d{1,9}$/.test(value) ? Number(value) : null;
}

export function createAgbomRoutes(options: AgbomRoutesOptions): Hono {
  const { store } = options;
  const app = new Hono();
  const failed = (err: unknown): Response => {
    if (err instanceof AgbomNotFoundError) return json({ error: 'not_found', reason: err.message }, 404);
    throw err;
  };
  app.get('/sessions/:id', async (c) => {
    const format = c.req.query('format') ?? 'canonical';
    if (!isAgbomSerialization(format))
      return json({ error: 'bad_request', reason: `format must be one of ${AGBOM_SERIALIZATIONS.join(', ')}` }, 400);
    const at = seqParam(c.req.query('at'));
    if (at === null) return json({ error: 'bad_request', reason: 'at must be a chain entry seq' }, 400);
    try {
      const version = await agbomVersionAt(store, c.req.param('id'), at, options.generator);
      const rendered = renderAgbom(format, version);
      return new Response(rendered.body, { headers: { 'content-type': rendered.contentType } });
    } catch (err) {
      return failed(err);
    }
  });
  app.get('/sessions/:id/versions', async (c) => {
    const id = c.req.param('id');
    if (!(await store.getSession(id))) return json({ error: 'not_found', reason: `no session ${id}` }, 404);
    const versions = await listAgbomVersions(store, id);
    return json({
      session_id: id,
      versions: versions.map((v) => ({
        seq: v.seq,
        entry_hash: v.entryHash,
        method: v.method,
        form: v.form,
        adopted: v.adopted,
        agbom_hash: v.agbomHash,
        reported_hash: v.reportedHash,
        problems: v.problems,
        diff: v.diff,
      })),
    });
  });
  app.get('/sessions/:id/diff', async (c) => {
    const from = seqParam(c.req.query('from'));
    const to = seqParam(c.req.query('to'));
    if (from === undefined || from === null || to === undefined || to === null)
      return json({ error: 'bad_request', reason: 'from and to must be chain entry seqs' }, 400);
    try {
      return json(await agbomChanges(store, c.req.param('id'), from, to));
    } catch (err) {
      return failed(err);
    }
  });
  return app;
}
