// `audit export`: a session as JSONL, one JCS object per line, checkable with the spec's hash rule alone
// (ACS §8.2): for each `context_entry` line, SHA-256(JCS(entry minus entry_hash, previous_hash) || prev bytes)
// must equal entry.entry_hash, and SHA-256(JCS(params)) must equal entry.request_hash.
import { canonicalJson } from '../chain/index.ts';
import { checkpointSigningInput } from '../store/checkpoints.ts';
import type { Json } from '../json.ts';
import type { DurableStore } from '../store/types.ts';

export type ExportLine =
  | {
      kind: 'session';
      session_id: string;
      agent_id: string | null;
      tenant_id: string | null;
      parent_session_id: string | null;
      created_at: string | null;
      closed_at: string | null;
      head_seq: number;
      head_hash: string | null;
      hash_rule: string;
    }
  | {
      kind: 'context_entry';
      seq: number;
      entry: Record<string, unknown>;
      params: Json;
      decision: { result: Json; bundle_revision: string | null; evaluation_duration_ms: number | null } | null;
    }
  | {
      kind: 'checkpoint';
      scope: string;
      seq: number;
      head_hash: string;
      algorithm: string;
      key_id: string;
      signature: string;
      signed: string;
    };

/** Yields the export's lines (without newlines). Throws StoreError-like errors from the store. */
export async function* exportSession(store: DurableStore, sessionId: string, pageSize = 1000): AsyncGenerator<string> {
  const [session, chain] = await Promise.all([store.getSession(sessionId), store.getChain(sessionId)]);
  if (!session && !chain) throw new Error(`no session ${sessionId}`);
  const header: ExportLine = {
    kind: 'session',
    session_id: sessionId,
    agent_id: session?.agentId ?? null,
    tenant_id: session?.tenantId ?? null,
    parent_session_id: session?.parentSessionId ?? null,
    created_at: session?.createdAt.toISOString() ?? null,
    closed_at: session?.closedAt?.toISOString() ?? null,
    head_seq: chain?.seq ?? -1,
    head_hash: chain?.headHash ?? null,
    hash_rule:
      'ACS §8.2: entry_hash = hex(SHA-256(UTF8(JCS(entry minus entry_hash, previous_hash)) || previous_hash raw bytes)); request_hash = hex(SHA-256(JCS(params)))',
  };
  yield canonicalJson(header);
  let after = -1;
  for (;;) {
    const page = await store.listContextEntries(sessionId, { afterSeq: after, limit: pageSize });
    for (const e of page) {
      // The spec's ContextEntry: optional members omitted when absent, previous_hash absent on the first entry.
      const entry: Record<string, unknown> = { ...e.content, entry_hash: e.entryHash };
      if (e.previousHash !== null) entry.previous_hash = e.previousHash;
      const line: ExportLine = {
        kind: 'context_entry',
        seq: e.seq,
        entry,
        params: e.params,
        decision:
          e.result === null
            ? null
            : { result: e.result, bundle_revision: e.bundleRevision, evaluation_duration_ms: e.evaluationDurationMs },
      };
      yield canonicalJson(line);
      after = e.seq;
    }
    if (page.length < pageSize) break;
  }
  for (const cp of await store.listCheckpoints(sessionId)) {
    const line: ExportLine = {
      kind: 'checkpoint',
      scope: cp.scope,
      seq: cp.seq,
      head_hash: cp.headHash,
      algorithm: cp.algorithm,
      key_id: cp.keyId,
      signature: cp.signature,
      signed: new TextDecoder().decode(checkpointSigningInput(cp)),
    };
    yield canonicalJson(line);
  }
}
