// Replay audit history against any policy version (see docs/replay.md).
export { runReplay, tamperOf, describeSelection, type ReplayOptions } from './engine.ts';
export type {
  ReplayReport,
  ReplaySummary,
  ReplayStep,
  ReplaySelection,
  ReplayProgress,
  StepStatus,
} from './types.ts';
export {
  resolveReplayPolicy,
  loadRegistryBundle,
  compileRegoDir,
  RECORDED,
  type ReplayPolicy,
  type ResolvePolicyOptions,
} from './policy.ts';
export { compareDecisions, decisionView, type DecisionView, type DecisionDelta } from './compare.ts';
export {
  renderReport,
  renderTable,
  renderMarkdown,
  renderHtml,
  escapeHtml,
  escapeMarkdownCell,
  REPORT_FORMATS,
  type ReportFormat,
} from './report.ts';
export { progressBar, formatProgress, type ProgressSink } from './progress.ts';
export { parseSelection, type SelectionInput } from './selection.ts';
export {
  replayConfig,
  initialReplayState,
  evaluateRecordedStep,
  foldDecision,
  routeStep,
  requestOf,
  type LiveSettings,
} from './live-step.ts';
export { ReplayError, type ReplayErrorCode } from './errors.ts';
export { createReplayAdminRoutes, type ReplayAdminDeps } from './http.ts';
