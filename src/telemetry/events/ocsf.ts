// ACS step → OCSF 1.5 events, per the ACS OCSF mapping (ACS §Trace "OCSF event classes", ocsf-mapping v0.1.0):
// one event in the step's class, and a Detection Finding (2004) for every deny/modify/ask/defer with the mapped
// severity. Provenance facts ride in `enrichments` (`acs_provenance_origin`, `…_source_id`, `…_lineage_depth`);
// ACS facts with no OCSF home in `unmapped.acs` (ACS §Trace "Extending OCSF").
import type { DecisionFact, OcsfSubject, StepFacts, StepRecord } from '../record.ts';
import { objectOrEmpty, textOrUnspecified, UNSPECIFIED } from '../traces/mapping.ts';

export type OcsfEvent = Record<string, unknown>;

interface ClassOf {
  class_uid: number;
  class_name: string;
  category_uid: number;
  category_name: string;
  activity_id: number;
  activity_name: string;
}

const CATEGORIES: Readonly<Record<number, string>> = {
  1: 'System Activity',
  2: 'Findings',
  3: 'Identity & Access Management',
  5: 'Discovery',
  6: 'Application Activity',
};

/** class_uid, and activity_id where the mapping fixes one (else 99 Other, the OCSF sentinel). */
const STEP_CLASSES: Readonly<
  Record<string, readonly [uid: number, name: string, activity: number, activityName: string]>
> = {
  'steps/sessionStart': [3002, 'Authentication', 1, 'Logon'],
  'steps/sessionEnd': [3002, 'Authentication', 2, 'Logoff'],
  'steps/subagentStart': [3002, 'Authentication', 1, 'Logon'],
  'steps/subagentStop': [3002, 'Authentication', 2, 'Logoff'],
  'steps/userMessage': [6002, 'Application Activity', 99, 'Other'],
  'steps/agentResponse': [6002, 'Application Activity', 99, 'Other'],
  'steps/agentTrigger': [6002, 'Application Activity', 99, 'Other'],
  'steps/turnStart': [6002, 'Application Activity', 99, 'Other'],
  'steps/turnEnd': [6002, 'Application Activity', 99, 'Other'],
  'steps/toolCallRequest': [1007, 'Process Activity', 1, 'Launch'],
  'steps/toolCallResult': [1007, 'Process Activity', 2, 'Terminate'],
  'steps/knowledgeRetrieval': [6005, 'Datastore Activity', 2, 'Read'],
  'steps/memoryStore': [6005, 'Datastore Activity', 3, 'Update'],
  'steps/memoryContextRetrieval': [6005, 'Datastore Activity', 2, 'Read'],
  'steps/preCompact': [6005, 'Datastore Activity', 99, 'Other'],
  'steps/postCompact': [6005, 'Datastore Activity', 99, 'Other'],
  'steps/skillRegister': [5001, 'Device Inventory Info', 1, 'Log'],
  'steps/skillLoad': [1005, 'Module Activity', 1, 'Load'],
  'steps/skillUnload': [1005, 'Module Activity', 2, 'Unload'],
  'agbom/snapshot': [5001, 'Inventory Info', 1, 'Log'],
  'agbom/changed': [5001, 'Inventory Info', 1, 'Log'],
};

/** ACS §Trace severity mapping, disposition → OCSF severity_id. */
export const SEVERITY_OF_DISPOSITION: Readonly<Record<string, number>> = {
  allow: 1,
  modify: 2,
  ask: 3,
  defer: 3,
  deny: 4,
};

/**
 * OCSF `verdict_id` of a finding: a deny or modify acted on a risk (8 Security Risk); an ask is a suspicion a human
 * resolves (4 Suspicious); a defer waits for facts the Guardian lacks (7 Insufficient Data).
 */
const VERDICT_OF_DISPOSITION: Readonly<Record<string, readonly [number, string]>> = {
  deny: [8, 'Security Risk'],
  modify: [8, 'Security Risk'],
  ask: [4, 'Suspicious'],
  defer: [7, 'Insufficient Data'],
};

/** Each method's class, made once: every event of a method carries the same one. */
const CLASS_OF = new Map<string, ClassOf>(
  Object.entries(STEP_CLASSES).map(([method, [uid, name, activity, activityName]]) => {
    const category = Math.floor(uid / 1000);
    return [
      method,
      {
        class_uid: uid,
        class_name: name,
        category_uid: category,
        category_name: CATEGORIES[category],
        activity_id: activity,
        activity_name: activityName,
      },
    ];
  }),
);

export function classOf(method: string): ClassOf | undefined {
  return CLASS_OF.get(method);
}

const FINDING_CLASS: ClassOf = {
  class_uid: 2004,
  class_name: 'Detection Finding',
  category_uid: 2,
  category_name: 'Findings',
  activity_id: 1,
  activity_name: 'Create',
};

export interface OcsfProduct {
  name: string;
  vendor_name: string;
  version: string;
}

/** `metadata` is the same for every event of a product: one object, serialised with each event. */
const METADATA = new WeakMap<OcsfProduct, { version: string; product: OcsfProduct }>();

function base(cls: ClassOf, timeMs: number, severity: number, product: OcsfProduct): OcsfEvent {
  let metadata = METADATA.get(product);
  if (!metadata) {
    metadata = { version: '1.5.0', product };
    METADATA.set(product, metadata);
  }
  return {
    category_uid: cls.category_uid,
    category_name: cls.category_name,
    class_uid: cls.class_uid,
    class_name: cls.class_name,
    activity_id: cls.activity_id,
    activity_name: cls.activity_name,
    type_uid: cls.class_uid * 100 + cls.activity_id,
    time: timeMs,
    severity_id: severity,
    metadata,
  };
}

function actorOf(facts: StepFacts): Record<string, unknown> {
  return {
    user: { uid: textOrUnspecified(facts.agentId), type_id: 99, type: 'AI Agent' },
    session: { uid: textOrUnspecified(facts.sessionId) },
  };
}

function enrichmentsOf(facts: StepFacts): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const p of facts.provenance) {
    const value = { provenance_id: p.provenance_id, origin: p.origin };
    out.push({ name: 'acs_provenance_origin', value: p.origin, data: value, type: 'provenance' });
    if (p.source_id !== undefined)
      out.push({ name: 'acs_provenance_source_id', value: p.source_id, data: value, type: 'provenance' });
    if (p.lineage_depth !== undefined)
      out.push({
        name: 'acs_provenance_lineage_depth',
        value: String(p.lineage_depth),
        data: value,
        type: 'provenance',
      });
  }
  return out;
}

export type { OcsfSubject } from '../record.ts';

export function ocsfSubjectOf(facts: StepFacts, p: Record<string, unknown>): OcsfSubject {
  const cls = Object.hasOwn(STEP_CLASSES, facts.method) ? STEP_CLASSES[facts.method][0] : 0;
  switch (cls) {
    case 3002: {
      const subagent = facts.method.startsWith('steps/subagent');
      return {
        user: textOrUnspecified(subagent ? (p.subagent_agent_id ?? facts.agentId) : facts.agentId),
        session: textOrUnspecified(subagent ? p.subagent_session_id : facts.sessionId),
      };
    }
    case 1007:
      return { name: textOrUnspecified(objectOrEmpty(p.tool).name) };
    case 1005:
      return { name: textOrUnspecified(p.skill_id) };
    case 6005:
      return {
        name: textOrUnspecified(
          objectOrEmpty(p.memory_store).name ?? objectOrEmpty(p.source).name ?? facts.method.replace('steps/', ''),
        ),
      };
    default:
      return {};
  }
}

/** Adds the class-specific objects OCSF requires of each class to `event`. */
function addClassObjects(event: OcsfEvent, record: StepRecord, classUid: number): void {
  const subject = record.ocsf;
  switch (classUid) {
    case 3002:
      event.user = { uid: subject.user ?? UNSPECIFIED, type_id: 99, type: 'AI Agent' };
      event.session = { uid: subject.session ?? UNSPECIFIED };
      event.auth_protocol_id = 99;
      event.auth_protocol = 'ACS handshake';
      return;
    case 6002:
      event.app = { name: 'ACS agent', uid: textOrUnspecified(record.agentId) };
      return;
    case 1007: {
      const tool = subject.name ?? UNSPECIFIED;
      event.process = { name: tool, uid: record.requestId ?? UNSPECIFIED, cmd_line: `${record.method}:${tool}` };
      return;
    }
    case 1005:
      event.module = { type: 'skill', load_type_id: 99, file: { name: subject.name ?? UNSPECIFIED, type_id: 99 } };
      return;
    case 6005:
      event.database = { name: subject.name ?? UNSPECIFIED, type_id: 99, type: 'agent context' };
      return;
    case 5001:
      event.device = {
        uid: textOrUnspecified(record.agentId),
        name: textOrUnspecified(record.agentId),
        type_id: 99,
        type: 'AI Agent',
      };
      return;
  }
}

function unmappedOf(facts: StepFacts, decision: DecisionFact | undefined): Record<string, unknown> {
  const acs: Record<string, unknown> = {
    step: {
      id: facts.requestId,
      type: facts.method.startsWith('steps/') ? facts.method.slice(6) : facts.method,
      method: facts.method,
      turn_id: facts.turnId,
    },
    session_id: facts.sessionId,
  };
  if (facts.provenance.length > 0) acs.provenance = facts.provenance;
  if (decision) {
    acs.decision = decision.decision;
    acs.evaluator = decision.evaluator;
    if (decision.evaluatorVersion) acs.evaluator_version = decision.evaluatorVersion;
    if (decision.reasonCodes.length > 0) acs.reason_codes = decision.reasonCodes;
    if (decision.policyReferences.length > 0) acs.policy_references = decision.policyReferences;
    if (decision.citedProvenanceIds.length > 0) acs.cited_provenance_ids = decision.citedProvenanceIds;
    if (decision.chainHash) acs.chain_hash = decision.chainHash;
  }
  return { acs };
}

/** The OCSF events of one answered step: its class event, plus a Detection Finding unless it was allowed. */
export function ocsfEventsOf(facts: StepRecord, product: OcsfProduct): OcsfEvent[] {
  const cls = classOf(facts.method);
  const timeMs = Math.round(facts.endEpochMs);
  if (!cls || (!facts.decision && !facts.error)) return [];
  const decision = facts.decision;
  const enrichments = enrichmentsOf(facts);
  // Built member by member rather than spread together: one object per event, its members in the same order.
  const failed = facts.error !== undefined || (decision !== undefined && decision.decision !== 'allow');
  const step = base(cls, timeMs, decision ? SEVERITY_OF_DISPOSITION[decision.decision] : 1, product);
  step.status_id = failed ? 2 : 1;
  step.status = failed ? 'Failure' : 'Success';
  step.actor = actorOf(facts);
  addClassObjects(step, facts, cls.class_uid);
  if (enrichments.length > 0) step.enrichments = enrichments;
  step.unmapped = unmappedOf(facts, decision);
  const events = [step];
  if (decision && decision.decision !== 'allow') events.push(findingOf(facts, decision, timeMs, product, enrichments));
  return events;
}

function findingOf(
  facts: StepFacts,
  decision: DecisionFact,
  timeMs: number,
  product: OcsfProduct,
  enrichments: Record<string, unknown>[],
): OcsfEvent {
  const [verdictId, verdict] = VERDICT_OF_DISPOSITION[decision.decision];
  const codes = decision.reasonCodes.length > 0 ? ` (${decision.reasonCodes.join(', ')})` : '';
  const finding = base(FINDING_CLASS, timeMs, SEVERITY_OF_DISPOSITION[decision.decision], product);
  finding.status_id = 1;
  finding.status = 'New';
  finding.verdict_id = verdictId;
  finding.verdict = verdict;
  const info: Record<string, unknown> = {
    // The decision is identified by the step it answers (request_id is unique per session, §10.3).
    uid: `${textOrUnspecified(facts.sessionId)}/${textOrUnspecified(facts.requestId)}`,
    title: `${facts.method} ${decision.decision}${codes}`,
  };
  if (decision.reasoning) info.desc = decision.reasoning;
  info.types = ['ACS decision'];
  finding.finding_info = info;
  const data: Record<string, unknown> = {
    method: facts.method,
    request_id: facts.requestId,
    decision: decision.decision,
    reason_codes: decision.reasonCodes,
    cited_provenance_ids: decision.citedProvenanceIds,
  };
  if (decision.chainHash) data.chain_hash = decision.chainHash;
  finding.evidences = [{ actor: actorOf(facts), data }];
  finding.actor = actorOf(facts);
  if (enrichments.length > 0) finding.enrichments = enrichments;
  finding.unmapped = unmappedOf(facts, decision);
  return finding;
}
