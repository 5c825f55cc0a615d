// Audit-log tooling over the durable store: verify, export, prune (the `guardian audit` commands).
export {
  verifyChain,
  verifyAllChains,
  registryCheckpointCheck,
  type ChainBreak,
  type ChainBreakKind,
  type ChainReport,
  type CheckpointSignatureCheck,
  type VerifyAllSummary,
  type VerifyOptions,
} from './verify.ts';
export { exportSession, type ExportLine } from './export.ts';
