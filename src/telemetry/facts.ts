// The facts of one answered message that spans, OCSF events and metrics are made of, read once from the
// observation. Only identifiers, counts and the mapped attributes leave the Guardian: never payload content
// (prompts, tool arguments, retrieved text) and never signatures or key material (ACS §Trace "Sensitive data").
import type { AcsResult } from '../acs/types.ts';
import { collectProvenance } from '../policy/index.ts';
import type { Json } from '../store/types.ts';
import type { RequestObservation } from './observation.ts';

export interface ProvenanceFact {
  provenance_id: string;
  origin: string;
  source_id?: string;
  lineage_depth?: number;
}

export interface DecisionFact {
  decision: AcsResult['decision'];
  evaluator: string;
  evaluatorVersion?: string;
  modelId?: string;
  confidence?: number;
  reasoning?: string;
  reasonCodes: string[];
  citedProvenanceIds: string[];
  policyReferences: Json[];
  chainHash?: string;
}

export interface StepFacts {
  method: string;
  requestId?: string;
  sessionId?: string;
  agentId?: string;
  tenantId?: string;
  turnId?: string;
  parentTurnId?: string;
  payload: Record<string, unknown>;
  decision?: DecisionFact;
  /** JSON-RPC error code and reason when the answer is an error. */
  error?: { code: number; reason?: string };
  provenance: ProvenanceFact[];
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function lineageDepth(observation: RequestObservation, id: string): number | undefined {
  const p = observation.state?.provenance;
  if (!p) return undefined;
  const rec =
    (Object.hasOwn(p.recent_records ?? {}, id) ? p.recent_records?.[id] : undefined) ??
    (Object.hasOwn(p.records, id) ? p.records[id] : undefined);
  return rec?.lineage_depth;
}

export function stepFactsOf(observation: RequestObservation): StepFacts {
  const request = observation.request;
  const envelope = observation.envelope;
  const payload = isObject(request?.params.payload) ? request.params.payload : {};
  const facts: StepFacts = {
    method: request?.method ?? 'invalid',
    requestId: request?.params.request_id,
    sessionId: request?.params.metadata.session_id,
    agentId: request?.params.metadata.agent_id,
    tenantId: request?.params.tenant_id,
    turnId: request?.params.metadata.turn_id,
    parentTurnId: request?.params.metadata.parent_turn_id,
    payload,
    provenance: [],
  };
  if (envelope && 'error' in envelope) {
    const reason = envelope.error.data?.reason;
    facts.error = { code: envelope.error.code, ...(typeof reason === 'string' ? { reason } : {}) };
  } else if (envelope && 'decision' in envelope.result) {
    const r = envelope.result;
    facts.decision = {
      decision: r.decision,
      evaluator: r.metadata?.evaluator ?? 'deterministic',
      ...(r.metadata?.evaluator_version ? { evaluatorVersion: r.metadata.evaluator_version } : {}),
      ...(r.metadata?.model_id ? { modelId: r.metadata.model_id } : {}),
      ...(r.metadata?.confidence !== undefined ? { confidence: r.metadata.confidence } : {}),
      ...(r.reasoning ? { reasoning: r.reasoning } : {}),
      reasonCodes: r.reason_codes ?? [],
      citedProvenanceIds: r.cited_provenance_ids ?? [],
      policyReferences: (r.policy_references ?? []) as unknown as Json[],
      ...(r.chain_hash ? { chainHash: r.chain_hash } : {}),
    };
  }
  if (request) {
    for (const found of collectProvenance(payload as Json)) {
      const depth = lineageDepth(observation, found.provenance_id);
      facts.provenance.push({
        provenance_id: found.provenance_id,
        origin: found.origin,
        ...(found.source_id !== undefined ? { source_id: found.source_id } : {}),
        ...(depth !== undefined ? { lineage_depth: depth } : {}),
      });
    }
  }
  return facts;
}
