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
} from './engine.ts';
export { readWasmBundle, readBundleFiles, BundleFormatError, type BundleManifest, type WasmBundleParts } from './bundle-files.ts';
