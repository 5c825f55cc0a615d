// §8 SessionContext and the audit chain: entries written on arrival (denied steps included), published heads,
// the §8.6 cross-check, sessionEnd sealing, subagent chains and the fixed Intent. Real PGlite store.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson, computeEntryHash, computeRequestHash } from '../../src/chain/index.ts';
import type { Json } from '../../src/json.ts';
import { scriptedDecisionEngine } from './fixtures/decision-module.ts';
import { ALL_STEPS, startHarness, type Harness } from './fixtures/harness.ts';

const MSG = { content: [{ type: 'text', value: 'hi' }] };
const want = (input: Json): Json =>
  (input as { params: { payload: { want?: Json } } }).params.payload.want ?? { decision: 'allow' };
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ engine: await scriptedDecisionEngine(want) });
});
afterAll(async () => {
  await h.close();
});

describe('audit chain (§8.2, §8.6)', () => {
  it('every evaluated step (denied ones too) is an entry {entry_id = step_id = request_id, step_type, request_hash, timestamp} and its hash is the published chain_hash', async () => {
    const c = h.client();
    await c.hello({ methods_implemented: ALL_STEPS });
    const sent: { id: string; hash: string }[] = [];
    for (const payload of [{}, { ...MSG, want: { decision: 'deny', reasoning: 'no' } }, MSG]) {
      const method = Object.keys(payload).length === 0 ? 'steps/sessionStart' : 'steps/userMessage';
      const req = await c.buildRequest(method, payload);
      const res = await c.exchange(req);
      const result = (res as { result: { chain_hash: string; decision: string } }).result;
      expect(result.chain_hash).toMatch(/^[0-9a-f]{64}$/);
      sent.push({ id: req.params.request_id, hash: result.chain_hash });
      // The hint the SDK would send is maintained by step(); exchange() bypasses it, so keep the chain by hand.
      const entries = await h.store.listContextEntries(c.sessionId);
      const last = entries.at(-1)!;
      expect(last.content).toEqual({
        entry_id: req.params.request_id,
        step_id: req.params.request_id,
        step_type: method,
        request_hash: computeRequestHash(req.params),
        timestamp: req.params.timestamp,
      });
      expect(last.entryHash).toBe(result.chain_hash);
      expect(computeEntryHash(last.content, last.previousHash)).toBe(last.entryHash);
      expect((last.result as { decision: string }).decision).toBe(result.decision);
      // The texts the pipeline canonicalised once and handed over are the JCS of what was received and delivered.
      const [raw] = await h.store.query(
        'select params_jcs, result_jcs, content_jcs from context_entries where session_id = $1 and seq = $2',
        [c.sessionId, last.seq],
      );
      expect(raw).toEqual({
        params_jcs: canonicalJson(req.params),
        result_jcs: canonicalJson(result),
        content_jcs: canonicalJson(last.content),
      });
    }
    const entries = await h.store.listContextEntries(c.sessionId);
    expect(entries.map((e) => e.entryHash)).toEqual(sent.map((s) => s.hash));
    expect(entries[0].previousHash).toBeNull();
    expect(entries[1].previousHash).toBe(entries[0].entryHash);
  });

  it('the SDK recomputes each published head from the request stream and sends it back as session_state.chain_hash', async () => {
    const c = h.client();
    await c.hello({ methods_implemented: ALL_STEPS });
    for (let i = 0; i < 3; i++) {
      const out = await c.step('steps/userMessage', MSG);
      expect(out.failure).toBeUndefined();
      expect(out.result?.chain_hash).toBe(c.chainHash);
    }
    expect((await h.store.getChainHead(c.sessionId))?.entryHash).toBe(c.chainHash);
  });

  it('a client head that disagrees with the Guardian head → signed DENY chain_mismatch, no entry, no chain_hash', async () => {
    const c = h.client();
    await c.hello({ methods_implemented: ALL_STEPS });
    await c.step('steps/userMessage', MSG);
    const before = await h.store.listContextEntries(c.sessionId);
    const out = await c.step('steps/userMessage', MSG, { metadata: { session_state: { chain_hash: 'f'.repeat(64) } } });
    expect(out.failure).toBeUndefined();
    expect(out.decision).toBe('deny');
    expect(out.result?.reason_codes).toEqual(['chain_mismatch']);
    expect(out.result?.chain_hash).toBeUndefined();
    expect(await h.store.listContextEntries(c.sessionId)).toHaveLength(before.length);
  });
});

describe('session lifecycle', () => {
  it('sessionEnd seals the chain: later steps get a signed DENY session_closed with no chain_hash; replays are still -32005', async () => {
    const c = h.client();
    await c.hello({ methods_implemented: ALL_STEPS });
    await c.step('steps/sessionStart', {});
    const end = await c.step('steps/sessionEnd', { reason: 'completed' });
    expect(end.decision).toBe('allow');
    expect(end.result?.chain_hash).toMatch(/^[0-9a-f]{64}$/);
    const after = await c.step('steps/userMessage', MSG);
    expect(after.failure).toBeUndefined();
    expect(after.decision).toBe('deny');
    expect(after.result?.reason_codes).toEqual(['session_closed']);
    expect(after.result?.chain_hash).toBeUndefined();
    const late = await c.buildRequest('steps/userMessage', MSG);
    const first = await c.exchange(late);
    expect('result' in first && first.result).toMatchObject({ decision: 'deny', reason_codes: ['session_closed'] });
    expect(await c.verifyResponse(first)).toBe(true);
    const replay = await c.exchange(late);
    expect('error' in replay && replay.error.code).toBe(-32005);
    expect((await h.store.getSession(c.sessionId))?.closedAt).not.toBeNull();
  });

  it('subagentStart opens a separate chain for the subagent session (no second handshake); subagentStop checks its final head; a denied spawn opens none', async () => {
    const parent = h.client();
    await parent.hello({ methods_implemented: ALL_STEPS });
    await parent.step('steps/sessionStart', { intent: { parsed: ['filesystem.read'] } });
    const childId = randomUUID();
    const spawn = await parent.step('steps/subagentStart', {
      subagent_session_id: childId,
      parent_session_id: parent.sessionId,
      intent_derivation: 'inherit_full',
    });
    expect(spawn.decision).toBe('allow');
    const child = h.client({ sessionId: childId });
    const first = await child.step('steps/userMessage', MSG);
    expect(first.failure).toBeUndefined();
    const childEntries = await h.store.listContextEntries(childId);
    expect(childEntries).toHaveLength(1);
    expect(childEntries[0].previousHash).toBeNull();
    const childSession = await h.store.getSession(childId);
    expect(childSession?.parentSessionId).toBe(parent.sessionId);
    expect(childSession?.intent).toMatchObject({ parsed: ['filesystem.read'] });
    const parentEntries = await h.store.listContextEntries(parent.sessionId);
    expect(parentEntries.some((e) => e.entryHash === first.result?.chain_hash)).toBe(false);

    const childEnd = await child.step('steps/sessionEnd', { reason: 'completed' });
    const stopOk = await parent.step('steps/subagentStop', {
      subagent_session_id: childId,
      outcome: 'completed',
      final_chain_hash: childEnd.result!.chain_hash!,
    });
    expect(stopOk.decision).toBe('allow');
    expect(h.audits.some((a) => a.sessionId === parent.sessionId && a.code === 'subagent_chain_mismatch')).toBe(false);
    const stopBad = await parent.step('steps/subagentStop', {
      subagent_session_id: childId,
      outcome: 'completed',
      final_chain_hash: 'e'.repeat(64),
    });
    expect(stopBad.decision).toBe('allow');
    expect(h.audits.some((a) => a.sessionId === parent.sessionId && a.code === 'subagent_chain_mismatch')).toBe(true);

    const deniedId = randomUUID();
    const denied = await parent.step('steps/subagentStart', {
      subagent_session_id: deniedId,
      want: { decision: 'deny', reasoning: 'no subagents' },
    });
    expect(denied.decision).toBe('deny');
    const orphan = await h.client({ sessionId: deniedId }).step('steps/userMessage', MSG);
    expect(orphan.failure?.error?.code).toBe(-32003);
  });

  it('Intent is fixed at sessionStart; a later agentTrigger intent is ignored and audited', async () => {
    const c = h.client();
    await c.hello({ methods_implemented: ALL_STEPS });
    await c.step('steps/sessionStart', { intent: { description: 'read files', parsed: ['filesystem.read'] } });
    await c.step('steps/agentTrigger', { trigger_type: 'user_message', intent: { parsed: ['filesystem.delete'] } });
    const session = await h.store.getSession(c.sessionId);
    expect(session?.intent).toMatchObject({ parsed: ['filesystem.read'] });
    expect(h.audits.some((a) => a.sessionId === c.sessionId && a.code === 'intent_change_ignored')).toBe(true);
  });
});
