// The facts of one answered message as telemetry carries them (types only): read once from the observation on the
// request's thread (facts.ts), then turned into spans and OCSF events on the export thread. Plain data, so a batch
// crosses threads as a structured clone.
import type { AcsResult, TransportKind } from '../acs/types.ts';
import type { Json } from '../json.ts';

export type AttributeValue = string | number | boolean | string[];
export type Attributes = Record<string, AttributeValue>;

/** What the OCSF class object of a step's event names, read from the payload once (events/ocsf.ts). */
export interface OcsfSubject {
  /** The tool (1007), the skill (1005) or the store (6005). */
  name?: string;
  /** Authentication (3002): the agent and the session that log on or off (a subagent's own for subagent steps). */
  user?: string;
  session?: string;
}

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
  decision?: DecisionFact;
  /** JSON-RPC error code and reason when the answer is an error. */
  error?: { code: number; reason?: string };
  provenance: ProvenanceFact[];
}

/** One answered message as the exporters need it: structured-clone-able data, built once per message. */
export interface StepRecord extends StepFacts {
  transport: TransportKind;
  traceparent?: string;
  tracestate?: string;
  /** Epoch ms (fractional) of the arrival and of the answer. */
  startEpochMs: number;
  endEpochMs: number;
  /** Pairs (index in PIPELINE_STAGES, epoch ms at the stage's end); a stage begins where the previous one ended. */
  stages: number[];
  /** The step span's attributes per the ACS OTel mapping (traces/mapping.ts), `acs.transport` included. */
  attributes: Attributes;
  /** The payload's turn ids, for the session tree of turnStart and turnEnd (traces/index.ts). */
  payloadTurnId?: string;
  payloadParentTurnId?: string;
  /** What the OCSF class object names (events/ocsf.ts). */
  ocsf: OcsfSubject;
}
