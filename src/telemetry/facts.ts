// The facts of one answered message that spans, OCSF events and metrics are made of, read once from the
// observation on the request's thread into a compact record of plain data (StepRecord), which is what crosses to
// the export thread: only identifiers, counts and the mapped attributes, never payload content (prompts, tool
// arguments, retrieved text) and never signatures or key material (ACS §Trace "Sensitive data").
import type { AcsResult } from '../acs/types.ts';
import { collectProvenance } from '../policy/index.ts';
import { isObject, type Json } from '../json.ts';
import { ocsfSubjectOf } from './events/ocsf.ts';
import type { RequestObservation } from './observation.ts';
import type { DecisionFact, ProvenanceFact, StepRecord } from './record.ts';
import { stepAttributes } from './traces/mapping.ts';

export type { DecisionFact, ProvenanceFact, StepFacts, StepRecord } from './record.ts';

const text = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 ? v : undefined);

function lineageDepth(observation: RequestObservation, id: string): number | undefined {
  const p = observation.state?.provenance;
  if (!p) return undefined;
  const rec =
    (Object.hasOwn(p.recent_records ?? {}, id) ? p.recent_records?.[id] : undefined) ??
    (Object.hasOwn(p.records, id) ? p.records[id] : undefined);
  return rec?.lineage_depth;
}

function decisionOf(r: AcsResult): DecisionFact {
  const m = r.metadata;
  const d: DecisionFact = {
    decision: r.decision,
    evaluator: m?.evaluator ?? 'deterministic',
    reasonCodes: r.reason_codes ?? [],
    citedProvenanceIds: r.cited_provenance_ids ?? [],
    policyReferences: (r.policy_references ?? []) as unknown as Json[],
  };
  if (m?.evaluator_version) d.evaluatorVersion = m.evaluator_version;
  if (m?.model_id) d.modelId = m.model_id;
  if (m?.confidence !== undefined) d.confidence = m.confidence;
  if (r.reasoning) d.reasoning = r.reasoning;
  if (r.chain_hash) d.chainHash = r.chain_hash;
  return d;
}

/** The record of a finished observation (its envelope and end set). */
export function stepRecordOf(observation: RequestObservation): StepRecord {
  const request = observation.request;
  const envelope = observation.envelope;
  const params = request?.params;
  const metadata = params?.metadata;
  const payload = isObject(params?.payload) ? params.payload : {};
  const method = request?.method ?? 'invalid';
  const base = observation.startedAtEpochMs - observation.startMs;
  const stages = observation.marks.slice();
  for (let i = 1; i < stages.length; i += 2) stages[i] += base;
  const record: StepRecord = {
    method,
    provenance: [],
    transport: observation.transport,
    startEpochMs: observation.startedAtEpochMs,
    endEpochMs: observation.endMs + base,
    stages,
    attributes: {},
    ocsf: {},
  };
  // Only the members that hold a value: an absent one costs nothing to copy to the export thread.
  if (params?.request_id !== undefined) record.requestId = params.request_id;
  if (metadata?.session_id !== undefined) record.sessionId = metadata.session_id;
  if (metadata?.agent_id !== undefined) record.agentId = metadata.agent_id;
  if (params?.tenant_id !== undefined) record.tenantId = params.tenant_id;
  if (metadata?.turn_id !== undefined) record.turnId = metadata.turn_id;
  if (metadata?.parent_turn_id !== undefined) record.parentTurnId = metadata.parent_turn_id;
  const carrier = observation.carrier;
  if (carrier?.traceparent) record.traceparent = carrier.traceparent;
  if (carrier?.tracestate) record.tracestate = carrier.tracestate;
  if (envelope && 'error' in envelope) {
    const reason = envelope.error.data?.reason;
    record.error = typeof reason === 'string' ? { code: envelope.error.code, reason } : { code: envelope.error.code };
  } else if (envelope && 'decision' in envelope.result) record.decision = decisionOf(envelope.result);
  if (request) {
    for (const found of collectProvenance(payload as Json)) {
      const fact: ProvenanceFact = { provenance_id: found.provenance_id, origin: found.origin };
      if (found.source_id !== undefined) fact.source_id = found.source_id;
      const depth = lineageDepth(observation, found.provenance_id);
      if (depth !== undefined) fact.lineage_depth = depth;
      record.provenance.push(fact);
    }
  }
  if (method === 'steps/turnStart' || method === 'steps/turnEnd') {
    const turn = text(payload.turn_id);
    if (turn) record.payloadTurnId = turn;
    const parent = method === 'steps/turnStart' ? text(payload.parent_turn_id) : undefined;
    if (parent) record.payloadParentTurnId = parent;
  }
  record.attributes = stepAttributes(record, payload);
  record.attributes['acs.transport'] = observation.transport;
  record.ocsf = ocsfSubjectOf(record, payload);
  return record;
}
