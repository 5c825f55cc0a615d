// §8.2 / §8.6 — the audit chain. The ContextEntry is written on arrival, before the verdict (a denied step is
// still a step), with entry_id = step_id = request_id (interop pin, GUIDE §6) and no other members.
import { computeRequestHash } from '../../chain/index.ts';
import type { AppendedEntry, Json } from '../../store/types.ts';
import type { AcsDecision } from '../decisions/index.ts';
import type { AcsRequest } from '../types.ts';
import type { GuardianConfig } from './config.ts';

/**
 * §8.6 cross-check of the client's hint metadata.session_state.chain_hash against the Guardian head. Returns a
 * DENY `chain_mismatch` (§17.2 registered code) when they differ, else null.
 */
export function checkChainHint(request: AcsRequest, head: { entryHash: string } | null): AcsDecision | null {
  const hint = request.params.metadata.session_state?.chain_hash;
  if (hint === undefined) return null;
  if (head?.entryHash === hint) return null;
  return {
    decision: 'deny',
    reasoning: `The client's chain_hash ${String(hint).slice(0, 16)}… does not match the Guardian's head ${head ? head.entryHash.slice(0, 16) + '…' : '(empty chain)'}.`,
    reason_codes: ['chain_mismatch'],
  };
}

export async function appendStepEntry(config: GuardianConfig, request: AcsRequest): Promise<AppendedEntry> {
  const { params } = request;
  return config.store.appendContextEntry(params.metadata.session_id, {
    content: {
      entry_id: params.request_id,
      step_id: params.request_id,
      step_type: request.method,
      request_hash: computeRequestHash(params),
      timestamp: params.timestamp,
    },
    params: params as unknown as Json,
  });
}
