// §8.2 / §8.6 — the audit chain. The ContextEntry carries entry_id = step_id = request_id (interop pin, docs/conformance.md)
// and no other members, except the provenance_summary of an ACS-Audit session (provenance.ts). It is committed with
// its decision before the verdict is delivered (a denied step is still a step); its hash is computed here from the
// head the step was evaluated against, so the answer can carry it as chain_hash, and the store refuses the commit
// if another writer moved that head.
import { canonicalJson, entryHashOfJcs, sha256Hex } from '../../chain/index.ts';
import type { Json, JsonObject } from '../../json.ts';
import type { AppendedEntry, ChainHead, NewContextEntry } from '../../store/types.ts';
import type { AcsDecision } from '../decisions/index.ts';
import type { AcsRequest } from '../types.ts';

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

/**
 * The step's ContextEntry as the store keeps it: hashed members plus the params as received, with the JCS texts
 * of both (computed once: hashed here, stored as they are). `paramsJcs` is JCS(params) when the caller has it
 * (authentication canonicalised params for the signature check).
 */
export function stepEntry(
  request: AcsRequest,
  paramsJcs: string = canonicalJson(request.params),
  provenanceSummary?: JsonObject,
): NewContextEntry & { contentJcs: string } {
  const { params } = request;
  // request_hash = SHA-256(JCS(params)) (§8.2); the same JCS text is what the store keeps.
  // Members in JCS order (RFC 8785 §3.2.3), so canonicalJson writes them natively.
  const content = {
    entry_id: params.request_id,
    ...(provenanceSummary ? { provenance_summary: provenanceSummary } : {}),
    request_hash: sha256Hex(paramsJcs),
    step_id: params.request_id,
    step_type: request.method,
    timestamp: params.timestamp,
  };
  return { content, params: params as unknown as Json, paramsJcs, contentJcs: canonicalJson(content) };
}

/** Where the entry lands when appended at `head` (the store checks the head is still there at commit). */
export function placeEntry(entry: NewContextEntry & { contentJcs: string }, head: ChainHead | null): AppendedEntry {
  const previousHash = head?.entryHash ?? null;
  return { seq: (head?.seq ?? -1) + 1, previousHash, entryHash: entryHashOfJcs(entry.contentJcs, previousHash) };
}
