// The policy engine seam and the ACS policy input contract (docs/policy-authoring.md).
export type { PolicyEngine, PolicyEvaluation, PolicyInput, RawPolicyDecision } from './types.ts';
export {
  createWasmPolicyEngine,
  PolicyEvaluationError,
  PolicyLoadError,
  type WasmPolicyEngine,
  type WasmPolicyEngineOptions,
  type PolicyEvaluationErrorCode,
  type HostBuiltin,
  type HostBuiltinFactory,
  type EvaluationClock,
  type WasmBundleParts,
  projectHostBuiltins,
} from './engine.ts';
export type { BundleManifest } from '../rego/bundle/index.ts';
export { CustomBuiltinsModuleError, importCustomBuiltinsModule } from './custom-builtins.ts';
export {
  initialSessionState,
  advanceSessionState,
  recordDecision,
  recordApproval,
  collectProvenance,
  lineageOf,
  normaliseDigest,
  isSessionState,
  minTrust,
  DEFAULT_ORIGIN_TRUST,
  type SessionState,
  type SessionStateOptions,
  type Trust,
  type Origin,
  type ProvenanceRecord,
  type ApprovalGrant,
  type RecentStep,
  type TaintMark,
  type IntentState,
  type FoundProvenance,
} from './session-state/index.ts';
export {
  buildPolicyInput,
  sessionProjection,
  policyParams,
  type ClientCapabilities,
  type GuardianFacts,
} from './input.ts';
export { createPolicyEnginePool, type PolicyEnginePool, type PolicyEnginePoolOptions } from './pool/pool.ts';
