// A Guardian replica's part in the bundle lifecycle (lifecycle-node.ts), with what it loads versions through
// (version-loader.ts), hears changes by (signals.ts), stores shadow differences with (shadow-differences.ts), and
// the fleet-wide reads the admin API shows (replicas.ts, shadow-report.ts, rollback.ts).
export { LifecycleNode } from './lifecycle-node.ts';
export { NOTIFY_CHANNEL } from './signals.ts';
export { listReplicas } from './replicas.ts';
export { findRollbackTarget } from './rollback.ts';
export { shadowReport, type ShadowReport } from './shadow-report.ts';
export type { ActivationPhases, ActivationResult, LifecycleNodeOptions, LocalStatus, ReplicaStatus } from './types.ts';
