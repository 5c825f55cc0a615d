// The session state policies read (docs/policy-authoring.md): turn counters, budgets, provenance trust and lineage,
// taint history, intent and its extensions, approvals, skill registrations. The shapes only; the fold that builds
// them is advance.ts, decisions.ts and initial.ts.
import type { Json } from '../../json.ts';

export type Trust = 'trusted' | 'unknown' | 'untrusted';
export type Origin =
  | 'user_input'
  | 'system'
  | 'tool_output'
  | 'retrieved'
  | 'agent_generated'
  | 'a2a_inbound'
  | 'external';

export interface ProvenanceRecord {
  origin: string;
  source_id?: string;
  derived_from: string[];
  trust: Trust;
  /** Where it was first seen: the step (request_id), its index, the turn index, the JSON pointer in params.payload. */
  step_id: string;
  step_index: number;
  turn_index: number;
  path: string;
  lineage_depth: number;
}

export interface TaintMark {
  step_id: string;
  step_index: number;
  turn_index: number;
  turn_id: string | null;
  provenance_id: string;
  origin: string;
}

export interface RecentStep {
  step_id: string;
  index: number;
  method: string;
  turn_index: number;
  turn_id: string | null;
  timestamp: string;
  tool?: string;
  capability?: string;
  provenance_ids: string[];
  untrusted: boolean;
  decision?: string;
}

/** A tool call in the rate-window history: the tool name (`''` when unnamed) and its timestamp in ms. */
export type RecentToolCall = [tool: string, at_ms: number];

export interface ApprovalGrant {
  /** The step that raised the ASK. */
  ask_step_id: string;
  approver: { type: string; id: string };
  capabilities: string[];
  scope: 'this_request' | 'session';
  /** Optional narrowing: the grant applies only to this tool. */
  tool?: string;
  granted_at: string;
  provenance?: Json;
  /** A `this_request` grant serves exactly the next tool call (the retried request): that step's id. */
  consumed_by?: string;
}

export interface SkillRegistration {
  digest: string | null;
  step_id: string;
  declared_capabilities: string[];
  composed_skills: string[];
  approved: boolean;
}

export interface IntentState {
  raw?: Json;
  parsed: string[];
  scope_mode: string | null;
  parser_provenance?: Json;
  established_step_id: string;
}

export interface SessionState {
  version: 1;
  session_id: string;
  agent_id: string;
  parent_session_id: string | null;
  policy_mode: string | null;
  intent: IntentState | null;
  /** Capabilities granted by approvers with scope `session` (§9.1), kept apart from intent.parsed's provenance. */
  intent_extensions: {
    capabilities: string[];
    approver: { type: string; id: string };
    ask_step_id: string;
    provenance?: Json;
  }[];
  intent_change_attempts: number;
  closed: boolean;
  step_index: number;
  turn: { id: string | null; index: number; step_count: number; tool_call_count: number; open: boolean };
  counters: {
    steps_total: number;
    steps_by_method: Record<string, number>;
    tool_calls_total: number;
    tool_calls_by_tool: Record<string, number>;
    turns_total: number;
    deferrals: number;
    asks: number;
    denials: number;
    subagents_started: number;
  };
  provenance: {
    summary: {
      origins_seen: string[];
      entry_count: number;
      entry_count_by_origin: Record<string, number>;
      earliest_step_id_by_origin: Record<string, string>;
      max_lineage_depth: number;
    };
    /** Records by provenance id; the newest are in `recent_records` until there are enough to fold in. */
    records: Record<string, ProvenanceRecord>;
    /**
     * The records added since the last fold into `records` (at most RECENT_RECORDS_FOLD): a step that records
     * provenance copies this small map, not every record of the session. Read both through
     * `provenanceRecord()`. Absent in states written before it existed.
     */
    recent_records?: Record<string, ProvenanceRecord>;
    /** Number of records (kept so the cap check is O(1)); absent in states written before it existed. */
    record_count?: number;
  };
  taint: { earliest_untrusted: TaintMark | null; latest_untrusted: TaintMark | null; untrusted_steps: number };
  recent_steps: RecentStep[];
  /** The newest tool calls as `[tool, at_ms]` (the timestamp they carried): what the rate windows count. */
  recent_tool_calls: RecentToolCall[];
  approvals: ApprovalGrant[];
  skills: { registered: Record<string, SkillRegistration>; loaded: string[] };
}

export interface SessionStateOptions {
  /** Per-origin trust overrides (§7.2 allows policy to override defaults; the caller audits them). */
  originTrust?: Partial<Record<string, Trust>>;
  /** How many recent steps / tool-call times to keep (bounded state). */
  recentSteps?: number;
  recentToolCalls?: number;
  /** Upper bound on provenance records kept (default 4096); beyond it the oldest are evicted, and data
   *  derived from an evicted id counts it as `unknown` (fail closed). */
  maxProvenanceRecords?: number;
}
