// Rego unit-test runner (`guardian policy test`).
export {
  runPolicyTests,
  formatPolicyTestReport,
  PolicyTestSetupError,
  type PolicyTestOptions,
  type PolicyTestReport,
  type PolicyTestResult,
  type TestStatus,
} from './runner.ts';
export { TestEvaluationError, type TestEvaluationErrorCode } from './evaluator.ts';
export {
  CoverageProbes,
  formatCoverageReport,
  type CoverageReport,
  type FileCoverage,
  type LineRange,
} from './coverage.ts';
