// Policy bundle lifecycle (docs/bundle-lifecycle.md): registry, activation with self-test and atomic swap,
// fleet sync, signed bundles, bundle-service polling, directory watching, shadow mode.
export { LifecycleError, type LifecycleErrorCode } from './errors.ts';
export { BundleRegistry, type RegisteredBundle, type ActivationEntry, type BundleDescription } from './registry.ts';
export {
  signBundle,
  verifyBundleSignature,
  hashBundleFile,
  type BundleKeyConfig,
  type BundleVerificationConfig,
  type SignBundleOptions,
  type SignatureCheck,
} from './signing.ts';
export { SMOKE_FILE, readSmokeCases, runSmokeCases, type SmokeCase } from './smoke.ts';
export {
  PolicySlot,
  loadVersion,
  type LoadedVersion,
  type EngineSettings,
  type ShadowDifference,
  type ShadowStats,
} from './slot.ts';
export {
  LifecycleNode,
  listReplicas,
  findRollbackTarget,
  shadowReport,
  NOTIFY_CHANNEL,
  type LifecycleNodeOptions,
  type ActivationResult,
  type ReplicaStatus,
  type LocalStatus,
  type ShadowReport,
} from './node/index.ts';
export {
  BundleServicePoller,
  backoffDelay,
  type BundleServicePollerOptions,
  type BundleSourceStatus,
} from './bundle-service.ts';
export {
  watchBundleDirectory,
  watchAndBuild,
  type DirectoryWatch,
  type WatchBundleDirectoryOptions,
  type WatchAndBuildOptions,
} from './watch.ts';
export { verificationFromEnv } from './config.ts';
export {
  startLifecycleRuntime,
  preloadBundleFile,
  isDurableStore,
  type LifecycleRuntime,
  type LifecycleRuntimeOptions,
} from './runtime.ts';
