// Admin API v1 over real HTTP against a real Guardian: signed traffic from the SDK client, the bundle lifecycle
// on PGlite, the replay jobs app. Every route × every role (none, viewer, operator, admin), the sessions,
// entries, streamed verification, search and live feed of that traffic, the admin audit log of every
// state-changing call, the failure rate limit, token file reload, the unversioned aliases and the OpenAPI document.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROUTE_ROLES, createAdminApp } from '../../src/admin/index.ts';
import type { LifecycleNode } from '../../src/lifecycle/index.ts';
import type { DurableStore } from '../../src/store/types.ts';
import { TEST_IKM } from '../acs/fixtures/harness.ts';
import { DB_MCP, MEMORY } from '../agbom/fixtures.ts';
import { expectSwidValid } from '../agbom/swid-schema.ts';
import { constantBundle } from '../lifecycle/fixtures.ts';
import { type AdminGuardian, startAdminGuardian } from './fixtures.ts';

const TOKENS = {
  viewer: 'viewer-token-0123456789abcdef',
  operator: 'operator-token-0123456789abcdef',
  admin: 'admin-token-0123456789abcdef',
} as const;
type Who = keyof typeof TOKENS | 'none';

let g: AdminGuardian;
let store: DurableStore;
let node: LifecycleNode;
let base: string;
let dir: string;

const tokensJson = JSON.stringify({
  tokens: [
    { name: 'vera', role: 'viewer', token: TOKENS.viewer },
    { name: 'otto', role: 'operator', token: TOKENS.operator },
    { name: 'ada', role: 'admin', token: TOKENS.admin },
  ],
});

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'admin-v1-'));
  writeFileSync(join(dir, 'tokens.json'), JSON.stringify({ tokens: [] }));
  g = await startAdminGuardian({
    env: { GUARDIAN_ADMIN_TOKENS: tokensJson, GUARDIAN_ADMIN_TOKENS_FILE: join(dir, 'tokens.json') },
    admin: { maxFailuresPerMinute: 1000 },
  });
  ({ store, node } = g);
  base = `${g.origin}/admin`;
});
afterAll(async () => {
  await g?.close();
  rmSync(dir, { recursive: true, force: true });
});

const headers = (who: Who): Record<string, string> =>
  who === 'none' ? {} : { authorization: `Bearer ${TOKENS[who]}` };
const get = (who: Who, path: string) => fetch(`${base}${path}`, { headers: headers(who) });
async function getJson<T>(who: Who, path: string): Promise<T> {
  const res = await get(who, path);
  expect(res.status, `${path}: ${await res.clone().text()}`).toBe(200);
  return (await res.json()) as T;
}

const traffic = (agentId: string, steps: number) => g.traffic(agentId, steps);
const client = (agentId: string) => g.client(agentId);

/** Reads server-sent events until `until` says stop (or the timeout); returns them. */
async function readEvents(
  res: Response,
  until: (events: { event: string; data: string }[]) => boolean,
  timeoutMs = 20_000,
): Promise<{ event: string; data: string }[]> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  const events: { event: string; data: string }[] = [];
  let buffer = '';
  const deadline = Date.now() + timeoutMs;
  try {
    while (!until(events) && Date.now() < deadline) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let i: number;
      while ((i = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, i);
        buffer = buffer.slice(i + 2);
        const event = /^event: (.*)$/m.exec(block)?.[1] ?? 'message';
        const data = block
          .split('\n')
          .filter((l) => l.startsWith('data: '))
          .map((l) => l.slice(6))
          .join('\n');
        events.push({ event, data });
      }
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  return events;
}

interface OpenApiDoc {
  openapi: string;
  paths: Record<string, Record<string, { operationId: string; security?: unknown[] }>>;
}

describe('admin API v1: every route × every role', () => {
  const ROLE_ORDER = ['viewer', 'operator', 'admin'] as const;

  it('the OpenAPI document lists exactly the routes with roles, and is served without a token', async () => {
    const res = await fetch(`${base}/v1/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as OpenApiDoc;
    expect(doc.openapi).toBe('3.1.0');
    const ops = Object.values(doc.paths).flatMap((p) => Object.values(p).map((o) => o.operationId));
    expect(new Set(ops)).toEqual(new Set(ROUTE_ROLES.keys()));
    expect(ops.length).toBe(ROUTE_ROLES.size);
    for (const p of Object.values(doc.paths))
      for (const o of Object.values(p)) expect(o.security).toEqual([{ bearer: [] }]);
  });

  it('refuses without a token (401), below the route role (403), and lets the role through', async () => {
    const sessionId = await traffic('matrix-agent', 1);
    const fill = (path: string): string =>
      path.replace('{id}', path.startsWith('/sessions') ? sessionId : 'no-such-job').replace('{ref}', 'no-such-bundle');
    const bodies: Record<string, string | undefined> = {
      pushBundle: 'not a bundle',
      startReplay: JSON.stringify({ unknown_member: 1 }),
    };
    const rows: string[] = [];
    for (const [op, route] of ROUTE_ROLES) {
      for (const who of ['none', ...ROLE_ORDER] as const) {
        const ctl = new AbortController();
        const res = await fetch(`${base}/v1${fill(route.path)}`, {
          method: route.method,
          headers: { ...headers(who), 'content-type': op === 'startReplay' ? 'application/json' : 'application/gzip' },
          body: bodies[op],
          signal: ctl.signal,
        });
        const allowed = who !== 'none' && ROLE_ORDER.indexOf(who) >= ROLE_ORDER.indexOf(route.role);
        const expected = who === 'none' ? 401 : allowed ? 'through' : 403;
        const got = res.status === 401 || res.status === 403 ? res.status : 'through';
        rows.push(
          `${op} ${who}: ${got === expected ? 'ok' : `expected ${expected}, got ${res.status} ${await res.text()}`}`,
        );
        if (got === 403) expect(await res.json()).toMatchObject({ error: 'forbidden' });
        ctl.abort();
      }
    }
    expect(rows.filter((r) => !r.endsWith(': ok'))).toEqual([]);
    expect(rows.length).toBe(ROUTE_ROLES.size * 4);
    // Every state-changing call was audited, refusals included, under the token's name.
    const audit = await getJson<{ entries: { actor: string; action: string; outcome: string; status: number }[] }>(
      'viewer',
      '/v1/audit?limit=500',
    );
    for (const [op, route] of ROUTE_ROLES) {
      if (route.method === 'GET') continue;
      const forThis = audit.entries.filter((e) => e.action === op);
      expect(forThis.map((e) => e.actor).sort(), op).toEqual(['ada', 'otto', 'vera']);
      const viewer = forThis.find((e) => e.actor === 'vera');
      if (route.role !== 'viewer') expect(viewer).toMatchObject({ outcome: 'refused', status: 403 });
    }
  });
});

describe('admin API v1: sessions, chains and decisions of real traffic', () => {
  let alice: string;
  let bob: string;
  beforeAll(async () => {
    alice = await traffic('agent-alice', 3);
    bob = await traffic('agent-bob', 2);
  });

  it('lists sessions newest first, filtered by agent, disposition, reason code, revision, with a cursor', async () => {
    type List = { sessions: { id: string; agent_id: string; entries: number }[]; next_cursor: string | null };
    const all = await getJson<List>('viewer', '/v1/sessions?limit=50');
    expect(all.sessions[0].id).toBe(bob);
    expect(all.sessions.find((s) => s.id === alice)).toMatchObject({ agent_id: 'agent-alice', entries: 3 });
    expect((await getJson<List>('viewer', '/v1/sessions?agent=agent-alice')).sessions.map((s) => s.id)).toEqual([
      alice,
    ]);
    const allowed = await getJson<List>(
      'viewer',
      '/v1/sessions?disposition=allow&reason_code=fixture_allow&revision=rev-a',
    );
    expect(allowed.sessions.map((s) => s.id)).toContain(alice);
    expect((await getJson<List>('viewer', '/v1/sessions?disposition=deny')).sessions).toEqual([]);
    const page1 = await getJson<List>('viewer', '/v1/sessions?limit=1');
    expect(page1.sessions).toHaveLength(1);
    const page2 = await getJson<List>('viewer', `/v1/sessions?limit=1&cursor=${page1.next_cursor}`);
    expect(page2.sessions[0].id).toBe(alice);
    const bad = await get('viewer', '/v1/sessions?limit=1000');
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: 'invalid_request' });
    const forged = await get('viewer', '/v1/sessions?cursor=forged');
    expect(forged.status).toBe(400);
    expect((await get('viewer', '/v1/sessions?since=yesterday')).status).toBe(400);
  });

  it('gives the dashboard figures: decisions per minute by disposition, reason codes, latency, bundle, store', async () => {
    const stats = await getJson<{
      decisions: number;
      per_minute: { disposition: string; count: number }[];
      top_reason_codes: { code: string; count: number }[];
      latency_ms: { p99: number | null };
      active_revision: string;
      store: { driver: string; ok: boolean };
    }>('viewer', '/v1/stats?minutes=5');
    expect(stats.decisions).toBeGreaterThanOrEqual(5);
    expect(stats.per_minute.every((r) => r.disposition === 'allow')).toBe(true);
    expect(stats.per_minute.reduce((n, r) => n + r.count, 0)).toBe(stats.decisions);
    expect(stats.top_reason_codes[0]).toEqual({ code: 'fixture_allow', count: stats.decisions });
    expect(stats.latency_ms.p99).toBeGreaterThanOrEqual(0);
    expect(stats).toMatchObject({ active_revision: 'rev-a', store: { driver: 'pglite', ok: true } });
    expect((await get('viewer', '/v1/stats?minutes=0')).status).toBe(400);
  });

  it("shows a session's chain entries with decision, reasoning, reason codes and policy references", async () => {
    const detail = await getJson<{ session: { agent_id: string; entries: number }; checkpoints: number }>(
      'viewer',
      `/v1/sessions/${alice}`,
    );
    expect(detail.session).toMatchObject({ agent_id: 'agent-alice', entries: 3 });
    const page = await getJson<{
      entries: {
        seq: number;
        method: string;
        entry_hash: string;
        previous_hash: string | null;
        decision: { decision: string; reasoning: string; reason_codes: string[]; policy_references: unknown[] };
        bundle_revision: string;
        params: { payload: unknown };
      }[];
      next_after_seq: number | null;
    }>('viewer', `/v1/sessions/${alice}/entries?limit=2`);
    expect(page.entries.map((e) => e.seq)).toEqual([0, 1]);
    expect(page.next_after_seq).toBe(1);
    expect(page.entries[1].previous_hash).toBe(page.entries[0].entry_hash);
    expect(page.entries[0]).toMatchObject({
      method: 'steps/userMessage',
      bundle_revision: 'rev-a',
      decision: {
        decision: 'allow',
        reasoning: 'rev-a allows',
        reason_codes: ['fixture_allow'],
        policy_references: [{ policy_id: 'fixture', policy_version: 'rev-a' }],
      },
      params: { payload: { content: [{ type: 'text', value: 'hello 0' }] } },
    });
    const rest = await getJson<{ entries: { seq: number }[]; next_after_seq: number | null }>(
      'viewer',
      `/v1/sessions/${alice}/entries?after_seq=1`,
    );
    expect(rest).toMatchObject({ entries: [{ seq: 2 }], next_after_seq: null });
    expect((await get('viewer', '/v1/sessions/no-such-session')).status).toBe(404);
  });

  it("verifies a session's chain as a stream, and finds a tampered entry", async () => {
    await store.checkpoint(alice);
    const cps = await getJson<{ checkpoints: { seq: number; algorithm: string }[] }>(
      'viewer',
      `/v1/sessions/${alice}/checkpoints`,
    );
    expect(cps.checkpoints.length).toBeGreaterThanOrEqual(0);
    const res = await get('viewer', `/v1/sessions/${alice}/verify`);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = await readEvents(res, (e) => e.some((x) => x.event === 'result'));
    expect(events[0]).toMatchObject({ event: 'start' });
    expect(events.some((e) => e.event === 'progress' && JSON.parse(e.data).entries === 3)).toBe(true);
    const result = JSON.parse(events.find((e) => e.event === 'result')!.data);
    expect(result).toMatchObject({ sessionId: alice, ok: true, entries: 3 });

    await store.query(
      `update context_entries set params_jcs = replace(params_jcs, 'hello 1', 'HELLO 1') where session_id = $1 and seq = 1`,
      [bob],
    );
    const broken = await readEvents(await get('viewer', `/v1/sessions/${bob}/verify`), (e) =>
      e.some((x) => x.event === 'result'),
    );
    const report = JSON.parse(broken.find((e) => e.event === 'result')!.data);
    expect(report).toMatchObject({ ok: false, firstBreak: { seq: 1, kind: 'request_hash_mismatch' } });
    expect((await get('viewer', '/v1/sessions/no-such-session/verify')).status).toBe(404);
  });

  it('searches decisions across sessions and streams new ones live', async () => {
    type Found = {
      decisions: { session_id: string; seq: number; decision: { decision: string } }[];
      next_cursor: string | null;
    };
    const found = await getJson<Found>('viewer', '/v1/decisions?agent=agent-alice');
    expect(found.decisions.map((d) => d.seq)).toEqual([2, 1, 0]);
    const paged = await getJson<Found>('viewer', '/v1/decisions?agent=agent-alice&limit=2');
    const next = await getJson<Found>('viewer', `/v1/decisions?agent=agent-alice&limit=2&cursor=${paged.next_cursor}`);
    expect(next.decisions.map((d) => d.seq)).toEqual([0]);

    const feed = await get('viewer', '/v1/decisions/feed?agent=agent-live');
    expect(feed.status).toBe(200);
    const reading = readEvents(feed, (e) => e.filter((x) => x.event === 'decision').length >= 2);
    const live = await traffic('agent-live', 2);
    const events = await reading;
    const decisions = events.filter((e) => e.event === 'decision').map((e) => JSON.parse(e.data));
    expect(decisions.map((d) => [d.session_id, d.seq, d.decision.decision])).toEqual([
      [live, 0, 'allow'],
      [live, 1, 'allow'],
    ]);
  });
});

describe("admin API v1: a session's AgBOM", () => {
  it('versions, the document at an entry in each serialization, a diff; the unversioned paths behind the same tokens', async () => {
    const id = await g.inventoryTraffic('agent-inventory');
    type Versions = { session_id: string; versions: { seq: number; method: string; form: string; adopted: boolean }[] };
    const { versions } = await getJson<Versions>('viewer', `/v1/sessions/${id}/agbom/versions`);
    expect(versions.map((v) => [v.method, v.form, v.adopted])).toEqual([
      ['agbom/snapshot', 'full', true],
      ['agbom/changed', 'diff', true],
      ['agbom/changed', 'diff', true],
    ]);
    type Canonical = { agbom: { components: { id: string }[] }; metadata: { chain_seq: number } };
    const ids = (doc: Canonical) => doc.agbom.components.map((c) => c.id);
    const latest = await getJson<Canonical>('viewer', `/v1/sessions/${id}/agbom`);
    expect(ids(latest)).toContain(DB_MCP.id);
    expect(ids(latest)).not.toContain(MEMORY.id);
    const first = await getJson<Canonical>('viewer', `/v1/sessions/${id}/agbom?at=${versions[0].seq}`);
    expect(ids(first)).toContain(MEMORY.id);
    expect(ids(first)).not.toContain(DB_MCP.id);
    const cdx = await get('viewer', `/v1/sessions/${id}/agbom?format=cyclonedx-1.6`);
    expect(cdx.headers.get('content-type')).toMatch(/^application\/vnd\.cyclonedx\+json/);
    expect(await cdx.json()).toMatchObject({ bomFormat: 'CycloneDX', specVersion: '1.6' });
    const swid = await get('viewer', `/v1/sessions/${id}/agbom?format=swid`);
    expect(swid.headers.get('content-type')).toMatch(/^application\/swid\+xml/);
    await expectSwidValid(await swid.text());
    const diff = await getJson<{ added: { id: string }[]; removed: { id: string }[] }>(
      'viewer',
      `/v1/sessions/${id}/agbom/diff?from=${versions[0].seq}&to=${versions[2].seq}`,
    );
    expect([diff.added.map((c) => c.id), diff.removed.map((c) => c.id)]).toEqual([[DB_MCP.id], [MEMORY.id]]);
    // Precise refusals: a session without an AgBOM, an unknown one, a bad format or seq.
    const plain = await traffic('agent-no-inventory', 1);
    const none = await get('viewer', `/v1/sessions/${plain}/agbom`);
    expect([none.status, ((await none.json()) as { error: string }).error]).toEqual([404, 'not_found']);
    expect((await get('viewer', '/v1/sessions/no-such-session/agbom/versions')).status).toBe(404);
    expect((await get('viewer', `/v1/sessions/${id}/agbom?format=pdf`)).status).toBe(400);
    expect((await get('viewer', `/v1/sessions/${id}/agbom/diff?from=x&to=1`)).status).toBe(400);
    // The first admin API's /admin/agbom paths: the same app, behind the same token check.
    expect((await get('none', `/agbom/sessions/${id}/versions`)).status).toBe(401);
    expect((await getJson<Versions>('viewer', `/agbom/sessions/${id}/versions`)).versions).toHaveLength(3);
  });
});

describe('admin API v1: lifecycle, replay, keys, tokens', () => {
  it('an operator activates and rolls back, a viewer is refused; the audit log says who did what', async () => {
    const v2 = await constantBundle('rev-b', {
      decision: { decision: 'deny', reasoning: 'rev-b denies', reason_codes: ['blocked'] },
    });
    const refused = await fetch(`${base}/v1/bundles`, {
      method: 'POST',
      headers: headers('viewer'),
      body: Buffer.from(v2),
    });
    expect(refused.status).toBe(403);
    const pushed = await fetch(`${base}/v1/bundles`, {
      method: 'POST',
      headers: headers('operator'),
      body: Buffer.from(v2),
    });
    expect(pushed.status).toBe(201);
    expect(
      (await fetch(`${base}/v1/bundles/rev-b/activate`, { method: 'POST', headers: headers('viewer') })).status,
    ).toBe(403);
    const act = await fetch(`${base}/v1/bundles/rev-b/activate`, { method: 'POST', headers: headers('operator') });
    expect(act.status).toBe(200);
    expect(await act.json()).toMatchObject({ revision: 'rev-b', previousRevision: 'rev-a' });
    const denied = await traffic('agent-after-b', 0);
    const c = client('agent-denied');
    await c.hello({ methods_implemented: ['steps/userMessage'] });
    const out = await c.step('steps/userMessage', { content: [{ type: 'text', value: 'x' }] });
    expect(out.result?.decision).toBe('deny');
    const search = await getJson<{ decisions: { agent_id: string; bundle_revision: string }[] }>(
      'viewer',
      '/v1/decisions?disposition=deny&reason_code=blocked&revision=rev-b',
    );
    expect(search.decisions.map((d) => d.agent_id)).toEqual(['agent-denied']);
    expect(denied).toBeTruthy();
    const status = await getJson<{ active: { revision: string; activatedBy: string } }>('viewer', '/v1/status');
    expect(status.active).toMatchObject({ revision: 'rev-b', activatedBy: 'admin-api:otto' });
    const rb = await fetch(`${base}/v1/rollback`, { method: 'POST', headers: headers('operator') });
    expect(rb.status).toBe(200);
    const audit = await getJson<{
      entries: {
        actor: string;
        role: string;
        action: string;
        target: string | null;
        outcome: string;
        status: number;
      }[];
    }>('viewer', '/v1/audit?limit=6');
    expect(audit.entries.map((e) => [e.actor, e.role, e.action, e.target, e.outcome, e.status])).toEqual([
      ['otto', 'operator', 'rollback', null, 'ok', 200],
      ['otto', 'operator', 'activateBundle', 'rev-b', 'ok', 200],
      ['vera', 'viewer', 'activateBundle', 'rev-b', 'refused', 403],
      ['otto', 'operator', 'pushBundle', null, 'ok', 201],
      ['vera', 'viewer', 'pushBundle', null, 'refused', 403],
      expect.anything(),
    ]);
    const filtered = await getJson<{ entries: { actor: string }[] }>(
      'viewer',
      '/v1/audit?actor=vera&action=pushBundle',
    );
    expect(filtered.entries.length).toBeGreaterThanOrEqual(1);
  });

  it('the unversioned paths answer as their v1 routes, with the same roles', async () => {
    const status = await getJson<{ active: { revision: string } }>('viewer', '/status');
    expect(status.active.revision).toBe('rev-a');
    expect((await fetch(`${base}/rollback`, { method: 'POST', headers: headers('viewer') })).status).toBe(403);
    expect((await get('none', '/bundles')).status).toBe(401);
    expect((await getJson<{ bundles: unknown[] }>('viewer', '/bundles')).bundles.length).toBeGreaterThanOrEqual(2);
    expect((await getJson<{ jobs: unknown[] }>('viewer', '/replay')).jobs).toBeInstanceOf(Array);
    expect((await get('viewer', '/sessions')).status).toBe(404);
  });

  it('an operator replays recorded steps against another revision and reads the diff', async () => {
    const start = await fetch(`${base}/v1/replay`, {
      method: 'POST',
      headers: { ...headers('operator'), 'content-type': 'application/json' },
      body: JSON.stringify({ against: 'rev-b', agent: 'agent-alice' }),
    });
    expect(start.status).toBe(202);
    const job = (await start.json()) as { id: string; status: string };
    const events = await readEvents(await get('viewer', `/v1/replay/${job.id}/events`), (e) =>
      e.some((x) => x.event === 'done' || x.event === 'failed'),
    );
    expect(events.at(-1)?.event).toBe('done');
    const report = await getJson<{ summary: Record<string, unknown> }>('viewer', `/v1/replay/${job.id}/report`);
    expect(report.summary).toMatchObject({
      selected: 3,
      changed: 3,
      transitions: { 'allow→deny': 3 },
      reasonCodes: { blocked: { added: 3, removed: 0 }, fixture_allow: { added: 0, removed: 3 } },
    });
    const md = await get('viewer', `/v1/replay/${job.id}/report?format=md`);
    expect(md.headers.get('content-type')).toMatch(/^text\/markdown/);
    expect(await md.text()).toContain('rev-b');
    const viewerStart = await fetch(`${base}/v1/replay`, {
      method: 'POST',
      headers: { ...headers('viewer'), 'content-type': 'application/json' },
      body: JSON.stringify({ against: 'rev-b' }),
    });
    expect(viewerStart.status).toBe(403);
  });

  it('keys: public halves and fingerprints only; tokens: admin only, names and roles only', async () => {
    const keys = await getJson<{
      keys: { key_id: string; algorithm: string; fingerprint: string; public_key: unknown }[];
    }>('viewer', '/v1/keys');
    for (const k of keys.keys.filter((k) => k.algorithm === 'HMAC-SHA256'))
      expect(k).toMatchObject({ fingerprint: 'secret', public_key: null });
    expect(JSON.stringify(keys)).not.toContain(Buffer.from(TEST_IKM).toString('base64'));
    expect((await get('operator', '/v1/tokens')).status).toBe(403);
    const tokens = await getJson<{ tokens: { name: string; role: string }[] }>('admin', '/v1/tokens');
    expect(tokens.tokens.map((t) => `${t.name}:${t.role}`)).toEqual(['vera:viewer', 'otto:operator', 'ada:admin']);
    expect(JSON.stringify(tokens)).not.toContain(TOKENS.admin);
  });

  it('a token added to the token file works after a reload; a bad file is refused and keeps the tokens', async () => {
    const fresh = 'file-token-0123456789abcdef';
    expect((await fetch(`${base}/v1/status`, { headers: { authorization: `Bearer ${fresh}` } })).status).toBe(401);
    const { createHash } = await import('node:crypto');
    writeFileSync(
      join(dir, 'tokens.json'),
      JSON.stringify({
        tokens: [{ name: 'filey', role: 'viewer', sha256: createHash('sha256').update(fresh).digest('hex') }],
      }),
    );
    expect((await fetch(`${base}/v1/tokens/reload`, { method: 'POST', headers: headers('admin') })).status).toBe(200);
    expect((await fetch(`${base}/v1/status`, { headers: { authorization: `Bearer ${fresh}` } })).status).toBe(200);
    writeFileSync(join(dir, 'tokens.json'), '{"tokens":[{"name":"short","role":"viewer","token":"short"}]}');
    const bad = await fetch(`${base}/v1/tokens/reload`, { method: 'POST', headers: headers('admin') });
    expect(bad.status).toBe(422);
    expect(await bad.json()).toMatchObject({ error: 'invalid_token_file' });
    expect((await fetch(`${base}/v1/status`, { headers: { authorization: `Bearer ${fresh}` } })).status).toBe(200);
  });
});

describe('admin API v1: failure rate limit', () => {
  it('locks an address after too many bad tokens, and a token after too many forbidden calls', async () => {
    const app = createAdminApp({ node, env: { GUARDIAN_ADMIN_TOKENS: tokensJson }, maxFailuresPerMinute: 3 });
    const call = (token: string, method = 'GET', path = '/v1/status') =>
      app.request(path, { method, headers: { authorization: `Bearer ${token}` } });
    for (let i = 0; i < 3; i++) expect((await call(`wrong-${i}-0123456789abcdef`)).status).toBe(401);
    const locked = await call(TOKENS.viewer);
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0);

    const app2 = createAdminApp({ node, env: { GUARDIAN_ADMIN_TOKENS: tokensJson }, maxFailuresPerMinute: 3 });
    for (let i = 0; i < 3; i++)
      expect(
        (await app2.request('/v1/rollback', { method: 'POST', headers: { authorization: `Bearer ${TOKENS.viewer}` } }))
          .status,
      ).toBe(403);
    expect((await app2.request('/v1/status', { headers: { authorization: `Bearer ${TOKENS.viewer}` } })).status).toBe(
      429,
    );
    // Other tokens are not locked by it.
    expect((await app2.request('/v1/status', { headers: { authorization: `Bearer ${TOKENS.operator}` } })).status).toBe(
      200,
    );
  });

  it('over real HTTP, keys bad tokens on the TCP peer address: rotating garbage tokens does not escape the lock', async () => {
    const h = await startAdminGuardian({
      env: { GUARDIAN_ADMIN_TOKENS: tokensJson },
      admin: { maxFailuresPerMinute: 3 },
    });
    try {
      // 127.0.0.0/8 is all loopback: the same listener seen from three peer addresses.
      const from = (localAddress: string, token: string, path = '/admin/v1/status') =>
        new Promise<{ status: number; retryAfter: string | undefined; body: string }>((resolve, reject) => {
          const req = httpRequest(
            {
              host: '127.0.0.1',
              port: h.server.port,
              path,
              localAddress,
              headers: { authorization: `Bearer ${token}` },
            },
            (res) => {
              let body = '';
              res.on('data', (c: Buffer) => (body += c));
              res.on('end', () =>
                resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] as string, body }),
              );
            },
          );
          req.on('error', reject);
          req.end();
        });
      for (let i = 0; i < 3; i++) expect((await from('127.0.0.2', `garbage-${i}-${Math.random()}`)).status).toBe(401);
      // A fresh garbage token, then the right one, from the same address: both locked out.
      const next = await from('127.0.0.2', 'never-presented-before-0123456789');
      expect(next.status).toBe(429);
      expect(Number(next.retryAfter)).toBeGreaterThan(0);
      expect(JSON.parse(next.body)).toMatchObject({ error: 'too_many_failures' });
      expect((await from('127.0.0.2', TOKENS.viewer)).status).toBe(429);
      // The unversioned paths and the AgBOM mount share the lock.
      expect((await from('127.0.0.2', TOKENS.viewer, '/admin/status')).status).toBe(429);
      expect((await from('127.0.0.2', TOKENS.viewer, '/admin/agbom/sessions/x/versions')).status).toBe(429);
      // Another address is not locked by it.
      expect((await from('127.0.0.3', TOKENS.viewer)).status).toBe(200);
      // Failures on the AgBOM mount count too.
      for (let i = 0; i < 3; i++)
        expect(
          (await from('127.0.0.4', `garbage-${i}-0123456789abcdef`, '/admin/agbom/sessions/x/versions')).status,
        ).toBe(401);
      expect((await from('127.0.0.4', TOKENS.viewer)).status).toBe(429);
    } finally {
      await h.close();
    }
  });

  it('refuses a token configuration it cannot trust at start', () => {
    expect(() =>
      createAdminApp({
        node,
        env: { GUARDIAN_ADMIN_TOKENS: '{"tokens":[{"name":"x","role":"root","token":"0123456789abcdef0"}]}' },
      }),
    ).toThrow(/role must be one of/);
    expect(() => createAdminApp({ node, env: { GUARDIAN_ADMIN_TOKENS: 'not json' } })).toThrow(/not JSON/);
    expect(() => createAdminApp({ node, env: { GUARDIAN_ADMIN_TOKENS_FILE: '/nonexistent/tokens.json' } })).toThrow(
      /ENOENT/,
    );
  });
});

describe('admin API v1: parts this Guardian runs without', () => {
  it('answers 503 unavailable (an Error body) for replay and keys when they are not wired', async () => {
    const app = createAdminApp({ node, env: { GUARDIAN_ADMIN_TOKENS: tokensJson } });
    const call = (path: string) => app.request(path, { headers: { authorization: `Bearer ${TOKENS.viewer}` } });
    for (const path of ['/v1/replay', '/v1/keys', '/replay']) {
      const res = await call(path);
      expect(res.status, path).toBe(503);
      expect(await res.json()).toMatchObject({ error: 'unavailable' });
    }
  });
});
