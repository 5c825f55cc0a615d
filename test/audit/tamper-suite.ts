// Tampering drills, run on both drivers: each edit of the stored log must be named by `audit verify`.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { computeEntryHash, type ContextEntryContent } from '../../src/chain/index.ts';
import { verifyAllChains, verifyChain, type ChainBreakKind } from '../../src/audit/index.ts';
import type { DurableStore, OpenStoreOptions } from '../../src/store/index.ts';
import { checkpointKey, stepEntry } from '../store/storage-suite.ts';

const ENTRIES = 12;

export function defineTamperSuite(
  name: string,
  open: (extra: Partial<OpenStoreOptions>) => Promise<DurableStore>,
): void {
  describe(`audit verify on ${name}`, () => {
    let store: DurableStore;
    const verifyOptions = { verifiers: [checkpointKey] };

    beforeAll(async () => {
      // Checkpoints at seq 3, 7, 11.
      store = await open({ checkpoints: { signer: checkpointKey, keyId: 'ckpt-1', everyEntries: 4, everyMs: 0 } });
    });
    afterAll(async () => {
      await store?.close();
    });

    async function chainOf(n = ENTRIES): Promise<string> {
      const sessionId = randomUUID();
      for (let i = 0; i < n; i++) {
        const a = await store.appendContextEntry(sessionId, stepEntry(sessionId, i));
        await store.recordDecision(sessionId, a.seq, {
          result: { type: 'final', decision: 'allow', chain_hash: a.entryHash },
          bundleRevision: 'r1',
          evaluationDurationMs: 0.1,
        });
      }
      await store.flush();
      return sessionId;
    }

    async function expectBreak(sessionId: string, kind: ChainBreakKind, seq: number | null): Promise<void> {
      const report = await verifyChain(store, sessionId, verifyOptions);
      expect(report.ok).toBe(false);
      expect(report.firstBreak).toMatchObject({ kind, seq });
    }

    it('an untouched chain verifies, checkpoints included', async () => {
      const sessionId = await chainOf();
      const report = await verifyChain(store, sessionId, verifyOptions);
      expect(report).toMatchObject({
        ok: true,
        entries: ENTRIES,
        headSeq: ENTRIES - 1,
        checkpoints: 3,
        checkpointsVerified: 3,
        firstBreak: null,
      });
      // A small page size walks the same chain across pages.
      expect((await verifyChain(store, sessionId, { ...verifyOptions, pageSize: 5 })).ok).toBe(true);
    });

    it('says when checkpoint signatures could not be checked (no key for them)', async () => {
      const sessionId = await chainOf(4);
      const report = await verifyChain(store, sessionId);
      expect(report).toMatchObject({ ok: true, checkpoints: 1, checkpointsVerified: 0 });
      expect(report.warnings).toEqual([expect.stringContaining('signature not checked')]);
    });

    it('names an edited entry content', async () => {
      const sessionId = await chainOf();
      await store.query(
        `update context_entries set content_jcs = replace(content_jcs, '"steps/userMessage"', '"steps/agentResponse"'), step_type = 'steps/agentResponse' where session_id = $1 and seq = 5`,
        [sessionId],
      );
      await expectBreak(sessionId, 'entry_hash_mismatch', 5);
    });

    it('names edited params (request_hash no longer matches)', async () => {
      const sessionId = await chainOf();
      await store.query(
        `update context_entries set params_jcs = replace(params_jcs, 'h\u00e9llo', 'HELLO') where session_id = $1 and seq = 2`,
        [sessionId],
      );
      await expectBreak(sessionId, 'request_hash_mismatch', 2);
    });

    it('names an indexed column edited on its own', async () => {
      const sessionId = await chainOf();
      await store.query(`update context_entries set step_type = 'steps/sessionEnd' where session_id = $1 and seq = 9`, [
        sessionId,
      ]);
      await expectBreak(sessionId, 'column_mismatch', 9);
    });

    it('names a deleted entry', async () => {
      const sessionId = await chainOf();
      await store.query('delete from context_entries where session_id = $1 and seq = 5', [sessionId]);
      await expectBreak(sessionId, 'seq_gap', 5);
    });

    it('names two swapped entries', async () => {
      const sessionId = await chainOf();
      await store.query('update context_entries set seq = -1 where session_id = $1 and seq = 4', [sessionId]);
      await store.query('update context_entries set seq = 4 where session_id = $1 and seq = 5', [sessionId]);
      await store.query('update context_entries set seq = 5 where session_id = $1 and seq = -1', [sessionId]);
      await expectBreak(sessionId, 'previous_hash_mismatch', 4);
    });

    it('names a truncated tail, and still catches it when the head row is rewritten to match', async () => {
      const sessionId = await chainOf();
      await store.query('delete from context_entries where session_id = $1 and seq >= 9', [sessionId]);
      await expectBreak(sessionId, 'head_mismatch', 9);
      const [last] = await store.query('select entry_hash from context_entries where session_id = $1 and seq = 8', [
        sessionId,
      ]);
      await store.query('update chain_heads set seq = 8, head_hash = $2 where session_id = $1', [
        sessionId,
        last.entry_hash,
      ]);
      await expectBreak(sessionId, 'checkpoint_beyond_chain', 11);
    });

    it('catches a whole chain rewritten consistently through its signed checkpoints', async () => {
      const sessionId = await chainOf();
      const rows = await store.query(
        'select seq, content_jcs from context_entries where session_id = $1 order by seq',
        [sessionId],
      );
      // Rewrite history from seq 6 on, re-hashing every later entry and the head, as an attacker with SQL access could.
      let previous = (
        await store.query('select entry_hash from context_entries where session_id = $1 and seq = 5', [sessionId])
      )[0].entry_hash as string;
      for (const row of rows.slice(6)) {
        const content = JSON.parse(row.content_jcs as string) as ContextEntryContent;
        if (row.seq === 6) content.step_type = 'steps/agentResponse';
        const hash = computeEntryHash(content, previous);
        await store.query(
          'update context_entries set content_jcs = $3, step_type = $4, previous_hash = $5, entry_hash = $6, result_jcs = null where session_id = $1 and seq = $2',
          [sessionId, row.seq, JSON.stringify(content), content.step_type, previous, hash],
        );
        previous = hash;
      }
      await store.query('update chain_heads set head_hash = $2 where session_id = $1', [sessionId, previous]);
      // The canonicalisation differs from JCS here only in key order, which JSON.parse + JCS normalises away.
      await expectBreak(sessionId, 'checkpoint_mismatch', 7);
    });

    it('names a forged checkpoint', async () => {
      const sessionId = await chainOf();
      const [e] = await store.query('select entry_hash from context_entries where session_id = $1 and seq = 2', [
        sessionId,
      ]);
      await store.query('update checkpoints set head_hash = $2, seq = 2 where scope = $1 and seq = 3', [
        sessionId,
        e.entry_hash,
      ]);
      await expectBreak(sessionId, 'checkpoint_signature_invalid', 2);
    });

    it('names a decision whose chain_hash is not its entry (ACS §8.6)', async () => {
      const sessionId = await chainOf(3);
      await store.query(
        `update context_entries set result_jcs = '{"chain_hash":"${'0'.repeat(64)}","decision":"allow"}' where session_id = $1 and seq = 1`,
        [sessionId],
      );
      await expectBreak(sessionId, 'decision_chain_hash_mismatch', 1);
    });

    it('accepts a pruned session through its signed head, and refuses one whose checkpoint was removed', async () => {
      const sessionId = await chainOf(6);
      await store.createSession({
        id: sessionId,
        tenantId: null,
        agentId: 'a',
        keyId: null,
        hello: null,
        intent: null,
        state: null,
        parentSessionId: null,
      });
      await store.closeSession(sessionId, new Date('2001-01-01T00:00:00Z'));
      await store.pruneClosedSessions(new Date('2001-06-01T00:00:00Z'));
      const report = await verifyChain(store, sessionId, verifyOptions);
      expect(report).toMatchObject({ ok: true, pruned: true, entries: 0 });
      await store.query('delete from checkpoints where scope = $1', [sessionId]);
      await expectBreak(sessionId, 'pruned_without_checkpoint', null);
    });

    it('verifies every chain and counts the broken ones', async () => {
      const broken = await chainOf(4);
      await store.query('delete from context_entries where session_id = $1 and seq = 1', [broken]);
      const reports: string[] = [];
      const summary = await verifyAllChains(store, verifyOptions, (r) => {
        if (!r.ok) reports.push(r.sessionId);
      });
      expect(reports).toContain(broken);
      expect(summary.broken).toBe(reports.length);
      expect(summary.chains).toBeGreaterThan(reports.length);
    });
  });
}
