// Session state policies read (docs/policy-authoring.md): turn counters, budgets, provenance trust and lineage, taint history,
// intent and its extensions, approvals, skill registrations. Pure and deterministic — it depends only on the
// steps (and decisions) fed in, never on the clock — so replaying a chain rebuilds it byte for byte.
//
// types.ts holds the shapes; initial.ts the state before the first step; advance.ts folds a step, with
// provenance.ts (records, trust, lineage, taint), tool-calls.ts (the rate-window history) and recent-steps.ts;
// decisions.ts folds the decision and approvals; from-store.ts reads a stored state back.
export type {
  ApprovalGrant,
  IntentState,
  Origin,
  ProvenanceRecord,
  RecentStep,
  RecentToolCall,
  SessionState,
  SessionStateOptions,
  SkillRegistration,
  TaintMark,
  Trust,
} from './types.ts';
export { initialSessionState } from './initial.ts';
export { advanceSessionState } from './advance.ts';
export { recordApproval, recordDecision } from './decisions.ts';
export {
  DEFAULT_ORIGIN_TRUST,
  collectProvenance,
  lineageOf,
  minTrust,
  provenanceRecord,
  provenanceRecords,
  referencedProvenanceIds,
  type FoundProvenance,
} from './provenance.ts';
export { timestampMs, toolCallColumns, type ToolCallColumns } from './tool-calls.ts';
export { ownValue, setOwn } from './copy-on-write.ts';
export { normaliseDigest } from './payload-fields.ts';
export { isSessionState, upgradeSessionState } from './from-store.ts';
