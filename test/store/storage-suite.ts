// The one storage suite, run against every driver (pglite.test.ts, postgres.test.ts).
import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  canonicalJson,
  computeEntryHash,
  computeRequestHash,
  type ContextEntryContent,
} from '../../src/chain/index.ts';
import { HmacSha256 } from '../../src/crypto/hmac-sha256.ts';
import type { Json } from '../../src/json.ts';
import {
  type AgbomVersionWrite,
  StoreError,
  verifyCheckpoint,
  type DurableStore,
  type NewContextEntry,
  type OpenStoreOptions,
  type StepCommit,
  type StepCommitOutcome,
} from '../../src/store/index.ts';

const vectors = JSON.parse(readFileSync(new URL('../fixtures/acs/chain-vectors.json', import.meta.url), 'utf8'));

export const checkpointKey = new HmacSha256(new Uint8Array(32).fill(7));

/** A step as the pipeline hands it over: entry_id = step_id = request_id, request_hash over params. */
export function stepEntry(sessionId: string, n: number, extra: Record<string, unknown> = {}): NewContextEntry {
  const requestId = randomUUID();
  const params = {
    acs_version: '0.1.0',
    request_id: requestId,
    timestamp: `2026-11-29T10:00:${String(n % 60).padStart(2, '0')}Z`,
    metadata: { session_id: sessionId, agent_id: 'agent-1' },
    payload: { n, text: 'héllo \u0000 \ud83d\ude00', ...extra },
  };
  return {
    content: {
      entry_id: requestId,
      step_id: requestId,
      step_type: 'steps/userMessage',
      request_hash: computeRequestHash(params),
      timestamp: params.timestamp,
    },
    params,
  };
}

function newSession(store: DurableStore, overrides: Record<string, unknown> = {}): Promise<string> {
  const id = randomUUID();
  return store
    .createSession({
      id,
      tenantId: null,
      agentId: 'agent-1',
      keyId: 'k1',
      hello: { v: 1 },
      intent: null,
      state: { turns: 0 },
      parentSessionId: null,
      ...overrides,
    })
    .then(() => id);
}

async function expectStoreError(p: Promise<unknown>, code: StoreError['code']): Promise<void> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StoreError);
  expect((err as StoreError).code).toBe(code);
}

/** Checks seq 0..n-1 and the previous_hash links of a stored chain; returns its entries. */
async function expectLinearChain(store: DurableStore, sessionId: string, n: number) {
  const entries = await store.listContextEntries(sessionId, { limit: 10_000 });
  expect(entries.map((e) => e.seq)).toEqual(Array.from({ length: n }, (_, i) => i));
  let previous: string | null = null;
  for (const e of entries) {
    expect(e.previousHash).toBe(previous);
    expect(e.entryHash).toBe(computeEntryHash(e.content, previous));
    previous = e.entryHash;
  }
  expect(await store.getChainHead(sessionId)).toEqual({ seq: n - 1, entryHash: previous });
  return entries;
}

export function defineStorageSuite(
  name: string,
  open: (extra?: Partial<OpenStoreOptions>) => Promise<DurableStore>,
): void {
  describe(`storage suite on ${name}`, () => {
    let store: DurableStore;
    beforeAll(async () => {
      store = await open({ checkpoints: { signer: checkpointKey, keyId: 'ckpt-1', everyEntries: 4, everyMs: 0 } });
    });
    afterAll(async () => {
      await store?.close();
    });

    it('reports its driver and migrates idempotently', async () => {
      expect(store.driver).toBe(name);
      await store.migrate();
      await store.migrate();
    });

    it('stores the session state out of line without compression (migration 0002: it is rewritten every step)', async () => {
      const rows = await store.query(
        `SELECT a.attstorage AS storage FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
         WHERE c.oid = to_regclass('sessions') AND a.attname = 'state_jcs'`,
      );
      expect(rows).toEqual([{ storage: 'e' }]);
    });

    it('keeps entry rows inline without compression attempts and summarises replay-key expiry with BRIN (migration 0004)', async () => {
      const [entries] = await store.query(
        `SELECT reloptions::text AS options FROM pg_class WHERE oid = to_regclass('context_entries')`,
      );
      expect(entries.options).toBe('{toast_tuple_target=8160}');
      const [index] = await store.query(
        `SELECT am.amname AS method FROM pg_class c JOIN pg_am am ON am.oid = c.relam WHERE c.oid = to_regclass('replay_keys_expires_at_idx')`,
      );
      expect(index.method).toBe('brin');
    });

    it('round-trips a session, including JSON that jsonb would refuse (U+0000) and non-BMP text', async () => {
      const id = await newSession(store, {
        tenantId: 't1',
        state: { note: 'a\u0000b', emoji: '\ud83d\ude00', n: 1.5e-7, big: 12345678901234 },
        parentSessionId: 'parent-1',
      });
      const s = await store.getSession(id);
      expect(s).toMatchObject({
        id,
        tenantId: 't1',
        agentId: 'agent-1',
        keyId: 'k1',
        hello: { v: 1 },
        intent: null,
        parentSessionId: 'parent-1',
        closedAt: null,
      });
      expect(s?.state).toEqual({ note: 'a\u0000b', emoji: '\ud83d\ude00', n: 1.5e-7, big: 12345678901234 });
      expect(s?.createdAt).toBeInstanceOf(Date);
      expect(await store.getSession(randomUUID())).toBeNull();
    });

    it('refuses a duplicate session id and bad ids with precise errors', async () => {
      const id = await newSession(store);
      await expectStoreError(
        store.createSession({
          id,
          tenantId: null,
          agentId: 'x',
          keyId: null,
          hello: null,
          intent: null,
          state: null,
          parentSessionId: null,
        }),
        'conflict',
      );
      await expectStoreError(
        store.createSession({
          id: '',
          tenantId: null,
          agentId: 'x',
          keyId: null,
          hello: null,
          intent: null,
          state: null,
          parentSessionId: null,
        }),
        'invalid_input',
      );
    });

    it('patches session state and closes a session; unknown ids are not_found', async () => {
      const id = await newSession(store);
      await store.updateSessionState(id, { state: { turns: 3 }, intent: { goal: 'x' }, keyId: 'k2' });
      const s = await store.getSession(id);
      expect(s).toMatchObject({ state: { turns: 3 }, intent: { goal: 'x' }, keyId: 'k2', hello: { v: 1 } });
      const at = new Date('2026-11-29T12:00:00.123Z');
      await store.closeSession(id, at);
      expect((await store.getSession(id))?.closedAt?.toISOString()).toBe(at.toISOString());
      await expectStoreError(store.updateSessionState(randomUUID(), { state: {} }), 'not_found');
      await expectStoreError(store.closeSession(randomUUID(), at), 'not_found');
    });

    it('reproduces the ACS §8.2 chain vectors through appends', async () => {
      const sessionId = randomUUID();
      const paramsFor = (entry: ContextEntryContent) =>
        entry.request_hash ? vectors.request_hash.params : { request_id: entry.step_id };
      for (const [i, step] of vectors.chain.entries()) {
        const appended = await store.appendContextEntry(sessionId, {
          content: step.entry,
          params: paramsFor(step.entry),
        });
        expect(appended).toEqual({ seq: i, entryHash: step.entry_hash, previousHash: step.previous_hash });
      }
      const entries = await store.listContextEntries(sessionId);
      expect(entries.map((e) => e.content)).toEqual(vectors.chain.map((s: { entry: unknown }) => s.entry));
      expect(entries[1].params).toEqual(vectors.request_hash.params);
    });

    it('refuses an entry whose request_hash does not match its params, without failing its batch neighbours', async () => {
      const sessionId = randomUUID();
      const good = stepEntry(sessionId, 1);
      const bad = stepEntry(sessionId, 2);
      bad.content.request_hash = 'f'.repeat(64);
      const results = await Promise.allSettled([
        store.appendContextEntry(sessionId, good),
        store.appendContextEntry(sessionId, bad),
        store.appendContextEntry(sessionId, stepEntry(sessionId, 3)),
      ]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect(((results[1] as PromiseRejectedResult).reason as StoreError).code).toBe('invalid_input');
      await expectLinearChain(store, sessionId, 2);
      await expectStoreError(
        store.appendContextEntry(sessionId, { content: { entry_id: '', step_id: 'x', step_type: 'y' }, params: {} }),
        'invalid_input',
      );
      await expectStoreError(
        store.appendContextEntry(sessionId, {
          content: { entry_id: 'a', step_id: 'x', step_type: 'y' },
          params: { n: 10n } as never,
        }),
        'invalid_input',
      );
    });

    it('keeps one linear chain under 200 concurrent appends to one session, first entry included', async () => {
      const sessionId = randomUUID();
      const appended = await Promise.all(
        Array.from({ length: 200 }, (_, i) => store.appendContextEntry(sessionId, stepEntry(sessionId, i))),
      );
      expect(new Set(appended.map((a) => a.seq)).size).toBe(200);
      const entries = await expectLinearChain(store, sessionId, 200);
      // Arrival order is chain order for one session.
      expect(entries.map((e) => (e.params as { payload: { n: number } }).payload.n)).toEqual(
        Array.from({ length: 200 }, (_, i) => i),
      );
    });

    it('keeps 24 interleaved sessions linear and pages by seq', async () => {
      const ids = Array.from({ length: 24 }, () => randomUUID());
      await Promise.all(
        Array.from({ length: 24 * 10 }, (_, i) =>
          store.appendContextEntry(ids[i % 24], stepEntry(ids[i % 24], Math.floor(i / 24))),
        ),
      );
      for (const id of ids) await expectLinearChain(store, id, 10);
      const page = await store.listContextEntries(ids[0], { afterSeq: 3, limit: 4 });
      expect(page.map((e) => e.seq)).toEqual([4, 5, 6, 7]);
      expect(await store.getChainHead(randomUUID())).toBeNull();
    });

    it('records a decision once; a second or unknown one is refused', async () => {
      const sessionId = randomUUID();
      const a = await store.appendContextEntry(sessionId, stepEntry(sessionId, 0));
      const result = {
        type: 'final',
        decision: 'allow',
        chain_hash: a.entryHash,
        signature: { algorithm: 'HMAC-SHA256', value: 'AA==', key_id: 'k' },
      };
      await store.recordDecision(sessionId, a.seq, { result, bundleRevision: 'rev-7', evaluationDurationMs: 0.25 });
      const [e] = await store.listContextEntries(sessionId);
      expect(e).toMatchObject({ result, bundleRevision: 'rev-7', evaluationDurationMs: 0.25 });
      await expectStoreError(
        store.recordDecision(sessionId, a.seq, { result: {}, bundleRevision: null, evaluationDurationMs: 1 }),
        'conflict',
      );
      await expectStoreError(
        store.recordDecision(sessionId, 99, { result: {}, bundleRevision: null, evaluationDurationMs: 1 }),
        'not_found',
      );
      await expectStoreError(
        store.recordDecision(sessionId, -1, { result: {}, bundleRevision: null, evaluationDurationMs: 1 }),
        'invalid_input',
      );
    });

    it('records exactly one of two racing decisions for one entry, and batches decisions of many entries', async () => {
      const sessionId = randomUUID();
      const appended = await Promise.all(
        Array.from({ length: 20 }, (_, i) => store.appendContextEntry(sessionId, stepEntry(sessionId, i))),
      );
      const race = await Promise.allSettled(
        [0, 1].map((k) =>
          store.recordDecision(sessionId, 0, { result: { k }, bundleRevision: null, evaluationDurationMs: k }),
        ),
      );
      expect(race.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      expect(((race.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason as StoreError).code).toBe(
        'conflict',
      );
      await Promise.all(
        appended.slice(1).map((a) =>
          store.recordDecision(sessionId, a.seq, {
            result: { seq: a.seq },
            bundleRevision: `r${a.seq}`,
            evaluationDurationMs: a.seq / 2,
          }),
        ),
      );
      const entries = await store.listContextEntries(sessionId);
      const winner = (entries[0].result as { k: number }).k;
      expect(entries[0].evaluationDurationMs).toBe(winner);
      for (const e of entries.slice(1))
        expect(e).toMatchObject({
          result: { seq: e.seq },
          bundleRevision: `r${e.seq}`,
          evaluationDurationMs: e.seq / 2,
        });
    });

    it('remembers replay keys until they expire (ACS §10.3)', async () => {
      const sessionId = randomUUID();
      const soon = new Date(Date.now() + 60_000);
      expect(await store.rememberReplayKey(sessionId, 'nonce', 'n-1', soon)).toBe(true);
      expect(await store.rememberReplayKey(sessionId, 'nonce', 'n-1', soon)).toBe(false);
      expect(await store.rememberReplayKey(sessionId, 'request_id', 'n-1', soon)).toBe(true);
      expect(await store.rememberReplayKey(randomUUID(), 'nonce', 'n-1', soon)).toBe(true);
      expect(await store.rememberReplayKey(sessionId, 'nonce', 'old', new Date(Date.now() - 1000))).toBe(true);
      // An expired key may be used again, and is then live again.
      expect(await store.rememberReplayKey(sessionId, 'nonce', 'old', soon)).toBe(true);
      expect(await store.rememberReplayKey(sessionId, 'nonce', 'old', soon)).toBe(false);
      const results = await Promise.all(
        Array.from({ length: 10 }, () => store.rememberReplayKey(sessionId, 'request_id', 'race', soon)),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
      await expectStoreError(store.rememberReplayKey(sessionId, 'bogus' as never, 'x', soon), 'invalid_input');
    });

    describe('commitStep: a whole step in one transaction', () => {
      const later = () => new Date(Date.now() + 60_000);
      /** A step as the pipeline commits it: keys, entry, the delivered result, the session's next state. */
      function step(
        sessionId: string,
        n: number,
        head: { seq: number; entryHash: string } | null,
        over: Partial<StepCommit> = {},
      ): StepCommit {
        const entry = stepEntry(sessionId, n);
        return {
          expectedHead: head,
          replayKeys: [
            { kind: 'request_id', value: entry.content.entry_id },
            { kind: 'nonce', value: `nonce-${entry.content.entry_id}` },
          ],
          replayKeysExpireAt: later(),
          entry,
          decision: { result: { decision: 'allow', n }, bundleRevision: 'rev-1', evaluationDurationMs: 0.25 },
          session: { state: { turns: n + 1 } },
          ...over,
        };
      }
      const headOf = (o: StepCommitOutcome) =>
        o.status === 'committed' ? { seq: o.appended.seq, entryHash: o.appended.entryHash } : null;

      it('writes the entry with its decision, the replay keys and the session state together', async () => {
        const sessionId = await newSession(store, { keyId: null });
        const first = await store.commitStep(
          sessionId,
          step(sessionId, 0, null, { session: { state: { turns: 1 }, keyId: 'k-bound', intent: { raw: 'triage' } } }),
        );
        expect(first.status).toBe('committed');
        const second = await store.commitStep(sessionId, step(sessionId, 1, headOf(first)));
        expect(second).toMatchObject({ status: 'committed', appended: { seq: 1 } });
        const entries = await expectLinearChain(store, sessionId, 2);
        expect(entries.map((e) => e.result)).toEqual([
          { decision: 'allow', n: 0 },
          { decision: 'allow', n: 1 },
        ]);
        expect(entries.map((e) => [e.bundleRevision, e.evaluationDurationMs])).toEqual([
          ['rev-1', 0.25],
          ['rev-1', 0.25],
        ]);
        const row = await store.getSession(sessionId);
        expect(row).toMatchObject({ keyId: 'k-bound', intent: { raw: 'triage' }, state: { turns: 2 }, closedAt: null });
        // The keys are live: the same request_id again is a replay, and so is it through rememberReplayKey.
        expect(await store.rememberReplayKey(sessionId, 'request_id', entries[0].content.entry_id, later())).toBe(
          false,
        );
      });

      it('stores each state of a batch as the exact JSON text it was given; a step without a state keeps the row’s', async () => {
        const tricky = {
          quote: 'say "hi" \\ back\\',
          nul: 'a\u0000b',
          lone: '\ud800x',
          emoji: '\ud83d\ude00',
          sep: '\u2028',
          nested: [{ '"k"': null }],
          n: 1.5e-7,
        };
        const ids = await Promise.all(Array.from({ length: 4 }, () => newSession(store, { state: { kept: true } })));
        const states = [tricky, null, undefined, { turns: 3 }];
        const outcomes = await Promise.all(
          ids.map((id, i) =>
            store.commitStep(id, step(id, i, null, { session: states[i] === undefined ? {} : { state: states[i] } })),
          ),
        );
        expect(outcomes.map((o) => o.status)).toEqual(['committed', 'committed', 'committed', 'committed']);
        const rows = await store.query(`select id, state_jcs from sessions where id = any($1::text[])`, [ids]);
        const text = new Map(rows.map((r) => [String(r.id), r.state_jcs]));
        expect(ids.map((id) => text.get(id))).toEqual([
          JSON.stringify(tricky),
          'null',
          JSON.stringify({ kept: true }),
          '{"turns":3}',
        ]);
        expect((await store.getSession(ids[0]))?.state).toEqual(tricky);
      });

      it('stores each entry of a batch with the exact params, content, result and state-change text it hashed', async () => {
        // No lone surrogate here: JCS refuses one (RFC 8785 §3.2.2.2), so no entry can hold it.
        const tricky = {
          quote: 'say "hi" \\ back\\',
          nul: 'a\u0000b',
          emoji: '\ud83d\ude00',
          sep: '\u2028',
          nested: [{ '"k"': null }],
          n: 1.5e-7,
        };
        const ids = await Promise.all(Array.from({ length: 4 }, () => newSession(store, { state: { kept: true } })));
        const steps = ids.map((id, i) => {
          const entry = stepEntry(id, i, { tricky, i });
          return step(id, i, null, {
            entry,
            replayKeys: [
              { kind: 'request_id', value: entry.content.entry_id },
              { kind: 'nonce', value: `nonce-${entry.content.entry_id}` },
            ],
            decision: {
              result: { decision: 'modify', reasoning: tricky.quote, tricky },
              bundleRevision: 'rev-1',
              evaluationDurationMs: 0.5,
            },
            session: { state: { kept: true, tricky: i % 2 === 0 ? tricky : null }, stateBase: { kept: true } },
          });
        });
        const outcomes = await Promise.all(ids.map((id, i) => store.commitStep(id, steps[i])));
        expect(outcomes.map((o) => o.status)).toEqual(['committed', 'committed', 'committed', 'committed']);
        const rows = await store.query(
          `select session_id, content_jcs, params_jcs, result_jcs, state_delta_jcs, entry_hash, request_hash from context_entries where session_id = any($1::text[])`,
          [ids],
        );
        const byId = new Map(rows.map((r) => [String(r.session_id), r]));
        for (const [i, id] of ids.entries()) {
          const row = byId.get(id)!;
          expect(row.params_jcs).toBe(canonicalJson(steps[i].entry.params as Json));
          expect(computeRequestHash(JSON.parse(String(row.params_jcs)))).toBe(row.request_hash);
          expect(row.result_jcs).toBe(canonicalJson(steps[i].decision.result as Json));
          expect(row.state_delta_jcs).toEqual(expect.any(String));
          const content = JSON.parse(String(row.content_jcs)) as ContextEntryContent;
          expect(row.content_jcs).toBe(canonicalJson(content as unknown as Json));
          expect(computeEntryHash(content, null)).toBe(row.entry_hash);
        }
        // The state changes applied to the row give back each state exactly.
        expect(await Promise.all(ids.map(async (id) => (await store.getSession(id))?.state))).toEqual(
          steps.map((s) => s.session.state),
        );
      });

      it('a live duplicate request_id or nonce writes nothing else, and says which key', async () => {
        const sessionId = await newSession(store);
        const s0 = step(sessionId, 0, null);
        const c0 = await store.commitStep(sessionId, s0);
        const dupId = step(sessionId, 1, headOf(c0), {
          replayKeys: [{ kind: 'request_id', value: s0.entry.content.entry_id }],
        });
        expect(await store.commitStep(sessionId, dupId)).toEqual({ status: 'replay', kind: 'request_id' });
        const dupNonce = step(sessionId, 2, headOf(c0), {
          replayKeys: [
            { kind: 'request_id', value: randomUUID() },
            { kind: 'nonce', value: s0.replayKeys[1].value },
          ],
        });
        expect(await store.commitStep(sessionId, dupNonce)).toEqual({ status: 'replay', kind: 'nonce' });
        await expectLinearChain(store, sessionId, 1);
        expect((await store.getSession(sessionId))?.state).toEqual({ turns: 1 });
        // An expired key is taken over.
        const expiredId = randomUUID();
        expect(await store.rememberReplayKey(sessionId, 'request_id', expiredId, new Date(Date.now() - 1000))).toBe(
          true,
        );
        expect(
          (
            await store.commitStep(
              sessionId,
              step(sessionId, 3, headOf(c0), { replayKeys: [{ kind: 'request_id', value: expiredId }] }),
            )
          ).status,
        ).toBe('committed');
      });

      it('refuses a step evaluated against a head another writer moved, writing nothing, and names the head now', async () => {
        const sessionId = await newSession(store);
        const c0 = await store.commitStep(sessionId, step(sessionId, 0, null));
        const c1 = await store.commitStep(sessionId, step(sessionId, 1, headOf(c0)));
        const late = step(sessionId, 2, headOf(c0), { session: { state: { turns: 99 } } });
        expect(await store.commitStep(sessionId, late)).toEqual({ status: 'stale_head', head: headOf(c1) });
        expect(await store.commitStep(sessionId, step(sessionId, 3, null))).toEqual({
          status: 'stale_head',
          head: headOf(c1),
        });
        await expectLinearChain(store, sessionId, 2);
        expect((await store.getSession(sessionId))?.state).toEqual({ turns: 2 });
        // Its keys were not burnt: the same step, re-evaluated at the real head, commits.
        expect((await store.commitStep(sessionId, { ...late, expectedHead: headOf(c1) })).status).toBe('committed');
      });

      it('in a session turn: another writer waits for the turn, the step commits at the turn head, a waiter past its wait is busy', async () => {
        const sessionId = await newSession(store);
        const c0 = await store.commitStep(sessionId, step(sessionId, 0, null));
        let outside: Promise<StepCommitOutcome> | undefined;
        let busy: unknown;
        const inTurn = await store.withSessionTurn(sessionId, 1000, async (turn) => {
          expect(turn.head).toEqual(headOf(c0));
          // Queued behind the turn, placed at the head the turn started from: it finds the head moved.
          outside = store.commitStep(sessionId, step(sessionId, 1, headOf(c0)));
          busy = await store.withSessionTurn(sessionId, 50, async () => 'ran').catch((e: unknown) => e);
          await new Promise((r) => setTimeout(r, 50));
          return turn.commitStep(step(sessionId, 2, turn.head));
        });
        expect(busy).toBeInstanceOf(StoreError);
        expect((busy as StoreError).code).toBe('busy');
        expect(inTurn.status).toBe('committed');
        expect(await outside).toEqual({ status: 'stale_head', head: headOf(inTurn) });
        await expectLinearChain(store, sessionId, 2);
        // A turn whose work throws commits nothing and passes the error on; the next turn is granted.
        const thrown = await store
          .withSessionTurn(sessionId, 1000, async () => {
            throw new Error('refused');
          })
          .catch((e: unknown) => e);
        expect((thrown as Error).message).toBe('refused');
        const next = await store.withSessionTurn(sessionId, 1000, (turn) =>
          turn.commitStep(step(sessionId, 3, turn.head)),
        );
        expect(next.status).toBe('committed');
        await expectLinearChain(store, sessionId, 3);
      });

      it('counts the steps committed in a session turn in the commit metrics, as group-committed ones are', async () => {
        // A store of its own: observeCommits replaces the observer, and the suite's store has others at work.
        const observed = await open();
        try {
          const commits: { kind: string; size: number; seconds: number }[] = [];
          observed.observeCommits?.((kind, size, seconds) => commits.push({ kind, size, seconds }));
          const sessionId = await newSession(observed);
          expect((await observed.commitStep(sessionId, step(sessionId, 0, null))).status).toBe('committed');
          expect(commits).toHaveLength(1);
          const inTurn = await observed.withSessionTurn(sessionId, 1000, (turn) =>
            turn.commitStep(step(sessionId, 1, turn.head)),
          );
          expect(inTurn.status).toBe('committed');
          // A turn that commits nothing counts nothing.
          expect(await observed.withSessionTurn(sessionId, 1000, async (turn) => turn.head)).toEqual(headOf(inTurn));
          expect(commits.map((c) => [c.kind, c.size])).toEqual([
            ['step', 1],
            ['step', 1],
          ]);
          for (const c of commits) {
            expect(c.seconds).toBeGreaterThan(0);
            expect(c.seconds).toBeLessThan(60);
          }
          await expectLinearChain(observed, sessionId, 2);
        } finally {
          await observed.close();
        }
      });

      it('of racing steps at one head exactly one commits (per-session serialisation, group commit across sessions)', async () => {
        const sessionId = await newSession(store);
        const others = await Promise.all(Array.from({ length: 12 }, () => newSession(store)));
        const outcomes = await Promise.all([
          ...Array.from({ length: 8 }, (_, i) => store.commitStep(sessionId, step(sessionId, i, null))),
          ...others.map((id, i) => store.commitStep(id, step(id, i, null))),
        ]);
        expect(outcomes.slice(0, 8).filter((o) => o.status === 'committed')).toHaveLength(1);
        expect(outcomes.slice(8).every((o) => o.status === 'committed')).toBe(true);
        await expectLinearChain(store, sessionId, 1);
      });

      it('of two steps of one session at one head queued behind other work, one commits and the other is told the head moved', async () => {
        const sessionId = await newSession(store);
        const others = await Promise.all(Array.from({ length: 6 }, () => newSession(store)));
        // The other sessions' steps take every transaction slot first, so the two meet in one queued batch.
        const second = step(sessionId, 101, null);
        const outcomes = await Promise.all([
          ...others.map((id, i) => store.commitStep(id, step(id, i, null))),
          store.commitStep(sessionId, step(sessionId, 100, null)),
          store.commitStep(sessionId, second),
        ]);
        const [a, b] = outcomes.slice(-2);
        expect(a.status).toBe('committed');
        expect(b).toEqual({ status: 'stale_head', head: headOf(a) });
        await expectLinearChain(store, sessionId, 1);
        // The stale step's keys were not burnt: re-placed at the head, it commits.
        expect((await store.commitStep(sessionId, { ...second, expectedHead: headOf(a) })).status).toBe('committed');
        await expectLinearChain(store, sessionId, 2);
      });

      it('in one batch, a replayed step and a stale step write no entry, state or subagent row while their neighbours commit', async () => {
        const [fine, replayed, stale, plain] = await Promise.all(
          Array.from({ length: 4 }, () => newSession(store, { state: { kept: true } })),
        );
        const firstOf = new Map<string, StepCommitOutcome>();
        for (const id of [replayed, stale]) firstOf.set(id, await store.commitStep(id, step(id, 0, null)));
        await store.commitStep(stale, step(stale, 1, headOf(firstOf.get(stale)!)));
        const usedId = (await store.listContextEntries(replayed))[0].content.entry_id;
        const childOf = (parent: string) => ({
          id: randomUUID(),
          tenantId: null,
          agentId: 'sub',
          keyId: null,
          hello: {},
          intent: null,
          state: null,
          parentSessionId: parent,
        });
        const children = [childOf(fine), childOf(replayed), childOf(stale)];
        const freshKey = randomUUID();
        const others = await Promise.all(Array.from({ length: 6 }, () => newSession(store)));
        // The other sessions' steps take every transaction slot first, so the four meet in one queued batch.
        const outcomes = await Promise.all([
          ...others.map((id, i) => store.commitStep(id, step(id, i, null))),
          store.commitStep(
            fine,
            step(fine, 10, null, { childSession: children[0], session: { state: { turns: 1 }, keyId: 'k-fine' } }),
          ),
          store.commitStep(
            replayed,
            step(replayed, 11, headOf(firstOf.get(replayed)!), {
              childSession: children[1],
              session: { state: { turns: 99 }, keyId: 'k-replayed' },
              replayKeys: [
                { kind: 'nonce', value: freshKey },
                { kind: 'request_id', value: usedId },
              ],
            }),
          ),
          store.commitStep(
            stale,
            step(stale, 12, headOf(firstOf.get(stale)!), {
              childSession: children[2],
              session: { state: { turns: 99 } },
            }),
          ),
          store.commitStep(plain, step(plain, 13, null)),
        ]);
        const [a, b, c, d] = outcomes.slice(-4);
        expect(a.status).toBe('committed');
        expect(b).toEqual({ status: 'replay', kind: 'request_id' });
        expect(c).toMatchObject({ status: 'stale_head', head: { seq: 1 } });
        expect(d.status).toBe('committed');
        // The committed two went in one transaction with the refused two.
        const xmins = await store.query(
          `select distinct xmin::text from context_entries where session_id = any($1::text[])`,
          [[fine, plain]],
        );
        expect(xmins).toHaveLength(1);
        await expectLinearChain(store, fine, 1);
        await expectLinearChain(store, replayed, 1);
        await expectLinearChain(store, stale, 2);
        expect(await store.getSession(fine)).toMatchObject({ keyId: 'k-fine', state: { turns: 1 } });
        expect(await store.getSession(replayed)).toMatchObject({ keyId: 'k1', state: { turns: 1 } });
        expect((await store.getSession(stale))?.state).toEqual({ turns: 2 });
        expect(await store.getSession(children[0].id)).toMatchObject({ parentSessionId: fine });
        expect(await store.getSession(children[1].id)).toBeNull();
        expect(await store.getSession(children[2].id)).toBeNull();
      });

      it('seals a session and opens a subagent session in the same commit; a sealed chain gets a signed head', async () => {
        const sessionId = await newSession(store);
        const childId = randomUUID();
        const child = {
          id: childId,
          tenantId: null,
          agentId: 'sub-agent',
          keyId: null,
          hello: { v: 1 },
          intent: { raw: 'sub' },
          state: null,
          parentSessionId: sessionId,
        };
        const c0 = await store.commitStep(sessionId, step(sessionId, 0, null, { childSession: child }));
        expect(await store.getSession(childId)).toMatchObject({
          agentId: 'sub-agent',
          parentSessionId: sessionId,
          intent: { raw: 'sub' },
        });
        const closedAt = new Date();
        const c1 = await store.commitStep(
          sessionId,
          step(sessionId, 1, headOf(c0), { session: { state: { turns: 2 }, closedAt } }),
        );
        expect((await store.getSession(sessionId))?.closedAt?.getTime()).toBe(closedAt.getTime());
        const cps = await store.listCheckpoints(sessionId);
        expect(cps.at(-1)).toMatchObject({ seq: 1, headHash: headOf(c1)?.entryHash });
      });

      it('keeps a step’s state change with its entry and the whole state every N steps; getSession folds to the head', async () => {
        const every4 = await open({ stateCheckpointEvery: 4 });
        try {
          const sessionId = await newSession(every4, { state: null });
          let head: { seq: number; entryHash: string } | null = null;
          let state: Json = null;
          const rowSeqs: number[] = [];
          for (let n = 0; n < 11; n++) {
            const prior = state as { recent?: Json[]; tools?: Record<string, Json> } | null;
            // Copy on write, as the policy state is: a bounded queue, a growing map, a counter, a member deleted.
            const next: Json = {
              turns: n + 1,
              recent: [...(prior?.recent ?? []).slice(-3), { n, decision: n % 3 ? 'allow' : 'deny' }],
              tools: { ...(prior?.tools ?? {}), [`tool-${n % 5}`]: n },
              ...(n % 2 ? { odd: true } : {}),
            };
            // Step 5 binds a key: the row is written then, so it gets the whole state too.
            const extra = n === 5 ? { keyId: 'k-5' } : {};
            const out: StepCommitOutcome = await every4.commitStep(
              sessionId,
              step(sessionId, n, head, { session: { state: next, stateBase: state, ...extra } }),
            );
            expect(out.status).toBe('committed');
            head = headOf(out);
            state = next;
            const row = await every4.getSession(sessionId);
            expect(row?.state).toEqual(next);
            expect(JSON.stringify(row?.state)).toBe(JSON.stringify(next));
            expect(row?.stateHead).toEqual(head);
            rowSeqs.push(
              Number((await every4.query('select state_seq from sessions where id = $1', [sessionId]))[0].state_seq),
            );
          }
          expect(rowSeqs).toEqual([-1, -1, -1, 3, 3, 5, 5, 7, 7, 7, 7]);
          const deltas = await every4.query(
            'select seq, state_delta_jcs is not null as has_delta from context_entries where session_id = $1 order by seq',
            [sessionId],
          );
          expect(deltas.map((d) => d.has_delta)).toEqual([
            true,
            true,
            true,
            false,
            true,
            false,
            true,
            false,
            true,
            true,
            true,
          ]);
          // Another store on the same database (a restarted process, another replica) reads the same state.
          if (store.driver === 'postgres') expect((await store.getSession(sessionId))?.state).toEqual(state);
          // A whole state written outside a step is the state as of the head.
          await every4.updateSessionState(sessionId, { state: { reset: true } });
          expect(await every4.getSession(sessionId)).toMatchObject({ state: { reset: true }, stateHead: head });
        } finally {
          await every4.close();
        }
      });

      it('keeps AgBOM versions with the entries that carried them and reads back the versions in force', async () => {
        const sessionId = await newSession(store);
        const doc = (ids: string[]) => ({
          agent_id: 'agent-1',
          components: ids.map((id) => ({ id, name: `n\u0000${id}` })),
        });
        /** An agbom/* step carrying a version: its decision says whether the version is adopted. */
        const agbomStep = (n: number, head: { seq: number; entryHash: string } | null, version: AgbomVersionWrite) => {
          const s = step(sessionId, n, head, { agbom: version });
          s.entry.content.step_type = version.method;
          s.decision.result = { decision: version.adopted ? 'allow' : 'deny', n };
          return s;
        };
        const full = (ids: string[], adopted: boolean): AgbomVersionWrite => ({
          method: 'agbom/snapshot',
          form: 'full',
          adopted,
          document: doc(ids),
          diff: { added: ids, removed: [] },
          agbomHash: `sha256:${ids.join('+')}`,
          reportedHash: adopted ? null : 'sha256:reported',
          problems: adopted ? [] : [{ code: 'hash_mismatch', emoji: '\ud83d\ude00' }],
        });
        const diff = (added: string[]): AgbomVersionWrite => ({
          method: 'agbom/update',
          form: 'diff',
          adopted: true,
          document: null,
          diff: { added, removed: [] },
          agbomHash: `sha256:+${added.join('+')}`,
          reportedHash: null,
          problems: [],
        });
        const written = [null, full(['a'], true), diff(['b']), full(['x'], false), full(['c'], true), diff(['d'])];
        const heads: ({ seq: number; entryHash: string } | null)[] = [null];
        for (const [n, version] of written.entries()) {
          const out = await store.commitStep(
            sessionId,
            version ? agbomStep(n, heads[n], version) : step(sessionId, n, heads[n]),
          );
          expect(out.status).toBe('committed');
          heads.push(headOf(out));
        }
        // A stale step writes no version: its entry did not land, and seq 1's version stays the one chained.
        expect((await store.commitStep(sessionId, agbomStep(20, heads[1], full(['stale'], true)))).status).toBe(
          'stale_head',
        );
        const entries = await store.listContextEntries(sessionId);
        const versions = await store.listAgbomVersions(sessionId);
        expect(versions.map((v) => [v.seq, v.method, v.form, v.adopted])).toEqual([
          [1, 'agbom/snapshot', 'full', true],
          [2, 'agbom/update', 'diff', true],
          [3, 'agbom/snapshot', 'full', false],
          [4, 'agbom/snapshot', 'full', true],
          [5, 'agbom/update', 'diff', true],
        ]);
        for (const v of versions) {
          const { sessionId: sid, seq, entryHash, createdAt, ...rest } = v;
          expect(rest).toEqual(written[seq]);
          expect([sid, entryHash]).toEqual([sessionId, entries[seq].entryHash]);
          expect(createdAt).toBeInstanceOf(Date);
        }
        expect((await store.listAgbomVersions(sessionId, 3)).map((v) => v.seq)).toEqual([1, 2, 3]);
        // In force: from the latest adopted full version on; a refused full version does not reset the fold.
        expect((await store.agbomVersionsInForce(sessionId)).map((v) => v.seq)).toEqual([4, 5]);
        expect((await store.agbomVersionsInForce(sessionId, 3)).map((v) => v.seq)).toEqual([1, 2, 3]);
        expect((await store.agbomVersionsInForce(sessionId, 1)).map((v) => v.seq)).toEqual([1]);
        expect(await store.agbomVersionsInForce(sessionId, 0)).toEqual([]);
        // The agbom/* entries as stored, for `audit verify` to re-derive the versions from.
        const stored = await store.readAgbomEntries(sessionId);
        expect(stored.map((e) => [e.seq, e.stepType, e.entryHash])).toEqual(
          [1, 2, 3, 4, 5].map((seq) => [seq, written[seq]?.method, entries[seq].entryHash]),
        );
        expect(stored[0].paramsJcs).toBe(canonicalJson(entries[1].params));
        expect(JSON.parse(stored[2].resultJcs ?? 'null')).toEqual({ decision: 'deny', n: 3 });
        const time = await store.getEntryTime(sessionId, 4);
        expect(time).toEqual({ timestamp: entries[4].content.timestamp, createdAt: entries[4].createdAt });
        expect(await store.getEntryTime(sessionId, 99)).toBeNull();
        const unknown = randomUUID();
        expect(await store.listAgbomVersions(unknown)).toEqual([]);
        expect(await store.agbomVersionsInForce(unknown)).toEqual([]);
        expect(await store.readAgbomEntries(unknown)).toEqual([]);
      });

      it('refuses malformed steps before they join a batch', async () => {
        const sessionId = await newSession(store);
        await expectStoreError(
          store.commitStep(sessionId, step(sessionId, 0, { seq: -3, entryHash: 'zz' })),
          'invalid_input',
        );
        await expectStoreError(
          store.commitStep(
            sessionId,
            step(sessionId, 0, null, { replayKeys: [{ kind: 'bogus' as never, value: 'x' }] }),
          ),
          'invalid_input',
        );
        const bad = step(sessionId, 0, null);
        bad.entry.content.request_hash = '0'.repeat(64);
        await expectStoreError(store.commitStep(sessionId, bad), 'invalid_input');
        // An AgBOM version that cannot be stored is refused with its step, before the batch.
        const version: AgbomVersionWrite = {
          method: 'agbom/snapshot',
          form: 'full',
          adopted: true,
          document: { agent_id: 'agent-1', components: [] },
          diff: { added: [], removed: [] },
          agbomHash: 'sha256:empty',
          reportedHash: null,
          problems: [],
        };
        await expectStoreError(
          store.commitStep(sessionId, step(sessionId, 0, null, { agbom: { ...version, diff: { n: 1n } } })),
          'invalid_input',
        );
        await expectStoreError(
          store.commitStep(sessionId, step(sessionId, 0, null, { agbom: { ...version, form: 'partial' as 'full' } })),
          'invalid_input',
        );
        expect(await store.getChainHead(sessionId)).toBeNull();
      });
    });

    it('signs a checkpoint every N entries and on close', async () => {
      const sessionId = await newSession(store);
      for (let i = 0; i < 9; i++) await store.appendContextEntry(sessionId, stepEntry(sessionId, i));
      await store.flush();
      const head = await store.getChainHead(sessionId);
      await store.closeSession(sessionId, new Date());
      const cps = await store.listCheckpoints(sessionId);
      expect(cps.map((c) => c.seq)).toEqual([3, 7, 8]);
      expect(cps[2].headHash).toBe(head?.entryHash);
      const entries = await store.listContextEntries(sessionId);
      for (const cp of cps) {
        expect(cp.headHash).toBe(entries[cp.seq].entryHash);
        expect(await verifyCheckpoint(checkpointKey, cp)).toBe(true);
        expect(await verifyCheckpoint(checkpointKey, { ...cp, headHash: entries[0].entryHash })).toBe(false);
      }
    });

    it('signs an idle head after everyMs, without waiting for N entries', async () => {
      const timed = await open({
        checkpoints: { signer: checkpointKey, keyId: 'ckpt-t', everyEntries: 0, everyMs: 100 },
      });
      try {
        const sessionId = randomUUID();
        await timed.appendContextEntry(sessionId, stepEntry(sessionId, 0));
        const head = await timed.appendContextEntry(sessionId, stepEntry(sessionId, 1));
        const signedHead = async () => (await timed.listCheckpoints(sessionId)).find((c) => c.seq === 1);
        for (let i = 0; i < 200 && !(await signedHead()); i++) await new Promise((r) => setTimeout(r, 50));
        expect(await signedHead()).toMatchObject({
          seq: 1,
          headHash: head.entryHash,
          keyId: 'ckpt-t',
          algorithm: 'HMAC-SHA256',
        });
        expect(await verifyCheckpoint(checkpointKey, (await signedHead())!)).toBe(true);
      } finally {
        await timed.close();
      }
    });

    it('stores policy bundles and activations', async () => {
      const bytes = new Uint8Array([0, 1, 2, 255, 0, 7]);
      const sha = 'a'.repeat(63) + String(Math.floor(Math.random() * 10));
      await store.putPolicyBundle({ sha256: sha, revision: 'r1', manifest: { roots: ['acs'] }, bytes, source: 'test' });
      await store.putPolicyBundle({ sha256: sha, revision: 'r1', manifest: { roots: ['acs'] }, bytes, source: 'test' });
      const b = await store.getPolicyBundle(sha);
      expect(b?.bytes).toEqual(bytes);
      expect(b).toMatchObject({ revision: 'r1', manifest: { roots: ['acs'] }, source: 'test' });
      await store.activatePolicyBundle(sha, 'tester');
      expect(await store.getActivePolicyBundle()).toMatchObject({
        bundleSha256: sha,
        revision: 'r1',
        activatedBy: 'tester',
      });
      await expectStoreError(store.activatePolicyBundle('b'.repeat(64)), 'not_found');
      await expectStoreError(
        store.putPolicyBundle({ sha256: 'nothex', revision: 'r', manifest: {}, bytes, source: null }),
        'invalid_input',
      );
      // A 1 MiB bundle of every byte value round-trips exactly (bytes travel as wrapped base64 text).
      const big = new Uint8Array(1 << 20).map((_, i) => (i * 7919) & 0xff);
      const bigSha = 'c'.repeat(63) + String(Math.floor(Math.random() * 10));
      await store.putPolicyBundle({ sha256: bigSha, revision: 'r-big', manifest: {}, bytes: big, source: null });
      expect(Buffer.compare(Buffer.from((await store.getPolicyBundle(bigSha))!.bytes), Buffer.from(big))).toBe(0);
    });

    it('looks registered bundles up by sha256 and revision, and numbers activations newest first', async () => {
      const revision = `rev-${Math.random()}`;
      const older = { sha256: 'd'.repeat(63) + String(Math.floor(Math.random() * 10)), bytes: new Uint8Array([1, 2]) };
      const newer = { sha256: 'e'.repeat(63) + String(Math.floor(Math.random() * 10)), bytes: new Uint8Array([3]) };
      await store.putPolicyBundle({ ...older, revision, manifest: {}, source: 'first' });
      await new Promise((r) => setTimeout(r, 5));
      await store.putPolicyBundle({ ...newer, revision, manifest: {}, source: null });
      // A second put of the same bytes keeps the first row (source and time).
      await store.putPolicyBundle({ ...older, revision, manifest: {}, source: 'second' });
      const info = await store.getPolicyBundleInfo(older.sha256);
      expect(info).toMatchObject({ sha256: older.sha256, revision, source: 'first' });
      expect(info?.createdAt).toBeInstanceOf(Date);
      expect(await store.getPolicyBundleInfo('f'.repeat(64))).toBeNull();
      expect((await store.findPolicyBundleByRevision(revision))?.sha256).toBe(newer.sha256);
      expect(await store.findPolicyBundleByRevision(`${revision}-none`)).toBeNull();
      const listed = (await store.listPolicyBundles()).filter((b) => b.revision === revision);
      expect(listed.map((b) => b.sha256)).toEqual([older.sha256, newer.sha256]);
      expect(Buffer.from((await store.readPolicyBundleBytes(older.sha256)) ?? [])).toEqual(Buffer.from([1, 2]));
      expect(await store.readPolicyBundleBytes('f'.repeat(64))).toBeNull();

      const first = await store.activatePolicyBundle(older.sha256, 'ops');
      const second = await store.activatePolicyBundle(newer.sha256, null);
      expect(second).toBeGreaterThan(first);
      expect(await store.listPolicyActivations(2)).toMatchObject([
        { id: second, bundleSha256: newer.sha256, revision, activatedBy: null },
        { id: first, bundleSha256: older.sha256, revision, activatedBy: 'ops' },
      ]);
      await store.appendLifecycleAudit({
        actor: 'ops',
        action: 'activate',
        target: revision,
        outcome: 'ok',
        detail: null,
      });
      const [audit] = await store.listLifecycleAudit(1);
      expect(audit).toMatchObject({ actor: 'ops', action: 'activate', target: revision, outcome: 'ok', detail: null });
      expect(audit.at).toBeInstanceOf(Date);
    });

    it('keeps replica heartbeats, the shadow target and its differences', async () => {
      const replicaId = `replica-${Math.random()}`;
      const beat = {
        replicaId,
        hostname: 'host-a',
        revision: 'r1',
        bundleSha256: 'a'.repeat(64),
        shadowRevision: null,
        lastSync: new Date('2026-01-02T03:04:05.678Z'),
        lastError: null,
        status: { pollers: [{ name: 'acs', etag: '"e1"' }] },
      };
      await store.heartbeatReplica(beat);
      await store.heartbeatReplica({ ...beat, hostname: 'host-b', revision: 'r2', lastError: 'refused' });
      const { replicas, now } = await store.listReplicaHeartbeats();
      const row = replicas.find((r) => r.replicaId === replicaId);
      // The upsert keeps the first hostname and takes the rest.
      expect(row).toMatchObject({ ...beat, revision: 'r2', lastError: 'refused' });
      expect(row!.heartbeatAt.getTime()).toBeLessThanOrEqual(now.getTime());

      const target = 'b'.repeat(63) + String(Math.floor(Math.random() * 10));
      await store.setShadowTarget(target, 'ops');
      expect(await store.getShadowTarget()).toBe(target);
      const difference = {
        replicaId,
        method: 'steps/toolCallRequest',
        enforcingRevision: 'r2',
        shadowRevision: 'r3',
        shadowSha256: target,
        enforcing: { decision: 'allow' },
        shadow: { decision: 'deny', reasons: ['x'] },
        shadowError: null,
        at: new Date('2026-01-02T03:04:06.000Z'),
      };
      await store.recordShadowDifference(difference);
      await store.recordShadowDifference({ ...difference, shadow: null, shadowError: 'timeout' });
      const counts = await store.countShadowDifferences(target);
      // Equal counts: either order.
      expect(counts).toHaveLength(2);
      expect(counts).toEqual(
        expect.arrayContaining([
          { method: 'steps/toolCallRequest', enforcing: 'allow', shadow: 'deny', count: 1 },
          { method: 'steps/toolCallRequest', enforcing: 'allow', shadow: null, count: 1 },
        ]),
      );
      expect(await store.listShadowDifferences(target, 1)).toEqual([
        { ...difference, shadow: null, shadowError: 'timeout' },
      ]);
      await store.setShadowTarget(null, 'ops');
      expect(await store.getShadowTarget()).toBeNull();
    });

    it('prunes whole closed sessions only, keeping a signed head', async () => {
      const closed = await newSession(store);
      const open = await newSession(store);
      for (let i = 0; i < 5; i++) {
        await store.appendContextEntry(closed, stepEntry(closed, i));
        await store.appendContextEntry(open, stepEntry(open, i));
      }
      await store.closeSession(closed, new Date('2020-01-01T00:00:00Z'));
      const result = await store.pruneClosedSessions(new Date('2020-06-01T00:00:00Z'));
      expect(result.sessions).toBeGreaterThanOrEqual(1);
      expect(await store.listContextEntries(closed)).toEqual([]);
      expect(await store.getSession(closed)).toBeNull();
      const chain = await store.getChain(closed);
      expect(chain?.prunedAt).toBeInstanceOf(Date);
      expect((await store.listCheckpoints(closed)).some((c) => c.seq === 4 && c.headHash === chain?.headHash)).toBe(
        true,
      );
      expect(await store.listContextEntries(open)).toHaveLength(5);
      await expectStoreError(store.appendContextEntry(closed, stepEntry(closed, 9)), 'conflict');
    });

    it('fails closed after close()', async () => {
      const s = await open();
      await s.close();
      await expectStoreError(s.appendContextEntry(randomUUID(), stepEntry('x', 0)), 'unavailable');
      await expectStoreError(s.getSession('x'), 'unavailable');
      await expectStoreError(s.agbomVersionsInForce('x'), 'unavailable');
    });
  });
}
