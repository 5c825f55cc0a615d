// ACS step → OTel span name and attributes, per the ACS OTel mapping (ACS §Trace "OpenTelemetry semantic
// conventions", otel-mapping v0.1.0). Required attributes are always set: a fact the payload leaves out is
// `unspecified` (counts are 0), so a backend filtering on the attribute still finds the span.
import { isObject } from '../../json.ts';
import type { Attributes, DecisionFact, StepFacts } from '../record.ts';

export type { AttributeValue, Attributes } from '../record.ts';

export const UNSPECIFIED = 'unspecified';

/** A payload member read as an object: {} when absent or not an object (spans and OCSF events read alike). */
export const objectOrEmpty = (v: unknown): Record<string, unknown> => (isObject(v) ? v : {});
/** A payload member read as a name: UNSPECIFIED when absent, empty or not a string. */
export const textOrUnspecified = (v: unknown): string => (typeof v === 'string' && v.length > 0 ? v : UNSPECIFIED);
const count = (v: unknown): number => (Array.isArray(v) ? v.length : 0);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

function optional(attrs: Attributes, key: string, value: unknown): void {
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') attrs[key] = value;
}

/** Span names per step method; methods outside the mapping (handshake, ping, wrapped MCP) get `acs.*` names. */
export const SPAN_NAMES: Readonly<Record<string, string>> = {
  'steps/sessionStart': 'acs.session',
  'steps/agentTrigger': 'acs.agent.trigger',
  'steps/userMessage': 'acs.message.user',
  'steps/agentResponse': 'acs.message.agent',
  'steps/toolCallRequest': 'gen_ai.tool.call',
  'steps/toolCallResult': 'gen_ai.tool.result',
  'steps/knowledgeRetrieval': 'acs.knowledge.retrieval',
  'steps/memoryStore': 'acs.memory.store',
  'steps/memoryContextRetrieval': 'acs.memory.retrieval',
  'steps/sessionEnd': 'acs.session.end',
  'steps/turnStart': 'acs.turn',
  'steps/turnEnd': 'acs.turn.end',
  'steps/preCompact': 'acs.compact',
  'steps/postCompact': 'acs.compact.complete',
  'steps/subagentStart': 'acs.subagent',
  'steps/subagentStop': 'acs.subagent.end',
  'steps/skillRegister': 'acs.skill.register',
  'steps/skillLoad': 'acs.skill.load',
  'steps/skillUnload': 'acs.skill.unload',
  'agbom/snapshot': 'acs.agbom',
  'agbom/changed': 'acs.agbom',
  'handshake/hello': 'acs.handshake',
  'system/ping': 'acs.ping',
};

export function spanNameOf(method: string): string {
  if (Object.hasOwn(SPAN_NAMES, method)) return SPAN_NAMES[method];
  if (method.startsWith('protocols/MCP/') || method.startsWith('wrapped:')) return 'acs.protocol.mcp';
  return 'acs.request';
}

/** The step's mapped attributes (required and optional) plus the identifiers every span carries. */
export function stepAttributes(facts: StepFacts, p: Record<string, unknown>): Attributes {
  const a: Attributes = { 'acs.method': facts.method };
  optional(a, 'acs.request.id', facts.requestId);
  optional(a, 'acs.session.id', facts.sessionId);
  optional(a, 'acs.agent.id', facts.agentId);
  optional(a, 'acs.tenant_id', facts.tenantId);
  const tool = objectOrEmpty(p.tool);
  switch (facts.method) {
    case 'steps/sessionStart':
      optional(a, 'acs.user.id', objectOrEmpty(p.user_identity).id);
      optional(a, 'acs.policy_mode', p.policy_mode);
      break;
    case 'steps/agentTrigger':
      a['acs.agent.id'] = textOrUnspecified(facts.agentId);
      a['acs.trigger.type'] = textOrUnspecified(p.trigger_type);
      break;
    case 'steps/userMessage':
      a['acs.content.types'] = [
        ...new Set((Array.isArray(p.content) ? p.content : []).map((c) => textOrUnspecified(objectOrEmpty(c).type))),
      ];
      break;
    case 'steps/agentResponse':
      a['acs.agent.id'] = textOrUnspecified(facts.agentId);
      break;
    case 'steps/toolCallRequest':
      a['gen_ai.tool.name'] = textOrUnspecified(tool.name);
      a['acs.capability'] = textOrUnspecified(p.capability);
      optional(a, 'acs.tool.provider', tool.provider);
      optional(a, 'acs.tool.version', tool.version);
      optional(a, 'acs.operation', p.operation);
      break;
    case 'steps/toolCallResult':
      a['gen_ai.tool.name'] = textOrUnspecified(tool.name);
      a['acs.exit_status'] = textOrUnspecified(p.exit_status);
      optional(a, 'acs.duration_ms', p.duration_ms);
      optional(a, 'acs.request_id_ref', p.request_id_ref);
      break;
    case 'steps/knowledgeRetrieval':
      a['acs.source.type'] = textOrUnspecified(objectOrEmpty(p.source).type);
      a['acs.results.count'] = count(p.results);
      break;
    case 'steps/memoryStore':
      a['acs.memory_store.name'] = textOrUnspecified(objectOrEmpty(p.memory_store).name);
      a['acs.operation'] = textOrUnspecified(p.operation);
      break;
    case 'steps/memoryContextRetrieval':
      a['acs.memory_store.name'] = textOrUnspecified(objectOrEmpty(p.memory_store).name);
      a['acs.results.count'] = count(p.results);
      break;
    case 'steps/sessionEnd':
      a['acs.session.reason'] = textOrUnspecified(p.reason ?? p.session_reason);
      break;
    case 'steps/turnStart':
      a['acs.turn.id'] = textOrUnspecified(p.turn_id);
      a['acs.turn.triggered_by'] = textOrUnspecified(p.triggered_by);
      optional(a, 'acs.turn.parent_id', p.parent_turn_id);
      break;
    case 'steps/turnEnd':
      a['acs.turn.id'] = textOrUnspecified(p.turn_id);
      a['acs.turn.outcome'] = textOrUnspecified(p.outcome);
      optional(a, 'acs.turn.step_count', p.step_count);
      break;
    case 'steps/preCompact':
      a['acs.compact.entry_count'] = count(p.entries_to_compact);
      a['acs.compact.triggered_by'] = textOrUnspecified(p.triggered_by);
      optional(a, 'acs.compact.estimated_input_tokens', p.estimated_input_tokens);
      break;
    case 'steps/postCompact':
      a['acs.compact.entry_count'] = count(p.entries_compacted);
      optional(a, 'acs.compact.lineage_depth_after', p.lineage_depth_after);
      break;
    case 'steps/subagentStart':
      a['acs.subagent.session_id'] = textOrUnspecified(p.subagent_session_id);
      a['acs.subagent.parent_session_id'] = textOrUnspecified(p.parent_session_id ?? facts.sessionId);
      a['acs.subagent.intent_derivation'] = textOrUnspecified(p.intent_derivation);
      break;
    case 'steps/subagentStop':
      a['acs.subagent.session_id'] = textOrUnspecified(p.subagent_session_id);
      a['acs.subagent.outcome'] = textOrUnspecified(p.outcome);
      a['acs.subagent.final_chain_hash'] = textOrUnspecified(p.final_chain_hash);
      break;
    case 'steps/skillRegister': {
      const digest = objectOrEmpty(objectOrEmpty(p.definition).digest);
      a['acs.skill.id'] = textOrUnspecified(p.skill_id);
      a['acs.skill.digest.algorithm'] = textOrUnspecified(digest.algorithm);
      a['acs.skill.digest.value'] = textOrUnspecified(digest.value);
      a['acs.skill.declared_capabilities'] = strings(p.declared_capabilities);
      break;
    }
    case 'steps/skillLoad': {
      const digest = objectOrEmpty(p.digest);
      a['acs.skill.id'] = textOrUnspecified(p.skill_id);
      a['acs.skill.digest.algorithm'] = textOrUnspecified(digest.algorithm);
      a['acs.skill.digest.value'] = textOrUnspecified(digest.value);
      a['acs.skill.load_trigger'] = textOrUnspecified(p.load_trigger);
      a['acs.skill.load_path'] = (Array.isArray(p.load_path) ? p.load_path : []).map((s) =>
        textOrUnspecified(objectOrEmpty(s).skill_id),
      );
      optional(a, 'acs.skill.digest_verified', p.digest_verified);
      optional(a, 'acs.skill.registration_ref', p.registration_ref);
      break;
    }
    case 'steps/skillUnload':
      a['acs.skill.id'] = textOrUnspecified(p.skill_id);
      a['acs.skill.reason'] = textOrUnspecified(p.reason);
      optional(a, 'acs.skill.replaced_by', p.replaced_by);
      break;
    case 'agbom/snapshot':
      a['acs.agbom.format'] = 'canonical';
      a['acs.agbom.component_count'] = count(p.components ?? objectOrEmpty(p.agbom).components);
      break;
    case 'agbom/changed':
      a['acs.agbom.format'] = 'canonical';
      a['acs.agbom.change_reason'] = textOrUnspecified(objectOrEmpty(p.agbom).change_reason ?? changeReason(p));
      break;
  }
  // ACS §Trace provenance attributes: the first Provenance object's facts; all origins as a list.
  const first = facts.provenance[0];
  if (first) {
    a['acs.provenance.origin'] = first.origin;
    optional(a, 'acs.provenance.source_id', first.source_id);
    const depth = Math.max(...facts.provenance.map((f) => f.lineage_depth ?? 0));
    if (facts.provenance.some((f) => f.lineage_depth !== undefined)) a['acs.provenance.lineage_depth'] = depth;
    a['acs.provenance.origins'] = [...new Set(facts.provenance.map((f) => f.origin))];
  }
  return a;
}

/** agbom/changed names no reason itself: say which kinds of change it carries. */
function changeReason(p: Record<string, unknown>): string | undefined {
  const kinds = (['added', 'removed', 'changed'] as const).filter((k) => count(p[k]) > 0);
  return kinds.length > 0 ? kinds.join(',') : undefined;
}

/** The `acs.decision` span event's attributes (required, and the conditional ones when present). */
export function decisionAttributes(d: DecisionFact): Attributes {
  const a: Attributes = { 'acs.decision': d.decision, 'acs.evaluator': d.evaluator };
  optional(a, 'acs.reasoning', d.reasoning);
  optional(a, 'acs.confidence', d.confidence);
  optional(a, 'acs.evaluator_version', d.evaluatorVersion);
  optional(a, 'acs.model_id', d.modelId);
  if (d.reasonCodes.length > 0) a['acs.reason_codes'] = d.reasonCodes;
  if (d.citedProvenanceIds.length > 0) a['acs.cited_provenance_ids'] = d.citedProvenanceIds;
  optional(a, 'acs.chain_hash', d.chainHash);
  return a;
}
