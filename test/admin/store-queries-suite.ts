// The admin read queries (src/store/admin/) against a real store, run on every driver
// (store-queries-pglite.test.ts, store-queries-postgres.test.ts).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AdminQueries, adminQueries } from '../../src/store/admin/index.ts';
import { type DurableStore, StoreError } from '../../src/store/index.ts';
import { stepEntry } from '../store/storage-suite.ts';

interface Step {
  method: string;
  decision: string;
  reasonCodes: string[];
  revision: string;
  reasoning?: string;
}

export function defineAdminQuerySuite(name: string, open: () => Promise<DurableStore>): void {
  describe(`admin store queries (${name})`, () => {
    let store: DurableStore;
    let q: AdminQueries;
    const ids: string[] = [];
    const t0 = Date.parse('2026-11-30T08:00:00Z');

    async function session(agentId: string, minute: number, steps: Step[], closed = false): Promise<string> {
      const id = randomUUID();
      await store.createSession({
        id,
        tenantId: null,
        agentId,
        keyId: null,
        hello: {},
        intent: null,
        state: {},
        parentSessionId: null,
        createdAt: new Date(t0 + minute * 60_000),
      });
      for (const [n, s] of steps.entries()) {
        const entry = stepEntry(id, n);
        entry.content.step_type = s.method;
        const appended = await store.appendContextEntry(id, entry);
        await store.recordDecision(id, appended.seq, {
          result: {
            decision: s.decision,
            reasoning: s.reasoning ?? `${s.decision} by test`,
            reason_codes: s.reasonCodes,
            policy_references: [{ policy_id: 'acs', policy_version: s.revision }],
          },
          bundleRevision: s.revision,
          evaluationDurationMs: 0.5,
        });
      }
      if (closed) await store.closeSession(id, new Date(t0 + (minute + 1) * 60_000));
      ids.push(id);
      return id;
    }

    let a1: string;
    let a2: string;
    let b1: string;
    beforeAll(async () => {
      store = await open();
      q = adminQueries(store);
      a1 = await session(
        'agent-a',
        0,
        [
          { method: 'steps/userMessage', decision: 'allow', reasonCodes: [], revision: 'r1' },
          { method: 'steps/toolCallRequest', decision: 'deny', reasonCodes: ['tool_not_allowed'], revision: 'r1' },
        ],
        true,
      );
      a2 = await session('agent-a', 10, [
        { method: 'steps/toolCallRequest', decision: 'allow', reasonCodes: ['ok'], revision: 'r2' },
      ]);
      // A reasoning with U+0000 (policies write free text): the json cast must not fail on it.
      b1 = await session('agent-b', 20, [
        {
          method: 'steps/userMessage',
          decision: 'ask',
          reasonCodes: ['needs_approval', 'pii'],
          revision: 'r2',
          reasoning: 'nul \u0000\u0000 and the text \\u0000 inside',
        },
      ]);
    });
    afterAll(async () => {
      await store?.close();
    });

    const sessionIds = async (filter: Parameters<AdminQueries['listSessions']>[0]): Promise<string[]> =>
      (await q.listSessions(filter, { limit: 50 })).items.map((s) => s.id);

    it('lists sessions newest first with their chain length', async () => {
      const page = await q.listSessions({}, { limit: 50 });
      expect(page.items.map((s) => s.id)).toEqual([b1, a2, a1]);
      expect(page.items.map((s) => s.entries)).toEqual([1, 1, 2]);
      expect(page.items[2].closedAt).toBeInstanceOf(Date);
      expect(page.items[2].headHash).toMatch(/^[0-9a-f]{64}$/);
      expect(page.nextCursor).toBeNull();
    });

    it('filters sessions by agent, time, closed, and by what their steps were', async () => {
      expect(await sessionIds({ agentId: 'agent-a' })).toEqual([a2, a1]);
      expect(await sessionIds({ agentId: 'nobody' })).toEqual([]);
      expect(await sessionIds({ since: new Date(t0 + 5 * 60_000) })).toEqual([b1, a2]);
      expect(await sessionIds({ until: new Date(t0 + 5 * 60_000) })).toEqual([a1]);
      expect(await sessionIds({ closed: true })).toEqual([a1]);
      expect(await sessionIds({ closed: false })).toEqual([b1, a2]);
      expect(await sessionIds({ disposition: 'deny' })).toEqual([a1]);
      expect(await sessionIds({ reasonCode: 'pii' })).toEqual([b1]);
      expect(await sessionIds({ method: 'steps/toolCallRequest' })).toEqual([a2, a1]);
      expect(await sessionIds({ revision: 'r2' })).toEqual([b1, a2]);
      // All step conditions hold for one and the same entry: a1 has a deny and a userMessage, not a denied one.
      expect(await sessionIds({ disposition: 'deny', method: 'steps/userMessage' })).toEqual([]);
      expect(await sessionIds({ disposition: 'deny', method: 'steps/toolCallRequest', agentId: 'agent-a' })).toEqual([
        a1,
      ]);
    });

    it('pages sessions with a cursor, each once, and refuses a forged cursor', async () => {
      const seen: string[] = [];
      let cursor: string | undefined;
      for (let i = 0; i < 5; i++) {
        const page = await q.listSessions({}, { limit: 1, ...(cursor ? { cursor } : {}) });
        seen.push(...page.items.map((s) => s.id));
        if (!page.nextCursor) break;
        cursor = page.nextCursor;
      }
      expect(seen).toEqual([b1, a2, a1]);
      for (const bad of [
        'nope',
        Buffer.from('["x"]').toString('base64url'),
        Buffer.from('[1,"a"]').toString('base64url'),
      ]) {
        const err = await q.listSessions({}, { limit: 1, cursor: bad }).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(StoreError);
        expect((err as StoreError).code).toBe('invalid_input');
      }
    });

    it('searches decisions across sessions, newest first, with the delivered result', async () => {
      const all = await q.searchDecisions({}, { limit: 50 });
      expect(all.items.map((d) => [d.sessionId, d.seq])).toEqual([
        [b1, 0],
        [a2, 0],
        [a1, 1],
        [a1, 0],
      ]);
      const ask = all.items[0];
      expect(ask).toMatchObject({ agentId: 'agent-b', method: 'steps/userMessage', bundleRevision: 'r2' });
      expect(ask.result).toMatchObject({
        decision: 'ask',
        reason_codes: ['needs_approval', 'pii'],
        reasoning: 'nul \u0000\u0000 and the text \\u0000 inside',
      });
      const denied = await q.searchDecisions({ disposition: 'deny' }, { limit: 50 });
      expect(denied.items.map((d) => d.sessionId)).toEqual([a1]);
      expect((await q.searchDecisions({ reasonCode: 'needs_approval' }, { limit: 50 })).items).toHaveLength(1);
      expect((await q.searchDecisions({ sessionId: a1 }, { limit: 50 })).items).toHaveLength(2);
      expect((await q.searchDecisions({ agentId: 'agent-a', revision: 'r1' }, { limit: 50 })).items).toHaveLength(2);
      expect((await q.searchDecisions({ method: 'steps/toolCallRequest' }, { limit: 50 })).items).toHaveLength(2);
      const seen: string[] = [];
      let cursor: string | undefined;
      for (let i = 0; i < 10; i++) {
        const page = await q.searchDecisions({}, { limit: 3, ...(cursor ? { cursor } : {}) });
        seen.push(...page.items.map((d) => `${d.sessionId}/${d.seq}`));
        if (!page.nextCursor) break;
        cursor = page.nextCursor;
      }
      expect(seen).toEqual(all.items.map((d) => `${d.sessionId}/${d.seq}`));
    });

    it('reads decisions from a point in time, oldest first (the live feed)', async () => {
      const all = await q.searchDecisions({}, { limit: 50 });
      const oldest = all.items.at(-1)!;
      const since = await q.decisionsSince(oldest.at, {}, 50);
      expect(since.map((d) => `${d.sessionId}/${d.seq}`)).toEqual(
        all.items.map((d) => `${d.sessionId}/${d.seq}`).reverse(),
      );
      const newest = all.items[0];
      expect((await q.decisionsSince(newest.at, {}, 50)).map((d) => d.sessionId)).toEqual([b1]);
      expect(await q.decisionsSince(String(BigInt(newest.at) + 1n), {}, 50)).toEqual([]);
      expect((await q.decisionsSince(oldest.at, { disposition: 'deny' }, 50)).map((d) => d.seq)).toEqual([1]);
    });

    it('counts recent decisions per minute by disposition, top reason codes and latency percentiles', async () => {
      const stats = await q.decisionStats(new Date(Date.now() - 3_600_000));
      expect(stats.decisions).toBe(4);
      const byDisposition: Record<string, number> = {};
      for (const r of stats.perMinute) byDisposition[r.disposition] = (byDisposition[r.disposition] ?? 0) + r.count;
      expect(byDisposition).toEqual({ allow: 2, deny: 1, ask: 1 });
      expect(stats.perMinute.every((r) => r.minute instanceof Date && r.minute.getSeconds() === 0)).toBe(true);
      expect(stats.topReasonCodes).toEqual([
        { code: 'needs_approval', count: 1 },
        { code: 'ok', count: 1 },
        { code: 'pii', count: 1 },
        { code: 'tool_not_allowed', count: 1 },
      ]);
      expect(stats.latencyMs).toEqual({ p50: 0.5, p99: 0.5, max: 0.5 });
      expect((await q.decisionStats(new Date(Date.now() + 60_000))).decisions).toBe(0);
      expect((await q.decisionStats(new Date(Date.now() + 60_000))).latencyMs).toEqual({
        p50: null,
        p99: null,
        max: null,
      });
    });

    it('appends and lists the admin audit log newest first, filtered and paged', async () => {
      const base = { role: 'operator', method: 'POST', path: '/admin/v1/rollback', target: null, detail: null };
      const first = await q.appendAdminAudit({
        ...base,
        actor: 'alice',
        action: 'rollback',
        status: 200,
        outcome: 'ok',
      });
      expect(first.id).toBeGreaterThan(0);
      expect(first.at).toBeInstanceOf(Date);
      await q.appendAdminAudit({
        ...base,
        actor: 'bob',
        action: 'rollback',
        status: 409,
        outcome: 'refused',
        detail: 'nothing_to_roll_back',
      });
      await q.appendAdminAudit({
        ...base,
        actor: 'alice',
        action: 'activateBundle',
        target: 'r2',
        status: 200,
        outcome: 'ok',
      });
      const all = await q.listAdminAudit({}, { limit: 50 });
      expect(all.items.map((e) => [e.actor, e.action, e.outcome])).toEqual([
        ['alice', 'activateBundle', 'ok'],
        ['bob', 'rollback', 'refused'],
        ['alice', 'rollback', 'ok'],
      ]);
      expect((await q.listAdminAudit({ actor: 'alice' }, { limit: 50 })).items).toHaveLength(2);
      expect((await q.listAdminAudit({ action: 'rollback' }, { limit: 50 })).items).toHaveLength(2);
      const p1 = await q.listAdminAudit({}, { limit: 2 });
      expect(p1.items).toHaveLength(2);
      const p2 = await q.listAdminAudit({}, { limit: 2, cursor: p1.nextCursor! });
      expect(p2.items.map((e) => e.id)).toEqual([first.id]);
      expect(p2.nextCursor).toBeNull();
    });
  });
}
